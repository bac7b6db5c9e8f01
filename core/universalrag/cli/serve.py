"""``universalrag serve``: keep the encoder, the routers and the database connections loaded, and answer
``search``, ``route`` and ``ask`` for other ``universalrag`` processes over a Unix socket.

The socket is ``UNIVERSALRAG_HOME/serve.sock`` (mode 0600, the home directory's owner only). Each request is
the caller's command line with its ``UNIVERSALRAG_*`` environment and terminal; the server runs it through the
same typer app as a one-shot process (so results and output are identical) and returns stdout, stderr and the
exit code (see :mod:`.protocol`). The caller never sends a credential: the server uses its own database URLs and
API keys, and refuses a request whose digests of them differ (the caller then runs the command itself).

Connections are served by up to :data:`MAX_CONNECTIONS` threads, each reading its request within
:data:`READ_TIMEOUT_S` seconds and :data:`~.protocol.MAX_MESSAGE_BYTES` bytes, so a client that connects and
stalls costs one thread for a few seconds, never the server. Commands run one at a time (their output is
captured through the process's stdout); a request that waits more than :data:`BUSY_WAIT_S` for its turn is
refused and runs in the caller's process.

The server's pipelines outlive any one command, but what they load from the database can change under them:
``universalrag router adapt`` and ``router reset`` (run by any process) store or remove this database's adapted
combiner. So before a request first uses a pipeline, :class:`ServedSession` compares the stored combiner's stamp
(its version and when it was stored: one indexed single-row query) with the one it loaded, and reloads it when
they differ; a served command then decides exactly as ``--no-server`` would.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from ..errors import ConfigError, UniversalRAGError
from .client import SECRET_NAME, secret_digests
from .context import CliContext, Invocation, Session
from .protocol import MAX_SOCKET_PATH, SERVED_COMMANDS, command_of, read_message, socket_path, write_message
from .trust import check_home

if TYPE_CHECKING:
    from ..config import Settings
    from ..pipeline import UniversalRAG

__all__ = ["BUSY_WAIT_S", "MAX_CONNECTIONS", "READ_TIMEOUT_S", "ServedSession", "Server", "execute", "register"]

#: Connections served at the same time; one more is closed at once (its caller runs the command itself).
MAX_CONNECTIONS = 16
#: Seconds a connection has to send its request (and to take its reply).
READ_TIMEOUT_S = 10.0
#: Seconds a request waits for the command before it to finish; then it is refused.
BUSY_WAIT_S = 30.0

#: What identifies a stored combiner: ``(version, stored at)``; ``None`` when none is stored.
Stamp = tuple[str, str] | None


class ServedSession(Session):
    """The server's :class:`~.context.Session`: before a request first uses the pipeline of some settings, the
    stored combiner's stamp is compared with the one the pipeline decided with, and the combiner is reloaded
    when another process adapted or reset it (so the long-lived pipeline never routes with a stale one)."""

    def __init__(self) -> None:
        super().__init__()
        self._stamps: dict[Settings, Stamp] = {}
        self._tables: set[Settings] = set()  # settings whose schema has the combiners table (it is never dropped)
        self._checked: set[Settings] = set()

    def begin_request(self) -> None:
        """A new request: each pipeline is checked again on its first use."""
        self._checked.clear()

    def rag(self, settings: Settings) -> UniversalRAG:
        """The pipeline for ``settings``, its combiner brought up to date once per request."""
        if settings in self._checked:
            return super().rag(settings)
        self._checked.add(settings)
        fresh = settings not in self._stamps
        stamp = self._read_stamp(settings)  # read before a new pipeline loads its combiner: never newer than it
        rag = super().rag(settings)
        if not fresh and stamp != self._stamps[settings]:
            rag.reload_combiner()
        self._stamps[settings] = stamp
        return rag

    def _read_stamp(self, settings: Settings) -> Stamp:
        from ..store.routing_log import combiner_stamp

        try:
            stamp, exists = combiner_stamp(self.store(settings), known_table=settings in self._tables)
        except UniversalRAGError:
            self._tables.discard(settings)  # e.g. the schema was dropped: the command reports it
            return None
        if exists:
            self._tables.add(settings)
        return stamp


def execute(request: dict[str, Any], session: Session, command: Any) -> dict[str, Any]:
    """Run one served command line with ``command`` (the root click command) in this process, with the
    caller's environment and terminal; its output is captured and returned. A command that is not served is
    refused (the caller runs it itself)."""
    argv = [str(a) for a in request.get("argv", [])]
    if command_of(argv) not in SERVED_COMMANDS:
        return {"refused": f"`{command_of(argv)}` is not answered by the server"}
    if request.get("secrets") != secret_digests(os.environ):
        return {"refused": "the server runs with other credentials (database URLs or API keys) than the caller"}
    environ = {k: str(v) for k, v in dict(request.get("env") or {}).items() if not SECRET_NAME.search(str(k))}
    environ.update((k, v) for k, v in os.environ.items() if k in request["secrets"])
    if isinstance(session, ServedSession):
        session.begin_request()
    invocation = Invocation(
        environ=environ,
        terminal=bool(request.get("terminal")),
        width=request.get("width"),
        color=bool(request.get("color")),
        session=session,
        served=True,
    )
    stdout, stderr = io.StringIO(), io.StringIO()
    here = os.getcwd()
    code: int = 0
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            os.chdir(request.get("cwd") or here)  # relative paths (--model DIR) mean the caller's directory
            command.main(args=argv, prog_name="universalrag", obj=invocation)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Exception:  # noqa: BLE001 - a bug in a command: the caller sees its traceback, the server lives on
            traceback.print_exc()
            code = 2
        finally:
            os.chdir(here)
    return {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}


class _Handler(socketserver.StreamRequestHandler):
    server: Server
    timeout = READ_TIMEOUT_S  # on the connection's socket: reading the request, writing the reply

    def handle(self) -> None:
        try:
            request = read_message(self.rfile)
        except OSError:  # timed out or reset: the client stalled or left
            return
        if request is None:
            return
        started = time.perf_counter()
        if not self.server.turn.acquire(timeout=BUSY_WAIT_S):
            reply: dict[str, Any] = {"refused": "the server is busy"}
        else:
            try:
                reply = execute(request, self.server.session, self.server.command)
            finally:
                self.server.turn.release()
        try:
            write_message(self.wfile, reply)
        except OSError:
            return
        # one line per request on the server's own stdout (never the query: it may be private)
        print(
            f"{command_of([str(a) for a in request.get('argv', [])])}: "
            f"{'refused' if 'refused' in reply else 'exit ' + str(reply['code'])} in "
            f"{(time.perf_counter() - started) * 1000:.0f} ms",
            flush=True,
        )


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A Unix socket server answering served commands with ``command`` (the root click command) from one
    :class:`~.context.Session`: up to :data:`MAX_CONNECTIONS` connections at a time, one command at a time."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, path: Path, session: Session, command: Any) -> None:
        self.session = session
        self.command = command
        self.path = path
        self.turn = threading.Lock()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(str(path), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # full: the caller runs the command itself
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def server_close(self) -> None:
        super().server_close()
        self.path.unlink(missing_ok=True)


def _live(path: Path) -> bool:
    """Whether a server answers on ``path`` (a socket file left by a killed server does not)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def _warm_up(obj: CliContext) -> None:
    """Load everything a first query would: the schema, the text encoder, the default router (extended to the
    user's corpora) and the database connections."""
    obj.ensure_initialised()
    rag = obj.rag
    rag.embedder.embed(["warm-up"])
    rag.route("warm-up")


def serve(
    ctx: typer.Context,
    preload: bool = typer.Option(
        True,
        "--preload/--no-preload",
        help="Load the encoder and the router before accepting requests (default) or on the first request.",
    ),
) -> None:
    """Keep the encoder and the router loaded and answer `search`, `route` and `ask` from other `universalrag`
    processes (a Unix socket under UNIVERSALRAG_HOME). They use it automatically while it runs; --no-server
    makes a command run on its own. Ctrl-C stops it."""
    obj: CliContext = ctx.find_root().obj
    home = obj.settings.home_dir
    path = socket_path(home)
    if len(str(path)) > MAX_SOCKET_PATH:
        raise ConfigError(
            f"The socket path {str(path)!r} is too long for a Unix socket; set UNIVERSALRAG_HOME "
            "to a shorter directory."
        )
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    check_home(home)
    if path.exists():
        if _live(path):
            raise ConfigError(f"A server is already running on {path}.")
        path.unlink()  # left by a server that was killed
    served = CliContext(obj.settings, output=obj.output, session=ServedSession(), debug=obj.debug, served=obj.served)
    ctx.call_on_close(served.session.close)
    if preload:
        _warm_up(served)
    old_umask = os.umask(0o077)
    try:
        server = Server(path, served.session, ctx.find_root().command)
    finally:
        os.umask(old_umask)

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    obj.output.print(
        Text(f"serving {obj.settings.schema!r} and other schemas on {path} (pid {os.getpid()}); Ctrl-C stops"),
        soft_wrap=True,
    )
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        signal.signal(signal.SIGTERM, previous)
    obj.output.print("stopped")


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the root app."""
    app.command()(serve)
