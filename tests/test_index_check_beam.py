"""The index check tunes the HNSW beam (``hnsw.ef_search``) of a corpus whose index misses at the
store's beam, stores it, and index searches of that corpus use at least that beam. Real PostgreSQL + pgvector.

A beam that misses is made on purpose, fast: 60 tight clusters of 50 near-identical 48-d vectors (as numeric tables'
thousands of near-identical table rows). A check query (a stored vector moved to cosine ≈ 0.7) has its exact best
unit among the 50 of its cluster, which a narrow beam does not tell apart: at ``ef_search`` 1 the check finds
0.77–0.85 of them (four builds of the index at a spread of 0.2), and a beam of 64–256 finds 0.95 or more. At a
spread of 0.3 one build in four reached 0.95 at ``ef_search`` 1 (HNSW builds differ from run to run), and the test
found no narrow beam to widen.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from universalrag.store import Store
from universalrag.store.index_check import CHECK_K, SCORE_TOLERANCE, beams, check_index, check_score
from universalrag.store.scan_rule import CHECK_KEY, EF_KEY, MIN_RECALL, scan_exactly, tuned_ef
from universalrag.types import Hit, Modality, SourceRecord, Unit

DIM = 48
ROWS = 3000


def _units(rng: np.random.Generator, n: int, *, cluster: int = 50, spread: float = 0.2) -> list[Unit]:
    """``n`` units in clusters of ``cluster`` vectors at distance ``spread`` around random unit centres."""
    centres = rng.standard_normal((-(-n // cluster), DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((n, DIM))
    noise *= spread / np.linalg.norm(noise, axis=1, keepdims=True)
    vectors = (np.repeat(centres, cluster, axis=0)[:n] + noise).astype(np.float32)
    return [
        Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"p{i}", embedding=v.tolist())
        for i, v in enumerate(vectors)
    ]


def _source(uri: str) -> SourceRecord:
    return SourceRecord(uri=uri, content_hash="h", modality=Modality.TEXT, corpora=("paragraph",))


@pytest.fixture
def loaded(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """A store whose paragraph corpus holds :data:`ROWS` clustered units, above ``exact_scan_rows`` (100) and
    ``exact_scan_max_rows`` (1000); no background check (the tests run the checks themselves)."""
    from universalrag.store import index_check

    monkeypatch.setattr(index_check, "check_in_background", lambda *_a: False)
    s = Store(settings=settings.with_(exact_scan_rows=100, exact_scan_max_rows=1000))
    s.init(embedder="test-encoder", dimension=DIM)
    _default_graph(s)
    rng = np.random.default_rng(14)
    for start in range(0, ROWS, 1000):
        s.write_source(_source(f"mem://p{start}"), _units(rng, 1000))
    yield s
    s.close()


def _default_graph(s: Store) -> None:
    """Build the paragraph index with pgvector's default candidate list (64), as the beams of this module were
    measured: the corpora's own list (128, migration 0011) found 0.95 of the check's queries at beam 1 in one CI
    build, leaving no narrow beam to widen."""
    from psycopg import sql

    with s.transaction() as conn:
        conn.connection.driver_connection.execute(
            sql.SQL("ALTER INDEX {}.{} RESET (ef_construction)").format(
                sql.Identifier(s.schema), sql.Identifier("corpus_paragraph_hnsw")
            )
        )


def _set_check(s: Store, check: dict[str, Any] | None) -> None:
    c = s.tables.corpora
    with s.transaction() as conn:
        conn.execute(sa.update(c).where(c.c.name == "paragraph").values(metadata={CHECK_KEY: check} if check else {}))
    s.corpora(refresh=True)


def _beams_sent(s: Store, **search: Any) -> list[int]:
    """The ``hnsw.ef_search`` values the statements of one search carry (empty: an exact scan)."""
    sent: list[int] = []

    def record(_conn, _cursor, _statement, parameters, *_a) -> None:  # type: ignore[no-untyped-def]
        values = list(parameters.values()) if isinstance(parameters, dict) else []
        sent.extend(
            int(values[i + 1]) for i, v in enumerate(values[:-1]) if isinstance(v, str) and v == "hnsw.ef_search"
        )

    sa.event.listen(s.engine, "before_cursor_execute", record)
    try:
        s.search("paragraph", np.random.default_rng(1).standard_normal(DIM).tolist(), k=5, **search)
    finally:
        sa.event.remove(s.engine, "before_cursor_execute", record)
    return sent


def test_beams_double_up_to_pgvectors_widest() -> None:
    assert beams(100) == [100, 200, 400, 800, 1000]
    assert beams(1) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert beams(1000) == [1000] and beams(5000) == [1000]


def test_the_check_widens_the_beam_where_the_narrow_one_misses(loaded: Store) -> None:
    s = Store(settings=loaded.settings.with_(ef_search=1))
    try:
        check = check_index(s, "paragraph", queries=48)
    finally:
        s.close()
    tried = [ef for ef, _ in check.recalls]
    assert tried == beams(1)[: len(tried)] and check.recalls[0][0] == 1
    assert check.recalls[0][1] < MIN_RECALL, check.recalls  # the greedy walk misses
    assert check.ef_search > 1 and check.ef_search == tried[-1] and check.recall == check.recalls[-1][1]
    assert check.recall >= MIN_RECALL, check.recalls  # a wider beam finds them
    assert all(r < MIN_RECALL for _, r in check.recalls[:-1])  # the smallest beam that reached it
    loaded.corpora(refresh=True)  # another Store saved it
    stored = loaded.corpus("paragraph").metadata[CHECK_KEY]
    assert stored[EF_KEY] == check.ef_search and stored["recall"] == round(check.recall, 4)
    assert [tuple(x) for x in stored["recalls"]] == [(ef, round(r, 4)) for ef, r in check.recalls]
    assert tuned_ef(loaded.corpus("paragraph").metadata) == check.ef_search
    # A reliable tuned beam keeps the table on the index, even where an exact scan is allowed (rows <= max)
    assert not scan_exactly(check.rows, {CHECK_KEY: stored}, exact_scan_rows=100, exact_scan_max_rows=10_000)
    # the search now sends the tuned beam (the request's own is 1, from the settings of the store that checked)
    narrow = Store(settings=loaded.settings.with_(ef_search=1))
    try:
        assert set(_beams_sent(narrow)) == {max(check.ef_search, 5)}  # (raised to k = 5 anyway)
    finally:
        narrow.close()

    # Checked again with the beam stored, the check measures the narrow beam itself, not the stored floor
    again = Store(settings=loaded.settings.with_(ef_search=1))
    try:
        second = check_index(again, "paragraph", queries=48, save=False)
    finally:
        again.close()
    assert second.recalls[0][0] == 1 and second.recalls[0][1] < MIN_RECALL, second.recalls


def test_searches_use_the_stored_beam_and_older_checks_still_work(loaded: Store) -> None:
    _set_check(loaded, None)
    assert set(_beams_sent(loaded)) == {100}  # never checked: the settings' beam
    _set_check(loaded, {"rows": ROWS, "recall": 0.99, "queries": 24})  # stored before the tuning: no beam
    assert set(_beams_sent(loaded)) == {100}
    assert tuned_ef(loaded.corpus("paragraph").metadata) == 0
    _set_check(
        loaded,
        {"rows": ROWS, "recall": 0.97, "queries": 24, EF_KEY: 400, "recalls": [[100, 0.5], [200, 0.8], [400, 0.97]]},
    )
    assert set(_beams_sent(loaded)) == {400}  # max(request's 100, stored 400)
    assert set(_beams_sent(loaded, ef_search=600)) == {600}  # max(request's 600, stored 400)
    assert set(_beams_sent(loaded, filter={"x": 1})) == {1000}  # a filtered search widens x4 on top, capped
    assert set(_beams_sent(loaded, exact_scan=True)) == set()  # an exact scan carries no beam
    # A table where even the widest beam misses: exact up to exact_scan_max_rows, above it the index at that beam
    unreliable = {"rows": ROWS, "recall": 0.6, "queries": 24, EF_KEY: 1000, "recalls": [[100, 0.3], [1000, 0.6]]}
    _set_check(loaded, unreliable)
    assert set(_beams_sent(loaded)) == {1000}  # 3,000 rows > exact_scan_max_rows 1,000: the index, widest beam
    assert scan_exactly(ROWS, {CHECK_KEY: unreliable}, exact_scan_rows=100, exact_scan_max_rows=10_000)
    # An older check below MIN_RECALL (no beam) still scans exactly where allowed
    assert scan_exactly(
        ROWS, {CHECK_KEY: {"rows": ROWS, "recall": 0.5}}, exact_scan_rows=100, exact_scan_max_rows=10_000
    )
    assert tuned_ef({CHECK_KEY: {"rows": 10, "recall": 1.0, EF_KEY: "400"}}) == 0  # not a number: ignored


def test_a_table_above_exact_max_rows_is_checked_in_the_background(  # type: ignore[no-untyped-def]
    settings, monkeypatch
) -> None:
    """The check now tunes the beam, which matters most on the largest tables: a table above ``exact_scan_max_rows``
    without a check at about its size asks for one too (before, only tables the exact scan could serve did)."""
    from universalrag.store import index_check

    asked: list[str] = []
    monkeypatch.setattr(index_check, "check_in_background", lambda _store, corpus: asked.append(corpus))
    s = Store(settings=settings.with_(exact_scan_rows=100, exact_scan_max_rows=200))
    s.init(embedder="test-encoder", dimension=DIM)
    try:
        s.write_source(_source("mem://p"), _units(np.random.default_rng(3), 400))
        s.search("paragraph", np.random.default_rng(4).standard_normal(DIM).tolist(), k=5)
        assert asked == ["paragraph"]
    finally:
        s.close()


def _hit(i: int, score: float, parts: tuple[tuple[int, str, float], ...] = ()) -> Hit:
    return Hit(corpus="paragraph", id=f"u{i}", score=score, content="", matched_parts=parts)


def test_a_query_of_the_check_scores_its_top_ten_recall_behind_a_strict_best_hit() -> None:
    """The check's score per query: 0 when the best unit (or its best part) is missed, else 1 — or, for a table too
    large to scan exactly (``top``), the share of the exact top units the index returned; a unit tied with the
    exact list's last within the tolerance counts."""
    exact = [_hit(i, 0.9 - 0.01 * i) for i in range(CHECK_K)]
    seven = exact[:7] + [_hit(100 + i, 0.5) for i in range(3)]
    assert check_score(exact, exact, top=True) == 1.0
    assert check_score(exact, seven, top=True) == pytest.approx(0.7)
    assert check_score(exact, seven) == 1.0  # a small table: the best hit is what counts
    assert check_score(exact, exact[1:] + exact[:1], top=True) == 0.0  # the best unit came second: a miss
    assert check_score(exact, exact[1:] + exact[:1]) == 0.0
    tied = exact[:-1] + [_hit(200, exact[-1].score - SCORE_TOLERANCE / 2)]
    assert check_score(exact, tied, top=True) == 1.0
    rows = [_hit(0, 0.9, ((3, "row 3", 0.9),))]
    assert check_score(rows, [_hit(0, 0.8, ((5, "row 5", 0.8),))]) == 0.0  # right table, poorer best row
    assert check_score(rows, [_hit(0, 0.9, ((5, "row 5", 0.9 - SCORE_TOLERANCE / 2),))]) == 1.0  # a tie
    assert check_score([], []) == 1.0


def test_a_table_too_large_to_scan_exactly_is_checked_by_its_top_ten(loaded: Store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The same table, queries and beams, checked as one above ``exact_scan_max_rows`` (the fixture's 1000: no exact
    scan to fall back on, so each query scores its top-10 recall) and as one below it (the best hit alone): the
    first scores top-10 recall and never reads higher (both search ``CHECK_K`` units: the same statements)."""
    from universalrag.store import index_check

    modes: list[bool] = []

    def recording(exact, index, *, top=False):  # type: ignore[no-untyped-def]
        modes.append(top)
        return check_score(exact, index, top=top)

    monkeypatch.setattr(index_check, "check_score", recording)
    checks = {}
    for limit in (1000, 10_000):
        s = Store(settings=loaded.settings.with_(ef_search=1, exact_scan_max_rows=limit))
        try:
            modes.clear()
            checks[limit] = check_index(s, "paragraph", k=CHECK_K, save=False)
        finally:
            s.close()
        assert modes and set(modes) == {limit < ROWS}, limit
    big, small = checks[1000], checks[10_000]
    at = dict(small.recalls)
    common = [(ef, r) for ef, r in big.recalls if ef in at]
    assert common and all(r <= at[ef] + 1e-9 for ef, r in common), (big.recalls, small.recalls)
    assert big.ef_search >= small.ef_search
