"""UniversalRAG on Postgres: routed retrieval over corpora of several modalities and granularities.

Every corpus is a pgvector table; a router picks the corpora for each query; each corpus is searched in its
own embedding space. This module only re-exports the public API.
"""

from __future__ import annotations

from .config import Settings
from .embed import Embedder, make_embedder
from .errors import (
    ConfigError,
    CorpusExistsError,
    CorpusNotFoundError,
    DimensionMismatchError,
    EmbeddingError,
    FilterError,
    GenerationError,
    IngestError,
    MissingDependencyError,
    RoutingError,
    StoreError,
    UniversalRAGError,
)
from .evidence import EvidenceBudget
from .ingest.pipeline import FileOutcome, IngestOptions, IngestReport, ingest_paths
from .pipeline import UniversalRAG
from .retrieve import routing_candidates, search_corpus
from .routing import EnsembleRouter, ExampleRouter, LLMRouter, Router, TrainedRouter
from .store import Store
from .types import Answer, CorpusSpec, Evidence, Granularity, Hit, Modality, RouteDecision, SourceRecord, Unit

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "Evidence",
    "EvidenceBudget",
    "IngestOptions",
    "UniversalRAG",
    "ConfigError",
    "CorpusExistsError",
    "CorpusNotFoundError",
    "CorpusSpec",
    "DimensionMismatchError",
    "Embedder",
    "EmbeddingError",
    "FileOutcome",
    "FilterError",
    "GenerationError",
    "Granularity",
    "Hit",
    "IngestError",
    "IngestReport",
    "MissingDependencyError",
    "Modality",
    "RouteDecision",
    "Router",
    "RoutingError",
    "TrainedRouter",
    "LLMRouter",
    "EnsembleRouter",
    "ExampleRouter",
    "routing_candidates",
    "Settings",
    "SourceRecord",
    "Store",
    "StoreError",
    "Unit",
    "UniversalRAGError",
    "__version__",
    "ingest_paths",
    "make_embedder",
    "search_corpus",
]
