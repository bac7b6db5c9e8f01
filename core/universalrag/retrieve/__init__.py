"""Retrieval for a query plan: searching corpora (each in its own embedding space), evidence-aware routing
(probe every candidate corpus, combine the router's prior with the evidence) and what follows the decision (each
chosen corpus's ranking, their merge). This module only re-exports."""

from __future__ import annotations

from .orchestrate import Retrieval, embedding_space
from .probing import EvidenceRouting, ProbedQuery
from .searcher import Searcher, routing_candidates, search_corpus

__all__ = [
    "EvidenceRouting",
    "ProbedQuery",
    "Retrieval",
    "Searcher",
    "embedding_space",
    "routing_candidates",
    "search_corpus",
]
