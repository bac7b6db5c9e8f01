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
from universalrag.types import RouteDecision

from ._convert import hits_to_documents

__all__ = ["CorpusRetriever", "UniversalRAGRetriever"]


class UniversalRAGRetriever(BaseRetriever):
    """Routed multimodal retrieval as a LangChain retriever.

    The core's router picks the corpora for each query (or ``routes`` fixes them), each corpus is searched in
    its own embedding space and the rankings are fused. Each ``Document`` carries the unit's metadata plus
    ``corpus``, ``modality``, ``granularity``, ``score``, ``uri``, ``start_s``/``end_s``, ``source_id``,
    ``parent_id``, ``id`` and the route decision (``routes``, ``route_scores``, ``router``).

    ``k``, ``routes`` and ``filters`` can also be given per call: ``retriever.invoke(query, k=2)``.

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
    filters: dict[str, Any] | None = None
    """A metadata filter applied in every searched corpus (the core's filter syntax: ``{"year": {"$gte": 2020}}``)."""

    def _args(self, k: int | None, routes: list[str] | None,
              filters: dict[str, Any] | None) -> tuple[int, list[str] | None, dict[str, Any] | None]:
        return (k if k is not None else self.k, routes if routes is not None else self.routes,
                filters if filters is not None else self.filters)

    @staticmethod
    def _fixed(routes: list[str]) -> RouteDecision:
        return RouteDecision(routes=tuple(routes), scores={}, router="caller")

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, routes: list[str] | None = None,
                                filters: dict[str, Any] | None = None) -> list[Document]:
        k, routes, filters = self._args(k, routes, filters)
        decision = self._fixed(routes) if routes is not None else self.rag.route(query)
        hits = self.rag.retrieve(query, k=k, routes=decision.routes, filters=filters)
        return hits_to_documents(hits[:k], decision=decision)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, routes: list[str] | None = None,
                                       filters: dict[str, Any] | None = None) -> list[Document]:
        k, routes, filters = self._args(k, routes, filters)
        decision = self._fixed(routes) if routes is not None else await self.rag.aroute(query)
        hits = await self.rag.aretrieve(query, k=k, routes=decision.routes, filters=filters)
        return hits_to_documents(hits[:k], decision=decision)


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
    filters: dict[str, Any] | None = None
    """A metadata filter (the core's filter syntax)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, filters: dict[str, Any] | None = None) -> list[Document]:
        hits = self.rag.retrieve(query, k=k if k is not None else self.k, routes=[self.corpus],
                                 filters=filters if filters is not None else self.filters)
        return hits_to_documents(hits)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, filters: dict[str, Any] | None = None
                                       ) -> list[Document]:
        hits = await self.rag.aretrieve(query, k=k if k is not None else self.k, routes=[self.corpus],
                                        filters=filters if filters is not None else self.filters)
        return hits_to_documents(hits)
