"""The units a graph walk reached, read in two statements per server: their rows with their similarity to the
question (:func:`read_rows`, one ``UNION ALL`` over the corpora they belong to), and, for the units of multi-vector
corpora (tables, documents) the caller ranks best, the parts that hold a reached entity's name (the most names first,
then the nearest to the question), at most ``per_unit`` a unit (:func:`read_parts`). Every id list, pattern and vector
is a parameter, named per corpus."""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
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


def _ids(name: str, ids: Sequence[str]) -> sa.ColumnElement[Any]:
    return sa.cast(sa.bindparam(name, [str(i) for i in ids], type_=ARRAY(sa.Text)), ARRAY(UUID(as_uuid=False)))


def _unit_rows(
    i: int, corpus: str, tables: CorpusTables, ids: Sequence[str], vector: Sequence[float]
) -> sa.Select[Any]:
    u = tables.units
    similarity = 1 - u.c.embedding.cosine_distance(q.query_vector(vector, tables.spec.dimension, name=f"vector_{i}"))
    return sa.select(
        sa.literal(corpus, sa.Text).label("corpus"), *q.unit_columns(tables), similarity.label("text_sim")
    ).where(u.c.id == sa.any_(_ids(f"units_{i}", ids)))


def _named_parts(
    i: int, corpus: str, tables: CorpusTables, ids: Sequence[str], names: Sequence[str], vector: Sequence[float], k: int
) -> sa.Select[Any]:
    p = tables.parts
    assert p is not None
    n = len(names)
    matched = functools.reduce(
        operator.add,
        [  # as queries.parts_with_terms: each name matched counts 2^n, and 2^(n-1-j) for being the j-th
            sa.case(
                (
                    p.c.content.op("~*")(sa.bindparam(f"name_{i}_{j}", term_pattern(x), type_=sa.Text)),
                    (1 << n) + (1 << (n - 1 - j)),
                ),
                else_=0,
            )
            for j, x in enumerate(names)
        ],
    )
    distance = p.c.embedding.cosine_distance(q.query_vector(vector, tables.spec.dimension, name=f"part_vector_{i}"))
    holding = (
        sa.select(p.c.unit_id, p.c.ord, p.c.content, distance.label("distance"), matched.label("matched"))
        .where(p.c.unit_id == sa.any_(_ids(f"part_units_{i}", ids)))
        .where(matched > 0)
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
    for owner, corpora in _by_owner(store, list(wanted)):
        units = [
            _unit_rows(i, c, owner.tables.corpus(specs[c]), list(wanted[c]), vector) for i, c in enumerate(corpora)
        ]
        with owner.transaction("read the units the knowledge graph reached", read_only=True) as conn:
            of_units = units[0] if len(units) == 1 else sa.union_all(*units)
            for found in conn.execute(of_units).mappings():
                rows[(found["corpus"], str(found["id"]))] = dict(found)
    return rows


def read_parts(
    store: Store, wanted: Mapping[str, Mapping[str, Sequence[str]]], vector: Sequence[float], *, per_unit: int = 3
) -> dict[tuple[str, str], tuple[tuple[int, str, float], ...]]:
    """For ``wanted`` (corpus → unit id → the entity names the walk reached it by) of multi-vector corpora: the parts
    naming one of them by (corpus, id), best first, as ``(index, text, similarity)``: one statement per server."""
    specs = store.corpora()
    parts: dict[tuple[str, str], list[tuple[int, str, float]]] = {}
    for owner, corpora in _by_owner(store, list(wanted)):
        tables = {c: owner.tables.corpus(specs[c]) for c in corpora}
        named = [
            _named_parts(
                i,
                c,
                tables[c],
                list(wanted[c]),
                list(dict.fromkeys(n for names in wanted[c].values() for n in names))[:MAX_NAMES],
                vector,
                per_unit,
            )
            for i, c in enumerate(corpora)
            if tables[c].parts is not None
        ]
        if not named:
            continue
        with owner.transaction("read the parts naming what the knowledge graph reached", read_only=True) as conn:
            of_parts = named[0] if len(named) == 1 else sa.union_all(*named)
            order: tuple[sa.ColumnElement[Any], ...] = (
                sa.literal_column("corpus"),
                sa.literal_column("unit_id"),
                sa.literal_column("rank"),
            )
            for part in conn.execute(of_parts.order_by(*order)):
                parts.setdefault((part.corpus, part.unit_id), []).append(
                    (int(part.ord), part.content, float(part.similarity))
                )
    return {key: tuple(found) for key, found in parts.items()}
