"""The end-to-end routing benchmark runs on a tiny subset (real corpora ingested into a real Postgres, the real
router and encoder) and ends with one JSON line holding every strategy's metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

REPO = Path(__file__).resolve().parents[1]
STRATEGIES = {"routed", "trained", "all_fused", "all_rrf", "oracle", "descriptions"}
METRICS = {"hit5", "unit5", "per_source", "false_none", "correct_none", "p50_ms", "p95_ms"}


@pytest.fixture
def latency_schema(database_url: str, schema: str):  # type: ignore[no-untyped-def]
    name = f"{schema}_lat"
    yield name
    from universalrag.store.engine import make_engine

    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.schema.DropSchema(name, cascade=True, if_exists=True))
    engine.dispose()


@pytest.mark.slow
@pytest.mark.timeout(2400)  # minutes on a loaded 2-core machine: it ingests every own corpus from scratch
def test_quick_benchmark_reports_every_strategy(
    database_url: str, schema: str, latency_schema: str, tmp_path: Path
) -> None:
    env = {**os.environ, "UNIVERSALRAG_HOME": str(tmp_path / "home"), "UNIVERSALRAG_DATABASE_URL": database_url}
    cmd = [
        sys.executable,
        str(REPO / "benchmarks" / "routing_e2e.py"),
        "--quick",
        "--schema",
        schema,
        "--latency-schema",
        latency_schema,
        "--pages",
        "1",
        "--max-questions",
        "4",
        "--latency-units",
        "300",
        "--latency-queries",
        "5",
        "--out",
        str(tmp_path / "out"),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=2300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout[-2000:]
    summary = json.loads(lines[0])
    results = summary["strategies"]
    assert set(results) == STRATEGIES
    for name, metrics in results.items():
        assert METRICS <= set(metrics), name
        assert metrics["n_answerable"] > 0 and metrics["n_unanswerable"] > 0
    # the strategies really differ where they must: the oracle never retrieves for none, fusion always does
    assert results["oracle"]["correct_none"] == 1.0 and results["oracle"]["false_none"] == 0.0
    assert results["all_fused"]["correct_none"] == 0.0 and results["all_rrf"]["correct_none"] == 0.0
    assert results["oracle"]["hit5"] > 0
    assert {"demo", "pyref", "photos", "videos", "none"} <= set(summary["questions"])
    assert set(summary["targets"]) == {
        "routed_vs_oracle_points",
        "routed_vs_all_fused_points",
        "routed_vs_oracle_points_unit",
        "routed_vs_all_fused_points_unit",
        "false_none",
        "correct_none",
    }
    unit_gap = summary["targets"]["routed_vs_oracle_points_unit"]["value"]
    assert unit_gap == round(100 * (results["routed"]["unit5"] - results["oracle"]["unit5"]), 1)
    assert summary["latency"]["units"] == 300 and summary["latency"]["routed_p50_ms"] > 0
    assert summary["latency"]["vectors"] == "text-like"  # the default: shaped like real text embeddings
    assert (tmp_path / "out" / "routing_e2e.png").stat().st_size > 10_000
    assert summary["machine"]["cores"] >= 1


# -- the question sets themselves (fast) --------------------------------------------------------------------------
def _data():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(REPO / "benchmarks"))
    import routing_data

    return routing_data


def _rows(name: str) -> list[dict]:
    path = REPO / "benchmarks" / "data" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_written_questions_are_well_formed_and_split_both_ways() -> None:
    data = _data()
    rows = [r for name in ("demo", "pyref", "photos", "videos", "none") for r in _rows(name)]
    assert len(rows) >= 150
    assert len({r["query"].lower() for r in rows}) == len(rows)
    routes = {"none", "paragraph", "document", "table", "image", "clip", "video"}
    for r in rows:
        assert r["corpus"] in routes and r["style"] and r["query"].strip()
        assert (r["corpus"] == "none") == (r["source"] == "none")
    styles = {r["style"] for r in rows}
    assert {"keywords", "chatty", "typo", "imperative", "implicit", "question", "arithmetic", "chitchat"} <= styles
    splits = [data.split_of(r["query"]) for r in rows]
    assert 0.35 < splits.count("tune") / len(splits) < 0.65
    assert splits == [data.split_of(r["query"]) for r in rows]  # stable


def test_phrases_are_in_the_content_they_name() -> None:
    """Each gold phrase occurs in its source: the language reference, the demo texts, the written subtitles."""
    from pydoc_data.topics import topics

    data = _data()
    demo = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "core/universalrag/demo/texts").glob("*.md")}
    media = json.loads((REPO / "benchmarks/data/media.json").read_text(encoding="utf-8"))
    cues = {v["file"]: " ".join(v["cues"]) for v in media["videos"]}
    from universalrag.demo.content import VIDEO

    cues[VIDEO.file] = " ".join(s.subtitle for s in VIDEO.scenes)
    for name, texts in (
        ("pyref", {f"{k}.txt": v for k, v in topics.items()}),
        ("demo", {**demo, **cues}),
        ("videos", cues),
    ):
        for r in _rows(name):
            if r.get("phrase"):
                assert data.normalise(r["phrase"]) in data.normalise(texts[r["file"]]), r
    photos = {p["file"] for p in media["photos"]}
    assert {r["file"] for r in _rows("photos")} == photos


def test_wikitable_positions_match_the_tables_ingestion_parses() -> None:
    data = _data()
    root = data.find_wikitables()
    if root is None:
        pytest.skip("the shared wikitables folder is not on this machine")
    from bs4 import BeautifulSoup

    from universalrag.ingest.tables import read_tables

    page = root / "pages" / "Panellinios B.C..html"
    positions = data.wikitable_positions(page)
    parsed = read_tables(page)
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    wikitables = [t for t in soup.find_all("table") if "wikitable" in (t.get("class") or [])]
    assert len(positions) == len(wikitables) and all(p is not None for p in positions)
    assert positions == sorted(positions) and len(parsed) > len(positions)  # the infobox is parsed too
    first_cell = " ".join(wikitables[0].find("td").get_text(" ").split())
    rows = next(iter(parsed[positions[0]].batches(50)))
    assert any(first_cell in cell for row in rows for cell in row)


def test_copies_ingested_from_another_results_folder_are_dropped(
    database_url: str,
    minilm,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """A run with another ``--out`` for the same schema wrote the own corpora under other paths; before asking,
    the benchmark deletes those copies (and nothing else), so that duplicates do not crowd gold units out of the top
    5 (five runs left five copies of every photo and video in one schema, and every strategy lost recall)."""
    import uuid

    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG

    sys.path.insert(0, str(REPO / "benchmarks"))
    from routing_data import drop_stale_copies

    text = "The with statement calls __enter__ before its block runs and __exit__ after it, even on an error."
    kbs = [tmp_path / out / "e2e_kb_test" / "kb" for out in ("first", "second")]
    for kb in kbs:
        (kb / "pyref").mkdir(parents=True)
        (kb / "pyref" / "with.txt").write_text(text)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "with.txt").write_text(text)  # the user's own file: not a benchmark copy
    settings = Settings(database_url=database_url, schema="dup_" + uuid.uuid4().hex[:12])
    with UniversalRAG(settings=settings, embedder=minilm, generator=None, visual_encoder=None) as rag:
        try:
            assert rag.ingest([kbs[0] / "pyref", kbs[1] / "pyref", tmp_path / "notes"]).ok
            assert len(rag.store.sources()) == 3
            assert drop_stale_copies(rag.store, kbs[1]) == 1
            kept = sorted(s["uri"] for s in rag.store.sources())
            assert kept == sorted(
                [
                    (kbs[1] / "pyref" / "with.txt").resolve().as_uri(),
                    (tmp_path / "notes" / "with.txt").resolve().as_uri(),
                ]
            )
            assert drop_stale_copies(rag.store, kbs[1]) == 0
        finally:
            rag.store.downgrade("base")
