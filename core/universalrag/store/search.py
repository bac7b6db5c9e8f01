"""Running searches inside one transaction: index settings, single-vector, multi-vector and fused search."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import sqlalchemy as sa

from ..types import CorpusSpec, Hit
from . import queries
from .filters import Filter
from .schema import CorpusTables

__all__ = ["run_search", "hit_from_row"]

# (score, unit row, matched parts, channel scores)
_Scored = tuple[float, Mapping[str, Any], tuple[tuple[int, str, float], ...], dict[str, float]]


def _single(conn: sa.Connection, tables: CorpusTables, vector: Sequence[float], *, k: int,
            filter: Filter | None) -> list[_Scored]:
    rows = conn.execute(queries.search_units(tables, vector, k=k, filter=filter)).mappings().all()
    return [(1.0 - float(r["distance"]), r, (), {}) for r in rows]


def _multi(conn: sa.Connection, tables: CorpusTables, vector: Sequence[float], *, k: int,
           filter: Filter | None) -> list[_Scored]:
    """Nearest parts, grouped by unit; the window grows until ``k`` distinct units are found or none remain."""
    limit = max(8 * k, 40)
    while True:
        rows = conn.execute(queries.search_parts(tables, vector, limit=limit, filter=filter)).all()
        best: dict[str, list[tuple[int, str, float]]] = {}
        for r in rows:
            best.setdefault(str(r.unit_id), []).append((int(r.ord), r.content, 1.0 - float(r.distance)))
        if len(best) >= k or len(rows) < limit or limit >= 20000:
            break
        limit *= 4
    ranked = sorted(best.items(), key=lambda kv: -max(s for _, _, s in kv[1]))[:k]
    units = {str(r["id"]): r for r in conn.execute(
        queries.units_by_id(tables, [uid for uid, _ in ranked])).mappings()}
    out: list[_Scored] = []
    for uid, parts in ranked:
        top = tuple(sorted(parts, key=lambda p: -p[2])[:5])
        out.append((top[0][2], units[uid], top, {}))
    return out


def _fused(conn: sa.Connection, tables: CorpusTables, vector: Sequence[float], visual_vector: Sequence[float],
           *, k: int, filter: Filter | None, visual_weight: float) -> list[_Scored]:
    """Candidates from both spaces, ranked by ``visual_weight · visual + (1 − visual_weight) · text``."""
    rows = conn.execute(queries.search_fused(tables, vector, visual_vector, candidates=max(4 * k, 40),
                                             filter=filter)).mappings().all()
    out: list[_Scored] = []
    for r in rows:
        text, visual = r["text_sim"], r["visual_sim"]
        channels = {name: float(v) for name, v in (("text", text), ("visual", visual)) if v is not None}
        if text is not None and visual is not None:
            score = visual_weight * float(visual) + (1.0 - visual_weight) * float(text)
        else:
            score = next(iter(channels.values()), 0.0)
        out.append((score, r, (), channels))
    return out


#: Reciprocal rank fusion constant (Cormack et al.): a hit's fused score is the sum of 1 / (RRF_K + rank).
RRF_K = 60


def _hybrid(dense: list[_Scored], conn: sa.Connection, tables: CorpusTables, text: str, *, k: int,
            filter: Filter | None) -> list[_Scored]:
    """Dense and full-text rankings fused by reciprocal rank; channel scores keep both similarities."""
    lexical = conn.execute(queries.search_lexical(tables, text, limit=max(2 * k, 20), filter=filter)).mappings().all()
    fused: dict[str, list[Any]] = {}
    for rank, (score, row, parts, channels) in enumerate(sorted(dense, key=lambda t: -t[0]), 1):
        fused[str(row["id"])] = [1.0 / (RRF_K + rank), row, parts, {**channels, "dense": score}]
    for rank, row in enumerate(lexical, 1):
        entry = fused.setdefault(str(row["id"]), [0.0, row, (), {}])
        entry[0] += 1.0 / (RRF_K + rank)
        entry[3]["lexical"] = float(row["rank"])
    return [(score, row, parts, channels) for score, row, parts, channels in fused.values()]


def run_search(conn: sa.Connection, tables: CorpusTables, vector: Sequence[float], *, k: int,
               filter: Filter | None, visual_vector: Sequence[float] | None, visual_weight: float,
               lexical_text: str | None = None) -> list[Hit]:
    """The ``k`` best hits of one corpus (settings such as ``hnsw.ef_search`` are already applied).

    With ``lexical_text`` the dense ranking is fused with Postgres full-text ranking (reciprocal rank fusion),
    and ``score`` is the fused score.
    """
    if lexical_text:
        dense = run_search(conn, tables, vector, k=max(2 * k, 20), filter=filter, visual_vector=visual_vector,
                           visual_weight=visual_weight)
        scored = _hybrid([(h.score, _row(h), h.matched_parts, dict(h.channel_scores)) for h in dense], conn,
                         tables, lexical_text, k=k, filter=filter)
    elif visual_vector is not None and tables.spec.visual_dimension:
        scored = _fused(conn, tables, vector, visual_vector, k=k, filter=filter, visual_weight=visual_weight)
    elif tables.parts is not None:
        scored = _multi(conn, tables, vector, k=k, filter=filter)
    else:
        scored = _single(conn, tables, vector, k=k, filter=filter)
    scored.sort(key=lambda t: -t[0])  # iterative scans in relaxed order may return rows slightly out of order
    return [hit_from_row(tables.spec, row, score, parts=parts, channels=channels) for score, row, parts, channels
            in scored[:k]]


def hit_from_row(spec: CorpusSpec, row: Mapping[str, Any], score: float, *,
                 parts: tuple[tuple[int, str, float], ...] = (), channels: Mapping[str, float] | None = None) -> Hit:
    """A unit row of ``spec``'s table as a :class:`Hit`."""
    return Hit(corpus=spec.name, id=str(row["id"]), score=score, content=row["content"], uri=row["uri"],
               metadata=dict(row["metadata"] or {}), parent_id=str(row["parent_id"]) if row["parent_id"] else None,
               start_s=row["start_s"], end_s=row["end_s"],
               source_id=str(row["source_id"]) if row["source_id"] else None,
               modality=spec.modality, granularity=spec.granularity, matched_parts=parts,
               channel_scores=dict(channels or {}))


def _row(hit: Hit) -> dict[str, Any]:
    """A hit back as the row mapping the rankings share."""
    return {"id": hit.id, "content": hit.content, "uri": hit.uri, "metadata": dict(hit.metadata),
            "parent_id": hit.parent_id, "start_s": hit.start_s, "end_s": hit.end_s, "source_id": hit.source_id}
