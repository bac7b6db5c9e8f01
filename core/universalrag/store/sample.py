"""Deterministic samples of a corpus's units and of a unit's parts (table rows, document chunks).

Used to build training queries from what a user ingested (:mod:`universalrag.routing.synth`). The order is a
hash of each id and the seed, computed in SQL (``md5(id || ':' || seed)``), so a given seed returns the same
units on every run and a sample of ``n`` is a prefix of a sample of ``n + 1`` — without reading the whole
table into Python. Statements are built with SQLAlchemy Core from the corpus's table description.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..types import Hit
from .corpus_search import hit_from_row
from .queries import unit_columns

if TYPE_CHECKING:
    from .store import Store

__all__ = ["count_units", "sample_parts", "sample_units", "units_of_source"]


def _order(*columns: sa.ColumnElement[Any], seed: int) -> sa.ColumnElement[Any]:
    key: sa.ColumnElement[Any] = sa.literal(f":{int(seed)}")
    for column in reversed(columns):
        key = sa.cast(column, sa.Text).concat(sa.literal("/")).concat(key)
    return sa.func.md5(key)


def _limit(n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}.")
    return n


def _literal(n: int) -> sa.ColumnElement[Any]:
    # A literal LIMIT, as every statement of the store renders it (some distributed planners refuse a parameter).
    return sa.literal_column(str(int(n)))


def sample_units(store: Store, corpus: str, n: int, *, seed: int = 0) -> list[Hit]:
    """Up to ``n`` units of ``corpus`` in a pseudo-random order fixed by ``seed`` (``score`` is 1.0).

    Raises :class:`~universalrag.errors.CorpusNotFoundError` for an unknown corpus.
    """
    n = _limit(n)
    store = store.owner(corpus)  # the server holding the corpus (docs/scaling.md)
    spec = store.corpus(corpus)
    if n == 0:
        return []
    tables = store.tables.corpus(spec)
    u = tables.units
    stmt = sa.select(*unit_columns(tables)).order_by(_order(u.c.id, seed=seed), u.c.id).limit(_literal(n))
    with store.transaction(f"sample units of {corpus!r}") as conn:
        return [hit_from_row(spec, row, 1.0) for row in conn.execute(stmt).mappings()]


def sample_parts(store: Store, corpus: str, unit_id: str, n: int, *, seed: int = 0) -> list[tuple[int, str]]:
    """Up to ``n`` parts (rows of a table, chunks of a document or transcript) of one unit of a multi-vector
    corpus, as ``(index, text)`` in a pseudo-random order fixed by ``seed``; ``[]`` for a corpus that stores
    one vector per unit."""
    n = _limit(n)
    store = store.owner(corpus)  # the server holding the corpus (docs/scaling.md)
    spec = store.corpus(corpus)
    tables = store.tables.corpus(spec)
    if tables.parts is None or n == 0:
        return []
    p = tables.parts
    stmt = (
        sa.select(p.c.ord, p.c.content)
        .where(p.c.unit_id == unit_id)
        .order_by(_order(p.c.unit_id, p.c.ord, seed=seed), p.c.ord)
        .limit(_literal(n))
    )
    with store.transaction(f"sample parts of a unit of {corpus!r}") as conn:
        return [(int(r.ord), str(r.content)) for r in conn.execute(stmt)]


def count_units(store: Store, corpus: str) -> int:
    """How many units ``corpus`` holds."""
    store = store.owner(corpus)  # the server holding the corpus (docs/scaling.md)
    spec = store.corpus(corpus)
    units = store.tables.corpus(spec).units
    with store.transaction(f"count units of {corpus!r}") as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(units)).scalar_one())


def units_of_source(store: Store, corpus: str, uri: str) -> list[Hit]:
    """Every unit of ``corpus`` made from the source ``uri`` (e.g. a file's paragraphs), in insertion order."""
    store = store.owner(corpus)  # the server holding the corpus (docs/scaling.md)
    spec = store.corpus(corpus)
    tables = store.tables.corpus(spec)
    u = tables.units
    stmt = sa.select(*unit_columns(tables)).where(u.c.uri == uri).order_by(u.c.created_at, u.c.id)
    with store.transaction(f"read the units of a source in {corpus!r}") as conn:
        return [hit_from_row(spec, row, 1.0) for row in conn.execute(stmt).mappings()]
