"""Optional frameworks, imported on first use: a missing one raises :class:`MissingDependencyError` naming the
extra that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from universalrag.errors import MissingDependencyError

__all__ = ["require_langchain", "require_langgraph"]


def _require(module: str, package: str, extra: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(package, extra, feature=feature) from e


def require_langchain() -> ModuleType:
    """``langchain_core``, or :class:`MissingDependencyError` pointing at ``universalrag-postgres[langchain]``."""
    return _require("langchain_core", "langchain-core", "langchain", "the LangChain integration")


def require_langgraph() -> ModuleType:
    """``langgraph``, or :class:`MissingDependencyError` pointing at ``universalrag-postgres[langgraph]``."""
    _require("langchain_core", "langchain-core", "langgraph", "the LangGraph integration")
    return _require("langgraph", "langgraph", "langgraph", "the LangGraph integration")
