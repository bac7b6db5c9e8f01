"""Attached tables and SQL-queued units: writes through plain SQL (psycopg, no project code), the real worker with
the bundled MiniLM encoder, searches through the store."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from support.schemas import pending_pages
from support.sync import app_sql, queue_count, unit_rows

from universalrag.errors import FilterError
from universalrag.sync import Worker, WorkerOptions, sync_status

TICKETS = [
    (1, "Printer jams", "The office printer on floor two jams on every second page.", "open", "acme"),
    (2, "VPN drops", "The VPN connection drops every ten minutes when working from home.", "open", "acme"),
    (3, "Coffee machine", "The coffee machine in the kitchen leaks water onto the floor.", "closed", "globex"),
]


@pytest.fixture
def app(database_url: str, store: Any) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    """An application schema with a tickets table, next to the initialised test schema."""
    app_schema = f"{store.schema}_app"
    conn = app_sql(database_url)
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(app_schema)))
    conn.execute(
        sql.SQL(
            "CREATE TABLE {}.tickets (id int PRIMARY KEY, subject text NOT NULL, body text, status text, "
            "tenant text, views int NOT NULL DEFAULT 0)"
        ).format(sql.Identifier(app_schema))
    )
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {}.tickets (id, subject, body, status, tenant) VALUES (%s, %s, %s, %s, %s)").format(
            sql.Identifier(app_schema)
        ),
        TICKETS,
    )
    yield conn, app_schema
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(app_schema)))
    conn.close()


def attach(conn: psycopg.Connection[Any], schema: str, app_schema: str, **extra: str) -> int:
    args = {"corpus": "tickets", "content": "subject || E'\\n' || body", "metadata": "{status,tenant}", **extra}
    named = sql.SQL(", ").join(sql.SQL("{} => {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in args.items())
    statement = sql.SQL(
        "SELECT {}.attach_table({}::regclass, description => 'Support tickets of our customers', {})"
    ).format(sql.Identifier(schema), sql.Literal(f"{app_schema}.tickets"), named)
    return int(conn.execute(statement).fetchone()[0])  # type: ignore[index]


def drain(store: Any, minilm: Any, **options: Any) -> Any:
    with Worker(store, embedder=minilm, options=WorkerOptions(**options)) as worker:
        return worker.drain()


def test_insert_update_delete_follow_the_table(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    s = store.schema
    assert attach(conn, s, app_schema) == 3
    assert queue_count(conn, s, "tickets") == 3
    assert drain(store, minilm).written == 3
    assert pending_pages(store) == 0  # a worker whose queue ran dry settles the full-text indexes it wrote
    units = unit_rows(conn, s, "tickets")
    assert set(units) == {"1", "2", "3"} and queue_count(conn, s) == 0
    assert units["1"]["metadata"] == {"status": "open", "tenant": "acme", "source_key": {"id": 1}}
    assert store.corpus("tickets").description == "Support tickets of our customers"

    # INSERT: queued, then searchable.
    conn.execute(
        sql.SQL(
            "INSERT INTO {}.tickets (id, subject, body, status, tenant) VALUES "
            "(4, 'Parking badge', 'My parking badge no longer opens the garage gate.', 'open', 'acme')"
        ).format(sql.Identifier(app_schema))
    )
    assert queue_count(conn, s, "tickets") == 1
    drain(store, minilm)
    hit = store.search("tickets", minilm.embed_query("garage gate will not open"), k=1)[0]
    assert hit.content.startswith("Parking badge") and hit.metadata["source_key"] == {"id": 4}

    # UPDATE of a column the corpus does not use: nothing queued, the unit is not rewritten.
    before = unit_rows(conn, s, "tickets")["1"]
    conn.execute(sql.SQL("UPDATE {}.tickets SET views = views + 1").format(sql.Identifier(app_schema)))
    assert queue_count(conn, s) == 0
    assert drain(store, minilm).claimed == 0
    assert unit_rows(conn, s, "tickets")["1"]["created_at"] == before["created_at"]

    # UPDATE of the content: re-embedded; the old text no longer matches.
    conn.execute(
        sql.SQL(
            "UPDATE {}.tickets SET body = 'The printer was replaced; it now prints labels in colour.' WHERE id = 1"
        ).format(sql.Identifier(app_schema))
    )
    assert queue_count(conn, s, "tickets") == 1
    assert drain(store, minilm).written == 1
    after = unit_rows(conn, s, "tickets")["1"]
    assert after["id"] == before["id"] and "labels in colour" in after["content"]
    assert after["created_at"] > before["created_at"]
    top = store.search("tickets", minilm.embed_query("printer prints colour labels"), k=1)[0]
    assert top.metadata["source_key"] == {"id": 1} and "every second page" not in top.content

    # UPDATE of a metadata column: re-queued so the filterable metadata follows.
    conn.execute(sql.SQL("UPDATE {}.tickets SET status = 'closed' WHERE id = 2").format(sql.Identifier(app_schema)))
    drain(store, minilm)
    assert unit_rows(conn, s, "tickets")["2"]["metadata"]["status"] == "closed"

    # DELETE: gone at once, before any worker runs.
    conn.execute(sql.SQL("DELETE FROM {}.tickets WHERE id IN (2, 3)").format(sql.Identifier(app_schema)))
    assert set(unit_rows(conn, s, "tickets")) == {"1", "4"}
    assert queue_count(conn, s) == 0

    # A changed key: the unit of the old key goes at once, the new key is queued.
    conn.execute(sql.SQL("UPDATE {}.tickets SET id = 40 WHERE id = 4").format(sql.Identifier(app_schema)))
    assert set(unit_rows(conn, s, "tickets")) == {"1"}
    drain(store, minilm)
    assert set(unit_rows(conn, s, "tickets")) == {"1", "40"}

    # TRUNCATE: every row-derived unit goes.
    conn.execute(sql.SQL("TRUNCATE {}.tickets").format(sql.Identifier(app_schema)))
    assert unit_rows(conn, s, "tickets") == {}


def test_a_null_content_removes_the_unit(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    attach(conn, store.schema, app_schema, content="body")
    drain(store, minilm)
    conn.execute(sql.SQL("UPDATE {}.tickets SET body = NULL WHERE id = 3").format(sql.Identifier(app_schema)))
    result = drain(store, minilm)
    assert result.removed == 1 and set(unit_rows(conn, store.schema, "tickets")) == {"1", "2"}


def test_units_queued_from_sql(store: Any, minilm: Any, database_url: str) -> None:
    conn, s = app_sql(database_url), store.schema
    conn.execute(
        sql.SQL("SELECT {}.create_corpus('notes', 'text', 'paragraph', 384, 'Team notes', %s)").format(
            sql.Identifier(s)
        ),
        (minilm.name,),
    )
    uid = conn.execute(
        sql.SQL(
            "SELECT {}.add_text('notes', 'The quarterly review moved to Thursday at ten.', "
            "'{{\"team\": \"ops\"}}', 'notes://review')"
        ).format(sql.Identifier(s))
    ).fetchone()[0]
    conn.execute(sql.SQL("SELECT {}.add_text('notes', 'Lunch is provided on Fridays.')").format(sql.Identifier(s)))
    assert queue_count(conn, s, "notes") == 2
    assert drain(store, minilm).written == 2
    [unit] = store.get_units("notes", [str(uid)])
    assert unit.metadata == {"team": "ops"} and unit.uri == "notes://review"
    hit = store.search("notes", minilm.embed_query("when is the quarterly review"), k=1)[0]
    assert hit.id == str(uid)
    # The same id again replaces the unit (idempotent writes).
    conn.execute(
        sql.SQL("SELECT {}.add_text('notes', 'The quarterly review is cancelled.', id => %s)").format(
            sql.Identifier(s)
        ),
        (uid,),
    )
    drain(store, minilm)
    assert store.get_units("notes", [str(uid)])[0].content == "The quarterly review is cancelled."
    assert store.counts()["notes"] == 2
    assert conn.execute(sql.SQL("SELECT {}.remove_unit('notes', %s)").format(sql.Identifier(s)), (uid,)).fetchone()[0]
    assert store.counts()["notes"] == 1
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="holds image units"):
        conn.execute(sql.SQL("SELECT {}.add_text('image', 'a caption')").format(sql.Identifier(s)))
    with pytest.raises(psycopg.errors.UndefinedObject, match="does not exist"):
        conn.execute(sql.SQL("SELECT {}.add_text('nope', 'x')").format(sql.Identifier(s)))
    conn.close()


@pytest.mark.parametrize(
    ("extra", "error", "message"),
    [
        ({"content": "subject ||| body"}, psycopg.errors.InvalidParameterValue, "invalid content"),
        ({"content": "no_such_column"}, psycopg.errors.InvalidParameterValue, "no_such_column"),
        ({"content": "subject; DROP TABLE x"}, psycopg.errors.InvalidParameterValue, 'no ";"'),
        ({"content": "subject), (body"}, psycopg.errors.InvalidParameterValue, "one SQL expression"),
        ({"metadata": "{nope}"}, psycopg.errors.UndefinedColumn, "has no column nope"),
        ({"modality": "image", "content_kind": "text"}, psycopg.errors.InvalidParameterValue, "image corpus needs"),
        ({"content_kind": "bytes"}, psycopg.errors.InvalidParameterValue, "needs an image corpus and a bytea"),
        ({"require_filter": "{views}"}, psycopg.errors.InvalidParameterValue, "also be metadata"),
    ],
)
def test_attach_refuses_bad_arguments(app: Any, store: Any, extra: dict[str, str], error: type, message: str) -> None:
    conn, app_schema = app
    with pytest.raises(error, match=message):
        attach(conn, store.schema, app_schema, **extra)
    assert "tickets" not in store.corpora(refresh=True)  # nothing half-made
    triggers = conn.execute(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", (f"{app_schema}.tickets",)
    ).fetchone()[0]
    assert triggers == 0


def test_attach_needs_a_key_and_a_table(app: Any, store: Any) -> None:
    conn, app_schema = app
    conn.execute(
        sql.SQL("CREATE TABLE {0}.nokey (body text); CREATE VIEW {0}.v AS SELECT * FROM {0}.tickets").format(
            sql.Identifier(app_schema)
        )
    )
    call = sql.SQL("SELECT {}.attach_table(%s::regclass, corpus => 'x', content => 'body')").format(
        sql.Identifier(store.schema)
    )
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="has no primary key"):
        conn.execute(call, (f"{app_schema}.nokey",))
    with pytest.raises(psycopg.errors.WrongObjectType, match="is not a table"):
        conn.execute(call, (f"{app_schema}.v",))


def _table_state(conn: psycopg.Connection[Any], app_schema: str) -> tuple[Any, ...]:
    rows = conn.execute(
        sql.SQL("SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM {}.tickets t").format(sql.Identifier(app_schema))
    ).fetchone()[0]
    columns = conn.execute(
        "SELECT string_agg(attname || ':' || atttypid::regtype::text, ',' ORDER BY attnum) "
        "FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0",
        (f"{app_schema}.tickets",),
    ).fetchone()[0]
    triggers = conn.execute(
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", (f"{app_schema}.tickets",)
    ).fetchone()[0]
    return rows, columns, triggers


def test_detach_leaves_the_source_table_untouched(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    s = store.schema
    rows, columns, triggers = _table_state(conn, app_schema)
    assert triggers == 0
    attach(conn, s, app_schema)
    assert _table_state(conn, app_schema)[2] == 4  # insert, update, delete, truncate
    drain(store, minilm)
    detach = sql.SQL("SELECT {}.detach_table(%s::regclass, drop_corpus => %s)").format(sql.Identifier(s))
    assert conn.execute(detach, (f"{app_schema}.tickets", False)).fetchone()[0] == 1
    assert _table_state(conn, app_schema) == (rows, columns, 0)
    assert store.counts()["tickets"] == 3  # the corpus stays, frozen
    conn.execute(sql.SQL("INSERT INTO {}.tickets (id, subject) VALUES (9, 'x')").format(sql.Identifier(app_schema)))
    assert queue_count(conn, s) == 0
    with pytest.raises(psycopg.errors.UndefinedObject, match="is not attached"):
        conn.execute(detach, (f"{app_schema}.tickets", True))
    with pytest.raises(psycopg.errors.DuplicateTable, match="already exists"):
        attach(conn, s, app_schema)  # the detached corpus still holds the name
    store.drop_corpus("tickets")
    # Attach again, then detach dropping the corpus; dropping a corpus also removes its triggers.
    attach(conn, s, app_schema)
    assert conn.execute(detach, (f"{app_schema}.tickets", True)).fetchone()[0] == 1
    assert "tickets" not in store.corpora(refresh=True)
    attach(conn, s, app_schema)
    conn.execute(sql.SQL("SELECT {}.drop_corpus('tickets')").format(sql.Identifier(s)))
    assert _table_state(conn, app_schema)[2] == 0
    conn.execute(sql.SQL("INSERT INTO {}.tickets (id, subject) VALUES (10, 'y')").format(sql.Identifier(app_schema)))


def test_required_filter_restricts_every_search(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {}.tickets (id, subject, body, status, tenant) VALUES (%s, %s, %s, 'open', %s)").format(
            sql.Identifier(app_schema)
        ),
        [(100 + i, f"Printer {i}", f"Printer number {i} jams.", "acme" if i % 10 else "initech") for i in range(60)],
    )
    attach(conn, store.schema, app_schema, require_filter="{tenant}")
    drain(store, minilm)
    query = minilm.embed_query("printer jams")
    with pytest.raises(FilterError, match="restricted by 'tenant'"):
        store.search("tickets", query, k=3)
    with pytest.raises(FilterError, match="restricted by 'tenant'"):
        store.search("tickets", query, k=3, filter={"status": "open"})
    with pytest.raises(FilterError):
        store.search("tickets", query, k=3, filter={"$or": [{"tenant": "acme"}, {"status": "open"}]})
    # Six initech printers among 60 acme ones: the iterative scan still returns k = 5 initech hits.
    hits = store.search("tickets", query, k=5, filter={"tenant": "initech"})
    assert len(hits) == 5 and {h.metadata["tenant"] for h in hits} == {"initech"}
    hits = store.search(
        "tickets", query, k=5, filter={"$and": [{"tenant": {"$in": ["globex"]}}]}, lexical_text="coffee"
    )
    assert [h.metadata["tenant"] for h in hits] == ["globex"]


def test_sync_status_reports_backlog_lag_and_failures(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    attach(conn, store.schema, app_schema)
    time.sleep(0.2)
    [status] = [st for st in sync_status(store) if st.corpus == "tickets"]
    assert status.backlog == 3 and status.failed == 0 and status.lag_s >= 0.2
    assert status.source == f"{app_schema}.tickets"
    view = conn.execute(
        sql.SQL("SELECT backlog, failed FROM {}.sync_status WHERE corpus = 'tickets'").format(
            sql.Identifier(store.schema)
        )
    ).fetchone()
    assert view == (3, 0)
    from typer.testing import CliRunner

    from universalrag.cli import app as cli

    env = {"UNIVERSALRAG_DATABASE_URL": store.settings.database_url, "UNIVERSALRAG_SCHEMA": store.schema}
    shown = CliRunner().invoke(cli, ["status", "--json"], env=env)
    assert shown.exit_code == 0, shown.stderr
    [entry] = [q for q in json.loads(shown.stdout)["sync"] if q["corpus"] == "tickets"]
    assert entry["backlog"] == 3 and entry["failed"] == 0
    assert "sync tickets" in CliRunner().invoke(cli, ["status"], env=env).stdout
    drain(store, minilm)
    [status] = [st for st in sync_status(store) if st.corpus == "tickets"]
    assert (status.backlog, status.lag_s) == (0, 0.0)


@contextlib.contextmanager
def running_worker(store: Any, minilm: Any, *, poll_interval_s: float) -> Iterator[tuple[Worker, threading.Thread]]:
    """A worker running in a thread (``Worker.run``), stopped and closed on exit."""
    stop = threading.Event()
    worker = Worker(store, embedder=minilm, options=WorkerOptions(poll_interval_s=poll_interval_s))
    thread = threading.Thread(target=worker.run, kwargs={"stop": stop})
    thread.start()
    try:
        yield worker, thread
    finally:
        stop.set()
        thread.join(timeout=30)
        worker.close()


def wait_for(predicate: Any, timeout: float) -> float:
    """Seconds until ``predicate()`` held (polling every 20 ms); fails after ``timeout``."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.02)
    return time.monotonic() - start


def test_an_idle_worker_wakes_on_notify(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    attach(conn, store.schema, app_schema)
    with running_worker(store, minilm, poll_interval_s=60.0):
        wait_for(lambda: store.counts()["tickets"] == 3, 120)
        time.sleep(0.3)  # idle now, waiting on LISTEN (the poll interval is a minute)
        conn.execute(
            sql.SQL("INSERT INTO {}.tickets (id, subject, body) VALUES (7, 'Badge', 'Lost badge')").format(
                sql.Identifier(app_schema)
            )
        )
        # Far below the 60 s poll: the notification woke it.
        assert wait_for(lambda: "7" in unit_rows(conn, store.schema, "tickets"), 30) < 30


def test_downgrade_detaches_and_leaves_no_function(app: Any, store: Any) -> None:
    conn, app_schema = app
    rows, columns, _ = _table_state(conn, app_schema)
    attach(conn, store.schema, app_schema)
    store.downgrade("0002")
    assert _table_state(conn, app_schema) == (rows, columns, 0)
    functions = conn.execute(
        "SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE nspname = %s AND proname ~ "
        "'^(sync_|attach_table|detach_table|add_text|add_image|add_file|remove_unit)'",
        (store.schema,),
    ).fetchall()
    kept = conn.execute(sql.SQL("SELECT name FROM {}.corpora").format(sql.Identifier(store.schema))).fetchall()
    assert functions == [] and ("tickets",) in kept
    store.migrate()  # and up again: the corpus is kept, so it can be attached under another name
    assert attach(conn, store.schema, app_schema, corpus="tickets_again") == 3


def test_the_worker_reconnects_after_losing_its_connection(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    attach(conn, store.schema, app_schema)
    with running_worker(store, minilm, poll_interval_s=0.5) as (worker, thread):
        wait_for(lambda: store.counts()["tickets"] == 3, 120)
        pid = worker.conn.info.backend_pid
        assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        conn.execute(
            sql.SQL("INSERT INTO {}.tickets (id, subject, body) VALUES (8, 'Desk', 'Wobbly desk')").format(
                sql.Identifier(app_schema)
            )
        )
        wait_for(lambda: "8" in unit_rows(conn, store.schema, "tickets"), 120)
        assert thread.is_alive()


def test_a_composite_key(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    table = sql.Identifier(app_schema, "stock")
    conn.execute(sql.SQL("CREATE TABLE {} (shop text, sku int, label text, PRIMARY KEY (shop, sku))").format(table))
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(table),
        [("north", 1, "red umbrella"), ("south", 1, "blue kettle"), ("north", 2, "desk lamp")],
    )
    conn.execute(
        sql.SQL(
            "SELECT {}.attach_table(%s::regclass, corpus => 'stock', content => 'label', metadata => ARRAY['shop'])"
        ).format(sql.Identifier(store.schema)),
        (f"{app_schema}.stock",),
    )
    drain(store, minilm)
    keys = {
        json.dumps(u["metadata"]["source_key"], sort_keys=True) for u in unit_rows(conn, store.schema, "stock").values()
    }
    assert keys == {'{"shop": "north", "sku": 1}', '{"shop": "south", "sku": 1}', '{"shop": "north", "sku": 2}'}
    conn.execute(sql.SQL("UPDATE {} SET label = 'green teapot' WHERE shop = 'south' AND sku = 1").format(table))
    conn.execute(sql.SQL("DELETE FROM {} WHERE shop = 'north' AND sku = 1").format(table))
    drain(store, minilm)
    contents = sorted(u["content"] for u in unit_rows(conn, store.schema, "stock").values())
    assert contents == ["desk lamp", "green teapot"]
