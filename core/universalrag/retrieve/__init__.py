"""Retrieval for a query plan: searching corpora (each in its own embedding space) and evidence-aware routing
(probe every candidate corpus, combine the router's prior with the evidence). This module only re-exports."""

from __future__ import annotations

from .probing import EvidenceRouting, ProbedQuery
from .searcher import Searcher, routing_candidates, search_corpus

__all__ = ["EvidenceRouting", "ProbedQuery", "Searcher", "routing_candidates", "search_corpus"]
