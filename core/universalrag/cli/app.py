"""Root of the ``universalrag`` command: global options, shared context, error handling.

Errors a user can act on are printed as one line (``--debug`` shows the traceback) and end with exit code 1.
"""

from __future__ import annotations

import sys
import traceback
from functools import cached_property
from typing import Any

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from ..config import Settings
from ..errors import UniversalRAGError

__all__ = ["CliContext", "app", "console", "err_console", "main"]

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


class CliContext:
    """Settings, store and embedder of one invocation, created on first use."""

    def __init__(self, settings: Settings, *, debug: bool = False) -> None:
        self.settings = settings
        self.debug = debug

    @cached_property
    def store(self) -> Any:
        from ..store import Store

        return Store(settings=self.settings)

    @cached_property
    def embedder(self) -> Any:
        from ..embed import embedder_from_settings

        _quiet_transformers()
        return embedder_from_settings(self.settings)

    @cached_property
    def visual_encoder(self) -> Any:
        """The configured visual encoder, or ``None`` (images and videos then use their text channel only)."""
        from ..embed import visual_encoder_from_settings

        _quiet_transformers()
        return visual_encoder_from_settings(self.settings)

    def rag(self, *, router: Any = None, hybrid: bool = False) -> Any:
        """The UniversalRAG facade over this invocation's store, encoders and (optional) chat model."""
        from ..pipeline import UniversalRAG

        return UniversalRAG(settings=self.settings, store=self.store, embedder=self.embedder, router=router,
                            visual_encoder=self.visual_encoder, hybrid=hybrid)

    def ensure_initialised(self) -> list[str]:
        """Migrate the schema and create the built-in corpora when they are missing (idempotent)."""
        return self.store.init(embedder=self.embedder.name, dimension=self.embedder.dimension)

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()


def _quiet_transformers() -> None:
    """No model-loading progress bars from transformers in the command's output (ours are enough)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers is a core dependency
        return
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


class _Group(TyperGroup):
    """Turns library errors into one clear line instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, typer.Exit, typer.Abort):
            raise
        except (UniversalRAGError, ValueError) as e:
            if _debug(ctx):
                traceback.print_exc()
            err_console.print(f"[bold red]error:[/] {e}", soft_wrap=True)
            raise typer.Exit(1) from None
        except Exception as e:  # noqa: BLE001 - unexpected: still one line unless --debug
            if _debug(ctx):
                traceback.print_exc()
            err_console.print(
                f"[bold red]internal error:[/] {e.__class__.__name__}: {e} (run with --debug for the traceback)",
                soft_wrap=True,
            )
            raise typer.Exit(2) from None


def _debug(ctx: click.Context) -> bool:
    obj = ctx.find_root().obj
    return bool(getattr(obj, "debug", False))


app = typer.Typer(
    cls=_Group,
    help="UniversalRAG on Postgres: routed retrieval over text, tables, images and videos, one pgvector "
    "table per corpus.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    schema: str | None = typer.Option(None, "--schema", help="Postgres schema (default: UNIVERSALRAG_SCHEMA "
                                      "or 'universalrag')."),
) -> None:
    settings = Settings.from_env()
    if schema:
        settings = settings.with_(schema=schema)
    obj = CliContext(settings, debug=debug)
    ctx.obj = obj
    ctx.call_on_close(obj.close)


def _register() -> None:
    from . import commands, corpora, demo, routing

    commands.register(app)
    corpora.register(app)
    routing.register(app)
    demo.register(app)
    from . import worker as sync_worker  # the sync worker (issue 13)
    sync_worker.register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        app(args=argv if argv is not None else sys.argv[1:], prog_name="universalrag")
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise SystemExit(130) from None
