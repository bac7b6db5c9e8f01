"""Does a corpus's HNSW index find what an exact scan finds, on this corpus's own data? Measured once, stored.

A table corpus of numeric CSVs holds thousands of near-identical row vectors, and the HNSW graph search can lose
an exact match among them. Whether an index is reliable depends on the data, so it is measured:
:func:`check_index` takes query vectors from the corpus itself — a part (row, chunk) of each unit in turn, units in
a seeded pseudo-random order so that a small unit counts as much as a large one, each moved away from its source
by random noise (cosine ≈ 0.7, the distance of a real question to its answer) — and searches the table both ways.
A query counts as found when the index's best unit is the exact scan's, with a best part as good (within
:data:`SCORE_TOLERANCE`: near-identical rows tie). On a table larger than ``Settings.exact_scan_max_rows``, which no
search scans exactly whatever the check says, the beam alone must carry recall, so a found query scores the share
of the exact top :data:`CHECK_K` units that the index's top :data:`CHECK_K` holds (a unit tied with the exact
list's last, within the tolerance, counts): at 1M synthetic units a best-hit check passed a 166k-unit corpus at
beam 200 whose searches then found 0.79 of their top 10. Smaller tables keep the best-hit score: below
:data:`MIN_RECALL` they are scanned exactly, and recall@10 on the check's far-off queries would widen their beams
needlessly (at 100k units over six corpora, 200–800 instead of 100). The mean score is the table's recall.

The check also tunes the index's beam (at 1M synthetic units, pgvector's default graph found 0.7 of the
exact top 10 at ``ef_search`` 100): when the recall at the store's ``ef_search`` is below :data:`MIN_RECALL`, the
same queries go through the index again at beams twice as wide each time (:func:`beams`, up to pgvector's 1000),
against the same exact results (the expensive part, computed once), until one reaches :data:`MIN_RECALL`. The
beam stored is the smallest that did, or the widest tried; index searches of the corpus then use at least that
beam (:func:`~universalrag.store.scan_rule.tuned_ef`). Where even the widest beam stays below :data:`MIN_RECALL`,
the search scans that table exactly (up to ``Settings.exact_scan_max_rows``; above, the index at the widest beam).

The result is stored in the corpus's registry metadata under
:data:`~universalrag.store.scan_rule.CHECK_KEY` (``{"rows", "recall", "queries", "ef_search", "recalls"}``:
``recall`` is measured at ``ef_search``, ``recalls`` lists ``[beam, recall]`` for every beam tried), with the row
count it was measured at; :func:`~universalrag.store.scan_rule.needs_check` says when the table has grown or
shrunk too much since (a factor of 2) for it to hold. Checks stored before the tuning (no ``ef_search``) still
decide the scan as before.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import sqlalchemy as sa

from ..errors import StoreError
from ..types import Hit
from .corpus_search import SearchRequest, run_search
from .filters import Filter
from .partitions import COLUMN
from .row_estimates import forget, table_rows
from .scan_rule import CHECK_KEY, EF_KEY, MAX_EF_SEARCH, MIN_RECALL
from .translate import sqlstate

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ..config import Settings
    from ..types import CorpusSpec
    from .schema import CorpusTables, Tables


class CheckedStore(Protocol):
    """What the check uses of a :class:`~universalrag.store.Store` (which imports this module)."""

    settings: Settings
    schema: str
    tables: Tables

    @property
    def url_redacted(self) -> str | None: ...

    def corpus(self, name: str) -> CorpusSpec: ...

    def corpora(self, *, refresh: bool = False) -> dict[str, CorpusSpec]: ...

    def transaction(self, action: str = ...) -> AbstractContextManager[sa.Connection]: ...


_log = logging.getLogger(__name__)
_started: dict[tuple[str, str, str], float] = {}
_started_lock = threading.Lock()
_exiting = threading.Event()  # set when the interpreter begins to exit
_SHUTDOWN = frozenset({"57P01", "57P02", "57P03"})  # admin shutdown, crash shutdown, cannot connect now


def _note_exit() -> None:
    """Set :data:`_exiting` when the interpreter exits. Registered on the first check, after the embedded server's
    own exit hook, so it runs before that hook stops the server (exit hooks run last registered first)."""
    if not getattr(_note_exit, "registered", False):
        import atexit

        atexit.register(_exiting.set)
        _note_exit.registered = True  # type: ignore[attr-defined]


__all__ = [
    "CHECK_K",
    "RETRY_S",
    "SCORE_TOLERANCE",
    "IndexCheck",
    "beams",
    "check_in_background",
    "check_index",
    "check_score",
]

#: Two best parts whose similarities differ by less than this are equally good (near-identical rows).
SCORE_TOLERANCE = 0.005
#: A corpus whose background check was started is not checked again in the background for this long (seconds).
RETRY_S = 600.0
#: How many of the exact scan's best units the check compares (recall@10, the figure a search must reach).
CHECK_K = 10
_NOISE = 1.0  # |noise| / |vector|: cosine(query, source) = 1 / sqrt(1 + 1) ≈ 0.71


@dataclass(frozen=True, slots=True)
class IndexCheck:
    """The recall of one corpus's index search against the exact scan, at ``rows`` rows of the searched table:
    ``recall`` at beam ``ef_search`` (the smallest tried that reached :data:`MIN_RECALL`, else the widest),
    ``recalls`` the ``(beam, recall)`` of every beam tried, narrowest first."""

    corpus: str
    rows: int
    recall: float
    queries: int
    ef_search: int = 0
    recalls: tuple[tuple[int, float], ...] = ()
    #: A tenant-partitioned corpus's checked partitions: ``(partition, beam, recall)``, each measured by searches
    #: filtered on its tenant (which read its own HNSW graph alone); ``ef_search`` is at least each one's beam.
    partitions: tuple[tuple[str, int, float], ...] = ()

    @property
    def reliable(self) -> bool:
        """Whether the index found (nearly) every exact best hit at beam ``ef_search``."""
        return self.recall >= MIN_RECALL

    def as_dict(self) -> dict[str, Any]:
        """What is stored in the corpus's metadata."""
        return {
            "rows": self.rows,
            "recall": round(self.recall, 4),
            "queries": self.queries,
            EF_KEY: self.ef_search,
            "recalls": [[ef, round(r, 4)] for ef, r in self.recalls],
            **({"partitions": [[p, ef, round(r, 4)] for p, ef, r in self.partitions]} if self.partitions else {}),
        }


def beams(start: int) -> list[int]:
    """The beams the check tries, narrowest first: ``start``, then twice as wide each time up to pgvector's
    largest (:data:`~universalrag.store.scan_rule.MAX_EF_SEARCH`), which is always the last."""
    out = [min(max(int(start), 1), MAX_EF_SEARCH)]
    while out[-1] < MAX_EF_SEARCH:
        out.append(min(out[-1] * 2, MAX_EF_SEARCH))
    return out


def _query_vectors(
    conn: sa.Connection, table: sa.Table, n: int, *, seed: int, where: Sequence[sa.ColumnElement[bool]] = ()
) -> np.ndarray:
    """``n`` vectors of ``table`` (a parts table: one part of each unit in turn), in a seeded order; only of the
    rows ``where`` holds for."""
    key = sa.cast(table.c.unit_id if "unit_id" in table.c else table.c.id, sa.Text)
    if "unit_id" in table.c:
        turn = sa.func.row_number().over(
            partition_by=table.c.unit_id, order_by=sa.func.md5(sa.cast(table.c.ord, sa.Text).concat(f":{seed}"))
        )
        inner = (
            sa.select(table.c.embedding, turn.label("turn"), sa.func.md5(key.concat(f":{seed}")).label("mix"))
            .where(*where)
            .subquery()
        )
        stmt = sa.select(inner.c.embedding).order_by(inner.c.turn, inner.c.mix)
    else:
        stmt = (
            sa.select(table.c.embedding)
            .where(table.c.embedding.is_not(None), *where)
            .order_by(sa.func.md5(key.concat(f":{seed}")))
        )
    rows = conn.execute(stmt.limit(sa.literal_column(str(int(n))))).scalars().all()
    return np.asarray([np.asarray(v, dtype=np.float32) for v in rows], dtype=np.float32)


def _noisy(vectors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    noise = rng.standard_normal(unit.shape).astype(np.float32)
    noise -= (noise * unit).sum(axis=1, keepdims=True) * unit  # orthogonal to the source
    noise /= np.maximum(np.linalg.norm(noise, axis=1, keepdims=True), 1e-12)
    q = unit + _NOISE * noise
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def check_score(exact: Sequence[Hit], index: Sequence[Hit], *, top: bool = False) -> float:
    """One query's score (see the module docstring): 0 unless the index's best unit is the exact scan's with a
    best part as good (within :data:`SCORE_TOLERANCE`: near-identical rows of one unit tie; another unit never
    counts, however close: on tables of near-identical release rows that is exactly the miss the check is there to
    see); then 1, or with ``top`` the share of the exact top units the index returned (a unit tied with the exact
    list's last counts)."""
    if not exact:
        return 1.0
    if not index or index[0].id != exact[0].id:
        return 0.0
    if exact[0].matched_parts:
        best = exact[0].matched_parts[0]
        got = index[0].matched_parts[0] if index[0].matched_parts else None
        if got is None or (got[0] != best[0] and got[2] < best[2] - SCORE_TOLERANCE):
            return 0.0
    if not top:
        return 1.0
    wanted = {h.id for h in exact}
    floor = exact[-1].score - SCORE_TOLERANCE
    found = sum(1 for h in index if h.id in wanted or h.score >= floor)
    return min(found, len(exact)) / len(exact)


def check_index(
    store: CheckedStore, corpus: str, *, queries: int = 24, k: int | None = None, seed: int = 0, save: bool = True
) -> IndexCheck:
    """Measure the recall of ``corpus``'s index search against an exact scan, widening the beam from the store's
    ``ef_search`` until the recall reaches :data:`MIN_RECALL` (see the module docstring) and, with ``save``, store
    it in the corpus's metadata, where searches read it. ``k``: units per search (default :data:`CHECK_K` on a
    table above ``exact_scan_max_rows``, whose check scores the top units, else 5: there the best hit is what
    counts)."""
    spec = store.corpus(corpus)
    # Measured without the stored check's beam, which the search would otherwise use as a floor (scan_rule.tuned_ef)
    tables = replace(
        store.tables.corpus(spec),
        spec=replace(spec, metadata={key: value for key, value in spec.metadata.items() if key != CHECK_KEY}),
    )
    searched = tables.parts if tables.parts is not None else tables.units
    checked: list[tuple[str, int, float]] = []
    with store.transaction(f"check the index of corpus {corpus!r}") as conn:
        rows = table_rows(conn, [searched], ttl=0.0)[searched.name]
        top = rows > store.settings.exact_scan_max_rows  # no exact scan to fall back on: the beam carries recall@10

        def requests_near(vectors: np.ndarray, flt: Filter | None = None) -> list[SearchRequest]:
            """A search near each of ``vectors`` (noised), filtered by ``flt``."""
            return [
                SearchRequest(vector=q.tolist(), k=k or (CHECK_K if top else 5), visual_weight=0.0, filter=flt)
                for q in (_noisy(vectors, np.random.default_rng(seed)) if len(vectors) else ())
            ]

        requests = requests_near(_query_vectors(conn, searched, queries, seed=seed))
        recalls = _recalls(conn, tables, requests, start=store.settings.ef_search, top=top)
        for name, flt, where in _tenant_partitions(conn, tables):
            vectors = _query_vectors(conn, searched, max(queries // 4, 4), seed=seed, where=where)
            filtered = requests_near(vectors, flt)
            checked.append((name, *_recalls(conn, tables, filtered, start=store.settings.ef_search, top=top)[-1]))
    ef, recall = recalls[-1]
    for _, partition_ef, partition_recall in checked:  # the beam every partition's searches need, and the worst
        ef, recall = max(ef, partition_ef), min(recall, partition_recall)
    check = IndexCheck(
        corpus=corpus,
        rows=rows,
        recall=recall,
        queries=len(requests),
        ef_search=ef,
        recalls=tuple(recalls),
        partitions=tuple(checked),
    )
    if save:
        c = store.tables.corpora
        with store.transaction(f"store the index check of corpus {corpus!r}") as conn:
            conn.execute(
                sa.update(c)
                .where(c.c.name == corpus)
                .values(
                    metadata=c.c.metadata.op("||")(
                        sa.cast(sa.literal({CHECK_KEY: check.as_dict()}, c.c.metadata.type), c.c.metadata.type)
                    )
                )
            )
        store.corpora(refresh=True)
        forget(store.schema)
    return check


#: Most partitions of a tenant-partitioned corpus the check measures one by one (the largest ones).
MAX_CHECKED_PARTITIONS = 8


def _recalls(
    conn: sa.Connection, tables: CorpusTables, requests: Sequence[SearchRequest], *, start: int, top: bool
) -> list[tuple[int, float]]:
    """``(beam, recall)`` of ``requests`` through the index against an exact scan, from beam ``start`` widening until
    the recall reaches :data:`MIN_RECALL` (the exact results computed once)."""
    exact = [run_search(conn, tables, replace(r, exact_scan=True)) for r in requests]
    recalls: list[tuple[int, float]] = []
    for ef in beams(start):
        found = sum(
            check_score(e, run_search(conn, tables, replace(r, exact_scan=False, ef_search=ef)), top=top)
            for r, e in zip(requests, exact, strict=True)
        )
        recalls.append((ef, found / len(requests) if requests else 1.0))
        if recalls[-1][1] >= MIN_RECALL:
            break
    return recalls


def _tenant_partitions(
    conn: sa.Connection, tables: CorpusTables
) -> list[tuple[str, dict[str, Any], list[sa.ColumnElement[bool]]]]:
    """The largest tenant partitions of a tenant-partitioned corpus (none for other corpora), each as its partition
    key, the search filter on its tenant (the metadata value one of its units holds: ``7``, not ``"7"``) and the
    condition selecting the searched table's rows in it."""
    partition = tables.spec.partition
    if partition is None or partition.by != "tenant":
        return []
    units, searched = tables.units, tables.parts if tables.parts is not None else tables.units
    key = units.c[COLUMN]
    largest = (
        sa.select(key, sa.func.min(sa.cast(units.c.metadata[partition.key or ""], sa.Text)).label("value"))
        .where(key != "")
        .group_by(key)
        .order_by(sa.func.count().desc(), key)
        .limit(sa.literal_column(str(MAX_CHECKED_PARTITIONS)))
    )
    return [
        (str(r[0]), {partition.key or "": json.loads(r.value)}, [searched.c[COLUMN] == r[0]])
        for r in conn.execute(largest)
    ]


def check_in_background(store: CheckedStore, corpus: str) -> bool:
    """Run :func:`check_index` for ``corpus`` on a daemon thread (best effort: a failure is logged, and the
    search rule keeps using the index meanwhile); at most once per :data:`RETRY_S` per database, schema and
    corpus. Returns whether a check was started."""
    key = (store.url_redacted or "", store.schema, corpus)
    now = time.monotonic()
    with _started_lock:
        if now - _started.get(key, -RETRY_S) < RETRY_S:
            return False
        _started[key] = now

    _note_exit()

    def run() -> None:
        try:
            check = check_index(store, corpus)
        except StoreError as e:  # the schema was dropped, the store closed, the server went away...
            # work nobody asked for says nothing when the process ends under it (the embedded server stops at
            # exit and ends its connection) or the server is shut down: the next process checks again
            quiet = _exiting.is_set() or sqlstate(e) in _SHUTDOWN
            _log.log(
                logging.INFO if quiet else logging.WARNING, "The index check of corpus %r did not run: %s", corpus, e
            )
        else:
            _log.info(
                "Index check of corpus %r: recall %.2f at ef_search %d, %d rows.",
                corpus,
                check.recall,
                check.ef_search,
                check.rows,
            )

    threading.Thread(target=run, name=f"universalrag-index-check-{corpus}", daemon=True).start()
    return True
