"""The unified baseline over corpora on two servers: the shared index on the home database holds the vectors of a
corpus that lives on a second embedded PostgreSQL too (real servers, the real bundled MiniLM encoder)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import psycopg
import pytest
from conftest import DATA
from support.pg_servers import Servers

from universalrag.config import Settings
from universalrag.eval import UnifiedIndex
from universalrag.pipeline import UniversalRAG
from universalrag.types import CorpusSpec

pytestmark = pytest.mark.slow
BAKING = CorpusSpec(
    name="baking",
    modality="text",
    granularity="paragraph",  # type: ignore[arg-type]
    description="Home baking notes: bread, sourdough starters, dough, ovens",
)


@pytest.fixture
def fed_rag(settings: Settings, minilm) -> Iterator[UniversalRAG]:  # type: ignore[no-untyped-def]
    servers = Servers()
    try:
        remote_url = servers.start("eu1")
        fed = Settings(
            database_url=settings.database_url, schema=settings.schema, home=settings.home, servers={"eu1": remote_url}
        )
        fed_rag = UniversalRAG(settings=fed, embedder=minilm, generator=None, visual_encoder=None, log_decisions=False)
        fed_rag.init()
        fed_rag.store.create_corpus(dataclasses.replace(BAKING, embedder=minilm.name), server="eu1")
        yield fed_rag
        fed_rag.close()
        with psycopg.connect(remote_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psycopg.sql.Identifier(settings.schema))
            )
    finally:
        servers.close()


def test_the_shared_index_holds_a_remote_corpus(fed_rag: UniversalRAG) -> None:
    assert fed_rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking").ok
    assert fed_rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok
    assert fed_rag.store.server_of("baking") == "eu1"
    state = UnifiedIndex(fed_rag.store, fed_rag.embedder).build()
    counts = fed_rag.store.counts()
    assert "baking" in state.corpora and state.corpora["baking"][0] == counts["baking"] > 0
    assert state.rows == sum(u + p for u, p in state.corpora.values())
    index = UnifiedIndex(fed_rag.store, fed_rag.embedder)
    starter = index.search(fed_rag.embedder.embed_query("How often should I feed a sourdough starter?"), k=3)
    moon = index.search(fed_rag.embedder.embed_query("Who first walked on the Moon?"), k=3)
    assert starter[0].corpus == "baking" and "starter" in starter[0].content.lower()
    assert moon[0].corpus in {"paragraph", "document"}
