"""The sync worker against rows that fail: an oversized text, a row the database refuses to store, a batch that
stopped the worker before. Real PostgreSQL, the real worker, the bundled MiniLM encoder; the failure is caused
for real (a 3 MB row, a trigger on the corpus table that refuses one text)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url
from support.sync import app_sql, attach_table, queue_count, unit_rows

from universalrag.sync import Worker, WorkerOptions, queue, sync_status
from universalrag.sync.connection import connect
from universalrag.sync.content import MAX_TEXT_CHARS


@pytest.fixture
def app(database_url: str, store: Any) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    """An application schema with a notes table attached to the corpus ``notes``."""
    app_schema = f"{store.schema}_app"
    conn = app_sql(database_url)
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(app_schema)))
    conn.execute(sql.SQL("CREATE TABLE {}.notes (id int PRIMARY KEY, body text)").format(sql.Identifier(app_schema)))
    yield conn, app_schema
    conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(app_schema)))
    conn.close()


def insert(conn: psycopg.Connection[Any], app_schema: str, rows: list[tuple[int, str]]) -> None:
    conn.cursor().executemany(
        sql.SQL("INSERT INTO {}.notes (id, body) VALUES (%s, %s)").format(sql.Identifier(app_schema)), rows
    )


def attach(conn: psycopg.Connection[Any], schema: str, app_schema: str) -> None:
    attach_table(conn, schema, f"{app_schema}.notes", corpus="notes", content="body")


def big_text(chars: int) -> str:
    """Distinct words, so that the full-text vector of the whole text would exceed PostgreSQL's 1 MB limit."""
    words: list[str] = []
    size = 0
    i = 0
    while size < chars:
        word = f"w{i:07d}q"
        words.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(words)


def test_an_oversized_row_is_cut_and_the_rows_after_it_are_written(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    s = store.schema
    insert(conn, app_schema, [(1, "The printer on floor two jams."), (2, big_text(3_000_000))])
    attach(conn, s, app_schema)
    insert(conn, app_schema, [(3, "The VPN drops every ten minutes.")])
    with Worker(store, embedder=minilm) as worker:
        result = worker.drain()
    assert result.written == 3 and result.failed == 0, result.errors
    units = unit_rows(conn, s, "notes")
    assert set(units) == {"1", "2", "3"}
    assert len(units["2"]["content"]) <= MAX_TEXT_CHARS
    assert units["2"]["content"].startswith("w0000000q w0000001q")
    assert queue_count(conn, s) == 0


def refuse(conn: psycopg.Connection[Any], schema: str, word: str) -> None:
    """A trigger on the corpus table that refuses texts holding ``word`` (a write the database refuses)."""
    conn.execute(
        sql.SQL(
            "CREATE FUNCTION {s}.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.content LIKE {pattern} THEN RAISE EXCEPTION 'this row is refused'; END IF; RETURN NEW; END $$"
        ).format(s=sql.Identifier(schema), pattern=sql.Literal(f"%{word}%"))
    )
    conn.execute(
        sql.SQL(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON {s}.corpus_notes FOR EACH ROW "
            "EXECUTE FUNCTION {s}.refuse_poison()"
        ).format(s=sql.Identifier(schema))
    )


def test_a_row_the_database_refuses_is_parked_alone_and_the_worker_goes_on(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    s = store.schema
    insert(conn, app_schema, [(i, f"Ordinary note number {i} about the office.") for i in range(1, 9)])
    insert(conn, app_schema, [(9, "This note holds poison for the writer.")])
    attach(conn, s, app_schema)
    refuse(conn, s, "poison")
    with Worker(store, embedder=minilm, options=WorkerOptions(max_attempts=2)) as worker:
        result = worker.drain()
        assert result.written == 8 and result.parked == 1, result.errors
        assert any("this row is refused" in e for e in result.errors)
        # Rows inserted after the bad one are written by the same worker.
        insert(conn, app_schema, [(10, "A later note about the kitchen.")])
        assert worker.drain().written == 1
    assert set(unit_rows(conn, s, "notes")) == {str(i) for i in range(1, 9)} | {"10"}
    assert queue_count(conn, s, parked=True) == 1 and queue_count(conn, s, parked=False) == 0
    (status,) = [st for st in sync_status(store) if st.corpus == "notes"]
    assert status.failed == 1 and status.last_error and "this row is refused" in status.last_error


def test_a_batch_that_stopped_the_worker_is_not_claimed_forever(app: Any, store: Any, minilm: Any) -> None:
    conn, app_schema = app
    s = store.schema
    insert(conn, app_schema, [(1, "The printer on floor two jams."), (2, "The coffee machine leaks.")])
    attach(conn, s, app_schema)

    class InterruptingEmbedder:
        name, dimension = minilm.name, minilm.dimension

        def embed(self, texts: Any) -> Any:
            raise KeyboardInterrupt

    options = WorkerOptions(max_attempts=2)
    # First stop: the worker is interrupted in the middle of the batch and gives its claims back.
    with pytest.raises(KeyboardInterrupt), Worker(store, embedder=InterruptingEmbedder(), options=options) as w:  # type: ignore[arg-type]
        w.drain()
    # Second stop: the worker process is killed after claiming (its connection ends without a word).
    killed = connect(store.url)
    assert len(queue.claim(killed, s, limit=10, corpora=None, lease_s=900.0)) == 2
    killed.close()
    # The attempts of the crashed batches counted: the next worker parks the items instead of claiming them again.
    with Worker(store, embedder=minilm, options=options) as worker:
        result = worker.drain()
    assert result.written == 0 and result.parked == 2
    assert queue_count(conn, s, parked=True) == 2
    (status,) = [st for st in sync_status(store) if st.corpus == "notes"]
    assert status.failed == 2 and status.last_error and "stopped" in status.last_error


def test_an_application_role_with_rights_on_its_own_table_only_keeps_writing(
    app: Any, store: Any, minilm: Any, database_url: str
) -> None:
    """The sync triggers run as the table's attacher (a SECURITY DEFINER function with a pinned search_path): a
    role that may only write its own table inserts, updates and deletes after attach_table as before, with no
    right on the universalrag schema, and the worker follows."""
    conn, app_schema = app
    s = store.schema
    role = "t_app_" + uuid.uuid4().hex[:8]
    try:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    except psycopg.Error:
        pytest.skip("the test database does not let this test create a role")
    try:
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(app_schema), sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {}.notes TO {}").format(
                sql.Identifier(app_schema), sql.Identifier(role)
            )
        )
        insert(conn, app_schema, [(1, "The printer on floor two jams.")])
        attach(conn, s, app_schema)
        url = (
            make_url(database_url)
            .set(drivername="postgresql", username=role, password=None)
            .render_as_string(hide_password=False)
        )
        with psycopg.connect(url, autocommit=True) as app_role:
            insert(app_role, app_schema, [(2, "The VPN drops every ten minutes.")])
            app_role.execute(
                sql.SQL("UPDATE {}.notes SET body = 'The printer was replaced.' WHERE id = 1").format(
                    sql.Identifier(app_schema)
                )
            )
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app_role.execute(sql.SQL("SELECT count(*) FROM {}.sync_queue").format(sql.Identifier(s)))
        with Worker(store, embedder=minilm) as worker:
            assert worker.drain().written == 2
        units = unit_rows(conn, s, "notes")
        assert set(units) == {"1", "2"} and units["1"]["content"] == "The printer was replaced."
        with psycopg.connect(url, autocommit=True) as app_role:
            app_role.execute(sql.SQL("DELETE FROM {}.notes WHERE id = 2").format(sql.Identifier(app_schema)))
        assert set(unit_rows(conn, s, "notes")) == {"1"}
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_worker_once_goes_on_and_status_shows_the_error(
    app: Any, store: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    """Through the command line: `universalrag worker --once` writes the other rows and exits 0 when one row is
    refused, and `universalrag status` shows that row's error."""
    conn, app_schema = app
    s = store.schema
    insert(conn, app_schema, [(1, "The printer on floor two jams."), (2, "This note holds poison for the writer.")])
    insert(conn, app_schema, [(3, big_text(3_000_000))])
    attach(conn, s, app_schema)
    refuse(conn, s, "poison")
    env = {**os.environ, **cli_env}
    script = str(Path(sys.executable).with_name("universalrag"))
    done = subprocess.run([script, "worker", "--once"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert set(unit_rows(conn, s, "notes")) == {"1", "3"}
    status = subprocess.run([script, "status"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    assert "this row is refused" in status.stdout
