"""One retriever tool per corpus, for agents that choose where to search themselves."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ._deps import require_langchain

require_langchain()

from langchain_core.documents import Document
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from universalrag.errors import FilterError, InvalidInputError, RoutingError
from universalrag.evidence import RETRIEVED_NOTE, UNIT_TEXT_TOKENS, delimit
from universalrag.pipeline import UniversalRAG

from .messages import documents_to_evidence
from .retrievers import CorpusRetriever, check_k

__all__ = ["create_corpus_tool", "create_corpus_tools", "format_documents"]

logger = logging.getLogger(__name__)

#: Errors caused by what the model passed: returned to it as the tool's answer, so that it can call again.
_MODEL_ERRORS = (InvalidInputError, RoutingError, FilterError)


class CorpusSearchInput(BaseModel):
    """What an agent passes to a corpus tool."""

    query: str = Field(description="What to look for, as a question or a few keywords.")


def format_documents(documents: Sequence[Document], *, rag: UniversalRAG | None = None) -> str:
    """The text a model sees for ``documents``: per document its label (corpus, title or file, time range)
    and its text (for tables, the rows that matched first; for clips, the transcript with its time range) inside
    ``<retrieved-data>`` tags it cannot close (:func:`universalrag.evidence.delimit`): retrieved text is data."""
    budget = rag.budget if rag is not None else None
    evidence = documents_to_evidence(documents, budget=budget, with_media=False)
    return "\n\n".join(f"{e.label}\n{delimit(e.text.strip())}" for e in evidence) or "No results."


def _description(name: str, registered: str, holdings: str) -> str:
    what = registered.strip() or f"The {name} corpus."
    return " ".join(p for p in (f"Search the {name} corpus.", what, holdings, RETRIEVED_NOTE) if p)


def _checked_query(tool: str, query: str) -> str:
    """The query, or a :class:`ToolException` the model can act on (an empty query must not stop the agent)."""
    if not isinstance(query, str) or not query.strip():
        raise ToolException(
            f"The query was empty. Call {tool} again with a question or a few keywords to look "
            'for, for example {"query": "how to spawn a child process"}.'
        )
    return query


def _for_model(tool: str, error: Exception) -> ToolException:
    """A search error caused by the model's arguments, as the sentence the model reads in the ``ToolMessage``."""
    return ToolException(f"The search failed: {error} Call {tool} again with a corrected query.")


def create_corpus_tool(
    rag: UniversalRAG,
    corpus: str,
    *,
    k: int | None = None,
    description: str | None = None,
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> BaseTool:
    """A tool named ``search_<corpus>`` searching ``corpus`` for ``k`` documents (``None``: ``rag.k``), described
    (unless ``description`` is given) by the registry's description and what the corpus holds now
    (:meth:`UniversalRAG.corpus_holdings <universalrag.pipeline.UniversalRAG.corpus_holdings>`: how many sources,
    the latest by name), so that a model choosing between tools knows what each one can find.

    It returns ``(text, documents)`` (``response_format="content_and_artifact"``): the model reads the text
    (per document a label naming its corpus and source, then its text, each unit cut at ``max_unit_tokens``;
    ``None`` keeps whole units) and the ``Document``s reach the agent's state as the ``ToolMessage``'s artifact.
    Bad arguments (an empty query, a missing one, a query the core refuses) do not stop the agent: the tool
    answers with a ``ToolMessage`` (``status="error"``) saying what to fix. The corpus is searched at call time, so
    a tool built before its corpus was ingested finds what was ingested since.
    """
    spec = rag.store.corpus(corpus)
    name = f"search_{corpus}"
    retriever = CorpusRetriever(rag=rag, routes=[corpus], k=check_k(k), max_unit_tokens=max_unit_tokens)

    def search(query: str) -> tuple[str, list[Document]]:
        try:
            docs = retriever.invoke(_checked_query(name, query))
        except _MODEL_ERRORS as error:
            raise _for_model(name, error) from error
        return format_documents(docs, rag=rag), docs

    async def asearch(query: str) -> tuple[str, list[Document]]:
        try:
            docs = await retriever.ainvoke(_checked_query(name, query))
        except _MODEL_ERRORS as error:
            raise _for_model(name, error) from error
        return format_documents(docs, rag=rag), docs

    return StructuredTool.from_function(
        func=search,
        coroutine=asearch,
        name=name,
        description=description or _description(corpus, spec.description, rag.corpus_holdings(corpus)),
        args_schema=CorpusSearchInput,
        response_format="content_and_artifact",
        handle_tool_error=True,
        handle_validation_error=True,
    )


def _warn_empty(rag: UniversalRAG, names: Sequence[str], nonempty: Sequence[str], asked: bool) -> None:
    """Log what an empty tool list, or a tool over an empty corpus, means and what to do (never silently)."""
    if not asked and not names:
        logger.warning(
            "create_corpus_tools: no corpus holds rows yet (store %r), so no tools were made. Ingest "
            "first (rag.ingest(...)), then call create_corpus_tools again.",
            rag.store,
        )
        return
    empty = [n for n in names if n not in nonempty]
    if empty:
        logger.warning(
            "create_corpus_tools: corpora %s hold no rows yet; their tools find nothing until they are "
            "ingested (the tools search at call time: no rebuild is needed).",
            empty,
        )


def create_corpus_tools(
    rag: UniversalRAG,
    corpora: Sequence[str] | None = None,
    *,
    k: int | None = None,
    max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
) -> list[BaseTool]:
    """One :func:`create_corpus_tool` per corpus: the ``corpora`` named, or (``None``) every registered corpus
    that holds rows. Reads the registry once, now: tools built before anything is ingested are none (a warning is
    logged; build them again after ingesting), and a named corpus still empty is logged too."""
    nonempty = rag.store.nonempty()
    names = list(corpora) if corpora is not None else nonempty
    # built first: a corpus that is not registered raises CorpusNotFoundError without a "no rows yet" warning first
    tools = [create_corpus_tool(rag, name, k=k, max_unit_tokens=max_unit_tokens) for name in names]
    _warn_empty(rag, names, nonempty, corpora is not None)
    return tools
