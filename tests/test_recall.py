"""Recall on data where HNSW search loses answers: numeric tables with thousands of near-identical rows next to a
small text table, ingested through the real pipeline with the real bundled MiniLM into a real PostgreSQL.

Before the fix, ``search("Jammy Jellyfish release", corpus table)`` returned one or two numeric tables: the HNSW
graph search, stuck among thousands of near-identical numeric row vectors, did not reach the Ubuntu rows with
``ef_search`` 40-100, and without pgvector's iterative scan the index returned at most ``ef_search`` rows, which
the part-grouping loop took for "no more rows".
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from support.numeric_tables import write_numeric_tables, write_release_tables
from support.schemas import fresh_schema

from universalrag.ingest.pipeline import ingest_paths
from universalrag.store import Store, queries

QUERY = "Jammy Jellyfish release"
#: Three fifths of the datasets' real row counts (2,003 numeric rows): thousands of near-identical rows as in the
#: report, at a cost a test can pay (the real MiniLM embeds them in tens of seconds on 2 idle cores).
SCALE = 0.6

pytestmark = pytest.mark.timeout(1500)  # the module's fixture embeds 2,000 rows with the real MiniLM


@pytest.fixture(scope="module")
def tables_store(tmp_path_factory, database_url: str, minilm):  # type: ignore[no-untyped-def]
    """A schema whose ``table`` corpus holds five numeric CSVs (2,003 rows) and two release CSVs (18 rows)."""
    from universalrag.config import Settings

    folder = tmp_path_factory.mktemp("csvs")
    paths = write_numeric_tables(folder / "numeric", scale=SCALE) + write_release_tables(folder / "releases")
    with fresh_schema(database_url) as schema:
        store = Store(settings=Settings(database_url=database_url, schema=schema))
        store.init(embedder=minilm.name, dimension=minilm.dimension)
        report = ingest_paths(store, minilm, paths)
        assert report.count("added") == len(paths), [(o.path, o.status) for o in report.outcomes]
        yield store
        store.close()


def _name(hit) -> str:  # type: ignore[no-untyped-def]
    return Path(hit.uri).name


def test_the_exact_match_is_found_by_default(tables_store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    with tables_store.transaction() as conn:
        parts = conn.execute(
            sa.select(sa.func.count()).select_from(tables_store.tables.corpus(tables_store.corpus("table")).parts)
        ).scalar_one()
    assert parts > 2000  # thousands of near-identical rows
    query = minilm.embed_query(QUERY).tolist()
    hits = tables_store.search("table", query, k=5)
    assert [_name(h) for h in hits][:1] == ["ubuntu.csv"]
    assert len({h.id for h in hits}) == 5  # five tables, not one
    assert "Jammy Jellyfish" in hits[0].matched_parts[0][1]
    everything = tables_store.search("table", query, k=20)
    assert len(everything) == 7  # -k 20 lists every table


@pytest.mark.parametrize("ef_search", [40, 100])
def test_the_index_path_finds_it_too(
    tables_store: Store,
    minilm,  # type: ignore[no-untyped-def]
    ef_search: int,
) -> None:
    """Forced through the HNSW index (``exact_scan=False``) at low ef_search values (40 and 100), the iterative scan
    and the widening window of parts (until it holds several distinct tables) still put the Ubuntu table
    first for the reported query, at k=3 and at k=1, and mostly agree with an exact scan on the best table for
    queries that each target one table. pgvector builds its graph with random levels, so on thousands of
    near-identical rows the graph search alone is approximate from one build to the next (one of these queries
    missed in about half of the builds tried): that is why tables up to ``Settings.exact_scan_rows`` rows are
    scanned exactly, larger ones are checked (``store/index_check.py``), and an index search of a table of many
    rows per unit is refined by an exact scan of the units it found (``store/corpus_search.py``)."""
    agree = 0
    for text, expected in [
        (QUERY, "ubuntu.csv"),
        ("Debian Bookworm release date", "debian.csv"),
        ("Noble Numbat end of life", "ubuntu.csv"),
        ("petal width of setosa", "iris.csv"),
        ("median house value by latitude and longitude", "california_housing.csv"),
    ]:
        query = minilm.embed_query(text).tolist()
        exact = tables_store.search("table", query, k=3, exact_scan=True)
        index = tables_store.search("table", query, k=3, exact_scan=False, ef_search=ef_search)
        assert _name(exact[0]) == expected, text
        agree += index[0].id == exact[0].id  # below the top, numeric tables tie at ~0.1 and may swap
        assert len({h.id for h in index}) == 3
        # an index is approximate: its best row may be a near one, never a better one than the exact scan's
        assert index[0].matched_parts[0][2] <= exact[0].matched_parts[0][2] + 1e-6
        if text == QUERY:
            assert _name(index[0]) == "ubuntu.csv"  # the reported case, always
    assert agree >= 4, agree
    jammy = tables_store.search("table", minilm.embed_query(QUERY).tolist(), k=1, exact_scan=False, ef_search=ef_search)
    assert _name(jammy[0]) == "ubuntu.csv"  # k=1 widens like k=3 while its window holds few distinct tables


def test_without_the_iterative_scan_the_index_returns_at_most_ef_search_rows(tables_store: Store, minilm) -> None:  # type: ignore[no-untyped-def]
    """Half of the cause, shown on the raw index: with ``hnsw.iterative_scan`` off, asking for 160 parts yields
    at most ``ef_search`` of them, so a window of parts can never widen past ef_search without it."""
    tables = tables_store.tables.corpus(tables_store.corpus("table"))
    stmt = queries.nearest_parts(tables, minilm.embed_query(QUERY).tolist(), limit=160)
    with tables_store.transaction() as conn:
        conn.execute(sa.text("SET LOCAL enable_seqscan = off"))  # the planner would scan a table this small
        conn.execute(queries.set_local("hnsw.ef_search", 40))
        conn.execute(queries.set_local("hnsw.iterative_scan", "off"))
        capped = conn.execute(stmt).all()
        conn.execute(queries.set_local("hnsw.iterative_scan", "relaxed_order"))
        widened = conn.execute(stmt).all()
    assert len(capped) == 40 and len(widened) == 160


@pytest.mark.parametrize("limit", [20, 160, 640])
def test_the_server_groups_a_window_of_parts_as_python_did(
    tables_store: Store,
    minilm,  # type: ignore[no-untyped-def]
    limit: int,
) -> None:
    """A window of parts reaches the client grouped by unit (``queries.parts_by_unit``): the units of the nearest
    parts first, each with its five nearest parts, and the window's size (whether the index ran out of rows). On
    tables of thousands of near-identical rows, that is what grouping the window's rows in Python gives."""
    from universalrag.store.corpus_search import PARTS_PER_HIT

    def _group(rows: list[dict[str, object]], k: int) -> dict[str, list[tuple[int, float]]]:
        """What the search did in Python before: the units of the best parts first, each unit's five best parts."""
        best: dict[str, list[tuple[int, float]]] = {}
        for r in rows:
            sim = 1.0 - float(r["distance"])  # type: ignore[arg-type]
            best.setdefault(str(r["unit_id"]), []).append((int(r["ord"]), sim))  # type: ignore[call-overload]
        ranked = sorted(best.items(), key=lambda kv: -max(s for _, s in kv[1]))[:k]
        return {uid: sorted(parts, key=lambda p: -p[1])[:PARTS_PER_HIT] for uid, parts in ranked}

    tables = tables_store.tables.corpus(tables_store.corpus("table"))
    for text in (QUERY, "monthly rainfall in millimetres", "2.5 3.1 4.0"):
        window = queries.nearest_parts(tables, minilm.embed_query(text).tolist(), limit=limit)
        with tables_store.transaction() as conn:
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            conn.execute(queries.set_local("hnsw.iterative_scan", "relaxed_order"))
            flat = [{**r, "unit_id": str(r["unit_id"])} for r in conn.execute(window).mappings().all()]
            grouped = conn.execute(queries.parts_by_unit(window, units=6, per_unit=PARTS_PER_HIT)).mappings().all()
        expected = _group(flat, 6)
        assert len(flat) == limit and all(int(r["window_rows"]) == limit for r in grouped)
        assert [r["unit_id"] for r in grouped] == list(expected)
        for r in grouped:  # nearest first, at most five, the same parts at the same similarities
            parts = expected[r["unit_id"]]
            assert len(r["ords"]) == len(parts) <= PARTS_PER_HIT
            assert [1.0 - d for d in r["distances"]] == pytest.approx([s for _, s in parts], abs=1e-12)
            assert sorted(r["ords"]) == sorted(o for o, _ in parts)


def test_the_search_rule_keeps_the_exact_match_where_the_table_counts_as_large(  # type: ignore[no-untyped-def]
    tables_store: Store, minilm
) -> None:
    """The scan rule: a parts table above ``Settings.exact_scan_rows`` goes through the HNSW index unless the
    index check, measured on the corpus's own rows, found the index unreliable. With the threshold lowered below
    this table's 2,000 rows, the stored check decides — and whichever way it decides, every query still gets the
    exact scan's best table first, with a best row as good as the exact scan's. Through the index that takes the
    refinement (``store/corpus_search.py``, ``_text_by_parts``): the graph search alone, which the check had found
    reliable on 16 queries, missed in 4 of 14 builds (Debian's 9 rows never reached among 2,000 numeric ones, or
    a 0.19 Noble Numbat row instead of the 0.57 one)."""
    from universalrag.store.index_check import SCORE_TOLERANCE, check_index
    from universalrag.store.scan_rule import scan_exactly, stored_check

    check = check_index(tables_store, "table", queries=16)
    stored = stored_check(tables_store.corpus("table").metadata)
    assert stored is not None and stored["rows"] == check.rows and check.rows > 2000 and check.queries == 16
    assert 0.0 <= check.recall <= 1.0
    small = Store(settings=tables_store.settings.with_(exact_scan_rows=500))
    try:
        metadata = small.corpus("table").metadata
        assert stored_check(metadata) == stored  # read back from the registry by another Store
        exact_path = scan_exactly(
            check.rows, metadata, exact_scan_rows=500, exact_scan_max_rows=small.settings.exact_scan_max_rows
        )
        assert exact_path == (not check.reliable)
        for text, expected in [
            (QUERY, "ubuntu.csv"),
            ("Debian Bookworm release date", "debian.csv"),
            ("Noble Numbat end of life", "ubuntu.csv"),
            ("petal width of setosa", "iris.csv"),
            ("median house value by latitude and longitude", "california_housing.csv"),
        ]:
            query = minilm.embed_query(text).tolist()
            exact = small.search("table", query, k=3, exact_scan=True)
            hits = small.search("table", query, k=3)
            assert _name(hits[0]) == expected, text
            assert hits[0].id == exact[0].id, text
            assert hits[0].matched_parts[0][2] >= exact[0].matched_parts[0][2] - SCORE_TOLERANCE, text
        jammy = small.search("table", minilm.embed_query(QUERY).tolist(), k=5)
        assert "Jammy Jellyfish" in jammy[0].matched_parts[0][1]
    finally:
        small.close()
