"""LangChain retrievers over the core: :class:`UniversalRAGRetriever` routes then retrieves;
:class:`CorpusRetriever` searches one corpus."""

from __future__ import annotations

from typing import Any

from ._deps import require_langchain

require_langchain()

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field
from universalrag.pipeline import UniversalRAG

from ._convert import hits_to_documents

__all__ = ["CorpusRetriever", "UniversalRAGRetriever"]


class UniversalRAGRetriever(BaseRetriever):
    """Routed multimodal retrieval as a LangChain retriever.

    The core's evidence-aware router picks the corpora for each query (or ``routes`` fixes them), each corpus is
    searched in its own embedding space and the rankings are fused; the routing probe's hits are the results, so
    nothing is searched twice. Each ``Document`` carries the unit's metadata plus ``corpus``, ``modality``,
    ``granularity``, ``score``, ``uri``, ``start_s``/``end_s``, ``source_id``, ``parent_id``, ``id`` and the route
    decision (``routes``, ``route_scores``, ``router``).

    A retriever used as an agent's tool should not come back empty because the router judged the question
    answerable without retrieval: unless ``allow_none=True``, a ``none`` conclusion still searches the most likely
    corpus. ``k``, ``routes``, ``filter`` and ``allow_none`` can also be given per call:
    ``retriever.invoke(query, k=2)``.

    Example::

        retriever = UniversalRAGRetriever(rag=UniversalRAG(), k=4)
        docs = retriever.invoke("What does the lighthouse look like at night?")
    """

    rag: UniversalRAG = Field(repr=False)
    """The core facade (store, embedder, router)."""
    k: int = 4
    """How many documents to return: each chosen corpus is searched for its own top ``k``, and the fused
    ranking is cut to ``k``."""
    routes: list[str] | None = None
    """Corpora to search instead of asking the router (``["none"]`` searches nothing)."""
    filter: dict[str, Any] | None = None
    """A metadata filter applied in every searched corpus (the core's filter syntax: ``{"year": {"$gte": 2020}}``)."""
    filters: dict[str, Any] | None = None
    """Deprecated spelling of ``filter``."""
    allow_none: bool = False
    """Return no documents when the router concludes ``none`` (default: search the most likely corpus)."""

    def _search(self, query: str, k: int | None, routes: list[str] | None, filter: dict[str, Any] | None,
                allow_none: bool | None, filters: dict[str, Any] | None) -> dict[str, Any]:
        return {"k": k if k is not None else self.k, "routes": routes if routes is not None else self.routes,
                "filter": filter if filter is not None else filters if filters is not None else
                self.filter if self.filter is not None else self.filters,
                "allow_none": self.allow_none if allow_none is None else allow_none}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, routes: list[str] | None = None,
                                filter: dict[str, Any] | None = None, allow_none: bool | None = None,
                                filters: dict[str, Any] | None = None) -> list[Document]:
        args = self._search(query, k, routes, filter, allow_none, filters)
        decision, hits = self.rag.search(query, **args)
        return hits_to_documents(hits[: args["k"]], decision=decision)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, routes: list[str] | None = None,
                                       filter: dict[str, Any] | None = None, allow_none: bool | None = None,
                                       filters: dict[str, Any] | None = None) -> list[Document]:
        args = self._search(query, k, routes, filter, allow_none, filters)
        decision, hits = await self.rag.asearch(query, **args)
        return hits_to_documents(hits[: args["k"]], decision=decision)


class CorpusRetriever(BaseRetriever):
    """One corpus, no routing: the ``k`` nearest units of ``corpus`` in its own embedding space.

    Example::

        tables = CorpusRetriever(rag=rag, corpus="table", k=3)
        tables.invoke("Which team won most games?")
    """

    rag: UniversalRAG = Field(repr=False)
    """The core facade (store, embedder)."""
    corpus: str
    """The corpus to search."""
    k: int = 4
    """How many units to return."""
    filter: dict[str, Any] | None = None
    """A metadata filter (the core's filter syntax)."""
    filters: dict[str, Any] | None = None
    """Deprecated spelling of ``filter``."""

    def _filter(self, filter: dict[str, Any] | None, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        for candidate in (filter, filters, self.filter, self.filters):
            if candidate is not None:
                return candidate
        return None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, filter: dict[str, Any] | None = None,
                                filters: dict[str, Any] | None = None) -> list[Document]:
        hits = self.rag.retrieve(query, k=k if k is not None else self.k, routes=[self.corpus],
                                 filter=self._filter(filter, filters))
        return hits_to_documents(hits)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, filter: dict[str, Any] | None = None,
                                       filters: dict[str, Any] | None = None) -> list[Document]:
        hits = await self.rag.aretrieve(query, k=k if k is not None else self.k, routes=[self.corpus],
                                        filter=self._filter(filter, filters))
        return hits_to_documents(hits)
