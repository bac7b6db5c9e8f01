"""The ``small`` store fixture: a real store whose built-in corpora hold 8-dimensional vectors, for tests of the
store's SQL that need no encoder. tests/conftest.py registers this module as a plugin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from universalrag.config import Settings
from universalrag.store import Store

__all__ = ["DIM", "hnsw_index_defs", "small"]

#: The dimension of the ``small`` store's vectors.
DIM = 8


@pytest.fixture
def small(settings: Settings) -> Iterator[Store]:
    """An initialised store on the test's schema, built-in corpora of dimension :data:`DIM`; closed afterwards."""
    s = Store(settings=settings)
    s.init(embedder="test-encoder", dimension=DIM)
    yield s
    s.close()


def hnsw_index_defs(store: Store) -> dict[str, str]:
    """The definitions of the HNSW indexes of ``store``'s schema, by index name."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = :s AND indexdef LIKE '%USING hnsw%'"
            ),
            {"s": store.schema},
        ).all()
    return {r.indexname: r.indexdef for r in rows}
