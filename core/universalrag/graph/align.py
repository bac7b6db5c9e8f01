"""Entity alignment by embedding similarity: two entities of one type whose names mean the same thing become one.

Ingestion aligns entities by name only (:func:`~universalrag.graph.model.normalise_key` and alias keys,
:mod:`universalrag.graph.write`), so "Scunthorpe United" in one table and "Scunthorpe United F.C." in another stay two
entities. :func:`align_entities` (run by ``universalrag graph build`` after the entity vectors are computed) finds
them in three steps:

1. **Candidates** (bounded): for each entity with a vector, its :data:`NEIGHBOURS` nearest entities *of the same type*
   by the stored entity vector (pgvector's index, the iterative scan where the server has it), at most
   :data:`MAX_ENTITIES` entities read and :data:`MAX_CANDIDATE_PAIRS` pairs kept (the nearest).
2. **Decision** (:func:`same_entity`): the two *names* are embedded on their own (the stored vector also holds the
   description, which two different rows of one table share much of; only pairs that pass the checks needing no
   vector are embedded); the pair is one entity when their cosine is at least :data:`SAME_ENTITY_THRESHOLD`, one
   name is the other with a qualifier after it (:func:`qualifies`: brackets, a part after a comma, a possessive, a
   legal suffix: "Fulham" and "Fulham F.C.", not "Ohio" and "Ohio State") and the numbers in the two names are the same
   (:func:`numbers`: "2010 FIFA World Cup" and "2014 FIFA World Cup" are two). The bundled encoder alone cannot tell
   "University of Washington" from "Washington University" (cosine 0.97): on the benchmark's pairs the cosine alone
   stays below 0.74 precision at every threshold up to 0.97, the three checks together reach 0.99. Entities that are
   units themselves (tables, figures, clips, sections, videos, documents: :data:`UNIT_TYPES`) never merge, nor do two
   entities that are each the anchor of a unit.
3. **Merge**, all in one transaction: the entity with fewer mentions (an anchored one is kept first) gives its
   mentions and relations to the other (a unit naming both keeps one mention, weights summed; relations one source
   states twice become one, weights summed; a relation from the entity to itself is dropped); its name and key become
   aliases of the kept entity, so a later ingest of that name aligns by alias key; its description is appended
   (at most :data:`~universalrag.graph.write.MAX_DESCRIPTION` characters); the kept entity's vector is computed
   again; the merged entity is deleted.

A second run finds nothing more to merge among the same entities. The rows stay tied to their sources: a merged
mention or relation keeps its ``source_id``, so deleting or re-ingesting a source removes exactly what it stated,
and an entity left with no mention is deleted as before.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa

from ..store.graph_tables import GraphTables
from ..store.queries import set_locals
from .model import ANCHOR, normalise_key
from .write import MAX_ALIASES, MAX_DESCRIPTION, entity_text

__all__ = [
    "MAX_CANDIDATE_PAIRS",
    "MAX_ENTITIES",
    "NEIGHBOURS",
    "SAME_ENTITY_THRESHOLD",
    "UNIT_TYPES",
    "AlignReport",
    "Merge",
    "align_entities",
    "numbers",
    "qualifies",
    "same_entity",
]

#: Cosine of two names' vectors (the bundled all-MiniLM-L6-v2) at and above which two entities of one type, one name
#: the other with a qualifier and with the same numbers, are one. ``benchmarks/graph_alignment.py`` measures the rule
#: on labelled name pairs from the 250 wikitables pages (a link's text and the title of the page it links to are one
#: entity; two pages linked from cells of one column are two, among them each title's three nearest): with the
#: qualifier and numbers checks, precision on its tune half is flat (0.995 from 0.30 to 0.86), so the cosine was set
#: by the merges ``graph build`` made on the first 12 of those pages, judged by hand: the wrong ones ("Great Race" /
#: "The Great Race, Box Office Information", 0.50 to 0.84) all lie below 0.85, the right ones ("Colchester United" /
#: "Colchester United F.C", "Gurney" / "Gurney's") at 0.86 and above. At 0.85 the benchmark's held-out half measures
#: precision and recall as docs/graph.md, "Alignment", states (a wrong merge joins two things' facts and no later
#: step splits them; a missed one only leaves two entities).
SAME_ENTITY_THRESHOLD = 0.85
#: Nearest entities of the same type read per entity as candidates.
NEIGHBOURS = 5
#: Entities read as candidates' first ends per run (in id order).
MAX_ENTITIES = 200_000
#: Candidate pairs kept per run (the nearest by stored vector); their names are embedded.
MAX_CANDIDATE_PAIRS = 20_000
#: Types of entities that are units or parts of one source: two of them are two things, however alike their names.
UNIT_TYPES = frozenset({"table", "figure", "image", "clip", "section", "video", "document"})

_BATCH = 1000
_NUMBER = re.compile(r"\d+")
_ARTICLE = re.compile(r"^(?:the|a|an) ")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
#: A name and its qualifier: brackets, a part after a comma, a possessive, or a legal suffix of a company or club.
_QUALIFIED = re.compile(
    r"^(?P<head>.+?)(?:\s*\([^()]*\)|\s*,.+|['’]s|\s+(?:a\.?\s?f\.?\s?c|f\.?\s?c|r\.?\s?f\.?\s?c|s\.?\s?c|c\.?\s?f"
    r"|football club|ltd|inc|plc|llc|corp|co)\.?)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Merge:
    """Entity ``merged`` (called ``merged_name``) went into ``kept`` (``kept_name``); ``similarity``: their names'
    cosine."""

    kept: int
    kept_name: str
    merged: int
    merged_name: str
    similarity: float


@dataclass(frozen=True, slots=True)
class AlignReport:
    """What one alignment run did: candidate pairs scored, the merges made, seconds taken."""

    candidates: int
    merges: tuple[Merge, ...]
    seconds: float

    @property
    def merged(self) -> int:
        """How many entities were merged into another."""
        return len(self.merges)


def numbers(name: str) -> tuple[str, ...]:
    """The runs of digits in ``name``'s key, leading zeros dropped (``"Apollo 11"`` → ``("11",)``)."""
    return tuple(n.lstrip("0") or "0" for n in _NUMBER.findall(normalise_key(name)))


def qualifies(a: str, b: str) -> bool:
    """Whether one name is the other (a leading article aside) or the other with a qualifier after it: a part in
    brackets, a part after a comma, a possessive, or a company's or club's legal suffix (:data:`_QUALIFIED`):
    "Fulham" and "Fulham F.C.", "Phoenix" and "Phoenix, Arizona", "Earl Edwards" and "Earl Edwards (American
    football)", "The Kestrel Company" and "Kestrel Company" — but not "Charleston" and "North Charleston", "Ohio" and
    "Ohio State", "PGA" and "PGA Championship", nor "University of Washington" and "Washington University"."""
    names = sorted(((_ARTICLE.sub("", normalise_key(x)), x) for x in (a, b)), key=lambda kn: len(kn[0]))
    (short, _), (long, long_name) = names
    if not short or long == short:
        return bool(short)
    found = _QUALIFIED.match(_LEADING_ARTICLE.sub("", long_name.strip()))
    return found is not None and _ARTICLE.sub("", normalise_key(found.group("head"))) == short


def same_entity(a: str, b: str, similarity: float, threshold: float = SAME_ENTITY_THRESHOLD) -> bool:
    """The decision rule: names ``a`` and ``b`` (of one type) whose vectors' cosine is ``similarity`` name one entity
    when that cosine is at least ``threshold``, one name :func:`qualifies` the other, and their :func:`numbers` are
    the same."""
    return similarity >= threshold and qualifies(a, b) and numbers(a) == numbers(b)


def _candidates(
    conn: sa.Connection, t: GraphTables, *, neighbours: int, max_pairs: int, iterative: bool
) -> dict[tuple[int, int], float]:
    """Pairs (lower id first) of same-type entities near each other by stored vector, with that cosine."""
    e = t.entities
    b = e.alias("b")
    firsts = list(
        conn.execute(
            sa.select(e.c.id)
            .where(e.c.embedding.is_not(None), e.c.type.not_in(sorted(UNIT_TYPES)))
            .order_by(e.c.id)
            .limit(MAX_ENTITIES)
        ).scalars()
    )
    if iterative:  # a type filter through the HNSW index still finds ``neighbours`` rows
        conn.execute(set_locals({"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": max(40, 4 * neighbours)}))
    distance = b.c.embedding.cosine_distance(e.c.embedding)
    near = (
        sa.select(b.c.id.label("other"), distance.label("distance"))
        .where(b.c.type == e.c.type, b.c.id != e.c.id, b.c.embedding.is_not(None))
        .order_by(distance)
        .limit(neighbours)
        .lateral("near")
    )
    pairs: dict[tuple[int, int], float] = {}
    for i in range(0, len(firsts), _BATCH):
        query = sa.select(e.c.id, near.c.other, near.c.distance).select_from(e.join(near, sa.true()))
        for r in conn.execute(query.where(e.c.id.in_(firsts[i : i + _BATCH]))):
            pair = (min(int(r.id), int(r.other)), max(int(r.id), int(r.other)))
            pairs[pair] = max(pairs.get(pair, -1.0), 1.0 - float(r.distance))
    best = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:max_pairs]
    return dict(best)


def _entities(conn: sa.Connection, t: GraphTables, ids: Sequence[int], *, lock: bool = False) -> dict[int, Any]:
    """Rows of ``ids`` with their mention count and whether a unit anchors them (locked in key order: ``lock``)."""
    e, m = t.entities, t.mentions
    mentions = sa.select(sa.func.count()).where(m.c.entity_id == e.c.id).scalar_subquery()
    anchored = sa.exists().where(m.c.entity_id == e.c.id, m.c.role == ANCHOR)
    rows: dict[int, Any] = {}
    for i in range(0, len(ids), 5000):
        query = sa.select(
            e.c.id,
            e.c.key,
            e.c.name,
            e.c.type,
            e.c.description,
            e.c.aliases,
            e.c.alias_keys,
            mentions.label("mentions"),
            anchored.label("anchored"),
        ).where(e.c.id.in_(list(ids[i : i + 5000])))
        if lock:
            query = query.order_by(e.c.key).with_for_update(of=e)
        rows.update({int(r.id): r for r in conn.execute(query)})
    return rows


def _plan(scored: Sequence[tuple[float, int, int]], rows: dict[int, Any]) -> dict[int, tuple[int, float]]:
    """Merged id → (kept id, similarity), best pairs first. An entity merged away is not reconsidered in this run, and
    one that kept another is not merged away, so no chain forms (a next run compares the kept name anew)."""
    plan: dict[int, tuple[int, float]] = {}
    keepers: set[int] = set()
    for sim, a, b in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        if a in plan or b in plan:
            continue
        ra, rb = rows[a], rows[b]
        rank = {x: (bool(r.anchored), int(r.mentions), -x) for x, r in ((a, ra), (b, rb))}
        keep, gone = (a, b) if rank[a] >= rank[b] else (b, a)
        if gone in keepers:
            if keep in keepers:
                continue
            keep, gone = gone, keep
        plan[gone] = (keep, sim)
        keepers.add(keep)
    return plan


def _merged_row(keep: Any, gone: Sequence[Any]) -> dict[str, Any]:
    """The kept entity's description and aliases after taking in ``gone``; the merged entities' own keys first, so a
    later ingest of those names finds the kept entity."""
    description = keep.description
    for g in gone:
        if g.description and g.description not in description:
            description = f"{description} | {g.description}" if description else g.description
    names: dict[str, str] = {}
    for akey, alias in (
        *((g.key, g.name) for g in gone),
        *zip(keep.alias_keys, keep.aliases, strict=False),
        *((k, a) for g in gone for k, a in zip(g.alias_keys, g.aliases, strict=False)),
    ):
        if akey != keep.key:
            names.setdefault(akey, alias)
    kept = list(names.items())[:MAX_ALIASES]
    order = {k: i for i, k in enumerate([*keep.alias_keys, *names])}
    kept.sort(key=lambda kv: order[kv[0]])
    return {
        "description": description[:MAX_DESCRIPTION],
        "aliases": [a for _, a in kept],
        "alias_keys": [k for k, _ in kept],
    }


def _apply(
    conn: sa.Connection,
    t: GraphTables,
    plan: dict[int, tuple[int, float]],
    rows: dict[int, Any],
    embed: Callable[[Sequence[str]], np.ndarray],
) -> None:
    """Move the merged entities' mentions and relations to the kept ones, deduplicate, update the kept rows, delete
    the merged ones: statements over every pair at once."""
    e, m, r = t.entities, t.mentions, t.relations
    mapping = sa.values(sa.column("gone", sa.BigInteger), sa.column("keep", sa.BigInteger), name="merge_map").data(
        [(gone, keep) for gone, (keep, _) in sorted(plan.items())]
    )
    keeps = sorted({keep for keep, _ in plan.values()})
    conn.execute(sa.update(m).where(m.c.entity_id == mapping.c.gone).values(entity_id=mapping.c.keep))
    conn.execute(sa.update(r).where(r.c.source_entity == mapping.c.gone).values(source_entity=mapping.c.keep))
    conn.execute(sa.update(r).where(r.c.target_entity == mapping.c.gone).values(target_entity=mapping.c.keep))
    conn.execute(sa.delete(r).where(r.c.source_entity == r.c.target_entity, r.c.source_entity.in_(keeps)))

    # a unit that named both entities keeps one mention (anchor if either was), weights summed
    mm = m.alias("same_unit")  # the subqueries read the table afresh, uncorrelated with the statement's row
    groups = (
        sa.select(
            sa.func.min(mm.c.id).label("first"),
            sa.func.sum(mm.c.weight).label("weight"),
            sa.func.bool_or(mm.c.role == ANCHOR).label("anchor"),
        )
        .where(mm.c.entity_id.in_(keeps))
        .group_by(mm.c.entity_id, mm.c.corpus, mm.c.unit_id, mm.c.source_id)
        .having(sa.func.count() > 1)
        .subquery()
    )
    conn.execute(
        sa.update(m)
        .where(m.c.id == groups.c.first)
        .values(weight=groups.c.weight, role=sa.case((groups.c.anchor, ANCHOR), else_=m.c.role))
    )
    firsts = (
        sa.select(sa.func.min(mm.c.id))
        .where(mm.c.entity_id.in_(keeps))
        .group_by(mm.c.entity_id, mm.c.corpus, mm.c.unit_id, mm.c.source_id)
    )
    conn.execute(sa.delete(m).where(m.c.entity_id.in_(keeps), m.c.id.not_in(firsts)))

    # a relation one source stated for both entities becomes one, weights summed
    rr = r.alias("same_fact")
    touching = sa.or_(rr.c.source_entity.in_(keeps), rr.c.target_entity.in_(keeps))
    by = (rr.c.source_entity, rr.c.target_entity, rr.c.keywords, rr.c.source_id)
    rgroups = (
        sa.select(sa.func.min(rr.c.id).label("first"), sa.func.sum(rr.c.weight).label("weight"))
        .where(touching)
        .group_by(*by)
        .having(sa.func.count() > 1)
        .subquery()
    )
    conn.execute(sa.update(r).where(r.c.id == rgroups.c.first).values(weight=rgroups.c.weight))
    firsts_r = sa.select(sa.func.min(rr.c.id)).where(touching).group_by(*by)
    conn.execute(
        sa.delete(r).where(sa.or_(r.c.source_entity.in_(keeps), r.c.target_entity.in_(keeps)), r.c.id.not_in(firsts_r))
    )

    gone_by_keep: dict[int, list[Any]] = {}
    for gone, (keep, _) in sorted(plan.items()):
        gone_by_keep.setdefault(keep, []).append(rows[gone])
    updates = []
    for keep in keeps:
        row = {"eid": keep, **_merged_row(rows[keep], gone_by_keep[keep])}
        row["text"] = entity_text(rows[keep].name, rows[keep].type, row["description"])
        updates.append(row)
    vectors = np.asarray(embed([u["text"] for u in updates]), dtype=np.float32)
    conn.execute(
        sa.update(e)
        .where(e.c.id == sa.bindparam("eid"))
        .values(
            description=sa.bindparam("description"),
            aliases=sa.bindparam("aliases"),
            alias_keys=sa.bindparam("alias_keys"),
            embedding=sa.bindparam("vec"),
            updated_at=sa.func.now(),
        ),
        [{**{k: v for k, v in u.items() if k != "text"}, "vec": vec} for u, vec in zip(updates, vectors, strict=True)],
    )
    conn.execute(sa.delete(e).where(e.c.id.in_(sorted(plan))))


def align_entities(
    store: Any,
    tables: GraphTables,
    embed: Callable[[Sequence[str]], np.ndarray],
    *,
    threshold: float = SAME_ENTITY_THRESHOLD,
    neighbours: int = NEIGHBOURS,
    max_pairs: int = MAX_CANDIDATE_PAIRS,
) -> AlignReport:
    """Merge the entities of ``tables`` that name one thing (the module docstring): candidates are read in one
    transaction of ``store`` (a :class:`~universalrag.store.Store`), their names embedded with ``embed`` outside any,
    and the merges written in one transaction that locks the entities (in key order, as ingestion does) and skips a
    pair whose rows changed meanwhile."""
    started = time.perf_counter()
    with store.transaction("find graph entities to align") as conn:
        iterative = bool(store._supports_iterative_scan(conn))
        pairs = _candidates(conn, tables, neighbours=neighbours, max_pairs=max_pairs, iterative=iterative)
        rows = _entities(conn, tables, sorted({i for p in pairs for i in p}))
    pairs = {
        (a, b): s
        for (a, b), s in pairs.items()
        if a in rows and b in rows and not (rows[a].anchored and rows[b].anchored)
    }
    # the checks that need no vector first: only the names of pairs that pass them are embedded
    named = [(a, b) for a, b in pairs if same_entity(rows[a].name, rows[b].name, 1.0, threshold)]
    ids = sorted({i for p in named for i in p})
    vectors = np.asarray(embed([rows[i].name for i in ids]), dtype=np.float32) if ids else np.zeros((0, 0))
    at = {i: n for n, i in enumerate(ids)}
    scored = []
    for a, b in named:
        sim = float(vectors[at[a]] @ vectors[at[b]])
        if same_entity(rows[a].name, rows[b].name, sim, threshold):
            scored.append((sim, a, b))
    if not scored:
        return AlignReport(candidates=len(pairs), merges=(), seconds=time.perf_counter() - started)
    merges: list[Merge] = []
    with store.transaction("merge aligned graph entities") as conn:
        current = _entities(conn, tables, sorted({i for _, a, b in scored for i in (a, b)}), lock=True)
        unchanged = [
            (sim, a, b)
            for sim, a, b in scored
            if all(x in current and (current[x].name, current[x].type) == (rows[x].name, rows[x].type) for x in (a, b))
        ]
        plan = _plan(unchanged, current)
        if plan:
            _apply(conn, tables, plan, current, embed)
            merges = [
                Merge(
                    kept=keep, kept_name=current[keep].name, merged=gone, merged_name=current[gone].name, similarity=s
                )
                for gone, (keep, s) in sorted(plan.items(), key=lambda kv: -kv[1][1])
            ]
    return AlignReport(candidates=len(pairs), merges=tuple(merges), seconds=time.perf_counter() - started)
