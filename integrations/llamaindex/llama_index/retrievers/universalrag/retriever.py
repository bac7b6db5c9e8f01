"""``UniversalRAGRetriever``: routed multimodal retrieval as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from universalrag.evidence import EvidenceBudget
from universalrag.pipeline import UniversalRAG
from universalrag.types import RouteDecision

from .base import ImageMode, hits_to_nodes

__all__ = ["UniversalRAGRetriever"]


class UniversalRAGRetriever(BaseRetriever):
    """Routes each query with the core's router and searches the chosen corpora, each in its own embedding
    space; returns ``NodeWithScore`` objects (``TextNode``, and ``ImageNode`` for images).

    ``rag`` is a :class:`~universalrag.pipeline.UniversalRAG`. ``similarity_top_k`` is the number of hits per
    chosen corpus (default: ``rag.k``); with several corpora their rankings are fused (the routing probe's hits
    are the results: nothing is searched twice). ``routes`` fixes the corpora and skips the router (``["table"]``
    makes a one-corpus retriever). ``filter`` is a metadata filter in the core's syntax
    (``{"title": {"$ilike": "%lighthouse%"}}``; ``filters`` is its deprecated spelling). ``image_mode`` and
    ``budget`` say how pictures travel (see :func:`~llama_index.retrievers.universalrag.base.hits_to_nodes`).
    Every node's metadata carries the route decision. A retriever never returns nothing because the router
    concluded ``none`` (it searches the most likely corpus) unless ``allow_none=True``.
    """

    def __init__(self, *, rag: UniversalRAG, similarity_top_k: int | None = None,
                 routes: Sequence[str] | None = None, filter: Mapping[str, Any] | None = None,
                 filters: Mapping[str, Any] | None = None, allow_none: bool = False,
                 image_mode: ImageMode = "path", budget: EvidenceBudget | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
        if not isinstance(rag, UniversalRAG):
            raise TypeError(f"rag must be a universalrag.UniversalRAG, got {type(rag).__name__}.")
        if similarity_top_k is not None and similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be at least 1, got {similarity_top_k}.")
        if isinstance(routes, str):
            raise TypeError(f"routes must be a list of corpus names, not the string {routes!r}.")
        self.rag = rag
        self.similarity_top_k = similarity_top_k
        self.routes = tuple(routes) if routes is not None else None
        self.filter = filter if filter is not None else filters
        self.allow_none = allow_none
        self.image_mode: ImageMode = image_mode
        self.budget = budget or rag.budget
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def __repr__(self) -> str:
        return (f"UniversalRAGRetriever(rag={self.rag!r}, similarity_top_k={self.similarity_top_k}, "
                f"routes={self.routes})")

    def _fixed_decision(self) -> RouteDecision | None:
        if self.routes is None:
            return None
        return RouteDecision(routes=self.routes, scores={}, router="caller")

    def _nodes(self, hits: Sequence[Any], decision: RouteDecision) -> list[NodeWithScore]:
        return hits_to_nodes(hits, decision=decision, image_mode=self.image_mode, budget=self.budget)

    @property
    def filters(self) -> Mapping[str, Any] | None:
        """Deprecated spelling of ``filter``."""
        return self.filter

    def route(self, query: str) -> RouteDecision:
        """The corpora this retriever searches for ``query`` (the fixed ``routes``, else the router's choice)."""
        return self._fixed_decision() or self.rag.route(query, allow_none=self.allow_none)

    def _args(self) -> dict[str, Any]:
        return {"k": self.similarity_top_k, "routes": self.routes, "filter": self.filter,
                "allow_none": self.allow_none}

    def retrieve_with_decision(self, query: str) -> tuple[RouteDecision, list[NodeWithScore]]:
        """The route decision and the nodes for ``query`` (what :meth:`retrieve` returns, without callbacks)."""
        decision, hits = self.rag.search(query, **self._args())
        return decision, self._nodes(hits, decision)

    async def aretrieve_with_decision(self, query: str) -> tuple[RouteDecision, list[NodeWithScore]]:
        """Async twin of :meth:`retrieve_with_decision`."""
        decision, hits = await self.rag.asearch(query, **self._args())
        return decision, await asyncio.to_thread(self._nodes, hits, decision)  # base64 mode decodes media

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.retrieve_with_decision(query_bundle.query_str)[1]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return (await self.aretrieve_with_decision(query_bundle.query_str))[1]
