"""Row estimates of corpus tables without counting them, cached per process for a few seconds.

A search decides per table whether to scan it exactly or through its HNSW index
(:mod:`universalrag.store.corpus_search`) and routing reads corpus sizes as evidence; neither may count rows per query.
The estimate is the larger of the cumulative statistics' live-row count (``pg_stat_get_live_tuples``: follows inserts
and deletes within about a second) and ``pg_class.reltuples`` (kept by ANALYZE and autovacuum; what a read replica has,
whose activity statistics are its own). Neither takes a lock on the table. A table whose estimate is below
:data:`COUNT_BELOW` rows — or that has neither (never analysed, no statistics yet) — is counted, up to a cap: counting a
small table costs about what reading its statistics does, and right after an ingest the statistics lag (a server flushes
a writer's counts when it goes idle, and ANALYZE runs up to a minute later): the demo's 24-row paragraph table read
3 rows for its first minute, and routing, which reads corpus sizes, decided differently until it settled. One
statement reads every table asked for (and one more counts the small ones); results are cached for :data:`TTL_S`
seconds per database, schema and table — an empty table's for :data:`EMPTY_TTL_S` only, so that rows another process
ingests are routed to within a second (:func:`forget` drops them).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

__all__ = ["COUNT_BELOW", "COUNT_CAP", "EMPTY_TTL_S", "TTL_S", "forget", "table_rows"]

#: How long an estimate is reused (seconds).
TTL_S = 10.0
#: How long an empty table's count is reused (seconds): the first rows another process writes (``universalrag
#: ingest`` beside ``universalrag serve``) make a corpus a routing candidate this soon.
EMPTY_TTL_S = 1.0
#: A table without usable statistics is counted up to this many rows (``COUNT_CAP + 1`` means "more").
COUNT_CAP = 200_000
#: A table estimated below this many rows is counted (up to :data:`COUNT_CAP`) instead of trusting the estimate.
COUNT_BELOW = 10_000

_PG_CLASS = sa.table("pg_class", sa.column("oid"), sa.column("reltuples"), sa.column("relkind"), schema="pg_catalog")
_lock = threading.Lock()
_cache: dict[tuple[str, str, str], tuple[float, int]] = {}
_databases: weakref.WeakKeyDictionary[sa.Engine, str] = weakref.WeakKeyDictionary()


def _database(conn: sa.Connection) -> str:
    """The database part of the cache key: the engine's URL (password hidden), rendered once per engine — an
    engine's URL never changes, and a ``URL`` hashes by rendering itself, so keying a cache by it renders it on
    every lookup."""
    engine = conn.engine
    database = _databases.get(engine)
    if database is None:
        database = _databases[engine] = engine.url.render_as_string(hide_password=True)
    return database


def _regclass(table: sa.Table) -> sa.ColumnElement[object]:
    """``to_regclass('schema.table')`` with both names quoted by the server (``format('%I.%I')``)."""
    text = sa.func.format(
        sa.cast(sa.literal("%I.%I"), sa.Text),
        sa.cast(sa.literal(table.schema or "public"), sa.Text),
        sa.cast(sa.literal(table.name), sa.Text),
    )
    return sa.func.to_regclass(text)


def _statistics(table: sa.Table) -> sa.Select[str, Any, Any]:
    """``(name, reltuples, live)`` of ``table``, with those of its partitions added when it is partitioned (a
    partitioned table's own ``pg_class`` row is left out: ANALYZE gives it the total of its leaves, which
    ``pg_partition_tree`` lists, and activity statistics none). A table never analysed counts 0 ``reltuples``
    (PostgreSQL stores -1)."""
    tree = sa.func.pg_partition_tree(_regclass(table)).table_valued("relid", "parentrelid", "isleaf", "level")
    leaves = sa.select(tree.c.relid).where(tree.c.isleaf)
    return sa.select(
        sa.literal(table.name).label("name"),
        sa.func.sum(sa.func.greatest(_PG_CLASS.c.reltuples, 0)).label("reltuples"),
        sa.func.sum(sa.func.pg_stat_get_live_tuples(_PG_CLASS.c.oid)).label("live"),
    ).where(
        sa.or_(sa.and_(_PG_CLASS.c.oid == _regclass(table), _PG_CLASS.c.relkind != "p"), _PG_CLASS.c.oid.in_(leaves))
    )


def table_rows(conn: sa.Connection, tables: Iterable[sa.Table], *, ttl: float | None = None) -> dict[str, int]:
    """Estimated rows of each table, by table name (see the module docstring); cached for ``ttl`` seconds
    (default :data:`TTL_S`; 0: read now), an empty table's for :data:`EMPTY_TTL_S` at most."""
    ttl = TTL_S if ttl is None else ttl
    tables = list(tables)
    database, now = _database(conn), time.monotonic()
    out: dict[str, int] = {}
    for t in tables:  # reads need no lock: a dict lookup is atomic, and entries are replaced whole
        hit = _cache.get((database, t.schema or "", t.name))
        if hit is not None and now - hit[0] < (ttl if hit[1] else min(ttl, EMPTY_TTL_S)):
            out[t.name] = hit[1]
    missing = [t for t in tables if t.name not in out] if len(out) < len(tables) else []
    if not missing:
        return out
    selects = [_statistics(t) for t in missing]
    rows: Mapping[str, sa.Row[object]] = {r.name: r for r in conn.execute(sa.union_all(*selects))}
    fresh: dict[str, int] = {}
    small: list[sa.Table] = []
    for t in missing:
        r = rows.get(t.name)
        if r is None or r.reltuples is None:  # dropped meanwhile
            fresh[t.name] = 0
            continue
        estimate = max(float(r.reltuples), float(r.live or 0))
        if estimate >= COUNT_BELOW:
            fresh[t.name] = round(estimate)
        else:  # small, or never analysed and no activity statistics yet (or empty): counted
            small.append(t)
    if small:
        fresh.update(_counted(conn, small))
    with _lock:
        for name, n in fresh.items():
            table = next(t for t in missing if t.name == name)
            _cache[(database, table.schema or "", name)] = (now, n)
    return {**out, **fresh}


def _counted(conn: sa.Connection, tables: list[sa.Table]) -> dict[str, int]:
    """The rows of ``tables``, each counted up to :data:`COUNT_CAP` + 1, in one statement."""
    counts = []
    for t in tables:
        capped = sa.select(sa.literal(1)).select_from(t).limit(sa.literal_column(str(COUNT_CAP + 1))).subquery()
        counts.append(
            sa.select(
                sa.literal(t.name).label("name"),
                sa.select(sa.func.count()).select_from(capped).scalar_subquery().label("n"),
            )
        )
    return {r.name: int(r.n) for r in conn.execute(sa.union_all(*counts))}


def forget(schema: str | None = None) -> None:
    """Drop cached estimates (of one schema, or all): the next search or size reading asks the server."""
    with _lock:
        for key in [k for k in _cache if schema is None or k[1] == schema]:
            del _cache[key]
