"""The LangChain and LangGraph examples run end to end, offline, against the test database.

All three share one schema (the demo knowledge base is written and ingested by the first, reused by the
others, as it is for a user who runs them one after another)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from support.example_output import routed_first

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def example_env(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Arguments and environment pointing the examples at the test database, in a schema of their own."""
    schema = "ex_" + uuid.uuid4().hex[:12]
    env = {
        **os.environ,
        "UNIVERSALRAG_HOME": str(tmp_path_factory.mktemp("home")),
        "EXAMPLE_ARGS": f"--database-url={database_url} --schema={schema}",
    }
    env.pop("UNIVERSALRAG_SCHEMA", None)
    yield env
    from universalrag.store.engine import make_engine

    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
    engine.dispose()


def _run(name: str, env: dict[str, str]) -> str:
    script = EXAMPLES / name / "main.py"
    assert (EXAMPLES / name / "README.md").is_file()
    done = subprocess.run(
        [sys.executable, str(script), *env["EXAMPLE_ARGS"].split()],
        env=env,
        cwd=EXAMPLES.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_langchain_retriever_example(example_env: dict[str, str]) -> None:
    out = _run("langchain_retriever", example_env)
    assert routed_first(out, "table") and routed_first(out, "image") and routed_first(out, "clip"), out
    assert "k per call: 1 document" in out
    assert "chain answer: " in out
    assert "multimodal answer: I was shown" in out and "shown 0 picture" not in out


def test_langchain_agent_tools_example(example_env: dict[str, str]) -> None:
    out = _run("langchain_agent_tools", example_env)
    assert "search_table:" in out and "search_clip:" in out
    assert "tool call: search_table(" in out and "tool result: 2 documents" in out
    assert "answer: From search_table: [table 1] meridian_hill_observing_log_2024" in out
    assert "answer: From search_clip: [clip 1]" in out


def test_langgraph_routing_example(example_env: dict[str, str]) -> None:
    out = _run("langgraph_routing", example_env)
    assert "routes: ['none']" in out and "(answered from the model's own knowledge)" in out
    # the photograph, and a passage the knowledge graph reached from the ferry's name in the last of the k places
    assert "routes: ['image']" in out and "and 1 picture(s) [E1].  citations: 1" in out
    assert "'Reached through the knowledge graph: Kittiwake" in out
    assert "-> I looked in ['paragraph', 'table']." in out and "-> No lookup needed." in out
