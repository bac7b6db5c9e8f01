"""LangChain and LangGraph adapters for universalrag: routed multimodal retrieval over pgvector corpora.

- :class:`UniversalRAGRetriever` (routes, then retrieves) and :class:`CorpusRetriever` (one corpus);
- :func:`create_corpus_tools`: a ``search_<corpus>`` tool per corpus for agents;
- :func:`create_entity_tool`: a tool exploring the knowledge graph around a name;
- :class:`UniversalRAGVectorStore`: one corpus as a LangChain ``VectorStore``;
- :func:`documents_to_content_blocks` / :func:`build_chat_messages`: images and video frames as image blocks;
- :class:`LangChainGenerator`: any chat model as the core's answer generator;
- :mod:`langchain_universalrag.graph`: the LangGraph routing edge, nodes and :func:`~.graph.build_graph`.

This module only re-exports, lazily: importing it needs nothing; using a name without ``langchain-core``
installed raises :class:`~universalrag.errors.MissingDependencyError` naming ``langchain-universalrag``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embeddings import LangChainEmbedder, UniversalRAGEmbeddings
    from .entity_tools import create_entity_tool
    from .generators import LangChainGenerator
    from .messages import build_chat_messages, documents_to_content_blocks, documents_to_evidence
    from .retrievers import CorpusRetriever, UniversalRAGRetriever
    from .tools import create_corpus_tool, create_corpus_tools, format_documents
    from .vectorstores import UniversalRAGVectorStore

_EXPORTS: dict[str, str] = {
    "UniversalRAGRetriever": "retrievers",
    "CorpusRetriever": "retrievers",
    "create_corpus_tools": "tools",
    "create_corpus_tool": "tools",
    "create_entity_tool": "entity_tools",
    "format_documents": "tools",
    "UniversalRAGVectorStore": "vectorstores",
    "LangChainEmbedder": "embeddings",
    "UniversalRAGEmbeddings": "embeddings",
    "LangChainGenerator": "generators",
    "documents_to_content_blocks": "messages",
    "documents_to_evidence": "messages",
    "build_chat_messages": "messages",
}

__all__ = [
    "CorpusRetriever",
    "LangChainEmbedder",
    "LangChainGenerator",
    "UniversalRAGEmbeddings",
    "UniversalRAGRetriever",
    "UniversalRAGVectorStore",
    "build_chat_messages",
    "create_corpus_tool",
    "create_corpus_tools",
    "create_entity_tool",
    "documents_to_content_blocks",
    "documents_to_evidence",
    "format_documents",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
