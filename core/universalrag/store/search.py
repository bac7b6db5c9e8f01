"""One corpus search inside one transaction, every channel combined in one place.

Each channel gathers candidate units: the text channel by the unit's own vector, or, in a multi-vector corpus,
by its best parts (chunks, rows); the visual channel by the unit's visual vector; the lexical channel by
Postgres full-text rank. The similarities a candidate lacks are then computed exactly for it alone, so every
candidate is scored the same way, whichever channel found it (:func:`_combine`):

- dense score = ``visual_weight · visual + (1 − visual_weight) · text`` (one channel alone where a unit has no
  vector in the other); the text similarity of a multi-vector unit is that of its best part, and its best
  parts are returned as ``matched_parts``;
- with lexical text (hybrid search), the dense ranking and the full-text ranking are fused by reciprocal rank.

When the searched table is small (:attr:`SearchRequest.exact_rows`), the channel scans it exactly; above that
it goes through the HNSW index with the iterative scan on (pgvector 0.8+), and a multi-vector corpus widens
its window of parts until it holds ``k`` distinct units.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ..fusion import rrf_scores, weighted
from ..types import CorpusSpec, Hit
from . import queries
from .filters import Filter
from .schema import CorpusTables

__all__ = ["PARTS_PER_HIT", "MIN_PART_WINDOW", "MAX_PART_WINDOW", "SearchRequest", "run_search", "hit_from_row"]

#: How many matched parts a hit of a multi-vector corpus reports (best first).
PARTS_PER_HIT = 5
#: The narrowest window of parts (and search beam) an index search of a multi-vector corpus uses.
MIN_PART_WINDOW = 100
#: The widest window of parts an index search asks for (pgvector's default ``hnsw.max_scan_tuples``).
MAX_PART_WINDOW = 20000
#: pgvector's largest ``hnsw.ef_search``.
_MAX_EF_SEARCH = 1000


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What to search for in one corpus, and how.

    ``visual_vector`` is the query in the corpus's visual space (ignored when the corpus has none);
    ``lexical_text`` turns on hybrid search. A channel whose table holds at most ``exact_rows`` rows is scanned
    exactly (``exact=True``: always, ``False``: never). ``iterative`` says the server has pgvector's iterative
    index scan (0.8+).
    """

    vector: Sequence[float]
    k: int
    visual_weight: float  # its default lives in Settings.visual_weight_for
    filter: Filter | None = None
    visual_vector: Sequence[float] | None = None
    lexical_text: str | None = None
    ef_search: int = 100
    exact_rows: int = 0
    exact: bool | None = None
    iterative: bool = True


@dataclass(slots=True)
class _Candidate:
    text: float | None = None  # text-space similarity (best part for multi-vector corpora)
    visual: float | None = None
    parts: tuple[tuple[int, float], ...] = ()  # (ord, similarity), best first
    row: Mapping[str, Any] | None = None


def run_search(conn: sa.Connection, tables: CorpusTables, request: SearchRequest) -> list[Hit]:
    """The ``k`` best hits of one corpus for ``request`` (index settings are applied here, transaction-local)."""
    spec = tables.spec
    visual = request.visual_vector is not None and bool(spec.visual_dimension)
    window = max(4 * request.k, 40) if visual or request.lexical_text else request.k
    candidates: dict[str, _Candidate] = {}
    units_exact = _exact(conn, tables.units, request) if visual or tables.parts is None else False
    if tables.parts is not None:
        for uid, parts in _text_by_parts(conn, tables, request, window).items():
            candidates[uid] = _Candidate(text=parts[0][1], parts=parts)
    else:
        with _scan(conn, exact=units_exact):
            for r in conn.execute(queries.nearest_units(tables, request.vector, limit=window,
                                                        filter=request.filter)):
                candidates[str(r.unit_id)] = _Candidate(text=1.0 - float(r.distance))
    if visual:
        assert request.visual_vector is not None
        with _scan(conn, exact=units_exact):
            for r in conn.execute(queries.nearest_units(tables, request.visual_vector, limit=window,
                                                        filter=request.filter, visual=True)):
                candidates.setdefault(str(r.unit_id), _Candidate()).visual = 1.0 - float(r.distance)
    lexical: list[str] = []
    if request.lexical_text:
        for r in conn.execute(queries.search_lexical(tables, request.lexical_text, limit=window,
                                                     filter=request.filter)).mappings():
            lexical.append(str(r["id"]))
            candidates.setdefault(str(r["id"]), _Candidate()).row = r
    _complete(conn, tables, request, candidates, visual=visual)
    ranked = _combine(candidates, lexical if request.lexical_text else None, visual=visual,
                      visual_weight=request.visual_weight)[: request.k]
    texts = _part_texts(conn, tables, [(uid, c) for uid, _, c, _ in ranked])
    return [hit_from_row(spec, c.row, score, channels=channels,  # type: ignore[arg-type]
                         parts=tuple((o, texts.get((uid, o), ""), s) for o, s in c.parts))
            for uid, score, c, channels in ranked]


def _combine(candidates: Mapping[str, _Candidate], lexical: list[str] | None, *, visual: bool,
             visual_weight: float) -> list[tuple[str, float, _Candidate, dict[str, float]]]:
    """Every candidate scored the same way, best first: ``(id, score, candidate, channel scores)``."""
    dense: dict[str, float] = {}
    for uid, c in candidates.items():
        score = weighted(c.text, c.visual, visual_weight=visual_weight)
        if score is not None:
            dense[uid] = score
    dense_ranking = sorted(dense, key=lambda uid: -dense[uid])
    fused = rrf_scores([dense_ranking, lexical]) if lexical is not None else dense
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
        out.append((uid, score, c, channels))
    out.sort(key=lambda t: -t[1])
    return out


def _text_by_parts(conn: sa.Connection, tables: CorpusTables, request: SearchRequest,
                   k: int) -> dict[str, tuple[tuple[int, float], ...]]:
    """The ``k`` units whose best parts are nearest, each with its best :data:`PARTS_PER_HIT` parts."""
    assert tables.parts is not None
    if _exact(conn, tables.parts, request):
        with _scan(conn, exact=True):
            rows = conn.execute(queries.best_parts_exact(tables, request.vector, per_unit=PARTS_PER_HIT,
                                                         limit=PARTS_PER_HIT * k, filter=request.filter)).all()
        return _group(rows, k)
    limit = max(8 * k, MIN_PART_WINDOW)
    while True:
        # The search beam is at least as wide as the window: without the iterative scan the index returns at most
        # ef_search rows, and with it a narrow beam stays among near-identical rows (issue 11).
        conn.execute(queries.set_local("hnsw.ef_search", min(max(request.ef_search, limit), _MAX_EF_SEARCH)))
        rows = conn.execute(queries.nearest_parts(tables, request.vector, limit=limit, filter=request.filter)).all()
        grouped = _group(rows, k)
        exhausted = len(rows) < limit or (not request.iterative and limit >= _MAX_EF_SEARCH)
        if len(grouped) >= k or exhausted or limit >= MAX_PART_WINDOW:
            return grouped
        limit = min(limit * 4, MAX_PART_WINDOW)


def _group(rows: Sequence[Any], k: int) -> dict[str, tuple[tuple[int, float], ...]]:
    best: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        best.setdefault(str(r.unit_id), []).append((int(r.ord), 1.0 - float(r.distance)))
    ranked = sorted(best.items(), key=lambda kv: -max(s for _, s in kv[1]))[:k]
    return {uid: tuple(sorted(parts, key=lambda p: -p[1])[:PARTS_PER_HIT]) for uid, parts in ranked}


def _complete(conn: sa.Connection, tables: CorpusTables, request: SearchRequest,
              candidates: dict[str, _Candidate], *, visual: bool) -> None:
    """Fill in each candidate's row and the similarities its channels did not give it (exact, for it alone)."""
    if not candidates:
        return
    rows = conn.execute(queries.units_with_similarity(
        tables, list(candidates), request.vector, request.visual_vector if visual else None)).mappings().all()
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
            found = _group(conn.execute(queries.best_parts_exact(
                tables, request.vector, per_unit=PARTS_PER_HIT, limit=PARTS_PER_HIT * len(need),
                unit_ids=need)).all(), len(need))
            for uid in need:
                c = candidates[uid]
                c.parts = found.get(uid, ())
                if c.parts:
                    c.text = c.parts[0][1]
                elif c.row is not None and c.row["text_sim"] is not None:  # a unit without parts: its own vector
                    c.text = float(c.row["text_sim"])


def _part_texts(conn: sa.Connection, tables: CorpusTables,
                hits: Sequence[tuple[str, _Candidate]]) -> dict[tuple[str, int], str]:
    keys = [(uid, o) for uid, c in hits for o, _ in c.parts]
    if not keys or tables.parts is None:
        return {}
    return {(str(r.unit_id), int(r.ord)): r.content for r in conn.execute(queries.part_texts(tables, keys))}


def _exact(conn: sa.Connection, table: sa.Table, request: SearchRequest) -> bool:
    """Whether to scan ``table`` exactly: as asked, else when it holds at most ``exact_rows`` rows."""
    if request.exact is not None:
        return request.exact
    if request.exact_rows < 1:
        return False
    return int(conn.execute(queries.count_upto(table, request.exact_rows)).scalar_one()) <= request.exact_rows


@contextlib.contextmanager
def _scan(conn: sa.Connection, *, exact: bool) -> Iterator[None]:
    """Index scans off (the planner scans the table and sorts: exact results) for the statements inside."""
    if not exact:
        yield
        return
    conn.execute(queries.set_local("enable_indexscan", "off"))
    yield  # on an error the transaction is rolled back, and the setting with it
    conn.execute(queries.set_local("enable_indexscan", "on"))


def hit_from_row(spec: CorpusSpec, row: Mapping[str, Any], score: float, *,
                 parts: tuple[tuple[int, str, float], ...] = (), channels: Mapping[str, float] | None = None) -> Hit:
    """A unit row of ``spec``'s table as a :class:`Hit`."""
    return Hit(corpus=spec.name, id=str(row["id"]), score=score, content=row["content"], uri=row["uri"],
               metadata=dict(row["metadata"] or {}), parent_id=str(row["parent_id"]) if row["parent_id"] else None,
               start_s=row["start_s"], end_s=row["end_s"],
               source_id=str(row["source_id"]) if row["source_id"] else None,
               modality=spec.modality, granularity=spec.granularity, matched_parts=parts,
               channel_scores=dict(channels or {}))
