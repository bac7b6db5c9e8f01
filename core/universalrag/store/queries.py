"""Pure query builders: SQLAlchemy statements, no connection, no I/O.

Plain SQL that Citus and read replicas accept: the query vector is cast explicitly
(``CAST(:q AS VECTOR(384))``), LIMIT is a literal, and index settings are applied with ``set_config(...,
true)`` (the function form of ``SET LOCAL``) inside the query's transaction.
"""

from __future__ import annotations

from typing import Any, Sequence

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import REGCONFIG

from .filters import Filter, compile_filter
from .schema import CorpusTables

__all__ = [
    "query_vector",
    "set_local",
    "search_units",
    "search_parts",
    "search_fused",
    "search_lexical",
    "units_by_id",
    "unit_columns",
]


def query_vector(vector: Sequence[float], dimension: int, *, name: str = "query_vector") -> sa.ColumnElement[Any]:
    """The query vector as a bound parameter with an explicit ``vector(n)`` cast."""
    return sa.cast(sa.bindparam(name, list(map(float, vector)), type_=Vector(dimension)), Vector(dimension))


def set_local(name: str, value: str | int) -> sa.Select[Any]:
    """``SELECT set_config(name, value, true)``: a transaction-local setting (what ``SET LOCAL`` does)."""
    return sa.select(sa.func.set_config(sa.literal(name), sa.literal(str(value)), sa.true()))


def _limit(n: int) -> sa.ColumnElement[Any]:
    # Rendered as a literal (some distributed planners refuse a parameterised LIMIT); n is an int by contract.
    return sa.literal_column(str(int(n)))


def unit_columns(tables: CorpusTables) -> list[sa.ColumnElement[Any]]:
    """The columns a search returns for each unit."""
    u = tables.units
    return [u.c.id, u.c.source_id, u.c.parent_id, u.c.content, u.c.uri, u.c.start_s, u.c.end_s, u.c.metadata]


def search_units(
    tables: CorpusTables, vector: Sequence[float], *, k: int, filter: Filter | None = None
) -> sa.Select[Any]:
    """Top-``k`` units by cosine distance to ``vector``, through the unit table's HNSW index."""
    u = tables.units
    distance = u.c.embedding.cosine_distance(query_vector(vector, tables.spec.dimension)).label("distance")
    stmt = sa.select(*unit_columns(tables), distance).where(u.c.embedding.is_not(None))
    if filter:
        stmt = stmt.where(compile_filter(u.c.metadata, filter))
    return stmt.order_by(sa.literal_column("distance")).limit(_limit(k))


def search_parts(
    tables: CorpusTables, vector: Sequence[float], *, limit: int, filter: Filter | None = None
) -> sa.Select[Any]:
    """The ``limit`` nearest parts (chunks, rows) of a multi-vector corpus; the caller groups them by unit."""
    assert tables.parts is not None, "search_parts needs a multi-vector corpus"
    p, u = tables.parts, tables.units
    distance = p.c.embedding.cosine_distance(query_vector(vector, tables.spec.dimension)).label("distance")
    stmt = sa.select(p.c.unit_id, p.c.ord, p.c.content, distance)
    if filter:
        stmt = stmt.join(u, u.c.id == p.c.unit_id).where(compile_filter(u.c.metadata, filter))
    return stmt.order_by(sa.literal_column("distance")).limit(_limit(limit))


def search_fused(
    tables: CorpusTables, vector: Sequence[float], visual_vector: Sequence[float], *, candidates: int,
    filter: Filter | None = None,
) -> sa.Select[Any]:
    """Units among the ``candidates`` nearest in the text space or in the visual space, with both similarities
    (``text_sim``, ``visual_sim``) so the caller can fuse them."""
    u = tables.units
    assert tables.spec.visual_dimension, "search_fused needs a corpus with a visual channel"
    text_q = query_vector(vector, tables.spec.dimension)
    visual_q = query_vector(visual_vector, tables.spec.visual_dimension, name="visual_vector")
    where = [compile_filter(u.c.metadata, filter)] if filter else []
    by_text = (sa.select(u.c.id).where(u.c.embedding.is_not(None), *where)
               .order_by(u.c.embedding.cosine_distance(text_q)).limit(_limit(candidates)))
    by_visual = (sa.select(u.c.id).where(u.c.visual.is_not(None), *where)
                 .order_by(u.c.visual.cosine_distance(visual_q)).limit(_limit(candidates)))
    ids = sa.union(by_text, by_visual).subquery()
    return sa.select(
        *unit_columns(tables),
        (1 - u.c.embedding.cosine_distance(text_q)).label("text_sim"),
        (1 - u.c.visual.cosine_distance(visual_q)).label("visual_sim"),
    ).where(u.c.id.in_(sa.select(ids.c.id)))


def search_lexical(tables: CorpusTables, text: str, *, limit: int, filter: Filter | None = None,
                   language: str = "english") -> sa.Select[Any]:
    """Units matching ``text`` in Postgres full-text search (``websearch_to_tsquery``: quotes, OR, -word),
    ranked by ``ts_rank_cd`` over the generated ``tsv`` column (GIN index)."""
    u = tables.units
    query = sa.func.websearch_to_tsquery(sa.cast(sa.literal(language), REGCONFIG), sa.literal(text))
    rank = sa.func.ts_rank_cd(u.c.tsv, query).label("rank")
    stmt = sa.select(*unit_columns(tables), rank).where(u.c.tsv.op("@@")(query))
    if filter:
        stmt = stmt.where(compile_filter(u.c.metadata, filter))
    return stmt.order_by(sa.desc("rank")).limit(_limit(limit))


def units_by_id(tables: CorpusTables, ids: Sequence[str]) -> sa.Select[Any]:
    """The units with these ids."""
    return sa.select(*unit_columns(tables)).where(tables.units.c.id.in_(list(ids)))
