"""Bounded breadth-first expansion over ``graph_relations``: one statement per hop.

Each hop reads, for every entity of the frontier, at most ``max_fanout`` of its relations (both directions, the
heaviest first) through a ``LATERAL`` subquery with a ``LIMIT``, so a hub with a million relations costs
``max_fanout`` index reads, not a million. The frontier is cut to ``limit`` entities, so a walk reads at most
``hops · limit · max_fanout`` relations for any graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from ..store.graph_tables import GraphTables
from .model import CO_OCCURS

__all__ = ["MAX_FANOUT", "MAX_HOPS", "Reached", "breadth_first", "shortest_paths", "step"]

#: The most hops any walk takes.
MAX_HOPS = 3
#: The most relations followed from one entity in one hop.
MAX_FANOUT = 1000


@dataclass(frozen=True, slots=True)
class Reached:
    """An entity reached in ``hops`` steps, by the relations whose keywords are ``via``; ``weight`` is the smallest
    relation weight on the way."""

    entity: int
    hops: int
    via: tuple[str, ...]
    weight: float


def step(conn: sa.Connection, t: GraphTables, frontier: list[int], max_fanout: int) -> list[Any]:
    """Rows ``(node, other, keywords, weight)``: up to ``max_fanout`` relations of each entity of ``frontier``."""
    if not frontier:
        return []
    r = t.relations
    f = sa.func.unnest(sa.literal(frontier, type_=ARRAY(sa.BigInteger))).table_valued("node").render_derived("f")
    out = (
        sa.select(r.c.target_entity.label("other"), r.c.keywords, r.c.weight)
        .where(r.c.source_entity == f.c.node)
        .correlate(f)
    )
    into = (
        sa.select(r.c.source_entity.label("other"), r.c.keywords, r.c.weight)
        .where(r.c.target_entity == f.c.node)
        .correlate(f)
    )
    both = sa.union_all(out, into).subquery("both_ways")
    best = (
        sa.select(both.c.other, both.c.keywords, both.c.weight)
        .order_by(both.c.weight.desc(), both.c.other)
        .limit(sa.literal_column(str(int(max_fanout))))
        .lateral("best")
    )
    query = sa.select(f.c.node, best.c.other, best.c.keywords, best.c.weight).select_from(f.join(best, sa.true()))
    return list(conn.execute(query))


def breadth_first(
    conn: sa.Connection, t: GraphTables, start: int, *, hops: int, max_fanout: int, limit: int
) -> list[Reached]:
    """Entities within ``hops`` of ``start`` (not itself), nearest first, at most ``limit``."""
    seen: dict[int, Reached] = {start: Reached(start, 0, (), float("inf"))}
    frontier = [start]
    for depth in range(1, hops + 1):
        nxt: list[int] = []
        # a named relation says more than two names sharing a passage: it is the one a neighbour is reached by
        for row in sorted(step(conn, t, frontier, max_fanout), key=lambda r: (r.keywords == CO_OCCURS, -r.weight)):
            other = int(row.other)
            if other in seen:
                continue
            came = seen[int(row.node)]
            seen[other] = Reached(other, depth, (*came.via, row.keywords), min(came.weight, float(row.weight)))
            nxt.append(other)
            if len(seen) > limit:
                break
        if len(seen) > limit or not nxt:
            break
        frontier = nxt
    reached = [r for r in seen.values() if r.entity != start]
    reached.sort(key=lambda r: (r.hops, -r.weight, r.entity))
    return reached[:limit]


def shortest_paths(
    conn: sa.Connection, t: GraphTables, start: int, end: int, *, max_hops: int, max_fanout: int, limit: int
) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    """The shortest chains ``start`` → ``end`` as (entity ids, keywords of each step), at most ``limit``."""
    if start == end:
        return [((start,), ())]
    parents: dict[int, list[tuple[int, str]]] = {start: []}
    frontier = [start]
    found = False
    for _ in range(max_hops):
        layer: dict[int, list[tuple[int, str]]] = {}
        for row in sorted(step(conn, t, frontier, max_fanout), key=lambda r: (r.keywords == CO_OCCURS, -r.weight)):
            other = int(row.other)
            if other in parents:
                continue
            layer.setdefault(other, []).append((int(row.node), row.keywords))
        parents.update(layer)
        if end in layer:
            found = True
            break
        frontier = list(layer)[: MAX_FANOUT * 10]
        if not frontier:
            break
    if not found:
        return []
    chains: list[tuple[tuple[int, ...], tuple[str, ...]]] = []

    def back(node: int, ids: tuple[int, ...], via: tuple[str, ...]) -> None:
        if len(chains) >= limit * 4:
            return
        if node == start:
            chains.append(((start, *ids), via))
            return
        for parent, keywords in parents[node]:
            back(parent, (node, *ids), (keywords, *via))

    back(end, (), ())
    return list(dict.fromkeys(chains))  # two relations of the same kind between two entities: one chain
