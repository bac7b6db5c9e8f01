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
STRATEGIES = {"routed", "trained", "all_fused", "oracle", "descriptions"}
METRICS = {"hit5", "unit5", "per_source", "false_none", "correct_none", "p50_ms", "p95_ms"}

pytestmark = pytest.mark.slow


@pytest.fixture
def latency_schema(database_url: str, schema: str):  # type: ignore[no-untyped-def]
    name = f"{schema}_lat"
    yield name
    from universalrag.store.engine import make_engine

    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.schema.DropSchema(name, cascade=True, if_exists=True))
    engine.dispose()


def test_quick_benchmark_reports_every_strategy(database_url: str, schema: str, latency_schema: str,
                                                tmp_path: Path) -> None:
    env = {**os.environ, "UNIVERSALRAG_HOME": str(tmp_path / "home"), "UNIVERSALRAG_DATABASE_URL": database_url}
    cmd = [sys.executable, str(REPO / "benchmarks" / "routing_e2e.py"), "--quick", "--schema", schema,
           "--latency-schema", latency_schema, "--pages", "2", "--max-questions", "4", "--latency-units", "300",
           "--latency-queries", "5", "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200, check=False)
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
    assert results["all_fused"]["correct_none"] == 0.0
    assert results["oracle"]["hit5"] > 0
    assert {"demo", "pyref", "photos", "videos", "none"} <= set(summary["questions"])
    assert set(summary["targets"]) == {"routed_vs_oracle_points", "routed_vs_all_fused_points", "false_none",
                                       "correct_none"}
    assert summary["latency"]["units"] == 300 and summary["latency"]["routed_p50_ms"] > 0
    assert (tmp_path / "out" / "routing_e2e.png").stat().st_size > 10_000
    assert summary["machine"]["cores"] >= 1
