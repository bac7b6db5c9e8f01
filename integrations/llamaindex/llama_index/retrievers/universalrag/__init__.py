"""LlamaIndex adapters for universalrag: routed multimodal retrieval where every corpus is a pgvector table.

- :class:`UniversalRAGRetriever` — route, then search the chosen corpora; ``TextNode``/``ImageNode`` results.
- :class:`UniversalRAGQueryEngine` — route → retrieve → answer with a LlamaIndex LLM or the core's generator.
- :class:`UniversalRAGSelector` — the core's evidence-aware routing as a selector for
  ``RouterQueryEngine``/``RouterRetriever``.
- :func:`corpus_retriever_tools` — a ``RetrieverTool`` per corpus.
- :func:`hits_to_nodes` — core hits as LlamaIndex nodes.
- :class:`UniversalRAGGraphRetriever` — the units the names in a query reach through the knowledge graph.

Retrievers, query engines and tools take LlamaIndex's conventions: ``similarity_top_k`` is the total number of
nodes, ``filter`` accepts ``MetadataFilters`` (:mod:`.filters`), node texts are cut at ``max_unit_tokens``.

This module only re-exports, lazily: ``llama_index.core`` is imported when a name is first used, and a missing
``llama-index-core`` raises :class:`~universalrag.errors.MissingDependencyError` naming the distribution that
brings it, ``llama-index-retrievers-universalrag``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import hits_to_nodes
    from .graph_retriever import UniversalRAGGraphRetriever
    from .query_engine import UniversalRAGQueryEngine
    from .retriever import UniversalRAGRetriever
    from .selector import UniversalRAGSelector
    from .tools import corpus_retriever_tools

__all__ = [
    "UniversalRAGGraphRetriever",
    "UniversalRAGQueryEngine",
    "UniversalRAGRetriever",
    "UniversalRAGSelector",
    "corpus_retriever_tools",
    "hits_to_nodes",
]

_WHERE = {
    "UniversalRAGGraphRetriever": "graph_retriever",
    "UniversalRAGQueryEngine": "query_engine",
    "UniversalRAGRetriever": "retriever",
    "UniversalRAGSelector": "selector",
    "corpus_retriever_tools": "tools",
    "hits_to_nodes": "base",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = import_module(f".{_WHERE[name]}", __name__)
    except ImportError as e:
        from universalrag.errors import MissingDependencyError

        if isinstance(e, MissingDependencyError) or not (e.name or "").startswith("llama_index.core"):
            raise
        raise MissingDependencyError(
            "llama-index-core",
            "",
            feature="the LlamaIndex integration",
            distribution="llama-index-retrievers-universalrag",
        ) from e
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
