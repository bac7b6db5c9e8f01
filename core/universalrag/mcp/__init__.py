"""UniversalRAG as an MCP server (``universalrag mcp``): search, routing and answers as tools, units as resources,
for agents outside Python frameworks. Needs the ``mcp`` extra. This module only re-exports, lazily: importing it
needs nothing; using a name without the MCP SDK raises :class:`~universalrag.errors.MissingDependencyError`."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import build_server
    from .transports import http_app, run_http, run_stdio

_EXPORTS = {
    "build_server": ".server",
    "http_app": ".transports",
    "run_http": ".transports",
    "run_stdio": ".transports",
}

__all__ = ["build_server", "http_app", "run_http", "run_stdio"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module, __name__), name)
