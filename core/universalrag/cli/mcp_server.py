"""``universalrag mcp``: serve search, routing and answers to MCP clients (stdio, or streamable HTTP)."""

from __future__ import annotations

import typer

from .context import CliContext

__all__ = ["mcp", "register"]


def mcp(
    ctx: typer.Context,
    transport: str = typer.Option(
        "stdio", "--transport", help="stdio (the client starts this command) or http (streamable HTTP)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind with --transport http."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port to bind with --transport http."),
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="UNIVERSALRAG_MCP_TOKEN",
        show_envvar=True,
        help="Bearer token every HTTP request must carry; required when --host is not a loopback address.",
    ),
    k: int = typer.Option(5, "-k", min=1, max=50, help="Results per search when the client does not say."),
    text_only: bool = typer.Option(False, "--text-only", help="Send no pictures, only text and resource links."),
) -> None:
    """Serve the corpora to MCP clients: tools search, search_corpus, route and ask; units as resources."""
    if transport not in ("stdio", "http"):
        raise typer.BadParameter("choose stdio or http", param_hint="--transport")
    from ..mcp import build_server, run_http, run_stdio
    from ..mcp.transports import check_token

    if transport == "http":
        check_token(host, token)  # before loading anything: a refused start costs nothing
    obj: CliContext = ctx.find_root().obj
    obj.ensure_initialised()
    server = build_server(obj.rag, k=k, media=not text_only)
    if transport == "stdio":
        run_stdio(server)
    else:
        run_http(server, host=host, port=port, token=token)


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command to ``app``."""
    app.command("mcp")(mcp)
