"""Draining a backlog: the worker claims the next batch while it writes one, gives back what it claimed ahead
when it stops or fails, and ``sync_status``/``universalrag status`` show how far the backfill of an attached
table has come. Real PostgreSQL, plain SQL for the application, the real bundled MiniLM encoder."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from support.sync import app_sql, queue_count, unit_rows

from universalrag.sync import BatchResult, Worker, WorkerOptions, sync_status
from universalrag.sync.status import backfill_line, backfill_progress


@pytest.fixture
def app(database_url: str, store: Any) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    app_schema = f"{store.schema}_app"
    conn = app_sql(database_url)
    conn.execute(
        sql.SQL("CREATE SCHEMA {0}; CREATE TABLE {0}.items (id bigint PRIMARY KEY, title text NOT NULL)").format(
            sql.Identifier(app_schema)
        )
    )
    yield conn, app_schema
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(app_schema)))
    conn.close()


def fill(conn: psycopg.Connection[Any], app_schema: str, first: int, last: int) -> None:
    conn.execute(
        sql.SQL(
            "INSERT INTO {}.items SELECT g, 'item ' || g || ' about the ' || (ARRAY['printer', 'badge', 'desk'])"
            "[1 + g %% 3] FROM generate_series(%s::bigint, %s::bigint) g"
        ).format(sql.Identifier(app_schema)),
        (first, last),
    )


def attach(conn: psycopg.Connection[Any], schema: str, app_schema: str) -> int:
    row = conn.execute(
        sql.SQL("SELECT {}.attach_table(%s::regclass, corpus => 'items', content => 'title')").format(
            sql.Identifier(schema)
        ),
        (f"{app_schema}.items",),
    ).fetchone()
    assert row is not None
    return int(row[0])


def claimed(conn: psycopg.Connection[Any], schema: str) -> int:
    statement = sql.SQL("SELECT count(*) FROM {}.sync_queue WHERE locked_by IS NOT NULL").format(sql.Identifier(schema))
    return int(conn.execute(statement).fetchone()[0])  # type: ignore[index]


def items_status(store: Any) -> Any:
    [status] = [st for st in sync_status(store) if st.corpus == "items"]
    return status


def test_status_shows_the_backfill_of_an_attached_table_while_it_runs(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 1, 3000)
    assert attach(conn, store.schema, app_schema) == 3000
    fill(conn, app_schema, 3001, 3010)  # inserted after the attach: queued, but not part of the backfill
    status = items_status(store)
    assert status.backlog == 3010
    assert status.backfill is not None
    assert (status.backfill.rows, status.backfill.done, status.backfill.left) == (3000, 0, 3000)
    assert status.backfill.eta_s is None and "no row done yet" in backfill_line(status.backfill.to_dict())
    with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=100)) as worker:
        assert worker.run_batch().written == 100
        assert worker.run_batch().written == 100
    status = items_status(store)
    progress = status.backfill
    assert progress is not None and (progress.done, progress.left, progress.failed) == (200, 2800, 0)
    assert progress.rate > 0 and progress.eta_s == pytest.approx(2800 / progress.rate)
    assert progress.rate == pytest.approx(200 / progress.elapsed_s)
    assert status.backlog == 2810
    from typer.testing import CliRunner

    from universalrag.cli import app as cli

    env = {"UNIVERSALRAG_DATABASE_URL": store.settings.database_url, "UNIVERSALRAG_SCHEMA": store.schema}
    shown = CliRunner().invoke(cli, ["status", "--json"], env=env)
    assert shown.exit_code == 0, shown.stderr
    [entry] = [q for q in json.loads(shown.stdout)["sync"] if q["corpus"] == "items"]
    assert entry["backfill"]["rows"] == 3000 and entry["backfill"]["done"] == 200
    text = CliRunner().invoke(cli, ["status"], env=env).stdout
    assert "backfill 200 / 3,000 rows (6.7 %)" in text and "left" in text
    # The rows of the backfill leave it as they are settled, whichever way: deleted rows count as done.
    conn.execute(sql.SQL("DELETE FROM {}.items WHERE id > 1000").format(sql.Identifier(app_schema)))
    sql_view = conn.execute(
        sql.SQL("SELECT backfill_rows, backfill_left FROM {}.sync_status WHERE corpus = 'items'").format(
            sql.Identifier(store.schema)
        )
    ).fetchone()
    assert sql_view == (3000, 2800)  # deleted rows leave the queue when the worker settles them


def test_a_finished_backfill_is_no_longer_shown(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 1, 30)
    attach(conn, store.schema, app_schema)
    assert items_status(store).backfill is not None
    with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=8)) as worker:
        assert worker.drain().written == 30
    status = items_status(store)
    assert status.backlog == 0 and status.backfill is None


def test_progress_arithmetic() -> None:
    progress = backfill_progress(rows=1000, left=600, failed=100, elapsed_s=20.0)
    assert (progress.done, progress.rate, progress.eta_s) == (300, 15.0, 40.0)
    assert progress.fraction == pytest.approx(0.3)
    line = backfill_line(progress.to_dict())
    assert line == "backfill 300 / 1,000 rows (30.0 %), 15.0 rows/s, about 40 s left, 100 failed"


def test_drain_claims_the_next_batch_while_writing_and_writes_every_row_once(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 1, 60)
    attach(conn, store.schema, app_schema)
    ahead: list[int] = []

    def seen(batch: BatchResult) -> None:  # between two batches: the next one is already claimed
        ahead.append(claimed(conn, store.schema))

    with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=8)) as worker:
        total = worker.drain(on_batch=seen)
    assert total.written == 60 and total.claimed == 60
    assert ahead == [8] * 6 + [4, 0]  # 7 batches of 8 and one of 4: after the last, nothing is claimed
    assert claimed(conn, store.schema) == 0 and queue_count(conn, store.schema) == 0
    units = unit_rows(conn, store.schema, "items")
    assert sorted(int(k) for k in units) == list(range(1, 61))
    titles = dict(conn.execute(sql.SQL("SELECT id::text, title FROM {}.items").format(sql.Identifier(app_schema))))
    assert {k: u["content"] for k, u in units.items()} == titles


def test_a_row_updated_while_its_batch_is_written_keeps_its_newest_text(app: Any, store: Any, minilm: Any) -> None:
    """The batch claimed ahead may hold a newer entry of a unit the batch being written holds: each is written in
    queue order and the unit ends with the row's latest text."""
    conn, app_schema = app
    fill(conn, app_schema, 1, 40)
    attach(conn, store.schema, app_schema)
    table = sql.Identifier(app_schema, "items")
    rounds = iter(range(10))

    def edit(batch: BatchResult) -> None:  # ten edits of eight rows each, then the queue runs dry
        n = next(rounds, None)
        if n is None:
            return
        conn.execute(sql.SQL("UPDATE {} SET title = title || ' v' || %s WHERE id %% 5 = %s").format(table), (n, n % 5))

    with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=8)) as worker:
        worker.drain(on_batch=edit)
        worker.drain()
    units = unit_rows(conn, store.schema, "items")
    titles = dict(conn.execute(sql.SQL("SELECT id::text, title FROM {}").format(table)))
    assert len(units) == 40 and {k: u["content"] for k, u in units.items()} == titles
    assert queue_count(conn, store.schema) == 0 and claimed(conn, store.schema) == 0


def test_a_failure_mid_drain_gives_back_the_batch_claimed_ahead_uncounted(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 1, 40)
    attach(conn, store.schema, app_schema)

    class FailingOnThirdBatch:  # the real encoder, until the process runs out of memory on its third batch
        name, dimension = minilm.name, minilm.dimension
        calls = 0

        def embed(self, texts: Any) -> Any:
            type(self).calls += 1
            if self.calls == 3:
                raise MemoryError("out of memory")
            return minilm.embed(texts)

    worker = Worker(store, embedder=FailingOnThirdBatch(), options=WorkerOptions(batch_size=8))  # type: ignore[arg-type]
    with pytest.raises(Exception, match="out of memory"):
        worker.drain()
    worker.close()
    assert claimed(conn, store.schema) == 0  # every claim given back
    attempts = dict(
        conn.execute(sql.SQL("SELECT row_key->>'id', attempts FROM {}.sync_queue").format(sql.Identifier(store.schema)))
    )
    written = set(unit_rows(conn, store.schema, "items"))
    assert len(written) in (8, 16) and not set(attempts) & written  # written batches left the queue
    # The batch the encoder failed on counted an attempt, the batch claimed behind it did not.
    assert sorted(attempts.values()).count(1) == 8 and set(attempts.values()) <= {0, 1}
    with Worker(store, embedder=minilm, options=WorkerOptions(batch_size=8)) as again:
        again.drain()
    assert len(unit_rows(conn, store.schema, "items")) == 40 and queue_count(conn, store.schema) == 0


def test_a_stopped_worker_gives_back_its_batch_claimed_ahead(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    fill(conn, app_schema, 1, 200)
    attach(conn, store.schema, app_schema)
    stop = threading.Event()
    worker = Worker(store, embedder=minilm, options=WorkerOptions(batch_size=8, poll_interval_s=0.2))
    thread = threading.Thread(target=worker.run, kwargs={"stop": stop, "on_batch": lambda _: stop.set()})
    thread.start()
    thread.join(timeout=300)
    assert not thread.is_alive()
    assert claimed(conn, store.schema) == 0
    statement = sql.SQL("SELECT max(attempts) FROM {}.sync_queue").format(sql.Identifier(store.schema))
    assert conn.execute(statement).fetchone() == (0,)  # the batch claimed ahead was never tried
    assert len(unit_rows(conn, store.schema, "items")) == 8
    worker.close()
