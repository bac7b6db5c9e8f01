"""``corpus_retriever_tools``: one LlamaIndex ``RetrieverTool`` per corpus, for agents and routers."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.tools import RetrieverTool, ToolMetadata

from universalrag.evidence import EvidenceBudget
from universalrag.pipeline import UniversalRAG
from universalrag.types import CorpusSpec

from .base import TOOL_PREFIX, UNIT_TEXT_TOKENS, ImageMode
from .retriever import UniversalRAGRetriever

__all__ = ["corpus_retriever_tools", "corpus_tool_description"]


def corpus_tool_description(spec: CorpusSpec, holdings: str = "") -> str:
    """A tool description for ``spec``: the registry's description, what one result is, then ``holdings`` (what
    the corpus holds: :meth:`UniversalRAG.corpus_holdings <universalrag.pipeline.UniversalRAG.corpus_holdings>`)."""
    what = f"Searches the {spec.name!r} corpus ({spec.modality} content, one {spec.granularity} per result)."
    return " ".join(p for p in (spec.description.rstrip(), what, holdings) if p)


def corpus_retriever_tools(
    rag: UniversalRAG,
    *,
    corpora: Sequence[str] | None = None,
    similarity_top_k: int | None = None,
    image_mode: ImageMode = "path",
    budget: EvidenceBudget | None = None,
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> list[RetrieverTool]:
    """A ``RetrieverTool`` named ``search_<corpus>`` per corpus, described from the registry and what the corpus
    holds (how many sources, the latest by name), each searching
    only its corpus (no routing) with a :class:`UniversalRAGRetriever`.

    ``corpora`` picks the corpora (default: every registered corpus that holds rows, in registry order;
    an unknown name raises :class:`~universalrag.errors.CorpusNotFoundError`). ``similarity_top_k`` is the most
    nodes a call returns (default: ``rag.k``). ``max_unit_tokens`` cuts each node's text at about that many tokens
    (a long document's matched passages first; ``None`` keeps whole units): a tool's output goes straight into an
    agent's context, and uncut, five documents of a manual corpus came to over 250,000 characters. The tools'
    outputs carry the nodes as ``raw_output``. This reads the registry, so it needs the database.
    """
    if isinstance(corpora, str):
        raise TypeError(f"corpora must be a list of corpus names, not the string {corpora!r}.")
    store = rag.store
    if corpora is None:
        filled = set(store.nonempty())
        names = [name for name in store.corpora() if name in filled]
    else:
        names = list(dict.fromkeys(corpora))
    tools = []
    for name in names:
        spec = store.corpus(name)
        retriever = UniversalRAGRetriever(
            rag=rag,
            similarity_top_k=similarity_top_k,
            routes=[name],
            image_mode=image_mode,
            budget=budget,
            max_unit_tokens=max_unit_tokens,
        )
        metadata = ToolMetadata(
            name=f"{TOOL_PREFIX}{name}", description=corpus_tool_description(spec, rag.corpus_holdings(name))
        )
        tools.append(RetrieverTool(retriever=retriever, metadata=metadata))
    return tools
