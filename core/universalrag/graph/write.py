"""Writing one source's :class:`~universalrag.graph.model.Extraction` on the connection of the source's transaction.

Steps, each one statement or one batch: forget what the source (or, for units of no source, those units) stated
before; find the stored entities the drafts align with (by key, or by a key that is another's alias); insert the new
entities and merge the drafts into the known ones (description appended up to :data:`MAX_DESCRIPTION` characters,
aliases joined up to :data:`MAX_ALIASES`, a ``concept`` taking a more precise type); write the relations and
mentions; embed the entities whose text is new. Upserts go in key order, so two sources naming the same entities
never wait on each other in a cycle. An entity left with no mention is deleted at commit (a trigger, revision 0013).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ..store.graph_tables import GraphTables
from ..types import Unit
from .model import ANCHOR, MENTION, Extraction, normalise_key
from .records import WriteCounts

__all__ = [
    "MAX_ALIASES",
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "WriteLimits",
    "entity_text",
    "write_extraction",
]

#: Characters of an entity's merged description that are kept.
MAX_DESCRIPTION = 1000
#: Other names kept per entity.
MAX_ALIASES = 16
#: Characters of a name that are kept (a longer "name" is a sentence, not a name).
MAX_NAME = 200


@dataclass(frozen=True, slots=True)
class WriteLimits:
    """Rows one source may write (the first ones are kept): bounded work for any extraction."""

    entities: int = 20_000
    relations: int = 50_000
    mentions: int = 100_000


@dataclass(slots=True)
class _Draft:
    key: str
    name: str
    type: str = "concept"
    descriptions: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # key -> name

    def description(self) -> str:
        return " | ".join(dict.fromkeys(d for d in self.descriptions if d))[:MAX_DESCRIPTION]


def entity_text(name: str, type_: str, description: str) -> str:
    """The text an entity's vector is computed from: "name (type): description"."""
    return f"{name} ({type_}): {description}" if description else f"{name} ({type_})"


def _clean(name: str) -> str:
    return " ".join(name.split())[:MAX_NAME]


def _drafts(extraction: Extraction, limits: WriteLimits) -> dict[str, _Draft]:
    drafts: dict[str, _Draft] = {}

    def draft(name: str) -> _Draft | None:
        name = _clean(name)
        key = normalise_key(name)
        if not key:
            return None
        if key not in drafts:
            if len(drafts) >= limits.entities:
                return None
            drafts[key] = _Draft(key=key, name=name)
        return drafts[key]

    for e in extraction.entities:
        d = draft(e.name)
        if d is None:
            continue
        if d.type == "concept" and e.type:
            d.type = e.type.strip().lower()[:40] or "concept"
        if e.description:
            d.descriptions.append(" ".join(e.description.split()))
        for alias in e.aliases:
            alias = _clean(alias)
            akey = normalise_key(alias)
            if akey and akey != d.key and len(d.aliases) < MAX_ALIASES:
                d.aliases.setdefault(akey, alias)
    for r in extraction.relations:
        draft(r.source)
        draft(r.target)
    for m in extraction.mentions:
        draft(m.entity)
    return drafts


def _resolve(conn: sa.Connection, t: GraphTables, drafts: dict[str, _Draft]) -> tuple[dict[str, Any], dict[str, str]]:
    """Stored entities by key that the drafts align with, and draft key → the stored key it merges into."""
    keys = sorted(set(drafts) | {a for d in drafts.values() for a in d.aliases})
    e = t.entities
    rows: dict[str, Any] = {}
    for i in range(0, len(keys), 5000):
        chunk = keys[i : i + 5000]
        query = sa.select(e.c.id, e.c.key, e.c.name, e.c.type, e.c.description, e.c.aliases, e.c.alias_keys).where(
            sa.or_(e.c.key.in_(chunk), e.c.alias_keys.overlap(sa.literal(chunk, type_=ARRAY(sa.Text))))
        )
        rows.update({r.key: r for r in conn.execute(query)})
    by_alias = {a: r.key for r in rows.values() for a in r.alias_keys}
    target: dict[str, str] = {}
    for key, d in drafts.items():
        if key in rows:
            target[key] = key
        elif key in by_alias:
            target[key] = by_alias[key]
        else:
            known = next((a for a in d.aliases if a in rows), None)
            target[key] = known or key
    return rows, target


def _merge_sets(e: sa.Table, excluded: Any) -> dict[str, Any]:
    """The SET clause of an upsert: the stored row merged with the incoming one."""

    def union(stored: Any, incoming: Any, name: str) -> Any:
        each = sa.func.unnest(sa.func.array_cat(stored, incoming)).column_valued(name)
        return sa.func.array(sa.select(each).distinct().limit(MAX_ALIASES).scalar_subquery())

    merged_aliases = union(e.c.aliases, excluded.aliases, "a")
    merged_keys = union(e.c.alias_keys, excluded.alias_keys, "k")
    description = sa.case(
        (
            sa.or_(excluded.description == "", sa.func.strpos(e.c.description, excluded.description) > 0),
            e.c.description,
        ),
        (e.c.description == "", sa.func.left(excluded.description, MAX_DESCRIPTION)),
        else_=sa.func.left(e.c.description + " | " + excluded.description, MAX_DESCRIPTION),
    )
    return {
        "type": sa.case((e.c.type == "concept", excluded.type), else_=e.c.type),
        "description": description,
        "aliases": merged_aliases,
        "alias_keys": merged_keys,
        "updated_at": sa.func.now(),
    }


def _upsert(conn: sa.Connection, t: GraphTables, drafts: dict[str, _Draft], target: dict[str, str]) -> dict[str, int]:
    """Insert or merge every draft into the entity of its target key; returns target key → id."""
    e = t.entities
    rows: dict[str, dict[str, Any]] = {}
    for key, d in drafts.items():
        into = target[key]
        row = rows.get(into)
        aliases = dict(d.aliases)
        if into != key:
            aliases[key] = d.name
        aliases.pop(into, None)
        if row is None:
            rows[into] = {
                "key": into,
                "name": d.name,
                "type": d.type,
                "description": d.description(),
                "aliases": list(aliases.values())[:MAX_ALIASES],
                "alias_keys": list(aliases)[:MAX_ALIASES],
            }
        else:  # two drafts of this source align with one entity
            if row["type"] == "concept":
                row["type"] = d.type
            row["description"] = " | ".join(x for x in (row["description"], d.description()) if x)[:MAX_DESCRIPTION]
            for akey, alias in aliases.items():
                if akey not in row["alias_keys"] and len(row["alias_keys"]) < MAX_ALIASES:
                    row["alias_keys"].append(akey)
                    row["aliases"].append(alias)
    ids: dict[str, int] = {}
    ordered = [rows[k] for k in sorted(rows)]
    for i in range(0, len(ordered), 1000):
        insert = pg_insert(e).values(ordered[i : i + 1000])
        upsert = insert.on_conflict_do_update(index_elements=[e.c.key], set_=_merge_sets(e, insert.excluded))
        ids.update({r.key: int(r.id) for r in conn.execute(upsert.returning(e.c.id, e.c.key))})
    return ids


def _absorb(
    conn: sa.Connection,
    t: GraphTables,
    drafts: dict[str, _Draft],
    target: dict[str, str],
    before: dict[str, Any],
    ids: dict[str, int],
) -> None:
    """A stored entity whose key is an alias of a draft's entity is the same thing under another name (a page named
    by its URI before the page itself was read): its mentions and relations move to the draft's entity, its name
    becomes an alias there, and it goes."""
    e, m, r = t.entities, t.mentions, t.relations
    for key, d in sorted(drafts.items()):
        into = ids.get(target[key])
        for akey in sorted(d.aliases):
            other = before.get(akey)
            if into is None or other is None or int(other.id) == into or akey == target[key]:
                continue
            gone = int(other.id)
            conn.execute(sa.update(m).where(m.c.entity_id == gone).values(entity_id=into))
            first = (
                sa.select(sa.func.min(m.c.id))
                .where(m.c.entity_id == into)
                .group_by(m.c.corpus, m.c.unit_id, m.c.source_id)
                .scalar_subquery()
            )
            conn.execute(sa.delete(m).where(m.c.entity_id == into, m.c.id.not_in(first)))  # a unit names it once
            conn.execute(sa.update(r).where(r.c.source_entity == gone).values(source_entity=into))
            conn.execute(sa.update(r).where(r.c.target_entity == gone).values(target_entity=into))
            conn.execute(sa.delete(r).where(r.c.source_entity == into, r.c.target_entity == into))
            conn.execute(sa.delete(e).where(e.c.id == gone))
            before.pop(akey, None)
            for k, v in list(ids.items()):
                if v == gone:
                    ids[k] = into


def _embed(
    conn: sa.Connection,
    t: GraphTables,
    ids: dict[str, int],
    before: dict[str, Any],
    embed: Callable[[Sequence[str]], np.ndarray],
    batch: int,
) -> int:
    """Compute the vectors of the entities whose text this write changed (or that have none)."""
    e = t.entities
    wanted = list(ids.values())
    changed: list[tuple[int, str]] = []
    for i in range(0, len(wanted), 5000):
        query = sa.select(e.c.id, e.c.key, e.c.name, e.c.type, e.c.description, e.c.embedding.is_(None).label("bare"))
        for r in conn.execute(query.where(e.c.id.in_(wanted[i : i + 5000]))):
            old = before.get(r.key)
            if r.bare or old is None or (old.name, old.type, old.description) != (r.name, r.type, r.description):
                changed.append((int(r.id), entity_text(r.name, r.type, r.description)))
    done = 0
    for i in range(0, len(changed), batch):
        chunk = changed[i : i + batch]
        vectors = np.asarray(embed([text for _, text in chunk]), dtype=np.float32)
        conn.execute(
            sa.update(e).where(e.c.id == sa.bindparam("eid")).values(embedding=sa.bindparam("vec")),
            [{"eid": eid, "vec": v} for (eid, _), v in zip(chunk, vectors, strict=True)],
        )
        done += len(chunk)
    return done


def _forget(conn: sa.Connection, t: GraphTables, source_id: str | None, units: Sequence[Unit]) -> None:
    """Delete what was stated before: the source's relations and mentions, or the units' mentions (no source)."""
    m, r = t.mentions, t.relations
    if source_id is not None:
        conn.execute(sa.delete(m).where(m.c.source_id == source_id))
        conn.execute(sa.delete(r).where(r.c.source_id == source_id))
        return
    by_corpus: dict[str, list[str]] = {}
    for u in units:
        by_corpus.setdefault(u.corpus, []).append(u.id)
    for corpus, unit_ids in by_corpus.items():
        conn.execute(sa.delete(m).where(m.c.corpus == corpus, m.c.unit_id.in_(unit_ids)))


def write_extraction(
    conn: sa.Connection,
    tables: GraphTables,
    extraction: Extraction,
    *,
    source_id: str | None,
    units: Sequence[Unit] = (),
    embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    embed_batch: int = 256,
    limits: WriteLimits = WriteLimits(),
) -> WriteCounts:
    """Replace what ``source_id`` (or, with ``source_id=None``, the ``units``) stated in the graph by
    ``extraction``, on ``conn`` (the caller's transaction; see the module docstring). Mentions of units outside
    ``units`` (when given) are dropped. ``embed`` computes entity vectors (``None``: none)."""
    _forget(conn, tables, source_id, units)
    drafts = _drafts(extraction, limits)
    if not drafts:
        return WriteCounts()
    before, target = _resolve(conn, tables, drafts)
    ids = _upsert(conn, tables, drafts, target)
    _absorb(conn, tables, drafts, target, before, ids)

    def entity_id(name: str) -> int | None:
        key = normalise_key(_clean(name))
        return ids.get(target[key]) if key in target else None

    relations: dict[tuple[int, int, str], dict[str, Any]] = {}
    for rel in extraction.relations:
        a, b = entity_id(rel.source), entity_id(rel.target)
        keywords = " ".join(rel.keywords.split())[:200]
        if a is None or b is None or a == b or not keywords:
            continue
        row = relations.get((a, b, keywords))
        if row is None:
            if len(relations) >= limits.relations:
                continue
            relations[(a, b, keywords)] = {
                "source_entity": a,
                "target_entity": b,
                "keywords": keywords,
                "description": " ".join(rel.description.split())[:MAX_DESCRIPTION],
                "weight": float(rel.weight),
                "source_id": source_id,
            }
        else:
            row["weight"] += float(rel.weight)
    known = {(u.corpus, u.id) for u in units}
    mentions: dict[tuple[int, str, str], dict[str, Any]] = {}
    for men in extraction.mentions:
        eid = entity_id(men.entity)
        if eid is None or (known and (men.corpus, men.unit_id) not in known):
            continue
        row = mentions.get((eid, men.corpus, men.unit_id))
        if row is None:
            if len(mentions) >= limits.mentions:
                continue
            mentions[(eid, men.corpus, men.unit_id)] = {
                "entity_id": eid,
                "corpus": men.corpus,
                "unit_id": men.unit_id,
                "source_id": source_id,
                "role": ANCHOR if men.role == ANCHOR else MENTION,
                "weight": float(men.weight),
                "page": men.page,
                "start_s": men.start_s,
                "end_s": men.end_s,
            }
        else:
            row["weight"] += float(men.weight)
            if men.role == ANCHOR:
                row["role"] = ANCHOR
    if relations:
        conn.execute(sa.insert(tables.relations), list(relations.values()))
    if mentions:
        conn.execute(sa.insert(tables.mentions), list(mentions.values()))
    # an entity this write created or touched that no unit mentions (a relation's far end only) goes now
    m, e = tables.mentions, tables.entities
    touched = sorted(set(ids.values()))
    for i in range(0, len(touched), 5000):
        chunk = touched[i : i + 5000]
        conn.execute(sa.delete(e).where(e.c.id.in_(chunk), ~sa.exists().where(m.c.entity_id == e.c.id)))
    embedded = _embed(conn, tables, ids, before, embed, embed_batch) if embed is not None else 0
    return WriteCounts(entities=len(ids), relations=len(relations), mentions=len(mentions), embedded=embedded)
