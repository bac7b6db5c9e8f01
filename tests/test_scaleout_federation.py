"""Corpora on several PostgreSQL servers: the shared test server is the home database, a second embedded server
(unix socket, temporary directory) holds a remote corpus. Real servers, the real bundled MiniLM encoder."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from conftest import DATA
from support.federation import BAKING, STARTER_QUESTION
from support.pg_servers import Servers

from universalrag.config import Settings, parse_servers
from universalrag.errors import ConfigError, InvalidInputError, StoreError
from universalrag.pipeline import UniversalRAG
from universalrag.store import Store
from universalrag.types import CorpusSpec


def _tables(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {
            r[0]
            for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", [schema])
        }


def test_a_remote_corpus_lives_on_its_server_and_the_registry_keeps_only_its_alias(
    fed_rag: UniversalRAG, fed_settings: Settings
) -> None:
    home_url, remote_url = fed_settings.database_url, fed_settings.servers["eu1"]
    assert home_url is not None
    assert fed_rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking").ok
    assert fed_rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok

    assert "corpus_baking" in _tables(remote_url, fed_settings.schema)
    assert "corpus_baking" not in _tables(home_url, fed_settings.schema)
    with psycopg.connect(home_url) as conn:
        row = conn.execute(
            psycopg.sql.SQL("SELECT to_jsonb(c)::text FROM {}.corpora c WHERE name = 'baking'").format(
                psycopg.sql.Identifier(fed_settings.schema)
            )
        ).fetchone()
    assert row is not None and '"server": "eu1"' in row[0]
    assert "postgresql" not in row[0] and "host=" not in row[0]  # an alias, never a URL

    remote = Store(remote_url, schema=fed_settings.schema)
    counts = remote.counts()
    remote.close()
    assert counts["baking"] > 0 and set(counts) == {"baking"}  # the remote server holds only its corpus
    assert fed_rag.store.counts()["baking"] == counts["baking"]  # counted there, through the home store
    assert fed_rag.store.server_of("baking") == "eu1" and fed_rag.store.server_of("paragraph") is None
    uris = {(s["uri"], s["scope"]) for s in fed_rag.store.sources()}
    assert any(scope == "baking" for _, scope in uris) and any(scope == "" for _, scope in uris)

    # Unchanged on the second run: the source's state is read on the server that holds it.
    again = fed_rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking")
    assert [o.status for o in again.outcomes] == ["unchanged"]


def test_routing_and_retrieval_include_the_remote_corpus(fed_rag: UniversalRAG) -> None:
    assert fed_rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking").ok
    assert fed_rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok

    decision = fed_rag.route(STARTER_QUESTION)
    assert decision.routes[0] == "baking" and "baking" in (decision.evidence or {})
    moon = fed_rag.route("Who was the first person to walk on the Moon?")
    assert moon.routes[0] in {"paragraph", "document"} and "baking" in (moon.evidence or {})
    hits = fed_rag.retrieve(STARTER_QUESTION, routes=["baking", "paragraph"], k=3)
    assert {h.corpus for h in hits} <= {"baking", "paragraph"} and hits[0].corpus == "baking"
    assert "starter" in next(h for h in hits if h.corpus == "baking").content.lower()
    # the local corpus searched in the same call: its best is kept when it comes first in the routes
    assert "paragraph" in {h.corpus for h in fed_rag.retrieve(STARTER_QUESTION, routes=["paragraph", "baking"], k=3)}
    remote_hit = next(h for h in hits if h.corpus == "baking")
    assert [h.content for h in fed_rag.store.get_units("baking", [remote_hit.id])] == [remote_hit.content]


def test_retrieval_searches_both_servers_at_once(fed_rag: UniversalRAG, fed_settings: Settings) -> None:
    """Both servers' tables are locked; the retrieval must have a query waiting on each server at the same time
    (a sequential fan-out would wait on one only)."""
    assert fed_rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking").ok
    assert fed_rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok
    fed_rag.store.corpora(refresh=True)
    home_url, remote_url = fed_settings.database_url, fed_settings.servers["eu1"]
    assert home_url is not None
    ident = psycopg.sql.Identifier
    lockers = []
    for url, table in ((home_url, "corpus_paragraph"), (remote_url, "corpus_baking")):
        conn = psycopg.connect(url)
        conn.execute(
            psycopg.sql.SQL("LOCK TABLE {}.{} IN ACCESS EXCLUSIVE MODE").format(
                ident(fed_settings.schema), ident(table)
            )
        )
        lockers.append(conn)
    result: dict[str, object] = {}
    worker = threading.Thread(
        target=lambda: result.update(hits=fed_rag.retrieve(STARTER_QUESTION, routes=["baking", "paragraph"], k=2))
    )
    worker.start()
    try:
        deadline = time.monotonic() + 60
        waiting = [False, False]
        while not all(waiting) and time.monotonic() < deadline:
            for i, (url, table) in enumerate(((home_url, "corpus_paragraph"), (remote_url, "corpus_baking"))):
                with psycopg.connect(url, autocommit=True) as probe:
                    waiting[i] = bool(
                        probe.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                            [f"%{fed_settings.schema}.{table}%"],
                        ).fetchone()[0]
                    )  # type: ignore[index]
            time.sleep(0.05)
        assert waiting == [True, True]
    finally:
        for conn in lockers:
            conn.rollback()
            conn.close()
        worker.join(60)
    assert "baking" in {h.corpus for h in result["hits"]}  # type: ignore[attr-defined]  # answered once both ran


def test_remote_corpora_are_refused_clearly(fed_rag: UniversalRAG, fed_settings: Settings, minilm) -> None:  # type: ignore[no-untyped-def]
    store = fed_rag.store
    spec = CorpusSpec(
        name="notes",
        modality="text",
        granularity="paragraph",  # type: ignore[arg-type]
        embedder=minilm.name,
    )
    with pytest.raises(ConfigError, match="'nowhere' is not configured"):
        store.create_corpus(spec, server="nowhere")
    assert "notes" not in store.corpora(refresh=True)
    with pytest.raises(InvalidInputError, match="already registered"):
        store.create_corpus(dataclasses.replace(BAKING, embedder=minilm.name), server="eu1")
    child = CorpusSpec(
        name="baking_bits",
        modality="text",
        granularity="paragraph",  # type: ignore[arg-type]
        embedder=minilm.name,
        parent="baking",
    )
    with pytest.raises(InvalidInputError, match="must live on server 'eu1'"):
        store.create_corpus(child)  # the parent is remote: the child must share its server
    assert "baking_bits" not in store.corpora(refresh=True)

    # The registry names eu1 but this process was not told where eu1 is: a clear error, no URL guessed.
    bare = Store(settings=Settings(database_url=fed_settings.database_url, schema=fed_settings.schema))
    try:
        with pytest.raises(ConfigError, match="UNIVERSALRAG_SERVERS"):
            bare.search("baking", [0.1] * 384, k=1)
    finally:
        bare.close()

    # Dropping the corpus drops its table on its server and its registry row here.
    assert store.drop_corpus("baking")
    assert "corpus_baking" not in _tables(fed_settings.servers["eu1"], fed_settings.schema)
    assert "baking" not in store.corpora(refresh=True)
    # ...and it can be attached again from the server it lives on (another deployment's corpus).
    store.create_corpus(spec, server="eu1")
    other = Store(
        settings=Settings(
            database_url=fed_settings.database_url, schema=fed_settings.schema, servers=fed_settings.servers
        )
    )
    try:
        store.drop_corpus("notes")
        remote = store.member("eu1")
        remote.create_corpus(spec)  # made on eu1 by someone else
        attached = other.attach_corpus("notes", server="eu1")
        assert attached.name == "notes" and other.server_of("notes") == "eu1"
    finally:
        other.close()


def test_a_source_cannot_span_servers(fed_rag: UniversalRAG, minilm) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from universalrag.types import SourceRecord, Unit

    vector = np.asarray(minilm.embed(["bread"])[0], dtype=np.float32)
    units = [
        Unit(id=str(uuid.uuid4()), corpus="baking", content="bread", embedding=vector),
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content="bread", embedding=vector),
    ]
    source = SourceRecord(
        uri="mem://both",
        content_hash="h",
        modality="text",  # type: ignore[arg-type]
        corpora=("baking", "paragraph"),
    )
    with pytest.raises(InvalidInputError, match="different servers"):
        fed_rag.store.write_source(source, units)
    assert fed_rag.store.source_state("mem://both") is None and fed_rag.store.counts()["baking"] == 0


def test_server_settings_come_from_the_environment_without_showing_passwords(tmp_path: Path) -> None:
    env = {
        "UNIVERSALRAG_SERVERS": "eu1=postgresql://u:s3cret@db1/x; us-2=postgresql://u:s3cret@db2/x;",
        "UNIVERSALRAG_READ_DATABASE_URL": "postgresql://u:s3cret@replica/x",
        "UNIVERSALRAG_READ_SERVERS": "eu1=postgresql://u:s3cret@db1-replica/x",
    }
    settings = Settings.from_env(env)
    assert settings.servers == {"eu1": "postgresql://u:s3cret@db1/x", "us-2": "postgresql://u:s3cret@db2/x"}
    assert settings.read_database_url == "postgresql://u:s3cret@replica/x"
    assert "s3cret" not in repr(settings) and "eu1" in repr(settings)
    for bad, message in (
        ("eu1", "not 'alias=postgresql"),
        ("EU=postgresql://h/x", "Invalid server alias"),
        ("a=postgresql://h/x;a=postgresql://h/y", "given twice"),
    ):
        with pytest.raises(ConfigError, match=message) as info:
            parse_servers(bad)
        assert "postgresql://h" not in str(info.value)
    with pytest.raises(ConfigError, match="unknown server alias"):
        Settings.from_env({"UNIVERSALRAG_READ_SERVERS": "eu9=postgresql://h/x"})
    store = Store(settings=settings)  # no I/O in the constructor
    assert store.member("eu1").url == "postgresql://u:s3cret@db1/x"
    assert store.member("eu1").settings.read_database_url == "postgresql://u:s3cret@db1-replica/x"
    assert store.member("eu1").settings.servers == {}
    store.close()


def test_routing_goes_on_without_a_server_that_is_down(settings: Settings, minilm, caplog) -> None:  # type: ignore[no-untyped-def]
    servers = Servers()
    try:
        url = servers.start("down1")
        fed = Settings(
            database_url=settings.database_url, schema=settings.schema, home=settings.home, servers={"down1": url}
        )
        fed_rag = UniversalRAG(settings=fed, embedder=minilm, generator=None, visual_encoder=None, log_decisions=False)
        fed_rag.init()
        fed_rag.store.create_corpus(dataclasses.replace(BAKING, embedder=minilm.name), server="down1")
        assert fed_rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking").ok
        assert fed_rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok
        assert "baking" in (fed_rag.route(STARTER_QUESTION).evidence or {})
    finally:
        servers.close()  # the server holding `baking` stops
    try:
        fed_rag.routing.invalidate()
        with caplog.at_level("WARNING", logger="universalrag.store"):
            decision = fed_rag.route(STARTER_QUESTION)
            assert "baking" not in fed_rag.store.nonempty() and "paragraph" in fed_rag.store.nonempty()
        assert "baking" not in (decision.evidence or {}) and decision.routes
        assert any("'down1' cannot be reached" in r.getMessage() for r in caplog.records)
        assert not any(url in r.getMessage() for r in caplog.records)  # the URL only redacted
        with pytest.raises(StoreError, match="Could not connect"):  # asked for by name: a typed error
            fed_rag.retrieve(STARTER_QUESTION, routes=["baking"])
    finally:
        fed_rag.close()
