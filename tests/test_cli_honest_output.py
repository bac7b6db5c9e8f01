"""What the command says, and leaves unsaid: an empty knowledge base is named as such with the way to fill it;
``search --json`` carries the route decision and cuts a long unit as the adapters do (``--whole`` keeps it); a
background index check ended by the process's own exit prints nothing. Real files, real servers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import CliRunner

from universalrag.cli import app


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env, prog_name="universalrag")
    return result.exit_code, result.stdout, result.stderr


def test_searching_an_empty_knowledge_base_says_so_and_how_to_ingest(cli_env: dict[str, str]) -> None:
    code, out, err = run(cli_env, "search", "--no-server", "what is the default of work_mem?")
    assert code == 0
    assert "knowledge base is empty" in err and "universalrag ingest" in err
    code, out, err = run(cli_env, "search", "--no-server", "--json", "work_mem")
    assert code == 0 and json.loads(out) == [] and "knowledge base is empty" in err  # stdout stays valid JSON


def test_search_json_carries_the_decision_and_cuts_a_long_unit(cli_env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    apollo = (DATA / "corpus" / "apollo_11.txt").read_text(encoding="utf-8")
    # a long file of one line (as a minified file or a data dump is): 40 copies of a real text
    (docs / "one_line.txt").write_text(" ".join(apollo.split()) * 40, encoding="utf-8")
    code, out, err = run(cli_env, "ingest", str(docs))
    assert code == 0, out + err

    status = {c["name"]: c for c in json.loads(run(cli_env, "status", "--json")[1])["corpora"]}
    assert status["document"]["rows"] == 1 and status["document"]["parts"] > 10  # the long line's chunk vectors
    assert status["paragraph"]["parts"] is None
    assert f"1 rows, {status['document']['parts']:,} chunk vectors" in run(cli_env, "status")[1]

    code, out, _ = run(cli_env, "search", "--no-server", "--json", "-k", "3", "Who walked on the Moon first?")
    hits = json.loads(out)
    assert hits and all(h["decision"]["routes"] and h["decision"]["router"] for h in hits)
    assert hits[0]["corpus"] in hits[0]["decision"]["routes"]
    longest = max(hits, key=lambda h: len(h["content"]))
    assert longest["truncated"] is True and longest["content"].endswith(" […]") and len(longest["content"]) < 9_000

    code, out, _ = run(cli_env, "search", "--no-server", "--json", "--whole", "-c", "document", "Apollo 11 landing")
    whole = json.loads(out)[0]
    assert whole["truncated"] is False and len(whole["content"]) > 40 * len(apollo.split())
    assert whole["decision"] == {"routes": ["document"], "router": "--corpus"}


_CHECK_AT_EXIT = textwrap.dedent(
    """
    import sys, uuid
    import numpy as np
    from pathlib import Path
    from universalrag.config import Settings
    from universalrag.store import Store
    from universalrag.types import Unit

    store = Store(settings=Settings(home=Path(sys.argv[1]), exact_scan_rows=0))
    store.init(embedder="sentence-transformers/all-MiniLM-L6-v2", dimension=384)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((4000, 384)).astype(np.float32)
    store.add_units([Unit(id=str(uuid.uuid4()), corpus="paragraph", content=f"unit {i}", embedding=v.tolist())
                     for i, v in enumerate(vectors)])
    # the search starts the index check in the background; the process ends at once, stopping the server
    print(len(store.search("paragraph", rng.standard_normal(384).tolist(), k=3)))
    """
)


@pytest.mark.slow
def test_a_background_index_check_cut_short_by_the_exit_prints_nothing() -> None:
    home = Path(tempfile.mkdtemp(prefix="universalrag-exit-"))  # an embedded server of its own, stopped at exit
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHECK_AT_EXIT, str(home)], env=env, capture_output=True, text=True, timeout=300
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0 and done.stdout.strip() == "3", done.stderr
    assert "index check" not in done.stderr and "terminating connection" not in done.stderr, done.stderr
