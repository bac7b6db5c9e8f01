"""A bounded walk of the knowledge graph, in one statement: the entities a question names, their neighbourhood within
a few hops, and the units that mention what was reached.

The statement (:func:`walk_statement`) is plain SQL over the graph's three tables (``graph_entities``,
``graph_relations``, ``graph_mentions``): a recursive CTE that starts from the entities whose alignment key
(:func:`~universalrag.graph.model.normalise_key`) is one of the question's word sequences, follows relations in both
directions — at each entity only the ``fan_out`` heaviest — for at most ``hops`` steps, and scores each reached
entity by its path: the seed's score times, per step, the relation's weight over the square root of the degrees at
both ends (a hub passes little to each of its many neighbours, and is worth little when reached). The units that
mention a reached entity (at most ``per_entity`` of them an entity, the heaviest mentions first) are scored by the
entity's score, divided by the square root of how many units mention it. Every bound is a literal of the statement,
so the work is bounded for any graph: at most ``seeds · fan_out^hops`` paths.

Names are found in the question by their keys: every run of two to :data:`MAX_NAME_WORDS` words (not only stop words),
and every single word the question types as a name (:func:`typed_as_name`), is a candidate key, and the index on
``graph_entities.key`` answers them in one probe each.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, array, distinct_on

from ..errors import InvalidInputError
from ..store.graph_tables import GraphTables, graph_tables
from .model import ANCHOR, normalise_key

__all__ = [
    "MAX_HOPS",
    "MAX_NAME_WORDS",
    "Reached",
    "WalkLimits",
    "graph_tables",
    "name_keys",
    "typed_as_name",
    "walk_select",
    "walk_statement",
]

#: The most words of a name looked up in a question ("Royal Academy of Works" is four).
MAX_NAME_WORDS = 5
#: The most hops a walk may take (each multiplies the paths by ``fan_out``).
MAX_HOPS = 3
#: The most candidate keys one question is looked up by.
MAX_KEYS = 96

_WORD = re.compile(r"[^\W_]+(?:['’.&-][^\W_]+)*|&", re.UNICODE)
#: The possessive ending of a word ("Chelsea's", "Chelsea’s"), which a name the question types may carry.
_POSSESSIVE = re.compile(r"['’][sS]$")
#: Words that name nothing on their own: a candidate key made only of these is not looked up.
_STOP = frozenset(
    """a about after all also an and any are as at be been before being between both but by can could did do does
    during each few for from had has have he her here hers him his how i if in into is it its just me more most my no
    nor not of off on once only or other our out over own same she should so some such than that the their them then
    there these they this those through to too under until up very was we were what when where which while who whom
    why will with would you your whose show tell find give list name named one two first last year years""".split()
)


@dataclass(frozen=True, slots=True)
class WalkLimits:
    """The bounds of one walk: ``hops`` (1 to :data:`MAX_HOPS`), ``fan_out`` relations followed per entity, ``seeds``
    entities started from, ``per_entity`` units taken per reached entity, ``units`` returned, ``decay`` per hop."""

    hops: int = 1
    fan_out: int = 12
    seeds: int = 6
    per_entity: int = 32
    units: int = 48
    decay: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.hops <= MAX_HOPS:
            raise InvalidInputError(f"A graph walk takes 0 to {MAX_HOPS} hops, got {self.hops}.")
        for name in ("fan_out", "seeds", "per_entity", "units"):
            value = getattr(self, name)
            if not 1 <= value <= 1000:
                raise InvalidInputError(f"The graph walk's {name} must be between 1 and 1000, got {value}.")
        if not 0.0 < self.decay <= 1.0:
            raise InvalidInputError(f"The graph walk's decay must be in (0, 1], got {self.decay}.")


@dataclass(frozen=True, slots=True)
class Reached:
    """A unit the walk reached: ``corpus`` and ``unit_id``, its ``score``, and the path that brought it: the
    ``entity`` it mentions (``role`` anchor or mention), the ``seed`` the walk started from (a name the question
    typed), the ``relation`` of the last step (``None`` at the seed itself) and the number of ``hops``."""

    corpus: str
    unit_id: str
    score: float
    entity: str
    seed: str
    relation: str | None
    hops: int
    role: str
    entity_description: str = ""
    relation_description: str = ""
    #: Every reached entity the unit names, the best first (``entity`` among them).
    names: tuple[str, ...] = ()


#: Where a sentence ends: the word after it is capitalised by grammar, not because it names something.
_SENTENCE_END = re.compile(r"[.!?:]\s*$")


def typed_as_name(word: str, *, sentence_start: bool = False) -> bool:
    """Whether one ``word`` of a question, on its own, is typed as a name: a capital letter that grammar does not
    explain, either after its first letter ("NASA", "iPhone", "UCI") or first where no sentence starts ("in Finland",
    not "Season 3 ..."). A single common word the graph also holds as a name ("season", "players", "tonnage", from a
    table's column) is no place to start a walk: on the routing benchmark's tune split (``benchmarks/routing_e2e.py
    --split tune``) such words started 47 of the 50 walks that pushed the answering unit out of the top 5, and no
    question of the graph benchmark's tune split needed one. A name of several words is looked up however it is
    typed ("the varnholt bridge"). A word of a script without capitals (Arabic, Devanagari, Chinese) cannot say, so
    it is looked up as before; a number is no name."""
    letters = [c for c in word if c.isalpha()]
    if letters and not any(c.isupper() or c.islower() for c in letters):
        return True
    if any(c.isupper() for c in word[1:]):
        return True
    return word[:1].isupper() and not sentence_start


def name_keys(text: str, *, max_words: int = MAX_NAME_WORDS, limit: int = MAX_KEYS) -> list[str]:
    """The alignment keys (:func:`~universalrag.graph.model.normalise_key`) of every run of 2 to ``max_words`` words
    of ``text`` that is not made only of stop words, and of every word typed as a name (:func:`typed_as_name`),
    longest runs first, at most ``limit``. A run ending in a possessive (``"Chelsea's"``, ``"Chelsea’s"``) also gives
    the key of its name without it (``"chelsea"``), after its own."""
    found = list(_WORD.finditer(text))
    words = [m.group() for m in found]
    starts = [i == 0 or bool(_SENTENCE_END.search(text[found[i - 1].end() : m.start()])) for i, m in enumerate(found)]
    keys: dict[str, None] = {}
    for size in range(min(max_words, len(words)), 0, -1):
        for start in range(len(words) - size + 1):
            run = words[start : start + size]
            if size == 1 and not typed_as_name(run[0], sentence_start=starts[start]):
                continue
            owner = _POSSESSIVE.sub("", run[-1])
            runs = [run, [*run[:-1], owner]] if owner != run[-1] else [run]
            for words_of in runs:
                if all(w.casefold() in _STOP for w in words_of) or (size == 1 and len(words_of[0]) < 3):
                    continue
                key = normalise_key(" ".join(words_of))
                if key:
                    keys.setdefault(key)
                if len(keys) >= limit:
                    return list(keys)
    return list(keys)


#: Relations of an entity read to count its degree (a hub's is counted up to this, and weighs as this).
_DEGREE_CAP = 1000


def _lit(n: int | float) -> sa.ColumnElement[Any]:
    """A number as a literal of the statement (some distributed planners refuse a parameterised LIMIT; every bound
    is a number by contract)."""
    return sa.literal_column(repr(int(n) if isinstance(n, int) else float(n)))


def _capped_count(table: sa.FromClause, where: sa.ColumnElement[bool], name: str) -> sa.ColumnElement[Any]:
    """How many rows of ``table`` match ``where`` (correlated to the enclosing query), counted up to
    :data:`_DEGREE_CAP`, at least 1, as a float."""
    capped = (
        sa.select(sa.literal_column("1").label("one"))
        .select_from(table)
        .where(where)
        .correlate_except(table)
        .limit(_lit(_DEGREE_CAP))
        .subquery(f"{name}_capped")
    )
    counted = sa.select(sa.func.greatest(sa.func.count(), _lit(1))).select_from(capped).scalar_subquery()
    return sa.cast(counted, sa.Float)


def _degree(t: GraphTables, entity: sa.ColumnElement[Any], name: str) -> sa.ColumnElement[Any]:
    r = t.relations.alias(f"{name}_edges")
    return _capped_count(r, sa.or_(r.c.source_entity == entity, r.c.target_entity == entity), name)


def walk_statement(t: GraphTables, keys: Sequence[str], limits: WalkLimits) -> sa.Select[Any]:
    """The walk as one statement (see the module docstring) from the alignment ``keys``. Rows: ``corpus, unit_id,
    score, entity, seed, relation, hops, role, entity_description, relation_description, names``, best first, at
    most ``limits.units``. :func:`walk_select` is the same statement, its keys given when it runs."""
    return walk_select(t, limits).params(keys=list(keys))


#: Walk statements kept built (per graph tables and limits): building one costs more than running it (4 ms against
#: under 1 ms of this process's time), and a kept statement also keeps SQLAlchemy's key for its compiled form.
CACHED_WALKS = 64


@functools.lru_cache(maxsize=CACHED_WALKS)
def walk_select(t: GraphTables, limits: WalkLimits) -> sa.Select[Any]:
    """:func:`walk_statement` with its keys a parameter named ``keys`` (a list of texts) given when it runs:
    ``conn.execute(walk_select(t, limits), {"keys": keys})``. Built once per ``t`` and ``limits``."""
    e, m = t.entities, t.mentions
    key_param = sa.bindparam("keys", type_=ARRAY(sa.Text))
    # Two branches, so that each uses its index (the key's btree, the aliases' GIN), the aliases looked up one key at
    # a time: one condition with OR, or an overlap with all the keys (estimated at 1 - 0.995^keys of the table),
    # reads every entity (16 ms a question on 20,000 entities; 0.3 ms by the indexes).
    by_key = sa.select(e.c.id, e.c.key, e.c.name).where(e.c.key == sa.func.any(key_param))
    asked = sa.func.unnest(key_param).table_valued("key").render_derived(name="asked")
    ea = e.alias("aliased")
    aliased = (
        sa.select(ea.c.id, ea.c.key, ea.c.name)
        .where(ea.c.alias_keys.op("@>")(array([asked.c.key])))
        .lateral("by_alias")
    )
    by_alias = sa.select(aliased.c.id, aliased.c.key, aliased.c.name).select_from(asked.join(aliased, sa.true()))
    matched = sa.union(by_key, by_alias).subquery("matched")
    seed_rows = (
        sa.select(matched.c.id.label("entity"), matched.c.name.label("name"))
        .order_by(sa.func.length(matched.c.key).desc(), matched.c.id)
        .limit(_lit(limits.seeds))
        .subquery("seed_rows")
    )
    seed_degree = _degree(t, seed_rows.c.entity, "seed")
    walk = sa.select(
        seed_rows.c.entity.label("entity"),
        sa.cast(_lit(1.0), sa.Float).label("score"),
        seed_degree.label("degree"),
        _lit(0).label("hops"),
        seed_rows.c.name.label("seed"),
        sa.cast(sa.null(), sa.Text).label("relation"),
        sa.cast(sa.null(), sa.Text).label("relation_description"),
    ).cte("walk", recursive=True)
    if limits.hops > 0:
        w = walk.alias("w")
        r = t.relations.alias("r")
        other = sa.case((r.c.source_entity == w.c.entity, r.c.target_entity), else_=r.c.source_entity)
        step_edges = (
            sa.select(
                other.label("other"),
                r.c.keywords.label("keywords"),
                r.c.description.label("description"),
                r.c.weight.label("weight"),
            )
            .where(sa.or_(r.c.source_entity == w.c.entity, r.c.target_entity == w.c.entity))
            .order_by(r.c.weight.desc(), other)
            .limit(_lit(limits.fan_out))
            .lateral("n")
        )
        degree = _degree(t, step_edges.c.other, "step")
        walk = walk.union_all(
            sa.select(
                step_edges.c.other,
                w.c.score
                * _lit(limits.decay)
                * step_edges.c.weight
                / sa.func.sqrt(w.c.degree * degree, type_=sa.Float),
                degree,
                w.c.hops + _lit(1),
                w.c.seed,
                step_edges.c.keywords,
                step_edges.c.description,
            )
            .select_from(w.join(step_edges, sa.true()))
            .where(w.c.hops < _lit(limits.hops))
        )
    best = (
        sa.select(walk.c.entity, walk.c.score, walk.c.hops, walk.c.seed, walk.c.relation, walk.c.relation_description)
        .ext(distinct_on(walk.c.entity))
        .order_by(walk.c.entity, walk.c.score.desc(), walk.c.hops)
        .subquery("best")
    )
    mm = m.alias("mm")
    mentioned = (
        sa.select(mm.c.corpus, mm.c.unit_id, mm.c.role, mm.c.weight)
        .where(mm.c.entity_id == best.c.entity)
        .order_by(mm.c.weight.desc(), mm.c.unit_id)
        .limit(_lit(limits.per_entity))
        .lateral("mentioned")
    )
    mc = m.alias("mc")
    units_of = _capped_count(mc, mc.c.entity_id == best.c.entity, "mentions")
    role_weight = sa.case((mentioned.c.role == ANCHOR, _lit(1.0)), else_=_lit(0.8))
    score = (best.c.score * mentioned.c.weight * role_weight / sa.func.sqrt(units_of, type_=sa.Float)).label("score")
    # the reached entity's name by its key, one row each (LIMIT keeps the planner from joining the whole table)
    en = e.alias("en")
    named = sa.select(en.c.name, en.c.description).where(en.c.id == best.c.entity).limit(_lit(1)).lateral("named")
    per_unit = (
        sa.select(
            mentioned.c.corpus,
            sa.cast(mentioned.c.unit_id, sa.Text).label("unit_id"),
            score,
            named.c.name.label("entity"),
            named.c.description.label("entity_description"),
            best.c.seed,
            best.c.relation,
            best.c.relation_description,
            best.c.hops,
            mentioned.c.role,
            # every reached entity the unit names, the best first: its rows or chunks naming any of them are shown
            sa.func.array_agg(named.c.name)
            .over(
                partition_by=(mentioned.c.corpus, mentioned.c.unit_id),
                order_by=score.desc(),
                rows=(None, None),
            )
            .label("names"),
        )
        .select_from(best.join(mentioned, sa.true()).join(named, sa.true()))
        .subquery("per_unit")
    )
    # One row a unit: its best path, and among equal scores the one with more hops (the walk's own contribution).
    distinct_units = (
        sa.select(per_unit)
        .ext(distinct_on(per_unit.c.corpus, per_unit.c.unit_id))
        .order_by(per_unit.c.corpus, per_unit.c.unit_id, per_unit.c.score.desc(), per_unit.c.hops.desc())
        .subquery("distinct_units")
    )
    return sa.select(distinct_units).order_by(distinct_units.c.score.desc()).limit(_lit(limits.units))


def reached_from_rows(rows: Sequence[Any]) -> list[Reached]:
    """The statement's rows as :class:`Reached`."""
    return [
        Reached(
            corpus=str(row.corpus),
            unit_id=str(row.unit_id),
            score=float(row.score),
            entity=str(row.entity),
            seed=str(row.seed),
            relation=row.relation,
            hops=int(row.hops),
            role=str(row.role),
            entity_description=row.entity_description or "",
            relation_description=row.relation_description or "",
            names=tuple(dict.fromkeys(row.names or (row.entity,))),
        )
        for row in rows
    ]
