"""Several workers on one queue, a worker killed with SIGKILL mid-batch, and attaching a table of 50k rows.

Writes are plain SQL through psycopg; the workers embed with the real bundled MiniLM encoder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from support.sync import app_sql, queue_count, unit_rows

from universalrag.sync import BatchResult, Worker, WorkerOptions, sync_status

WORDS = ["printer", "network", "laptop", "badge", "coffee", "parking", "email", "phone", "desk", "screen"]


@pytest.fixture
def app(database_url: str, store: Any) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    app_schema = f"{store.schema}_app"
    conn = app_sql(database_url)
    conn.execute(
        sql.SQL(
            "CREATE SCHEMA {0}; CREATE TABLE {0}.items (id bigint PRIMARY KEY, title text NOT NULL, "
            "note text, hits int NOT NULL DEFAULT 0)"
        ).format(sql.Identifier(app_schema))
    )
    yield conn, app_schema
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(app_schema)))
    conn.close()


def fill(conn: psycopg.Connection[Any], app_schema: str, n: int, *, start: int = 1, repeat: int = 1) -> None:
    """``n`` items titled "ticket <id> about the <word>", the topic ``repeat`` times (longer texts, slower batches)."""
    conn.execute(
        sql.SQL(
            "INSERT INTO {}.items (id, title) SELECT g, 'ticket ' || g || repeat(' about the ' || "
            "(%s::text[])[1 + g %% 10], %s) FROM generate_series(%s::bigint, %s::bigint) g"
        ).format(sql.Identifier(app_schema)),
        (WORDS, repeat, start, start + n - 1),
    )


def attach(conn: psycopg.Connection[Any], schema: str, app_schema: str) -> int:
    return int(
        conn.execute(
            sql.SQL(
                "SELECT {}.attach_table(%s::regclass, corpus => 'items', content => 'title', "
                "description => 'Work items')"
            ).format(sql.Identifier(schema)),
            (f"{app_schema}.items",),
        ).fetchone()[0]
    )  # type: ignore[index]


def test_two_workers_share_one_queue(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 240)
    assert attach(conn, store.schema, app_schema) == 240
    results = [BatchResult(), BatchResult()]
    workers = [Worker(store, embedder=minilm, options=WorkerOptions(batch_size=16)) for _ in range(2)]

    def churn() -> None:  # the application keeps editing titles while the workers run
        for round_ in range(5):
            conn.execute(
                sql.SQL("UPDATE {}.items SET title = title || ' v' || %s WHERE id %% 40 = %s").format(
                    sql.Identifier(app_schema)
                ),
                (round_, round_),
            )
            time.sleep(0.05)

    threads = [threading.Thread(target=lambda i=i: results[i].add(workers[i].drain())) for i in range(2)]
    threads.append(threading.Thread(target=churn))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    for w in workers:
        w.close()
    with Worker(store, embedder=minilm) as late:  # anything queued after the drains stopped
        late.drain()
    assert results[0].claimed > 0 and results[1].claimed > 0
    units = unit_rows(conn, store.schema, "items")
    assert len(units) == 240 and store.counts()["items"] == 240
    titles = dict(
        conn.execute(sql.SQL("SELECT id::text, title FROM {}.items").format(sql.Identifier(app_schema))).fetchall()
    )
    assert {k: u["content"] for k, u in units.items()} == titles  # every unit holds its row's latest title
    assert queue_count(conn, store.schema) == 0


def _worker_env(store: Any, tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        UNIVERSALRAG_DATABASE_URL=store.url,
        UNIVERSALRAG_SCHEMA=store.schema,
        UNIVERSALRAG_HOME=str(tmp_path / "home"),
        UNIVERSALRAG_EMBEDDER="minilm",
    )
    return env


def test_a_worker_killed_mid_batch_loses_and_duplicates_nothing(app: Any, store: Any, tmp_path: Path) -> None:
    conn, app_schema = app
    # ~180-word titles: a batch of 25 takes a second or more to embed, so the poll below sees the next batch
    # claimed; with five-word titles an idle machine embedded every batch between two polls
    rows, batch = 150, 25
    fill(conn, app_schema, rows, repeat=60)
    attach(conn, store.schema, app_schema)
    command = [sys.executable, "-c", "from universalrag.cli import main; main()", "worker", "--batch", str(batch)]
    proc = subprocess.Popen(
        command, env=_worker_env(store, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        claimed = sql.SQL("SELECT count(*) FROM {}.sync_queue WHERE locked_by IS NOT NULL").format(
            sql.Identifier(store.schema)
        )
        deadline = time.monotonic() + 300
        # Wait until a batch has been written and the next one is claimed (being embedded), then kill.
        while time.monotonic() < deadline and not (
            store.counts()["items"] >= batch and conn.execute(claimed).fetchone()[0]
        ):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    written_before = store.counts()["items"]
    assert batch <= written_before < rows
    assert conn.execute(claimed).fetchone()[0] > 0  # the dead worker's claims are still recorded
    restart = subprocess.run(
        [*command[:-2], "--once", "--batch", str(batch)],
        env=_worker_env(store, tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert restart.returncode == 0, restart.stderr
    units = unit_rows(conn, store.schema, "items")
    assert len(units) == rows and store.counts()["items"] == rows
    assert len({u["content"] for u in units.values()}) == rows
    assert queue_count(conn, store.schema) == 0
    # The killed batch was counted as an attempt, nothing more.
    assert "0 failed" in restart.stdout


def test_attach_a_table_of_50k_rows(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 50_000)
    start = time.perf_counter()
    assert attach(conn, store.schema, app_schema) == 50_000
    elapsed = time.perf_counter() - start
    print(f"attach_table queued 50,000 rows in {elapsed:.2f} s")  # figures belong in benchmarks/sync.py
    assert queue_count(conn, store.schema, "items") == 50_000
    [status] = [st for st in sync_status(store) if st.corpus == "items"]
    assert status.backlog == 50_000
    first_id = sql.SQL("SELECT min(id) FROM {}.sync_queue").format(sql.Identifier(store.schema))
    oldest = conn.execute(first_id).fetchone()[0]
    with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=128)) as worker:
        first = worker.run_batch()
        second = worker.run_batch()
    assert first.written == second.written == 128
    assert queue_count(conn, store.schema, "items") == 50_000 - 256
    units = unit_rows(conn, store.schema, "items")
    assert len(units) == 256
    assert conn.execute(first_id).fetchone()[0] == oldest + 256  # the oldest entries went first
    # Rows written meanwhile are queued behind the backlog, and deletes act at once even so.
    fill(conn, app_schema, 10, start=50_001)
    written = sorted(int(k) for k in units)[:10]
    conn.execute(sql.SQL("DELETE FROM {}.items WHERE id = ANY (%s)").format(sql.Identifier(app_schema)), (written,))
    assert store.counts()["items"] == 256 - 10
    assert queue_count(conn, store.schema, "items") == 50_000 - 256 + 10
