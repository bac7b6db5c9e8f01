"""Root of the ``universalrag`` command: global options, the invocation's context, error handling.

Errors a user can act on (:class:`~universalrag.errors.UniversalRAGError`) are printed as one line
(``--debug`` shows the traceback) and end with exit code 1. Usage mistakes are click's usage errors: the
command's usage line and the problem, exit code 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import traceback
from typing import Any

import typer
from typer.core import TyperGroup

from ..config import Settings
from ..errors import UniversalRAGError
from . import commands, corpora, db, demo, graph, mcp_server, routing, serve, worker
from . import eval as eval_cli
from .context import CliContext, Invocation, Output

__all__ = ["app"]


class _Group(TyperGroup):
    """Turns library errors into one clear line instead of a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UniversalRAGError as e:
            obj = ctx.find_root().obj
            if isinstance(obj, CliContext) and obj.debug:
                traceback.print_exc()
            output = obj.output if isinstance(obj, CliContext) else Output()
            output.error(str(e))
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=_Group,
    help="UniversalRAG on Postgres: routed retrieval over text, tables, images and videos, one pgvector "
    "table per corpus.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    schema: str | None = typer.Option(
        None, "--schema", help="Postgres schema (default: UNIVERSALRAG_SCHEMA or 'universalrag')."
    ),
) -> None:
    invocation = ctx.obj if isinstance(ctx.obj, Invocation) else Invocation()
    output = Output(terminal=invocation.terminal, width=invocation.width, color=invocation.color)
    # the context exists before the settings are read, so that a bad setting is reported like any error
    obj = CliContext(Settings(), output=output, session=invocation.session, debug=debug, served=invocation.served)
    ctx.obj = obj
    ctx.call_on_close(obj.close)
    settings = Settings.from_env(invocation.environ)
    obj.settings = settings.with_(schema=schema) if schema else settings


commands.register(app)
corpora.register(app)
graph.register(app)  # universalrag graph build|stats|show
routing.register(app)
demo.register(app)
db.register(app)
serve.register(app)
worker.register(app)  # the sync worker
mcp_server.register(app)  # universalrag mcp: the corpora as an MCP server
eval_cli.register(app)  # universalrag eval rag
