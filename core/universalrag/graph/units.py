"""The units a graph walk reached, read in two statements per server, each as a search reads (one round trip):
their rows with their similarity to the question (:func:`read_rows`, one ``UNION ALL`` over the corpora they belong
to), and, for the units of multi-vector corpora (tables, documents) the caller ranks best, the parts that hold a
reached entity's name (the most names first, then the nearest to the question), at most ``per_unit`` a unit
(:func:`read_parts`). Every id list, pattern and vector is a parameter, named per corpus."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from ..exact_terms import term_pattern
from ..store import Store
from ..store import queries as q
from ..store.schema import CorpusTables

__all__ = ["read_parts", "read_rows"]

#: Names of reached entities looked for in one corpus's parts, at most.
MAX_NAMES = 16
#: A unit's parts holding a name that are ranked, at most (a table of many rows naming a town in every row).
MAX_NAMED_PARTS = 200

Parts = dict[str, tuple[tuple[int, str, float], ...]]


def _ids(name: str) -> sa.ColumnElement[Any]:
    return sa.cast(sa.bindparam(name, type_=ARRAY(sa.Text)), ARRAY(UUID(as_uuid=False)))


def _vector(name: str, dimension: int) -> sa.ColumnElement[Any]:
    return sa.cast(sa.bindparam(name, type_=Vector(dimension)), Vector(dimension))


def _unit_rows(i: int, corpus: str, tables: CorpusTables) -> sa.Select[Any]:
    u, dimension = tables.units, tables.spec.dimension
    similarity = 1 - u.c.embedding.cosine_distance(_vector(f"vector_{dimension}", dimension))
    return sa.select(
        sa.literal(corpus, sa.Text).label("corpus"), *q.unit_columns(tables), similarity.label("text_sim")
    ).where(u.c.id == sa.any_(_ids(f"units_{i}")))


def _named_parts(i: int, corpus: str, tables: CorpusTables, k: int) -> sa.Select[Any]:
    p, dimension = tables.parts, tables.spec.dimension
    assert p is not None
    # as queries.parts_with_terms: of n names, each matched counts 2^n, and 2^(n-1-j) for being the j-th
    patterns = sa.bindparam(f"patterns_{i}", type_=ARRAY(sa.Text))
    names = sa.func.unnest(patterns).table_valued("pattern", with_ordinality="ord").render_derived(name=f"names_{i}")
    n = sa.func.cardinality(patterns)
    weight = sa.case(
        (
            p.c.content.op("~*")(names.c.pattern),
            _lit(1).op("<<")(n) + _lit(1).op("<<")(sa.cast(n - names.c.ord, sa.Integer)),
        ),
        else_=0,
    )
    matched = sa.select(sa.func.coalesce(sa.func.sum(weight), 0)).select_from(names).scalar_subquery()
    distance = p.c.embedding.cosine_distance(_vector(f"part_vector_{dimension}", dimension))
    holding = (
        sa.select(p.c.unit_id, p.c.ord, p.c.content, distance.label("distance"), matched.label("matched"))
        .where(p.c.unit_id == sa.any_(_ids(f"part_units_{i}")))
        .subquery(f"parts_{i}")
    )
    holding = (
        sa.select(holding)
        .where(holding.c.matched > 0)
        .limit(sa.literal_column(str(MAX_NAMED_PARTS)))
        .subquery(f"holding_{i}")
    )
    rank = sa.func.row_number().over(
        partition_by=holding.c.unit_id, order_by=(holding.c.matched.desc(), holding.c.distance)
    )
    ranked = sa.select(
        sa.literal(corpus, sa.Text).label("corpus"),
        sa.cast(holding.c.unit_id, sa.Text).label("unit_id"),
        holding.c.ord,
        holding.c.content,
        (1 - holding.c.distance).label("similarity"),
        rank.label("rank"),
    ).subquery(f"ranked_{i}")
    return sa.select(ranked).where(ranked.c.rank <= sa.literal_column(str(int(k))))


def _lit(n: int) -> sa.ColumnElement[Any]:
    return sa.literal_column(str(int(n)), sa.Integer)


#: Statements kept built, by what they read (kind, corpora and their tables): building one costs more of this
#: process's time than the server spends running it, and a kept statement keeps SQLAlchemy's key for its compiled
#: form. Its ids, vectors and name patterns are parameters given when it runs.
CACHED_STATEMENTS = 256
_statements: dict[tuple[Any, ...], tuple[tuple[CorpusTables, ...], Any]] = {}
_statements_lock = threading.Lock()


def _statement(kind: str, tables: Sequence[tuple[str, CorpusTables]], build: Callable[[], Any], *extra: Any) -> Any:
    """The statement ``build()`` gives for ``kind`` over ``tables`` (corpus name, its tables), built once."""
    key = (kind, *extra, *((c, id(t)) for c, t in tables))
    held = tuple(t for _, t in tables)
    with _statements_lock:
        cached = _statements.get(key)
    if cached is not None and all(a is b for a, b in zip(cached[0], held, strict=True)):
        return cached[1]
    statement = build()
    with _statements_lock:
        if len(_statements) >= CACHED_STATEMENTS:
            _statements.clear()
        _statements[key] = (held, statement)
    return statement


def _mappings(statement: Any, params: Mapping[str, Any], conn: sa.Connection) -> Sequence[Any]:
    return conn.execute(statement, dict(params)).mappings().all()


def _rows(statement: Any, params: Mapping[str, Any], conn: sa.Connection) -> Sequence[Any]:
    return conn.execute(statement, dict(params)).all()


def _by_owner(store: Store, corpora: Sequence[str]) -> list[tuple[Store, list[str]]]:
    specs = store.corpora()
    by_owner: dict[int, tuple[Store, list[str]]] = {}
    for corpus in corpora:
        if corpus in specs:  # a corpus dropped since the graph was written is left out
            owner = store.owner(corpus)
            by_owner.setdefault(id(owner), (owner, []))[1].append(corpus)
    return list(by_owner.values())


def read_rows(
    store: Store, wanted: Mapping[str, Sequence[str]], vector: Sequence[float]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows of the units ``wanted`` (corpus → unit ids) by (corpus, id), each with its similarity to the question
    (``text_sim``): one statement per server."""
    specs = store.corpora()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    values = list(map(float, vector))
    for owner, corpora in _by_owner(store, list(wanted)):
        tables = [(c, owner.tables.corpus(specs[c])) for c in corpora]

        def build(tables: list[tuple[str, CorpusTables]] = tables) -> Any:
            units = [_unit_rows(i, c, t) for i, (c, t) in enumerate(tables)]
            return units[0] if len(units) == 1 else sa.union_all(*units)

        params: dict[str, Any] = {f"units_{i}": [str(u) for u in wanted[c]] for i, c in enumerate(corpora)}
        params.update({f"vector_{t.spec.dimension}": values for _, t in tables})
        found = owner.search_read(
            "read the units the knowledge graph reached",
            functools.partial(_mappings, _statement("rows", tables, build), params),
        )
        for row in found:
            rows[(row["corpus"], str(row["id"]))] = dict(row)
    return rows


def read_parts(
    store: Store, wanted: Mapping[str, Mapping[str, Sequence[str]]], vector: Sequence[float], *, per_unit: int = 3
) -> dict[tuple[str, str], tuple[tuple[int, str, float], ...]]:
    """For ``wanted`` (corpus → unit id → the entity names the walk reached it by) of multi-vector corpora: the parts
    naming one of them by (corpus, id), best first, as ``(index, text, similarity)``: one statement per server."""
    specs = store.corpora()
    parts: dict[tuple[str, str], list[tuple[int, str, float]]] = {}
    values = list(map(float, vector))
    for owner, corpora in _by_owner(store, list(wanted)):
        tables = [(c, t) for c in corpora if (t := owner.tables.corpus(specs[c])).parts is not None]
        if not tables:
            continue

        def build(tables: list[tuple[str, CorpusTables]] = tables) -> Any:
            named = [_named_parts(i, c, t, per_unit) for i, (c, t) in enumerate(tables)]
            of_parts = named[0] if len(named) == 1 else sa.union_all(*named)
            order: tuple[sa.ColumnElement[Any], ...] = (
                sa.literal_column("corpus"),
                sa.literal_column("unit_id"),
                sa.literal_column("rank"),
            )
            return of_parts.order_by(*order)

        params: dict[str, Any] = {}
        for i, (c, t) in enumerate(tables):
            names = list(dict.fromkeys(n for found in wanted[c].values() for n in found))[:MAX_NAMES]
            params[f"part_units_{i}"] = [str(u) for u in wanted[c]]
            params[f"patterns_{i}"] = [term_pattern(x) for x in names]
            params[f"part_vector_{t.spec.dimension}"] = values
        statement = _statement("parts", tables, build, per_unit)
        for part in owner.search_read(
            "read the parts naming what the knowledge graph reached", functools.partial(_rows, statement, params)
        ):
            parts.setdefault((part.corpus, part.unit_id), []).append(
                (int(part.ord), part.content, float(part.similarity))
            )
    return {key: tuple(found) for key, found in parts.items()}
