"""UniversalRAG on Postgres: routed retrieval over corpora of several modalities and granularities.

Every corpus is a pgvector table; a router picks the corpora for each query; each corpus is searched in its
own embedding space. This module only re-exports the public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below are, for type checkers; at run time they load on first access
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
    from .ingest import FileOutcome, IngestOptions, IngestReport, ingest_paths
    from .pipeline import UniversalRAG
    from .retrieve import routing_candidates, search_corpus
    from .routing import EnsembleRouter, ExampleRouter, LLMRouter, Router, TrainedRouter
    from .store import Store
    from .types import Answer, CorpusSpec, Evidence, Granularity, Hit, Modality, RouteDecision, SourceRecord, Unit

_EXPORTS: dict[str, str] = {
    "Settings": ".config",
    "Embedder": ".embed",
    "make_embedder": ".embed",
    "ConfigError": ".errors",
    "CorpusExistsError": ".errors",
    "CorpusNotFoundError": ".errors",
    "DimensionMismatchError": ".errors",
    "EmbeddingError": ".errors",
    "FilterError": ".errors",
    "GenerationError": ".errors",
    "IngestError": ".errors",
    "MissingDependencyError": ".errors",
    "RoutingError": ".errors",
    "StoreError": ".errors",
    "UniversalRAGError": ".errors",
    "EvidenceBudget": ".evidence",
    "FileOutcome": ".ingest",
    "IngestOptions": ".ingest",
    "IngestReport": ".ingest",
    "ingest_paths": ".ingest",
    "UniversalRAG": ".pipeline",
    "routing_candidates": ".retrieve",
    "search_corpus": ".retrieve",
    "EnsembleRouter": ".routing",
    "ExampleRouter": ".routing",
    "LLMRouter": ".routing",
    "Router": ".routing",
    "TrainedRouter": ".routing",
    "Store": ".store",
    "Answer": ".types",
    "CorpusSpec": ".types",
    "Evidence": ".types",
    "Granularity": ".types",
    "Hit": ".types",
    "Modality": ".types",
    "RouteDecision": ".types",
    "SourceRecord": ".types",
    "Unit": ".types",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first access, so that ``import universalrag`` (and the command's ``--help``)
    does not load SQLAlchemy, torch or transformers before they are needed."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


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
