"""The ``universalrag`` command. ``main`` is the console script; ``app`` (the typer app) loads on first
access, so that a command answered by ``universalrag serve`` never imports typer, rich or the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .entry import main

if TYPE_CHECKING:
    from .root import app

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from .root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
