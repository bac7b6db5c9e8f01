"""The documentation site builds as CI builds it (warnings are errors, every cross-reference resolves), and the
Python examples of its pages run: each page's blocks in order, in one namespace, offline against the test database,
in a folder holding the files the examples name (tests/support/markdown_blocks.py, shared with test_readme.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from support.markdown_blocks import chat_models, code_blocks, example_files

DOCS = REPO / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)


def _pages_with_python() -> list[Path]:
    return [p for p in PAGES if any(b.lang == "python" for b in code_blocks(p.read_text(encoding="utf-8")))]


def test_every_skipped_block_says_why() -> None:
    for page in PAGES:
        for block in code_blocks(page.read_text(encoding="utf-8")):
            if block.skip is not None:
                assert block.skip.strip(), f"{page.name}:{block.line}: a skipped block needs a reason"


def test_the_guide_speaks_to_users() -> None:
    """Pages say what the library does and how; none cites the project's own bookkeeping."""
    for page in [*PAGES, REPO / "README.md", REPO / "CHANGELOG.md"]:
        text = page.read_text(encoding="utf-8")
        found = re.search(r"\b(?:issue|ticket) #?\d+|\b[a-z]+th session\b|\bsessions? \d+", text, re.I)
        assert found is None, (page.name, found and found[0])


@pytest.mark.slow
def test_site_builds(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-6000:]
    built = {p.relative_to(tmp_path / "html").with_suffix("").as_posix() for p in (tmp_path / "html").rglob("*.html")}
    for page in PAGES:
        assert page.relative_to(DOCS).with_suffix("").as_posix() in built, page
    api = (tmp_path / "html" / "api" / "universalrag.html").read_text(encoding="utf-8")
    assert 'id="universalrag.UniversalRAG"' in api and 'id="universalrag.Store.search"' in api
    configuration = (tmp_path / "html" / "configuration.html").read_text(encoding="utf-8")
    from universalrag.config import ENV_VARS

    for name in ENV_VARS:  # the table is made from the library's own list
        assert name in configuration, name


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_python(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_python_examples_run(
    page: Path, cli_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runnable = [b for b in code_blocks(page.read_text(encoding="utf-8")) if b.lang == "python" and b.skip is None]
    if not runnable:
        pytest.skip(f"every Python block of {page.name} is marked as needing a service")
    work = tmp_path / "work"
    work.mkdir()
    example_files(work)
    monkeypatch.chdir(work)
    for key, value in cli_env.items():
        monkeypatch.setenv(key, value)
    namespace: dict[str, Any] = {"__name__": "docs", **chat_models()}
    for block in runnable:
        code = compile("\n" * (block.line) + block.code, str(page), "exec")  # tracebacks name the page's lines
        exec(code, namespace)  # noqa: S102 - the page's own example
    rag = namespace.get("rag") or namespace.get("bench")
    if rag is not None and hasattr(rag, "close"):
        rag.close()
