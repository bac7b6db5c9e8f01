"""Operating corpora on a member server: ``corpora create --server`` and ``corpora list`` in the CLI, the rows of a
large table kept on the table's server (``Store.table_rows``), and the sync worker and its status for corpora whose
queue is on another server. The shared test server is the home database, a second embedded server is ``eu1``
(tests/support/federation.py); the real bundled MiniLM encoder.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from support.federation import BAKING
from support.pg_servers import Servers
from support.sync import app_sql, queue_count
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.config import Settings
from universalrag.ingest import IngestOptions
from universalrag.pipeline import UniversalRAG
from universalrag.store import Store
from universalrag.sync import Worker, WorkerOptions, sync_status

runner = CliRunner()


def _tables(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {
            r[0]
            for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", [schema])
        }


def _cli(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args), env=env, prog_name="universalrag")


def test_cli_creates_a_corpus_on_a_member_server_and_lists_each_corpus_server(
    cli_env: dict[str, str], fed_settings: Settings
) -> None:
    remote, home = fed_settings.servers["eu1"], fed_settings.database_url
    assert home is not None
    env = {**cli_env, "UNIVERSALRAG_SERVERS": f"eu1={remote}"}
    made = _cli(
        env,
        "corpora",
        "create",
        "recipes",
        "--modality",
        "text",
        "--granularity",
        "paragraph",
        "--description",
        "Family recipes: cakes, breads and sauces",
        "--server",
        "eu1",
    )
    assert made.exit_code == 0, made.output
    assert "created corpus recipes on server eu1" in made.output
    assert "corpus_recipes" in _tables(remote, fed_settings.schema)
    assert "corpus_recipes" not in _tables(home, fed_settings.schema)

    listed = _cli(env, "corpora", "list", "--json")
    assert listed.exit_code == 0, listed.output
    servers = {r["name"]: r["server"] for r in json.loads(listed.output)}
    assert servers["recipes"] == "eu1" and servers["paragraph"] is None
    text = _cli(env, "corpora", "list")
    line = next(x for x in text.output.splitlines() if x.startswith("recipes"))
    assert "on server eu1" in line
    assert not any("on server" in x for x in text.output.splitlines() if x.startswith("paragraph"))

    # what is ingested into it is written on eu1 and found through the home database
    notes = Path(env["UNIVERSALRAG_HOME"]).parent / "cake.txt"
    notes.write_text("Cream the butter and sugar, then fold in the flour for a light sponge cake.\n", encoding="utf-8")
    assert _cli(env, "ingest", str(notes), "--corpus", "recipes").exit_code == 0
    with psycopg.connect(remote) as conn:
        stored = conn.execute(
            sql.SQL("SELECT count(*) FROM {}.corpus_recipes").format(sql.Identifier(fed_settings.schema))
        ).fetchone()
    assert stored is not None and stored[0] == 1
    found = _cli(env, "search", "how do I make a sponge cake", "--corpus", "recipes", "--json")
    assert found.exit_code == 0, found.output
    assert "sponge cake" in found.output


def test_cli_refuses_an_unknown_server_and_creates_nothing(cli_env: dict[str, str], fed_settings: Settings) -> None:
    env = {**cli_env, "UNIVERSALRAG_SERVERS": f"eu1={fed_settings.servers['eu1']}"}
    result = _cli(
        env, "corpora", "create", "recipes", "--modality", "text", "--description", "Recipes", "--server", "us9"
    )
    assert result.exit_code != 0
    assert "'us9' is not configured" in result.output and "UNIVERSALRAG_SERVERS" in result.output
    assert "Traceback" not in result.output and fed_settings.servers["eu1"] not in result.output
    listed = _cli(env, "corpora", "list", "--json")
    assert "recipes" not in {r["name"] for r in json.loads(listed.output)}


def test_table_rows_of_a_large_table_on_a_member_server(fed_rag: UniversalRAG, tmp_path: Path) -> None:
    store = fed_rag.store
    table = store.corpus("table")
    store.create_corpus(
        dataclasses.replace(table, name="readings", builtin=False, description="Weather station readings"), server="eu1"
    )
    path = tmp_path / "readings.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["station", "reading"])
        writer.writerows([f"station-{i:04d}", f"{i * 0.5:.1f}"] for i in range(240))
    options = IngestOptions(stage_rows=100, table_batch_rows=60, max_embedded_rows=30)
    report = fed_rag.ingest([path], corpus="readings", options=options)
    assert report.ok, report.failed
    hit = store.search("readings", fed_rag.embedder.embed_query("station readings").tolist(), k=1)[0]
    assert hit.metadata["rows_kept"] and hit.metadata["row_count"] == 240

    expected = [{"row": 7, "cells": {"station": "station-0007", "reading": "3.5"}}]
    assert store.table_rows(hit.id, where={"station": "station-0007"}, corpus="readings") == expected
    assert store.table_rows(hit.id, where={"station": "station-0007"}) == expected  # found without the corpus
    assert [r["row"] for r in store.table_rows(hit.id, limit=3)] == [0, 1, 2]
    assert store.table_rows(hit.id, where={"station": "no-such-station"}) == []
    assert len(store.member("eu1").table_rows(hit.id, limit=500)) == 240  # the rows are on eu1


def test_the_sync_worker_serves_the_queue_of_a_member_server(
    fed_rag: UniversalRAG,
    fed_settings: Settings,
) -> None:
    store, schema, minilm = fed_rag.store, fed_settings.schema, fed_rag.embedder
    remote = app_sql(fed_settings.servers["eu1"])  # an application writing to eu1 with plain SQL
    try:
        for text in (
            "Feed a refrigerated sourdough starter once a week.",
            "A banneton gives proofing dough its spiral pattern.",
        ):
            remote.execute(sql.SQL("SELECT {}.add_text('baking', %s)").format(sql.Identifier(schema)), [text])
        assert queue_count(remote, schema, "baking") == 2
        status = {s.corpus: s for s in sync_status(store)}
        assert status["baking"].backlog == 2  # read from eu1's queue through the home store

        with Worker(store, embedder=minilm) as worker:
            assert set(worker.members()) == {"eu1"}
            total = worker.drain()
        assert total.written == 2 and total.failed == 0, total.errors
        assert queue_count(remote, schema, "baking") == 0
    finally:
        remote.close()
    hit = store.search("baking", minilm.embed_query("how often should I feed my starter"), k=1)[0]
    assert "starter" in hit.content
    assert "baking" not in {s.corpus for s in sync_status(store)}  # nothing queued and no attached table


def test_a_worker_for_home_corpora_needs_no_other_server(
    fed_rag: UniversalRAG,
    fed_settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with Worker(fed_rag.store, embedder=fed_rag.embedder) as everything:
        assert set(everything.members()) == {"eu1"}
    with Worker(fed_rag.store, embedder=fed_rag.embedder, options=WorkerOptions(corpora=("paragraph",))) as home:
        assert home.members() == {}
        assert home.drain().claimed == 0
    # a process that was not told where eu1 is syncs the home corpora and says what it leaves out
    bare = Store(settings=Settings(database_url=fed_settings.database_url, schema=fed_settings.schema))
    try:
        with (
            caplog.at_level("WARNING", logger="universalrag.sync.worker"),
            Worker(bare, embedder=fed_rag.embedder) as worker,
        ):
            assert worker.members() == {}
            assert worker.drain().claimed == 0
        assert any("'eu1' is not in UNIVERSALRAG_SERVERS" in r.getMessage() for r in caplog.records)
    finally:
        bare.close()


def test_the_worker_goes_on_when_a_member_server_is_down(
    settings: Settings,
    minilm,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = Servers()
    try:
        fed = Settings(
            database_url=settings.database_url,
            schema=settings.schema,
            home=settings.home,
            servers={"down1": servers.start("down1")},
        )
        fed_rag = UniversalRAG(settings=fed, embedder=minilm, generator=None, visual_encoder=None)
        fed_rag.init()
        fed_rag.store.create_corpus(dataclasses.replace(BAKING, embedder=minilm.name), server="down1")
    finally:
        servers.close()  # the server holding `baking` stops
    try:
        home = app_sql(settings.database_url or "")
        home.execute(
            sql.SQL("SELECT {}.add_text('paragraph', 'The harbour lights are lit at dusk.')").format(
                sql.Identifier(settings.schema)
            )
        )
        home.close()
        with (
            caplog.at_level("WARNING", logger="universalrag.store"),
            Worker(fed_rag.store, embedder=minilm, options=WorkerOptions(batch_size=8)) as worker,
        ):
            start = time.monotonic()
            total = worker.drain()
            assert time.monotonic() - start < 60  # connect timeouts, not a hang
        assert total.written == 1  # the home queue was served
        assert any(e.startswith("server down1:") for e in total.errors), total.errors
        assert any("'down1' cannot be reached" in r.getMessage() for r in caplog.records)
        caplog.clear()
        with caplog.at_level("WARNING", logger="universalrag.store"):
            assert "baking" not in {s.corpus for s in sync_status(fed_rag.store)}  # the status goes on too
        assert any("'down1' cannot be reached" in r.getMessage() for r in caplog.records)
    finally:
        fed_rag.close()
