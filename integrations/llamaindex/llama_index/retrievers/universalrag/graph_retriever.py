"""A LlamaIndex retriever over the knowledge graph: the units the names in a query reach, ranked."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from universalrag.errors import InvalidInputError
from universalrag.evidence import EvidenceBudget, check_unit_tokens
from universalrag.graph.retrieve import GraphRetrieval, residual_terms
from universalrag.graph.walk import MAX_HOPS, WalkLimits
from universalrag.pipeline import UniversalRAG
from universalrag.types import Hit

from .base import UNIT_TEXT_TOKENS, ImageMode, check_top_k, cut_to_k, hits_to_nodes

__all__ = ["UniversalRAGGraphRetriever"]


class UniversalRAGGraphRetriever(BaseRetriever):
    """Retrieves through the knowledge graph of ``rag``'s database: the names a query types (a person, a bridge, a
    table's title) are looked up among the graph's entities, the walk follows their relations up to ``hops`` steps,
    and the units that mention or are the entities reached come back as nodes — ranked by their similarity to the
    query with the walk's weight, the unit of the thing named last. A question about something *related to* what
    it names ("where was the designer of the Varnholt Bridge born?") finds the engineer's row that similarity
    alone misses.

    Each node's metadata carries ``graph_path`` (``seed``: the name the query typed, ``entity`` reached,
    ``relation``, ``hops``, ``role``), with the usual ``corpus``, ``rank`` and scores. A query that names nothing
    the graph holds, or a database without a graph, returns no nodes: combine it with
    :class:`~llama_index.retrievers.universalrag.UniversalRAGRetriever` (``QueryFusionRetriever``, or a router) for
    questions of every kind. ``similarity_top_k`` (default ``rag.k``), ``max_unit_tokens``, ``image_mode`` and
    ``budget`` mean what they mean for ``UniversalRAGRetriever``.
    """

    def __init__(
        self,
        *,
        rag: UniversalRAG,
        similarity_top_k: int | None = None,
        hops: int = 2,
        image_mode: ImageMode = "path",
        budget: EvidenceBudget | None = None,
        max_unit_tokens: int | None = UNIT_TEXT_TOKENS,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(rag, UniversalRAG):
            raise TypeError(f"rag must be a universalrag.UniversalRAG, got {type(rag).__name__}.")
        if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
            raise InvalidInputError(f"hops must be an integer from 1 to {MAX_HOPS}, got {hops!r}.")
        self.rag = rag
        self.similarity_top_k = check_top_k(similarity_top_k)
        self.hops = hops
        self.max_unit_tokens = check_unit_tokens(max_unit_tokens)
        self.image_mode: ImageMode = image_mode
        self.budget = budget or rag.budget
        self._graph = GraphRetrieval(limits=WalkLimits(hops=hops))
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def __repr__(self) -> str:
        return (
            f"UniversalRAGGraphRetriever(rag={self.rag!r}, similarity_top_k={self.similarity_top_k}, hops={self.hops})"
        )

    @property
    def k(self) -> int:
        """The most nodes a retrieval returns: ``similarity_top_k``, else ``rag.k``."""
        return self.similarity_top_k or self.rag.k

    def search(self, query: str) -> list[Hit]:
        """The hits the graph reaches for ``query``, best first, cut to :attr:`k` (no nodes built)."""
        if not query.strip():
            raise InvalidInputError("The query is empty: ask with the name of something the corpora hold.")
        reached = self._graph.walk(self.rag.store, query)
        if not reached:
            return []
        vector = [float(x) for x in self.rag.embedder.embed([query])[0]]
        wanted = residual_terms(query, reached, {})
        return cut_to_k(self._graph.hits(self.rag.store, query, vector, reached, wanted=wanted), self.k)

    def to_nodes(self, hits: Sequence[Hit]) -> list[NodeWithScore]:
        """Nodes for ``hits``, each with its ``graph_path`` in its metadata (kept from what models and embedders
        see, as the other bookkeeping is)."""
        nodes = hits_to_nodes(
            hits, image_mode=self.image_mode, budget=self.budget, max_unit_tokens=self.max_unit_tokens
        )
        for node, hit in zip(nodes, hits, strict=True):
            if hit.path is not None:
                node.node.metadata["graph_path"] = hit.path.to_dict()
                for excluded in (node.node.excluded_llm_metadata_keys, node.node.excluded_embed_metadata_keys):
                    if "graph_path" not in excluded:
                        excluded.append("graph_path")
        return nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.to_nodes(self.search(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await asyncio.to_thread(self.search, query_bundle.query_str)
        return self.to_nodes(hits)

    def __getstate__(self) -> Any:
        raise TypeError("UniversalRAGGraphRetriever holds a live database pipeline: build one per process.")
