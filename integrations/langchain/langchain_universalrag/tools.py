"""One retriever tool per corpus, for agents that choose where to search themselves."""

from __future__ import annotations

from collections.abc import Sequence

from ._deps import require_langchain

require_langchain()

from langchain_core.documents import Document
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field
from universalrag.pipeline import UniversalRAG

from .messages import documents_to_evidence
from .retrievers import CorpusRetriever

__all__ = ["create_corpus_tool", "create_corpus_tools", "format_documents"]


class CorpusSearchInput(BaseModel):
    """What an agent passes to a corpus tool."""

    query: str = Field(description="What to look for, as a question or a few keywords.")


def format_documents(documents: Sequence[Document], *, rag: UniversalRAG | None = None) -> str:
    """The text a model sees for ``documents``: per document its label (corpus, title or file, time range)
    and its text (for tables, the rows that matched first; for clips, the transcript with its time range)."""
    budget = rag.budget if rag is not None else None
    evidence = documents_to_evidence(documents, budget=budget, with_media=False)
    return "\n\n".join(f"{e.label}\n{e.text}".strip() for e in evidence) or "No results."


def _description(name: str, registered: str) -> str:
    what = registered.strip() or f"The {name} corpus."
    return f"Search the {name} corpus. {what}"


def create_corpus_tool(rag: UniversalRAG, corpus: str, *, k: int = 4, description: str | None = None) -> BaseTool:
    """A tool named ``search_<corpus>`` searching ``corpus`` (its description from the registry unless given).

    It returns ``(text, documents)`` (``response_format="content_and_artifact"``): the model reads the text
    and the ``Document``s reach the agent's state as the ``ToolMessage``'s artifact.
    """
    spec = rag.store.corpus(corpus)
    retriever = CorpusRetriever(rag=rag, corpus=corpus, k=k)

    def search(query: str) -> tuple[str, list[Document]]:
        docs = retriever.invoke(query)
        return format_documents(docs, rag=rag), docs

    async def asearch(query: str) -> tuple[str, list[Document]]:
        docs = await retriever.ainvoke(query)
        return format_documents(docs, rag=rag), docs

    return StructuredTool.from_function(
        func=search, coroutine=asearch, name=f"search_{corpus}",
        description=description or _description(corpus, spec.description), args_schema=CorpusSearchInput,
        response_format="content_and_artifact",
    )


def create_corpus_tools(rag: UniversalRAG, corpora: Sequence[str] | None = None, *, k: int = 4) -> list[BaseTool]:
    """One :func:`create_corpus_tool` per corpus: the ``corpora`` named, or (``None``) every registered corpus
    that holds rows. Reads the registry once, now."""
    names = list(corpora) if corpora is not None else rag.store.nonempty()
    return [create_corpus_tool(rag, name, k=k) for name in names]
