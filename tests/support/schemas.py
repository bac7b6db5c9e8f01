"""A fresh schema for a test or a module's fixture, dropped afterwards; a store of files ingested into one."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa


@contextlib.contextmanager
def fresh_schema(database_url: str) -> Iterator[str]:
    """A new schema name (``t_`` and 12 hex digits); the schema and all in it are dropped on exit."""
    name = "t_" + uuid.uuid4().hex[:12]
    try:
        yield name
    finally:
        from universalrag.store.engine import make_engine

        engine = make_engine(database_url)
        with engine.begin() as conn:
            conn.execute(sa.schema.DropSchema(name, cascade=True, if_exists=True))
        engine.dispose()


@contextlib.contextmanager
def ingested_store(database_url: str, embedder: Any, paths: Sequence[Path]) -> Iterator[Any]:
    """A :class:`~universalrag.store.Store` in a fresh schema holding ``paths`` ingested as a user would (every file
    added, else the fixture fails); closed and dropped on exit."""
    from universalrag.config import Settings
    from universalrag.ingest.pipeline import ingest_paths
    from universalrag.store import Store

    with fresh_schema(database_url) as schema:
        store = Store(settings=Settings(database_url=database_url, schema=schema))
        try:
            store.init(embedder=embedder.name, dimension=embedder.dimension)
            report = ingest_paths(store, embedder, list(paths))
            assert report.ok, [(o.path, o.status) for o in report.outcomes]
            yield store
        finally:
            store.close()


@contextlib.contextmanager
def ingested_rag(database_url: str, embedder: Any, paths: Sequence[Path]) -> Iterator[Any]:
    """A :class:`~universalrag.pipeline.UniversalRAG` (no generator, no visual encoder, no routing log) in a fresh
    schema holding ``paths`` ingested (every file added, else the fixture fails); closed and dropped on exit."""
    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG

    with fresh_schema(database_url) as schema:
        rag = UniversalRAG(
            settings=Settings(database_url=database_url, schema=schema),
            embedder=embedder,
            generator=None,
            visual_encoder=None,
            log_decisions=False,
        )
        try:
            report = rag.ingest(list(paths))
            assert report.ok, [(o.path, o.status) for o in report.outcomes]
            yield rag
        finally:
            rag.close()


#: How many pending pages the GIN indexes of a schema's corpus tables hold, merging them as it counts
#: (``gin_clean_pending_list``: independent of ``Store.settle``, whose work it checks).
GIN_PENDING = sa.text(
    "SELECT coalesce(sum(gin_clean_pending_list(i.indexrelid)), 0) FROM pg_index i "
    "JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam "
    "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
    "WHERE am.amname = 'gin' AND n.nspname = :schema AND t.relname LIKE 'corpus%'"
)


def pending_pages(store: Any) -> int:
    """Pending GIN pages of the store's corpus tables (merged by the count: the check is destructive)."""
    with store.engine.begin() as conn:
        return int(conn.execute(GIN_PENDING, {"schema": store.schema}).scalar_one())
