"""A pipeline over one folder the test wrote, in a fresh schema (the agents tests of tests/test_s5_agents_*.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from universalrag.config import Settings
from universalrag.pipeline import UniversalRAG

from .schemas import fresh_schema


@contextmanager
def folder_rag(database_url: str, folder: Path) -> Iterator[UniversalRAG]:
    """A retrieval-only :class:`UniversalRAG` with ``folder`` ingested in a schema of its own (dropped after)."""
    with fresh_schema(database_url) as schema:
        rag = UniversalRAG(
            settings=Settings(database_url=database_url, schema=schema, home=folder.parent / "home"),
            generator=None,
            visual_encoder=None,
            log_decisions=False,
        )
        try:
            report = rag.ingest([folder])
            assert not report.failed, report
            yield rag
        finally:
            rag.close()
