"""One corpus search inside one transaction, every channel combined in one place.

Each channel gathers candidate units: the text channel by the unit's own vector, or, in a multi-vector corpus,
by its best parts (chunks, rows); the visual channel by the unit's visual vector; the lexical channel by
Postgres full-text rank. The similarities a candidate lacks are then computed exactly for it alone, so every
candidate is scored the same way, whichever channel found it (:func:`_combine`):

- dense score = ``visual_weight · visual + (1 − visual_weight) · text`` (one channel alone where a unit has no
  vector in the other); the text similarity of a multi-vector unit is that of its best part, and its best
  parts are returned as ``matched_parts``;
- with lexical text (hybrid search), the dense ranking and the full-text ranking are fused by reciprocal rank;
- with exact terms (identifiers, numbers, quoted phrases of the query), a multi-vector hit's parts that hold them
  come first among its matched parts (:func:`_exact_parts`, one more statement); scores stay as above;
- with names among them (:func:`~universalrag.exact_terms.identifiers`: "E0382", "dns.lookup", "PGVectorStore"),
  the units holding one come first, nearest first, when no more than ``k`` units hold them (one more statement,
  through the full-text index; a unit holding only a number, when it is about as near as the best:
  :func:`_near_enough`): such a name points at them, while the encoder places "what does error E0382 mean"
  near every error page (among the 134 pages of Rust's error index, E0382's came 41st at similarity 0.38). A name
  more units hold ("package.json": 235 of npm's 1,359 passages) tells them apart no better than their meaning, and
  leaves the order alone. Those hits carry the channel score ``exact``. Among the ``k`` hits, those holding a name
  come before those that do not (channel ``named``), however many units hold it;
- in a corpus of text or tables, a unit whose text repeats an earlier hit's word for word is left out, and ``k``
  is filled with distinct texts (:func:`_distinct`).

Whether a channel scans its table exactly or goes through the HNSW index (iterative scan on, pgvector 0.8+)
is :mod:`universalrag.store.scan_rule`'s decision, from row estimates cached by :mod:`universalrag.store.row_estimates`
(nothing is counted per query); a multi-vector corpus's index search widens its window of parts until it holds
``k`` distinct units, and a filtered index search widens its beam (:data:`FILTERED_BEAM`) and its window.

Round trips are few. A search is a generator of statements (:mod:`universalrag.store.batch`): each statement
through the index carries its own settings (:func:`~universalrag.store.queries.with_settings`), an exact scan is a
statement shape the planner cannot serve from the index (no settings to flip), and a single-vector corpus without
other channels gets its rows with its distances — one statement in all. :func:`run_searches` sends the statements
of several corpora's searches together, one round trip per step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ..exact_terms import (
    definable,
    defines,
    defining_pattern,
    holds_name,
    identifiers,
    is_number,
    term_pattern,
)
from ..fusion import SeenTexts, rrf_scores, weighted
from ..types import CorpusSpec, Hit, Modality, Vector
from . import queries
from .batch import Raw, Search, Step, array_parameter, compiled, run_steps, vector_parameter
from .engine import has_binary_vectors
from .filters import Filter
from .row_estimates import table_rows
from .scan_rule import MAX_EF_SEARCH, needs_check, scan_exactly, tuned_ef
from .schema import CorpusTables
from .vectors import hnsw_indexed, rerank_window

__all__ = [
    "FILTERED_BEAM",
    "FILTERED_WINDOW",
    "MAX_PART_WINDOW",
    "MIN_DISTINCT_UNITS",
    "MIN_PART_WINDOW",
    "NUMBER_MARGIN",
    "PARTS_PER_HIT",
    "CorpusQuery",
    "SearchRequest",
    "hit_from_row",
    "run_search",
    "run_searches",
]

#: How many matched parts a hit of a multi-vector corpus reports (best first).
PARTS_PER_HIT = 5
#: The narrowest window of parts (and search beam) an index search of a multi-vector corpus uses.
MIN_PART_WINDOW = 100
#: The widest window of parts an index search asks for (pgvector's default ``hnsw.max_scan_tuples``).
MAX_PART_WINDOW = 20000
#: A filtered search through the index uses a beam this many times ``ef_search`` ...
FILTERED_BEAM = 4
#: ... and fetches at least this many rows, of which it keeps the best ``k``.
FILTERED_WINDOW = 40
#: Rows beyond ``k`` a search of a single-vector corpus asks for, so that ``k`` distinct texts remain when some units
#: repeat another's text word for word (:func:`_distinct`; npm's docs repeat a flag's description on 25 pages).
DUPLICATE_SPARE = 5


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What to search for in one corpus, and how.

    ``visual_vector`` is the query in the corpus's visual space (ignored when the corpus has none);
    ``lexical_text`` turns on hybrid search. ``exact_terms`` (:func:`universalrag.exact_terms.exact_terms`) puts the
    parts holding them first among a multi-vector hit's matched parts. ``exact_scan_rows`` and ``exact_scan_max_rows``
    are the thresholds of
    :func:`~universalrag.store.scan_rule.scan_exactly` (``exact_scan=True``: always scan exactly, ``False``: never).
    ``iterative`` says the server has pgvector's iterative index scan (0.8+); ``ef_search`` is the narrowest
    search beam (raised to the beam the corpus's index check tuned, :func:`~.scan_rule.tuned_ef`).
    ``on_unchecked`` is called when a searched table above ``exact_scan_rows`` rows has no index check measured at about
    its size (the store then runs one in the background: it decides the scan and tunes the beam).
    """

    vector: Vector
    k: int
    visual_weight: float  # its default lives in Settings.visual_weight_for
    filter: Filter | None = None
    visual_vector: Vector | None = None
    lexical_text: str | None = None
    exact_terms: tuple[str, ...] = ()
    head: int | None = None  # see CorpusQuery.head
    ef_search: int = 100
    exact_scan_rows: int = 0
    exact_scan_max_rows: int = 0
    exact_scan: bool | None = None
    iterative: bool = True
    on_unchecked: Callable[[], object] | None = None


@dataclass(frozen=True, slots=True)
class CorpusQuery:
    """One corpus search of :meth:`Store.search_many <universalrag.store.Store.search_many>`: the arguments of
    :meth:`Store.search <universalrag.store.Store.search>`, corpus first."""

    corpus: str
    vector: Vector
    k: int = 5
    filter: Filter | None = None
    ef_search: int | None = None
    visual_vector: Vector | None = None
    visual_weight: float | None = None
    lexical_text: str | None = None
    exact_scan: bool | None = None
    exact_terms: tuple[str, ...] = ()
    #: The first ``head`` hits are those a search for ``head`` hits returns, in its order (default ``k``): a deeper
    #: search (candidates to re-rank) leaves what a probe of ``head`` hits tells the router unchanged.
    head: int | None = None


@dataclass(slots=True)
class _Candidate:
    text: float | None = None  # text-space similarity (best part for multi-vector corpora)
    visual: float | None = None
    parts: tuple[tuple[int, float], ...] = ()  # (ord, similarity), best first
    row: Mapping[str, Any] | None = None


def _row(candidate: _Candidate) -> Mapping[str, Any]:
    """The row of a ranked candidate (every ranked candidate's row has been read)."""
    assert candidate.row is not None
    return candidate.row


def run_search(conn: sa.Connection, tables: CorpusTables, request: SearchRequest) -> list[Hit]:
    """The ``k`` best hits of one corpus for ``request`` (index settings are applied by each statement)."""
    return run_searches(conn, [(tables, request)])[0]


def run_searches(conn: sa.Connection, jobs: Sequence[tuple[CorpusTables, SearchRequest]]) -> list[list[Hit]]:
    """The hits of several corpus searches on one connection: at each step, the next statement of every search
    goes to the server in one round trip (:func:`~universalrag.store.batch.run_steps`)."""
    undecided = [
        t
        for tables, request in jobs
        if request.exact_scan is None
        for t in (tables.units, tables.parts)
        if t is not None
    ]
    if len(jobs) > 1 and undecided:
        table_rows(conn, undecided)  # one statement for every table; each search below reads the cache
    sql = _Sql(conn.dialect, has_binary_vectors(conn))
    searches = []
    for tables, request in jobs:
        visual = request.visual_vector is not None and bool(tables.spec.visual_dimension)
        exact = _exact_tables(conn, tables, request, visual=visual)
        # a binary index's window grows with its table (cached row estimates: no statement once read)
        sizes = (
            table_rows(conn, [t for t in (tables.units, tables.parts) if t is not None])
            if tables.spec.vector_index == "binary"
            else {}
        )
        searches.append(_search(sql, tables, request, exact, visual=visual, sizes=sizes))
    return run_steps(conn, searches)


@dataclass(frozen=True, slots=True)
class _Sql:
    """Driver-ready statements for one connection: compiled once per shape, vectors in binary when it can."""

    dialect: sa.Dialect
    binary: bool

    def raw(self, key: tuple[Any, ...], build: Callable[[], sa.ClauseElement], **values: Any) -> Raw:
        text, params = compiled(self.dialect, key, build)
        for name, value in values.items():
            if name in ("query_vector", "visual_vector") and value is not None:
                values[name] = vector_parameter(value, binary=self.binary)
            elif isinstance(value, list):  # ids, part numbers: the statement casts the placeholder to its array type
                values[name] = array_parameter(value)
        return Raw(text, {**params, **values})


def _settings(request: SearchRequest, ef: int, *, iterative: bool = True) -> dict[str, str | int]:
    """The index settings of a statement; the iterative scan only where it can matter (``iterative``): a filter,
    grouping parts by unit, or more rows wanted than the beam holds. Elsewhere it changes no result and costs time."""
    scan = {"hnsw.iterative_scan": "relaxed_order"} if request.iterative and iterative else {}
    return {"hnsw.ef_search": ef, **scan}


def _search(
    sql: _Sql,
    tables: CorpusTables,
    request: SearchRequest,
    exact: dict[str, bool],
    *,
    visual: bool,
    sizes: Mapping[str, int],
) -> Search[list[Hit]]:
    """One corpus search as a sequence of statements (see the module docstring); ``sizes``: the row estimates of a
    binary-indexed corpus's tables, which size its windows of candidates."""
    spec = tables.spec
    head = min(request.head or request.k, request.k)
    window = max(4 * request.k, 40) if visual or request.lexical_text else request.k + DUPLICATE_SPARE
    multi = tables.parts is not None
    beam = max(request.ef_search, tuned_ef(spec.metadata))  # at least the beam the corpus's index check tuned
    ef = beam if not multi else min(max(beam, _first_part_window(window)), MAX_EF_SEARCH)
    if request.filter and not exact["units" if not multi else "parts"]:
        # A filtered search through the index widens its beam and its window (the best k of a wider window,
        # re-sorted here): with relaxed order and a selective filter the first k rows the index yields miss some.
        ef = min(max(ef, beam * FILTERED_BEAM), MAX_EF_SEARCH)
        window = max(window, FILTERED_WINDOW)
    candidates: dict[str, _Candidate] = {}
    alone = not visual and not request.lexical_text and not multi  # the rows come with their distances
    if multi:
        by_parts = yield from _text_by_parts(
            sql,
            tables,
            request,
            window,
            exact_scan=exact["parts"],
            ef=ef,
            refine=exact.get("refine", False),
            held=sizes.get(tables.parts.name, 0) if tables.parts is not None else 0,
        )
        for uid, parts in by_parts.items():
            candidates[uid] = _Candidate(text=parts[0][1], parts=parts)
    else:
        rows = yield _nearest_units(
            sql,
            tables,
            request,
            request.vector,
            limit=window,
            exact_scan=exact["units"],
            rows=alone,
            ef=ef,
            held=sizes.get(tables.units.name, 0),
        )
        for r in rows:
            candidates[str(r["unit_id"])] = _Candidate(text=1.0 - float(r["distance"]), row=r if alone else None)
    if visual:
        assert request.visual_vector is not None
        rows = yield _nearest_units(
            sql, tables, request, request.visual_vector, limit=window, exact_scan=exact["units"], visual=True, ef=ef
        )
        for r in rows:
            candidates.setdefault(str(r["unit_id"]), _Candidate()).visual = 1.0 - float(r["distance"])
    lexical: list[str] = []
    if request.lexical_text:
        rows = yield _lexical(sql, tables, request, limit=window)
        for r in rows:
            lexical.append(str(r["id"]))
            candidates.setdefault(str(r["id"]), _Candidate()).row = r
    held: set[str] = set()
    defined: set[str] = set()
    names = identifiers(request.exact_terms)
    if names:
        # one statement: the units holding a name, those that define one (its entry, its row) first
        named = definable(request.exact_terms)
        limit = 2 * head + 2 if named else head + 1
        rows = yield _units_holding(sql, tables, request, names, limit=limit, defining=named)
        definers = [r for r in rows if named and r["defines"]]
        for r in rows if len(rows) <= head else ():  # more: too common a name to tell units apart
            held.add(str(r["id"]))
        for r in definers if len(definers) <= head else ():  # the entries, however many units mention the name
            defined.add(str(r["id"]))
        for r in rows:
            if str(r["id"]) in held | defined:
                found = candidates.setdefault(str(r["id"]), _Candidate())
                found.row = found.row or r  # a row another channel gave (the lexical rank with it) is kept
    if not alone or any(candidates[uid].text is None for uid in held | defined):
        yield from _complete(sql, tables, request, candidates, visual=visual)
    held = _near_enough(held, candidates, names) | defined
    ranked = _combine(
        candidates,
        lexical if request.lexical_text else None,
        visual=visual,
        visual_weight=request.visual_weight,
        held=held,
    )
    if spec.modality in (Modality.TEXT, Modality.TABLE):
        ranked = _distinct(ranked)
    ranked = ranked[: request.k]
    if multi and request.exact_terms:
        yield from _exact_parts(sql, tables, request, [(uid, c) for uid, _, c, _ in ranked])
    texts = yield from _part_texts(sql, tables, [(uid, c) for uid, _, c, _ in ranked])
    if names:  # within the head and within the rest: the head stays what a search for `head` hits returns
        ranked = [
            *_names_first(ranked[:head], texts, names, defined),
            *_names_first(ranked[head:], texts, names, defined),
        ]
    return _hits(spec, ranked, texts)


def _nearest_units(
    sql: _Sql,
    tables: CorpusTables,
    request: SearchRequest,
    vector: Vector,
    *,
    limit: int,
    exact_scan: bool,
    ef: int,
    visual: bool = False,
    rows: bool = False,
    held: int = 0,
) -> Step:
    """The nearest-units statement of a channel, carrying its index settings unless it scans exactly (the beam of a
    binary index as wide as the window it ranks again in a table of ``held`` vectors, up to pgvector's widest; the
    iterative scan beyond)."""
    wanted = rerank_window(limit, held) if tables.spec.vector_index == "binary" and not visual else limit
    ef = min(max(ef, wanted), MAX_EF_SEARCH) if wanted > limit else ef
    settings = {} if exact_scan else _settings(request, ef, iterative=bool(request.filter) or wanted > ef)

    def build(v: Vector = vector, flt: Filter | None = None) -> sa.Select[Any]:
        stmt = queries.nearest_units(
            tables, v, limit=limit, filter=flt, visual=visual, exact_scan=exact_scan, rows=rows, held=held
        )
        return queries.with_settings(stmt, settings) if settings else stmt

    if request.filter:  # its parameters need SQLAlchemy's processing: not cached
        return build(flt=request.filter)
    dimension = tables.spec.visual_dimension if visual else tables.spec.dimension
    key = (
        "units",
        tables.units.fullname,
        dimension,
        tables.spec.vector_index,
        limit,
        wanted,
        visual,
        exact_scan,
        rows,
        tuple(settings.items()),
    )
    return sql.raw(key, build, query_vector=vector)


def _lexical(sql: _Sql, tables: CorpusTables, request: SearchRequest, *, limit: int) -> Step:
    """The full-text channel's statement: compiled once per table and limit, the text a parameter."""
    assert request.lexical_text is not None
    text = queries.lexical_words(request.lexical_text)
    if request.filter:  # its parameters need SQLAlchemy's processing: not cached
        return queries.search_lexical(tables, text, limit=limit, filter=request.filter)
    key = ("lexical", tables.units.fullname, limit)
    return sql.raw(key, lambda: queries.search_lexical(tables, text, limit=limit), lexical_text=text)


def _units_holding(
    sql: _Sql,
    tables: CorpusTables,
    request: SearchRequest,
    names: tuple[str, ...],
    *,
    limit: int,
    defining: tuple[str, ...] = (),
) -> Step:
    """The statement of the units holding one of ``names``: compiled once per table, limit and shape of the names
    (:func:`~.queries.holding_shape`), the names parameters. Built and run by SQLAlchemy per query it cost ~0.9 ms of
    CPU a corpus, six times for a question typing a year: on ``routing_latency.py``'s 100k units its three questions
    typing numbers took 29.4 ms at p50 (44.8 ms CPU) against 26.1 (39.6) this way, alternated in one process."""
    if request.filter:  # its parameters need SQLAlchemy's processing: not cached
        return queries.units_holding(tables, names, limit=limit, filter=request.filter, defining=defining)
    key = ("holding", tables.units.fullname, queries.holding_shape(names), len(defining), limit)
    return sql.raw(
        key,
        lambda: queries.units_holding(tables, names, limit=limit, defining=defining),
        **queries.holding_parameters(names, defining=defining),
    )


def _exact_tables(
    conn: sa.Connection, tables: CorpusTables, request: SearchRequest, *, visual: bool
) -> dict[str, bool]:
    """Whether each searched table (``units``, ``parts``) is scanned exactly (:mod:`~.scan_rule`), and whether an
    index search of parts is refined by an exact scan of the units it found (``refine``, :func:`_refined`)."""
    multi = tables.parts is not None
    spec = tables.spec
    if request.exact_scan or spec.vector_index == "none" or (visual and not hnsw_indexed(spec.visual_dimension or 0)):
        return {"units": True, "parts": True}  # asked for, or a corpus without an HNSW index (migrations 0012, 0018)
    searched = [t for t in (tables.units, tables.parts) if t is not None]  # the units' size too: see _refined
    rows = table_rows(conn, searched)
    metadata = spec.metadata
    if request.exact_scan is False:  # through the index, refined where that pays
        return {"units": False, "parts": False, "refine": _refined(tables, rows, request.exact_scan_max_rows)}

    def rule(table: sa.Table | None, *, checked: bool) -> bool:
        if table is None or table.name not in rows:
            return False
        n = rows[table.name]
        # Above exact_scan_max_rows too: there the check tunes the index's beam (store/index_check.py).
        if checked and request.on_unchecked is not None and request.exact_scan_rows < n and needs_check(metadata, n):
            request.on_unchecked()
        return scan_exactly(
            n,
            metadata,
            exact_scan_rows=request.exact_scan_rows,
            exact_scan_max_rows=request.exact_scan_max_rows,
            checked=checked,
        )

    parts = rule(tables.parts, checked=True)
    return {
        "units": rule(tables.units, checked=not multi) if visual or not multi else False,
        "parts": parts,
        "refine": not parts and _refined(tables, rows, request.exact_scan_max_rows),
    }


def _refined(tables: CorpusTables, rows: Mapping[str, int], exact_scan_max_rows: int) -> bool:
    """Whether an index search of ``tables``' parts is refined (:func:`_text_by_parts`): where the parts table holds
    at most ``exact_scan_max_rows`` rows (the exact scan of the found units' parts stays small) and its units have
    :data:`REFINE_PARTS_PER_UNIT` parts or more on average — units of many parts (table rows, chunks of long
    files) are where the graph search loses a small unit or a unit's best part; with one or two parts per unit the
    window of parts is as good as a search of the units."""
    if tables.parts is None:
        return False
    parts, units = rows.get(tables.parts.name, 0), rows.get(tables.units.name, 0)
    return parts <= exact_scan_max_rows and parts >= REFINE_PARTS_PER_UNIT * max(units, 1)


#: An index search of parts widens its window until it holds this many distinct units (or ``k``, if more): a
#: window that holds the parts of one or two units only is the sign of a beam stuck among near-identical rows
#: (thousands of numeric table rows), where the best unit may lie outside it.
MIN_DISTINCT_UNITS = 3


#: Units of at least this many parts on average have their index searches of parts refined (see :func:`_refined`).
REFINE_PARTS_PER_UNIT = 4
#: A refined index search of parts ranks again, exactly, up to this many times ``max(k, MIN_DISTINCT_UNITS)`` of
#: the units its window holds (see :func:`_text_by_parts`).
REFINED_UNITS = 4
#: The beam of the units' own index when a refinement adds the nearest units (a safety net beside the window).
NEAR_UNITS_BEAM = 16


#: A unit that holds only a number the query typed (a year, a code: "1967", "533") comes first only when its text
#: similarity is within this much of the best candidate's (:func:`_near_enough`).
NUMBER_MARGIN = 0.15


def _near_enough(held: set[str], candidates: Mapping[str, _Candidate], names: tuple[str, ...]) -> set[str]:
    """The ``held`` units that come first: those holding a name that is not a number, and those holding only a
    number whose text similarity is within :data:`NUMBER_MARGIN` of the best candidate's. A number names one
    thing less surely than a code does: over 15 Wikipedia pages, five held "1967", and "which team completed only
    two laps at Le Mans in 1967" put the four that merely mention it (similarity 0.17-0.32) before the Le Mans page
    (0.71), which fell out of the top 5; a year the answering page holds is about as near as the best (excluding
    years altogether lost 0.3 points of routed page recall on the routing benchmark)."""
    words = tuple(n for n in names if not is_number(n))
    if not held or len(words) == len(names):
        return held
    best = max((c.text for c in candidates.values() if c.text is not None), default=None)

    def keep(uid: str) -> bool:
        c = candidates[uid]
        if words and holds_name(str((c.row or {}).get("content") or ""), words):
            return True
        return best is None or c.text is None or c.text >= best - NUMBER_MARGIN

    return {uid for uid in held if keep(uid)}


def _first_part_window(k: int) -> int:
    return max(8 * k, MIN_PART_WINDOW)


def _combine(
    candidates: Mapping[str, _Candidate],
    lexical: list[str] | None,
    *,
    visual: bool,
    visual_weight: float,
    held: set[str] | frozenset[str] = frozenset(),
) -> list[tuple[str, float, _Candidate, dict[str, float]]]:
    """Every candidate scored the same way, best first (ties in candidate order): ``(id, score, candidate, channel
    scores)``. The units that hold a name the query typed (``held``) come first, by score among themselves, with
    channel ``exact``."""
    dense: dict[str, float] = {}
    for uid, c in candidates.items():  # (a text similarity alone is the score as is)
        score = c.text if c.visual is None else weighted(c.text, c.visual, visual_weight=visual_weight)
        if score is not None:
            dense[uid] = score
    fused = dense if lexical is None else rrf_scores([sorted(dense, key=dense.__getitem__, reverse=True), lexical])
    lexical_rank = {uid: rank for rank, uid in enumerate(lexical or (), 1)}
    out = []
    for uid, score in fused.items():
        c = candidates[uid]
        if c.row is None:  # deleted meanwhile
            continue
        channels: dict[str, float] = {}
        if visual:
            channels.update({name: v for name, v in (("text", c.text), ("visual", c.visual)) if v is not None})
        if lexical is not None:
            if uid in dense:
                channels["dense"] = dense[uid]
            if uid in lexical_rank:
                channels["lexical"] = float(c.row["rank"]) if "rank" in c.row else 0.0
        if uid in held:
            channels["exact"] = 1.0
        out.append((uid, score, c, channels))
    out.sort(key=lambda t: (t[0] in held, t[1]), reverse=True)  # stable, like sorting by the negated key
    return out


def _distinct(
    ranked: Sequence[tuple[str, float, _Candidate, dict[str, float]]],
) -> list[tuple[str, float, _Candidate, dict[str, float]]]:
    """The ranked candidates without those whose text repeats, word for word, the text of one ranked before them:
    documentation repeats itself (npm's docs give a flag's description on up to 25 command pages; a manual's
    single-page edition holds every page), and five copies of one passage are one answer in five places."""
    seen = SeenTexts()
    out = []
    for entry in ranked:
        row = entry[2].row
        if row is None or seen.add(str(row.get("content") or "")):
            out.append(entry)
    return out


def _names_first(
    ranked: Sequence[tuple[str, float, _Candidate, dict[str, float]]],
    texts: Mapping[tuple[str, int], str],
    names: tuple[str, ...],
    defined: set[str] | frozenset[str] = frozenset(),
) -> list[tuple[str, float, _Candidate, dict[str, float]]]:
    """The ranked candidates with those whose text (or a matched part's, or its title) holds one of ``names``
    marked (channel ``named``) and moved before the others, order kept within each group (the held units, channel
    ``exact``, stay first): a user who types ``CMAKE_BUILD_TYPE`` wants the passages that say it before a table row
    that only resembles it, however many units say it. The title counts because it is embedded with the unit and
    says what the unit is about: in bzip2's manual ("bzip2 and libbzip2"), the passage of exit values, which never
    says "bzip2", came after a less similar one that does."""

    def holds(uid: str, c: _Candidate) -> bool:
        parts = " ".join(texts.get((uid, o), "") for o, _ in c.parts) if c.parts else ""
        row = c.row or {}
        title = (row.get("metadata") or {}).get("title")
        return holds_name(f"{row.get('content') or ''} {parts} {title if isinstance(title, str) else ''}", names)

    for uid, _, c, channels in ranked:
        if channels.get("exact") or holds(uid, c):
            channels["named"] = 1.0
        if uid in defined or (c.parts and defines(texts.get((uid, c.parts[0][0]), ""), definable(names))):
            channels["defines"] = 1.0  # its entry or row: before the units that only mention the name
    return sorted(ranked, key=lambda t: (not t[3].get("defines"), not t[3].get("exact"), not t[3].get("named")))


def _hits(
    spec: CorpusSpec,
    ranked: Sequence[tuple[str, float, _Candidate, dict[str, float]]],
    texts: Mapping[tuple[str, int], str],
) -> list[Hit]:
    """The ranked candidates as hits, each with its matched parts' texts (``texts`` by unit id and part)."""
    return [
        hit_from_row(
            spec,
            _row(c),
            score,
            channels=channels,
            parts=tuple((o, texts.get((uid, o), ""), s) for o, s in c.parts) if c.parts else (),
        )
        for uid, score, c, channels in ranked
    ]


def _text_by_parts(
    sql: _Sql,
    tables: CorpusTables,
    request: SearchRequest,
    k: int,
    *,
    exact_scan: bool,
    ef: int,
    refine: bool = False,
    held: int = 0,
) -> Search[dict[str, tuple[tuple[int, float], ...]]]:
    """The ``k`` units whose best parts are nearest, each with its best :data:`PARTS_PER_HIT` parts (``ef``: the
    narrowest beam). With ``refine``, the units the index found (at most :data:`REFINED_UNITS` times ``k``) and
    the ``k`` units whose own vectors are nearest are ranked again by an exact scan of their parts, one statement:
    among thousands of near-identical numeric rows the graph search does not always reach the rows of a small
    table (a CI build returned the Ubuntu table for "Debian Bookworm release date", Debian's 9 rows never
    visited), nor the best row of the right one."""
    assert tables.parts is not None
    if exact_scan:
        return _grouped((yield _best_parts_exact(sql, tables, request, units=k, flt=request.filter)))
    limit = _first_part_window(k)
    keep = max(k, MIN_DISTINCT_UNITS) * (REFINED_UNITS if refine else 1)  # units the window's grouping returns
    while True:
        # The search beam is at least as wide as the window: without the iterative scan the index returns at most
        # ef_search rows, and with it a narrow beam stays among near-identical rows.
        # the rows the statement takes from the index (a binary index's window of candidates, ranked again)
        taken = rerank_window(limit, held) if tables.spec.vector_index == "binary" else limit
        wanted = min(max(ef, taken), MAX_EF_SEARCH)
        settings = _settings(request, wanted)

        def build(flt: Filter | None = None, limit: int = limit, settings: dict[str, str | int] = settings) -> Any:
            window = queries.with_settings(
                queries.nearest_parts(tables, request.vector, limit=limit, filter=flt, held=held), settings
            )
            return queries.parts_by_unit(window, units=keep, per_unit=PARTS_PER_HIT)

        if request.filter:
            rows = yield build(request.filter)
        else:
            kind = tables.spec.vector_index
            key = ("parts", tables.parts.fullname, kind, limit, taken, keep, tuple(settings.items()))
            rows = yield sql.raw(key, build, query_vector=request.vector)
        grouped = _grouped(rows)
        window_rows = int(rows[0]["window_rows"]) if rows else 0
        exhausted = window_rows < limit or (not request.iterative and limit >= MAX_EF_SEARCH)
        if len(grouped) >= max(k, MIN_DISTINCT_UNITS) or exhausted or limit >= MAX_PART_WINDOW:
            break
        limit = min(limit * 4, MAX_PART_WINDOW)
    if refine:
        units, near = list(grouped), max(k, MIN_DISTINCT_UNITS)
        grouped = _grouped(
            (
                yield _best_parts_exact(
                    sql, tables, request, units=len(units) + near, flt=request.filter, unit_ids=units, near_units=near
                )
            )
        )
    return dict(list(grouped.items())[:k])  # best first


def _best_parts_exact(
    sql: _Sql,
    tables: CorpusTables,
    request: SearchRequest,
    *,
    units: int,
    flt: Filter | None = None,
    unit_ids: Sequence[str] | None = None,
    near_units: int = 0,
) -> Step:
    """The statement of the ``units`` units whose parts are nearest by an exact scan (``queries.best_parts_exact``
    over ``PARTS_PER_HIT`` times as many rows), grouped by unit on the server (:func:`~.queries.parts_by_unit`)."""

    def build(f: Filter | None = None) -> Any:
        stmt = queries.best_parts_exact(
            tables,
            request.vector,
            per_unit=PARTS_PER_HIT,
            limit=PARTS_PER_HIT * units,
            filter=f,
            unit_ids=unit_ids,
            near_units=near_units,
        )
        if near_units:
            stmt = queries.with_settings(stmt, {"hnsw.ef_search": NEAR_UNITS_BEAM})
        return queries.parts_by_unit(stmt, units=units, per_unit=PARTS_PER_HIT)

    if flt:
        return build(flt)
    assert tables.parts is not None
    key = ("best_parts", tables.parts.fullname, tables.spec.vector_index, units, unit_ids is not None, near_units)
    return sql.raw(
        key,
        build,
        query_vector=request.vector,
        **({"unit_ids": [str(u) for u in unit_ids]} if unit_ids is not None else {}),
    )


def _grouped(rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[tuple[int, float], ...]]:
    """The rows of a :func:`~.queries.parts_by_unit` statement as ``{unit id: ((part, similarity), ...)}``, in their
    order (the units of the nearest parts first, each unit's parts nearest first)."""
    return {
        str(r["unit_id"]): tuple((int(o), 1.0 - float(d)) for o, d in zip(r["ords"], r["distances"], strict=True))
        for r in rows
    }


def _complete(
    sql: _Sql, tables: CorpusTables, request: SearchRequest, candidates: dict[str, _Candidate], *, visual: bool
) -> Search[None]:
    """Fill in each candidate's row and the similarities its channels did not give it (exact, for it alone)."""
    if not candidates:
        return
    visual_vector = request.visual_vector if visual else None
    key = ("similarity", tables.units.fullname, tables.spec.dimension, tables.spec.visual_dimension if visual else 0)
    rows = yield sql.raw(
        key,
        lambda: queries.units_with_similarity(tables, list(candidates), request.vector, visual_vector),
        unit_ids=list(candidates),
        query_vector=request.vector,
        visual_vector=visual_vector,
    )
    for r in rows:
        c = candidates[str(r["id"])]
        c.row = {**r, **(c.row or {})}
        if visual and c.visual is None and r["visual_sim"] is not None:
            c.visual = float(r["visual_sim"])
        if tables.parts is None and c.text is None and r["text_sim"] is not None:
            c.text = float(r["text_sim"])
    if tables.parts is not None:
        need = [uid for uid, c in candidates.items() if not c.parts and c.row is not None]
        if need:
            found = _grouped((yield _best_parts_exact(sql, tables, request, units=len(need), unit_ids=need)))
            for uid in need:
                c = candidates[uid]
                c.parts = found.get(uid, ())
                if c.parts:
                    c.text = c.parts[0][1]
                elif c.row is not None and c.row["text_sim"] is not None:  # a unit without parts: its own vector
                    c.text = float(c.row["text_sim"])


def _exact_parts(
    sql: _Sql, tables: CorpusTables, request: SearchRequest, hits: Sequence[tuple[str, _Candidate]]
) -> Search[None]:
    """Put the parts that hold the query's exact terms first among each hit's matched parts (those matching the
    most terms first, then the nearest; the nearest parts fill the rest): a row holding the "10.0.1.5" or
    "build-04" the user typed, not the row nearest in meaning (:mod:`universalrag.exact_terms`). The hits' scores
    and order stay those of the similarity search."""
    if not hits:
        return
    assert tables.parts is not None
    patterns = [term_pattern(t) for t in request.exact_terms]
    defining = [defining_pattern(t) for t in definable(request.exact_terms)]
    units = [uid for uid, _ in hits]
    key = ("term_parts", tables.parts.fullname, tables.spec.dimension, len(patterns), len(defining))
    rows = yield sql.raw(
        key,
        lambda: queries.parts_with_terms(
            tables, request.vector, units, patterns, per_unit=PARTS_PER_HIT, defining=defining
        ),
        query_vector=request.vector,
        unit_ids=units,
        **{f"term{i}": pattern for i, pattern in enumerate(patterns)},
        **{f"def{i}": pattern for i, pattern in enumerate(defining)},
    )
    found: dict[str, list[tuple[int, int, float]]] = {}
    for r in rows:
        found.setdefault(str(r["unit_id"]), []).append((int(r["matched"]), int(r["ord"]), 1.0 - float(r["distance"])))
    for uid, c in hits:
        if uid in found:
            parts = {o: sim for _, o, sim in sorted(found[uid], key=lambda m: (-m[0], -m[2]))}  # in this order
            for o, sim in c.parts:
                parts.setdefault(o, sim)
            c.parts = tuple(parts.items())[:PARTS_PER_HIT]


def _part_texts(
    sql: _Sql, tables: CorpusTables, hits: Sequence[tuple[str, _Candidate]]
) -> Search[dict[tuple[str, int], str]]:
    keys = [(uid, o) for uid, c in hits for o, _ in c.parts]
    if not keys or tables.parts is None:
        return {}
    rows = yield sql.raw(
        ("part_texts", tables.parts.fullname),
        lambda: queries.part_texts(tables, keys),
        part_units=[k[0] for k in keys],
        part_ords=[k[1] for k in keys],
    )
    return {(str(r["unit_id"]), int(r["ord"])): r["content"] for r in rows}


def hit_from_row(
    spec: CorpusSpec,
    row: Mapping[Any, Any],
    score: float,
    *,
    parts: tuple[tuple[int, str, float], ...] = (),
    channels: Mapping[str, float] | None = None,
) -> Hit:
    """A unit row of ``spec``'s table as a :class:`Hit`."""
    parent, source, metadata = row["parent_id"], row["source_id"], row["metadata"]
    # Positional, in Hit's field order: a dataclass called with keywords builds a dict of them per call.
    return Hit(
        spec.name,
        str(row["id"]),
        score,
        row["content"],
        row["uri"],
        dict(metadata) if metadata else {},
        str(parent) if parent else None,
        row["start_s"],
        row["end_s"],
        str(source) if source else None,
        spec.modality,
        spec.granularity,
        parts,
        dict(channels) if channels else {},
    )
