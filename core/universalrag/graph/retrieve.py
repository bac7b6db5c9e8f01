"""Retrieval through the knowledge graph: the units a question reaches by the names it types, ranked and made hits.

:class:`GraphRetrieval` does three things for a query plan:

1. :meth:`~GraphRetrieval.start` sends the walk (:mod:`universalrag.graph.walk`, one statement) to a worker, beside
   the corpus probes, when the schema holds a graph (whether it does is cached: a schema without one costs no
   statement at all for :data:`PRESENT_TTL_S` seconds, nor while its tables are absent); when the walk reached units
   over a relation, the worker reads their rows next (:meth:`~GraphRetrieval.walk_ahead`), while the probes run;
2. :func:`graph_features` and :func:`walk_rule` decide whether the question needs what the walk reached (a
   question about something *related to* the thing it names), from the walk and the probe hits;
3. :meth:`~GraphRetrieval.hits` turns the reached units into :class:`~universalrag.types.Hit`\\ s (their rows read
   ahead, or in one statement; one more for the best tables and documents: the rows or chunks holding the reached
   name are their matched parts), each carrying the :class:`~universalrag.types.GraphPath` that brought it, ranked
   by a fused score: the walk's (structural importance), the unit's similarity to the question and the modality the
   question asks for ("table", "figure", "video"); routing makes them in a worker while it turns the probes into
   features.

Retrieval puts the hits into the routed ranking (:meth:`universalrag.retrieve.Retrieval.with_graph`, which every
surface runs: the facade and the LangGraph nodes) with :func:`universalrag.fusion.with_graph`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import sqlalchemy as sa

from ..embed.base import Embedder
from ..errors import StoreError
from ..plan import QueryPlan
from ..store import Store
from ..store.corpus_search import hit_from_row
from ..types import GraphPath, Hit, Modality, Vector
from .model import ANCHOR
from .units import read_parts, read_rows
from .walk import Reached, WalkLimits, graph_tables, name_keys, reached_from_rows, walk_select

__all__ = [
    "GRAPH_WEIGHT",
    "PRESENT_TTL_S",
    "GraphRetrieval",
    "Walked",
    "asked_modality",
    "graph_features",
    "residual_terms",
    "shown_modalities",
    "walk_rule",
]

#: How long (seconds) whether a schema holds a graph is remembered (:meth:`GraphRetrieval.invalidate` forgets it).
PRESENT_TTL_S = 30.0
#: The weights below were chosen on the tune split of ``benchmarks/graph.py`` (150 structures, two-hop second fact in
#: the top 5): walk scores 0.3 and missing words 0.3 with 24 units read, 74.3 %; 48 units read (32 an entity) 77.2 %;
#: missing words 0.5, 81.8 %; 0.7, 82.3 %; walk scores 0.15, 78.5 %; 64 units read, no change.
#: The walk's share of a graph hit's fused score, beside the unit's similarity to the question (0 to 1).
GRAPH_WEIGHT = 0.3
#: Added to the fused score of a unit holding all the words the question asks for that the named thing's unit lacks.
WANTED_WEIGHT = 0.5
#: Added to the fused score of a unit that *is* an entity the walk reached (its page, its table, its picture), over
#: units that only mention it.
ANCHOR_BONUS = 0.1
#: Added to the fused score of a unit of the modality the question asks for.
MODALITY_BONUS = 0.1
#: Added to the fused score of a unit reached over a relation whose modality none of the best probe hits has
#: (:func:`shown_modalities`): a table of engineers reached from a bridge's page adds what the pages the question
#: found lack, where the designer's other pages repeat them. Tune split of ``benchmarks/graph.py`` (two-hop second
#: fact in the top 5): 78.8 % without it, 82.5 % at 0.15 (held out 78.0 -> 81.5 %; single fact unchanged).
NEW_KIND_BONUS = 0.15
#: The reached units read and ranked, at most: the best by the walk's score (those beyond the names first).
READ_UNITS = 48
#: The best graph hits of tables and documents whose parts naming a reached entity are read, at most.
PARTS_READ = 6
#: The most matched parts (rows, chunks) a graph hit of a multi-vector corpus shows.
SHOWN_PARTS = 3

_MODALITY_WORDS: tuple[tuple[Modality, frozenset[str]], ...] = (
    (Modality.TABLE, frozenset({"table", "tables", "row", "rows", "column", "spreadsheet"})),
    (
        Modality.IMAGE,
        frozenset(
            {
                "figure",
                "figures",
                "image",
                "images",
                "photo",
                "photograph",
                "picture",
                "diagram",
                "chart",
                "illustration",
            }
        ),
    ),
    (Modality.VIDEO, frozenset({"video", "videos", "clip", "clips", "scene", "footage", "recording"})),
)
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
#: Words asking for the kind of answer ("which year", "how many"), not naming a relation.
_ANSWER_WORDS = frozenset(
    """where when who whom whose what which how why year years date day time many much number name named called
    the a an is was were are be been of in on at to by for from with and or does did do it its this that there
    their they he she his her""".split()
)
#: "the designer of", "the firm that built", "the town where": a noun the question asks about, tied by a relative
#: word to what comes after it (the thing the question names).
#: Not a noun asking for the answer's kind or amount ("the number of", "the name of", "the total of").
_RELATIONAL = re.compile(
    r"\b(?:the|a|an|its|whose)\s+(?!(?:number|name|names|total|amount|sum|count|year|date|time|rest|majority|"
    r"most|least|first|last|top|average|percentage|difference)\b)[^\W\d_]+\s+"
    r"(?:of|that|who|which|whose|where|behind|for)\b",
    re.IGNORECASE,
)


def asked_modality(text: str) -> Modality | None:
    """The modality a question asks for by name ("which table", "the figure", "in the video"), else ``None``."""
    words = {w.casefold() for w in _WORDS.findall(text)}
    for modality, names in _MODALITY_WORDS:
        if words & names:
            return modality
    return None


def _covered(term: str, words: set[str]) -> bool:
    """Whether ``term`` or a word of its stem (its first ``len - 3`` letters, at least four) is among ``words``."""
    if term in words:
        return True
    stem = term[: max(4, len(term) - 3)]
    return len(term) > 4 and any(w.startswith(stem) for w in words)


def _words_of(hit: Hit) -> set[str]:
    """The words of a hit's text and of its matched parts, case folded."""
    words = {w.casefold() for w in _WORDS.findall(hit.content)}
    for _, part, _ in hit.matched_parts:
        words.update(w.casefold() for w in _WORDS.findall(part))
    return words


def residual_terms(text: str, reached: Sequence[Reached], probes: Mapping[str, Sequence[Hit]]) -> list[str]:
    """The question's content words that the best probe hit naming a seed does not hold: less the words of the names
    the walk started from and the words asking for the kind of answer ("which year", "how many"). What the named
    thing's own unit does not say, which a unit one relation away may."""
    seed_words = {w.casefold() for r in reached for w in _WORDS.findall(r.seed)}
    terms = [
        w
        for w in dict.fromkeys(x.casefold() for x in _WORDS.findall(text))
        if w not in _ANSWER_WORDS and w not in seed_words and len(w) > 2
    ]
    best = _best_naming(reached, probes)
    words = _words_of(best) if best is not None else set()
    return [t for t in terms if not _covered(t, words)]


def graph_features(text: str, reached: Sequence[Reached], probes: Mapping[str, Sequence[Hit]]) -> dict[str, float]:
    """What the walk rule reads, for a question ``text``, the units the walk ``reached`` and the routing probes' hits:

    - ``seeds``: entities the question names (by their names);
    - ``reached``: units reached over at least one relation that no probe found;
    - ``hops``: the most hops among them;
    - ``residual``: how many of the question's words the named thing's own best unit does not hold
      (:func:`residual_terms`);
    - ``relational``: 1 when the question asks about something tied to the name by a relative word ("the designer
      of the ...", "the firm that built the ...").
    """
    seeds = {r.seed for r in reached}
    found = {h.id for hits in probes.values() for h in hits}
    further = [r for r in reached if r.hops > 0 and r.unit_id not in found]
    lowered = text.casefold()
    first_seed = min((lowered.find(s.casefold()) for s in seeds if s.casefold() in lowered), default=-1)
    head = text[:first_seed] if first_seed >= 0 else text
    return {
        "seeds": float(len(seeds)),
        "reached": float(len({(r.corpus, r.unit_id) for r in further})),
        "hops": float(max((r.hops for r in further), default=0)),
        "residual": float(len(residual_terms(text, reached, probes))),
        "relational": 1.0 if _RELATIONAL.search(head) else 0.0,
    }


def _best_naming(reached: Sequence[Reached], probes: Mapping[str, Sequence[Hit]]) -> Hit | None:
    """The most similar probe hit that the walk reached at a seed (the unit of the thing the question names), else
    the most similar probe hit."""
    at_seed = {r.unit_id for r in reached if r.hops == 0}
    hits = sorted((h for found in probes.values() for h in found), key=lambda h: -h.score)
    return next((h for h in hits if h.id in at_seed), hits[0] if hits else None)


def shown_modalities(probes: Mapping[str, Sequence[Hit]], modality: Mapping[str, Modality], *, k: int) -> set[Modality]:
    """The modalities (``modality``: corpus → its modality) of the ``k`` most similar probe hits over every corpus
    probed: what the dense search already shows the question."""
    best = sorted((h for found in probes.values() for h in found), key=lambda h: -h.score)[:k]
    return {modality[h.corpus] for h in best if h.corpus in modality}


def walk_rule(features: Mapping[str, float]) -> bool:
    """Whether routing adds the graph's hits: the question names an entity of the graph, the walk reached units no
    probe found, and the question asks for something the named thing's own best unit does not say (``residual``) or
    about something tied to it by a relative word (``relational``). Measured by ``benchmarks/graph.py`` (150
    structures with their media, 40 wikitables pages): it chooses the graph for every two-hop question of the tune and
    held-out splits, for 7.5 % and 7.1 % of their single-fact questions (answered as often as without the graph),
    and for 27.0 % of the wikitables crowd questions, whose page is in the top 5 at least as often as without the
    graph (89.0 % against 88.5 %)."""
    return (
        features["seeds"] >= 1
        and features["reached"] >= 1
        and (features["residual"] >= 1 or features["relational"] >= 1)
    )


Rows = dict[tuple[str, str], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Walked:
    """A walk's outcome: the units it ``reached`` and, when they were read ahead (:meth:`GraphRetrieval.walk_ahead`),
    their ``rows`` by (corpus, id) as :func:`~universalrag.graph.units.read_rows` gives them."""

    reached: list[Reached]
    rows: Rows | None = None


def _floats(vector: Vector) -> list[float]:
    return [float(x) for x in np.asarray(vector, dtype=np.float32)]


@dataclass
class _Present:
    read: float
    value: bool


class GraphRetrieval:
    """The knowledge graph as a granularity routing can choose (see the module docstring). ``limits`` bound every
    walk; ``rule`` decides from :func:`graph_features` (default :func:`walk_rule`); ``read`` bounds the reached units
    read and ranked for one question. The constructor does no I/O."""

    def __init__(
        self,
        *,
        limits: WalkLimits | None = None,
        rule: Callable[[Mapping[str, float]], bool] = walk_rule,
        ttl: float = PRESENT_TTL_S,
        read: int = READ_UNITS,
    ) -> None:
        self.limits, self.rule, self.ttl, self.read = limits or WalkLimits(), rule, ttl, read
        self._lock = threading.Lock()
        self._present: dict[str, _Present] = {}

    def invalidate(self) -> None:
        """Forget whether the schema holds a graph (after ingesting or deleting here)."""
        with self._lock:
            self._present.clear()

    def present(self, store: Store) -> bool:
        """Whether ``store``'s schema holds a graph: any mention (cached for ``ttl`` seconds; ``False`` while the
        graph tables are absent, as in a schema an earlier version wrote)."""
        key = f"{store.url_redacted}/{store.schema}"
        with self._lock:
            known = self._present.get(key)
            if known is not None and time.monotonic() - known.read < self.ttl:
                return known.value
        mentions = graph_tables(store.schema).mentions
        try:
            with store.transaction("check for a knowledge graph", read_only=True) as conn:
                regclass = sa.func.to_regclass(sa.func.format("%I.graph_mentions", store.schema))
                exists = conn.execute(sa.select(regclass.isnot(None))).scalar_one()
                value = bool(exists) and conn.execute(sa.select(sa.exists().select_from(mentions))).scalar_one()
        except StoreError:
            value = False
        with self._lock:
            self._present[key] = _Present(time.monotonic(), bool(value))
        return bool(value)

    def walk(self, store: Store, text: str) -> list[Reached]:
        """The units the names in ``text`` reach (one statement; none when ``text`` names nothing or the schema
        holds no graph)."""
        keys = name_keys(text)
        if not keys or not self.present(store):
            return []
        statement = walk_select(graph_tables(store.schema), self.limits)
        rows = store.search_read("walk the knowledge graph", lambda conn: conn.execute(statement, {"keys": keys}).all())
        return reached_from_rows(rows)

    def walk_ahead(self, store: Store, text: str, vector: Vector | None = None) -> Walked:
        """:meth:`walk`, and with the question's ``vector`` the rows of the units :meth:`hits` would read, read now
        (:meth:`read_ahead`), before anyone knows whether the rule will choose the graph."""
        reached = self.walk(store, text)
        if vector is None or not self.read_ahead(reached):
            return Walked(reached)
        return Walked(reached, self._read_rows(store, reached, _floats(vector)))

    @staticmethod
    def read_ahead(reached: Sequence[Reached]) -> bool:
        """Whether a walk's units are read before the probes are back: when it reached a unit over a relation, which
        :func:`walk_rule` needs (``reached`` >= 1) and most such walks are chosen (9 of the 12 questions of
        ``benchmarks/routing_latency.py --graph``). The rows read cost 0.3 ms of the server's time."""
        return any(r.hops > 0 for r in reached)

    def start(
        self, store: Store, text: str, *, pool: Executor | None = None, vector: Vector | None = None
    ) -> Callable[[], Walked]:
        """:meth:`walk_ahead` sent to ``pool`` now (run when the returned function is called, without one); the
        returned function waits for it."""
        if pool is None:
            return lambda: self.walk_ahead(store, text, vector)
        future = pool.submit(self.walk_ahead, store, text, vector)
        return future.result

    def decide(
        self,
        plan: QueryPlan,
        store: Store,
        embedder: Embedder,
        reached: Sequence[Reached] | Walked,
        probes: Mapping[str, Sequence[Hit]],
    ) -> bool:
        """Set ``plan.graph_features`` from the walk and the probes and, when the rule chooses the graph, the hits it
        reached (``plan.graph_hits``); returns the rule's choice. ``reached`` may come with its rows read ahead
        (:meth:`start`)."""
        rows = reached.rows if isinstance(reached, Walked) else None
        found = reached.reached if isinstance(reached, Walked) else reached
        plan.graph_features = graph_features(plan.text, found, probes)
        if not found or not self.rule(plan.graph_features):
            return False
        vector = _floats(plan.embedding(embedder))
        wanted = residual_terms(plan.text, found, probes)
        shown = shown_modalities(probes, {n: s.modality for n, s in store.corpora().items()}, k=plan.k)
        plan.graph_hits = tuple(self.hits(store, plan.text, vector, found, wanted=wanted, shown=shown, rows=rows))
        return True

    def _chosen(self, reached: Sequence[Reached]) -> list[Reached]:
        """The reached units read and ranked: the best :attr:`read` by the walk's score, those beyond the names
        first."""
        return sorted(reached, key=lambda r: (r.hops == 0, -r.score))[: self.read]

    def _read_rows(self, store: Store, reached: Sequence[Reached], vector: Sequence[float]) -> Rows:
        wanted: dict[str, dict[str, None]] = {}
        for r in self._chosen(reached):
            wanted.setdefault(r.corpus, {})[r.unit_id] = None
        return read_rows(store, {c: list(units) for c, units in wanted.items()}, vector) if wanted else {}

    def hits(
        self,
        store: Store,
        text: str,
        vector: Sequence[float],
        reached: Sequence[Reached],
        *,
        wanted: Sequence[str] = (),
        shown: Collection[Modality] = (),
        rows: Rows | None = None,
    ) -> list[Hit]:
        """The reached units as hits, best first (see the module docstring): one a source, with its path; a
        multi-vector unit's matched parts are its rows or chunks holding the reached entity's name. ``wanted`` are
        the words the question asks for that the named thing's unit lacks (:func:`residual_terms`): a unit holding
        them (a column "Born", a page saying "headquartered") ranks higher by :data:`WANTED_WEIGHT` times their
        share. A unit reached over a relation whose modality is not among ``shown`` (those of the best probe hits,
        :func:`shown_modalities`) ranks higher by :data:`NEW_KIND_BONUS`: it adds a kind of evidence the dense hits
        lack, where more units of the kinds they show mostly repeat them. ``rows``: the units' rows read already
        (:meth:`walk_ahead` with the same ``vector``), else they are read here."""
        # the walk's scores relative to the best unit it reached beyond the names themselves (those rank last)
        top = max((r.score for r in reached if r.hops > 0), default=0.0) or max((r.score for r in reached), default=1.0)
        modality = asked_modality(text)
        out: list[tuple[float, Hit]] = []
        specs = store.corpora()
        chosen = self._chosen(reached)
        wanted_units: dict[str, dict[str, list[str]]] = {}
        for r in chosen:
            wanted_units.setdefault(r.corpus, {}).setdefault(r.unit_id, []).extend(r.names or (r.entity,))
        if rows is None:
            rows = self._read_rows(store, reached, vector)
        by_corpus: dict[str, list[Reached]] = {}
        for r in chosen:
            by_corpus.setdefault(r.corpus, []).append(r)
        for corpus, found in by_corpus.items():
            for r in found:
                row = rows.get((corpus, r.unit_id))
                if row is None:
                    continue
                similarity = float(row["text_sim"]) if row["text_sim"] is not None else 0.0
                path = GraphPath(
                    seed=r.seed,
                    entity=r.entity,
                    relation=r.relation,
                    hops=r.hops,
                    role=r.role,
                    entity_description=r.entity_description,
                    relation_description=r.relation_description,
                )
                structural = min(1.0, r.score / top)
                fused = similarity + GRAPH_WEIGHT * structural
                if r.role == ANCHOR and r.hops > 0:
                    fused += ANCHOR_BONUS
                if modality is not None and specs[corpus].modality == modality:
                    fused += MODALITY_BONUS
                if shown and r.hops > 0 and specs[corpus].modality not in shown:
                    fused += NEW_KIND_BONUS
                if wanted:
                    words = {w.casefold() for w in _WORDS.findall(row["content"] or "")}
                    fused += WANTED_WEIGHT * sum(_covered(t, words) for t in wanted) / len(wanted)
                hit = hit_from_row(specs[corpus], row, fused, channels={"similarity": similarity, "graph": structural})
                out.append((fused, replace(hit, path=path)))
        seen: set[str] = set()
        ranked: list[Hit] = []
        for _, hit in sorted(out, key=lambda t: (t[1].path is not None and t[1].path.hops == 0, -t[0])):
            source = hit.source_id or hit.uri or hit.id
            if hit.id not in seen and source not in seen:
                seen.update((hit.id, source))
                ranked.append(hit)
        # the rows or chunks naming a reached entity, for the best few tables and documents only (a regular
        # expression over each of their parts)
        multi = [h for h in ranked[:PARTS_READ] if specs[h.corpus].multi_vector]
        if multi:
            named: dict[str, dict[str, list[str]]] = {}
            for h in multi:
                named.setdefault(h.corpus, {})[h.id] = wanted_units[h.corpus][h.id]
            parts = read_parts(store, named, vector, per_unit=SHOWN_PARTS)
            ranked = [replace(h, matched_parts=parts.get((h.corpus, h.id), h.matched_parts)) for h in ranked]
        return ranked
