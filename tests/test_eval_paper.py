"""`benchmarks/paper.py --quick` on a tiny subset (real corpora ingested into a real Postgres, the real router and
encoder): every strategy reported, the unified index over every corpus, one JSON line, a PNG."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(2400)  # minutes on a loaded 2-core machine: it ingests every own corpus from scratch
def test_quick_paper_benchmark(database_url: str, schema: str, tmp_path: Path) -> None:
    env = {**os.environ, "UNIVERSALRAG_HOME": str(tmp_path / "home")}
    cmd = [
        sys.executable,
        str(REPO / "benchmarks" / "paper.py"),
        "--quick",
        "--database-url",
        database_url,
        "--schema",
        schema,
        "--pages",
        "1",
        "--max-questions",
        "4",
        "--out",
        str(tmp_path / "out"),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=2300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout[-2000:]
    summary = json.loads(lines[0])
    results = summary["strategies"]
    corpora = set(summary["unified_index"]["corpora"])
    assert {"paragraph", "document", "image", "clip", "video"} <= corpora
    assert set(results) == {"routed", "unified", "all", "oracle", "random", "none"} | corpora
    for name, metrics in results.items():
        assert {"recall_at_5", "mrr", "routing_accuracy", "p50_ms", "recall_per_source"} <= set(metrics), name
    assert results["none"]["recall_at_5"] == 0.0 and results["oracle"]["routing_accuracy"] == 1.0
    assert results["unified"]["routing_accuracy"] is None
    assert results["oracle"]["recall_at_5"] > results["random"]["recall_at_5"]
    assert {"demo", "pyref", "photos", "videos", "none"} <= set(summary["questions"])
    assert "tune split" in summary["tuning"] and summary["split"] == "report"
    assert (tmp_path / "out" / "paper.png").stat().st_size > 10_000
    full = json.loads((tmp_path / "out" / "paper.json").read_text())
    assert full["report"]["strategies"]["routed"]["latency_ms"]["route"]["p50"] > 0
