"""A fresh schema for a test or a module's fixture, dropped afterwards."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

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
