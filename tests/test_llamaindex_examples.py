"""The LlamaIndex examples run end to end, as a user runs them, against the test database (one schema shared by
both, so the demo knowledge base is ingested once)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from support.example_output import routed_first

pytest.importorskip("llama_index.core")

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@dataclass(frozen=True)
class ExampleRun:
    """How the examples are pointed at the test database: arguments and environment."""

    args: list[str]
    env: dict[str, str]


@pytest.fixture(scope="module")
def example_run(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExampleRun]:
    """The test database, a fresh schema (dropped afterwards) and a home directory for the demo files."""
    schema = "lix_" + uuid.uuid4().hex[:12]
    env = {**os.environ, "UNIVERSALRAG_HOME": str(tmp_path_factory.mktemp("home")), "PYTHONUNBUFFERED": "1"}
    env.pop("UNIVERSALRAG_LLM_MODEL", None)  # the retrieval-only parts must stay retrieval-only
    yield ExampleRun(args=["--database-url", database_url, "--schema", schema], env=env)
    from universalrag.store.engine import make_engine

    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
    engine.dispose()


def run_example(name: str, run: ExampleRun) -> str:
    """Run ``examples/<name>/main.py`` in a subprocess; its standard output."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / name / "main.py"), *run.args],
        check=False,
        capture_output=True,
        text=True,
        env=run.env,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_query_engine_example(example_run: ExampleRun) -> None:
    out = run_example("llamaindex_query_engine", example_run)
    assert routed_first(out, "table") and routed_first(out, "clip"), out
    assert "ImageNode [image]" in out and "image_path=" in out
    assert "answered by llamaindex:MockLLM" in out and "the LLM saw:" in out and "August 2024" in out
    assert "routes: ['none']: the LLM answers alone (0 source nodes)" in out
    assert "No language model is configured" in out and "[image 1]" in out


@pytest.mark.slow
def test_router_query_engine_example(example_run: ExampleRun) -> None:
    out = run_example("llamaindex_router_query_engine", example_run)
    assert (
        "observatory_facts → paragraph (by description), logs_and_measurements → table (by description), "
        "photo_library → image (by description), video_moments → clip (by description), "
        "general_knowledge → none (by description)"
    ) in out
    # the decision is evidence-aware and may be multi-label: the right tool is selected first, its corpus searched
    selected = re.findall(r"selected: ([\w, ]+?)  \(sources: ([\w, -]+)\)", out)
    for tool, corpus in [
        ("logs_and_measurements", "table"),
        ("photo_library", "image"),
        ("video_moments", "clip"),
        ("general_knowledge", "-"),
    ]:
        assert any(names.split(", ")[0] == tool and corpus in sources.split(", ") for names, sources in selected), out
    searched = [set(re.findall(r"'(\w+)'", line)) for line in re.findall(r"corpora: \[.*\]", out)]
    for corpus in ("table", "image", "clip", "video"):
        assert any(corpus in found for found in searched), out
