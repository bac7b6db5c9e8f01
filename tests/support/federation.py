"""Fixtures for tests of corpora on several PostgreSQL servers: the shared test server is the home database, a
second embedded server (unix socket, temporary directory, one per test module) is the member ``eu1`` and holds
the remote corpus ``baking``. tests/conftest.py registers this module as a plugin: any test module can ask for them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import psycopg
import pytest

from support.pg_servers import Servers
from universalrag.config import Settings
from universalrag.pipeline import UniversalRAG
from universalrag.types import CorpusSpec

__all__ = ["BAKING", "STARTER_QUESTION", "drop_remote_schema", "fed_settings", "fed_rag", "remote_url"]

BAKING = CorpusSpec(
    name="baking",
    modality="text",
    granularity="paragraph",  # type: ignore[arg-type]
    description="Home baking notes: bread, sourdough starters, dough, ovens",
    metadata={"examples": ["How long should sourdough dough rise before baking?", "How do I feed my starter?"]},
)
STARTER_QUESTION = "How often should I feed a sourdough starter kept in the fridge?"


def drop_remote_schema(url: str, schema: str) -> None:
    """Drop the test's schema on a member server (the home schema is dropped by the ``schema`` fixture)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(psycopg.sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psycopg.sql.Identifier(schema)))


@pytest.fixture(scope="module")
def remote_url() -> Iterator[str]:
    """The URL of a second embedded server, started for the test module and stopped after it."""
    servers = Servers()
    try:
        yield servers.start("eu1")
    finally:
        servers.close()


@pytest.fixture
def fed_settings(settings: Settings, remote_url: str) -> Iterator[Settings]:
    """The test's settings with the member server ``eu1``; the test's schema on ``eu1`` is dropped afterwards."""
    yield Settings(
        database_url=settings.database_url, schema=settings.schema, home=settings.home, servers={"eu1": remote_url}
    )
    drop_remote_schema(remote_url, settings.schema)


@pytest.fixture
def fed_rag(fed_settings: Settings, minilm) -> Iterator[UniversalRAG]:  # type: ignore[no-untyped-def]
    """An initialised UniversalRAG over the federation, with the corpus ``baking`` created on ``eu1``."""
    fed_rag = UniversalRAG(settings=fed_settings, embedder=minilm, generator=None, visual_encoder=None)
    fed_rag.init()
    fed_rag.store.create_corpus(dataclasses.replace(BAKING, embedder=minilm.name), server="eu1")
    yield fed_rag
    fed_rag.close()
