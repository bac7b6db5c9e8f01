"""Frameworks, imported on first use: a missing one raises :class:`MissingDependencyError` naming what installs it
(``langchain-core`` comes with ``langchain-universalrag``; LangGraph with its ``langgraph`` extra)."""

from __future__ import annotations

import importlib
from types import ModuleType

from universalrag.errors import MissingDependencyError

__all__ = ["require_langchain", "require_langgraph"]


#: The distribution this package ships in.
DISTRIBUTION = "langchain-universalrag"


def _require(module: str, package: str, extra: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(package, extra, feature=feature, distribution=DISTRIBUTION) from e


def require_langchain() -> ModuleType:
    """``langchain_core``, or :class:`MissingDependencyError` pointing at ``langchain-universalrag``."""
    return _require("langchain_core", "langchain-core", "", "the LangChain integration")


def require_langgraph() -> ModuleType:
    """``langgraph``, or :class:`MissingDependencyError` pointing at ``langchain-universalrag[langgraph]``."""
    _require("langchain_core", "langchain-core", "", "the LangGraph integration")
    return _require("langgraph", "langgraph", "langgraph", "the LangGraph integration")
