"""``UniversalRAGRetriever``: routed multimodal retrieval as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from universalrag.evidence import EvidenceBudget, check_unit_tokens
from universalrag.pipeline import UniversalRAG
from universalrag.types import Hit, RouteDecision

from .base import UNIT_TEXT_TOKENS, ImageMode, check_top_k, cut_to_k, hits_to_nodes
from .filters import to_core_filter

__all__ = ["UniversalRAGRetriever"]


class UniversalRAGRetriever(BaseRetriever):
    """Routes each query with the core's router and searches the chosen corpora, each in its own embedding
    space; returns ``NodeWithScore`` objects (``TextNode``, and ``ImageNode`` for images).

    ``rag`` is a :class:`~universalrag.pipeline.UniversalRAG`. ``similarity_top_k`` is, as everywhere in
    LlamaIndex, the most nodes returned in total (default: ``rag.k``, at least 1): each chosen corpus is searched
    for that many, their rankings are fused (the routing probe's hits are the results: nothing is searched twice)
    and the fused ranking is cut to ``similarity_top_k``. ``routes`` fixes the corpora and skips the router
    (``["table"]`` makes a one-corpus retriever). ``filter`` is a metadata filter: LlamaIndex ``MetadataFilters``
    (converted as :mod:`~llama_index.retrievers.universalrag.filters` says) or a mapping in the core's syntax
    (``{"title": {"$ilike": "%lighthouse%"}}``; ``filters`` is its deprecated spelling). ``max_unit_tokens`` cuts
    each node's text at about that many tokens (a long document's matched passages first; ``None`` keeps whole
    units, which for a manual can be hundreds of thousands of characters); a cut node has ``truncated: True`` in
    its metadata. ``image_mode`` and ``budget`` say how pictures travel (see
    :func:`~llama_index.retrievers.universalrag.base.hits_to_nodes`). A retriever never returns nothing because
    the router concluded ``none`` (it searches the most likely corpus) unless ``allow_none=True``.

    **Order.** The nodes come in the library's ranking, best first, and each node's metadata ``rank`` (1-based)
    records it. Scores from different corpora and channels are not on one scale, so they need not decrease along
    that order; a postprocessor that re-sorts by score (or ``LongContextReorder``) replaces the ranking — sort by
    ``rank`` to restore it. Every node's metadata also carries the route decision; ``rank``, ``truncated``, ids,
    scores and the decision stay out of what a language model or an embedder sees.

    ``copy.deepcopy`` copies the retriever's settings and shares ``rag`` and the callback manager; pickling raises
    a ``TypeError`` (a live database pipeline cannot cross processes: build one per process).
    """

    def __init__(
        self,
        *,
        rag: UniversalRAG,
        similarity_top_k: int | None = None,
        routes: Sequence[str] | None = None,
        filter: Mapping[str, Any] | MetadataFilters | None = None,
        filters: Mapping[str, Any] | MetadataFilters | None = None,
        allow_none: bool = False,
        image_mode: ImageMode = "path",
        budget: EvidenceBudget | None = None,
        max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(rag, UniversalRAG):
            raise TypeError(f"rag must be a universalrag.UniversalRAG, got {type(rag).__name__}.")
        if isinstance(routes, str):
            raise TypeError(f"routes must be a list of corpus names, not the string {routes!r}.")
        self.rag = rag
        self.similarity_top_k = check_top_k(similarity_top_k)
        self.routes = tuple(routes) if routes is not None else None
        self.filter = to_core_filter(filter if filter is not None else filters)
        self.max_unit_tokens = check_unit_tokens(max_unit_tokens)
        self.allow_none = allow_none
        self.image_mode: ImageMode = image_mode
        self.budget = budget or rag.budget
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def __repr__(self) -> str:
        return (
            f"UniversalRAGRetriever(rag={self.rag!r}, similarity_top_k={self.similarity_top_k}, routes={self.routes})"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> UniversalRAGRetriever:
        """A copy of this retriever's settings sharing ``rag`` (its pool, threads and locks cannot be copied, and
        a second pipeline per copy would be wasteful) and the callback manager (events still reach the handlers)."""
        memo[id(self.rag)] = self.rag
        memo[id(self.callback_manager)] = self.callback_manager
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            setattr(clone, name, copy.deepcopy(value, memo))
        return clone

    def __copy__(self) -> UniversalRAGRetriever:
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def _fixed_decision(self) -> RouteDecision | None:
        if self.routes is None:
            return None
        return RouteDecision(routes=self.routes, scores={}, router="caller")

    @property
    def k(self) -> int:
        """The most nodes a retrieval returns: ``similarity_top_k``, else ``rag.k``."""
        return self.similarity_top_k or self.rag.k

    @property
    def filters(self) -> Mapping[str, Any] | None:
        """Deprecated spelling of ``filter``."""
        return self.filter

    def route(self, query: str) -> RouteDecision:
        """The corpora this retriever searches for ``query`` (the fixed ``routes``, else the router's choice)."""
        return self._fixed_decision() or self.rag.route(query, allow_none=self.allow_none)

    def _args(self) -> dict[str, Any]:
        return {"k": self.similarity_top_k, "routes": self.routes, "filter": self.filter, "allow_none": self.allow_none}

    def search(self, query: str) -> tuple[RouteDecision, list[Hit]]:
        """The route decision and the core hits for ``query``, cut to :attr:`k` (no nodes built, no callbacks)."""
        decision, hits = self.rag.search(query, **self._args())
        return decision, cut_to_k(hits, self.k)

    async def asearch(self, query: str) -> tuple[RouteDecision, list[Hit]]:
        """Async twin of :meth:`search`."""
        decision, hits = await self.rag.asearch(query, **self._args())
        return decision, cut_to_k(hits, self.k)

    def to_nodes(self, hits: Sequence[Hit], decision: RouteDecision) -> list[NodeWithScore]:
        """Nodes for ``hits`` (cut to :attr:`k`), as this retriever builds them."""
        return hits_to_nodes(
            cut_to_k(hits, self.k),
            decision=decision,
            image_mode=self.image_mode,
            budget=self.budget,
            max_unit_tokens=self.max_unit_tokens,
        )

    def retrieve_with_decision(self, query: str) -> tuple[RouteDecision, list[NodeWithScore]]:
        """The route decision and the nodes for ``query`` (what :meth:`retrieve` returns; this call emits no
        callback events itself — :meth:`retrieve` and the query engine do)."""
        decision, hits = self.search(query)
        return decision, self.to_nodes(hits, decision)

    async def aretrieve_with_decision(self, query: str) -> tuple[RouteDecision, list[NodeWithScore]]:
        """Async twin of :meth:`retrieve_with_decision`."""
        decision, hits = await self.asearch(query)
        return decision, await asyncio.to_thread(self.to_nodes, hits, decision)  # base64 mode decodes media

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.retrieve_with_decision(query_bundle.query_str)[1]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return (await self.aretrieve_with_decision(query_bundle.query_str))[1]
