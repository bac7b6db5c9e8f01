"""The README's code runs: every Python, SQL and command-line block is executed offline against the test
database, in the order it appears, in a folder holding the files the README names. A block preceded by
``<!-- readme-test: skip REASON -->`` is not run (the reason must be given: a chat model, a network service);
the two setup commands are what CI itself runs.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import REPO
from support.markdown_blocks import chat_models, code_blocks, example_files

README = (REPO / "README.md").read_text(encoding="utf-8")
SETUP = ("python3 -m venv",)


def blocks() -> list[tuple[str, str, str | None]]:
    """(language, code, skip reason) of every fenced block."""
    return [(b.lang, b.code, b.skip) for b in code_blocks(README)]


def test_names_no_path_outside_the_repository() -> None:
    """A user's clone has nothing beside it: the README's commands and links stay inside the repository."""
    assert not re.findall(r"\.\./|/work/|/tmp/", README)


def test_every_skipped_block_says_why() -> None:
    for lang, body, skip in blocks():
        if skip is not None:
            assert skip.strip(), f"a skipped {lang} block needs a reason:\n{body}"


@pytest.mark.slow
def test_every_block_runs(
    cli_env: dict[str, str], schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from universalrag.cli import app

    work = tmp_path / "work"
    work.mkdir()
    example_files(work)
    monkeypatch.chdir(work)
    for key, value in cli_env.items():
        monkeypatch.setenv(key, value)
    namespace: dict[str, Any] = {"__name__": "readme", **chat_models()}
    runner = CliRunner()
    assert runner.invoke(app, ["init"], env=dict(os.environ)).exit_code == 0
    ran = 0
    for lang, body, skip in blocks():
        if skip is not None or body.startswith(SETUP):
            continue
        if lang == "python":
            exec(compile(body, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
        elif lang == "sql":
            engine = sa.create_engine(
                cli_env["UNIVERSALRAG_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://", 1)
            )
            with engine.begin() as conn:  # the README's own tables go into the test's schema, dropped after it
                conn.execute(sa.text("SELECT set_config('search_path', :path, true)"), {"path": f"{schema}, public"})
                for statement in filter(None, (s.strip() for s in body.split(";"))):
                    conn.exec_driver_sql(statement.replace("universalrag.", f"{schema}.") + ";")
            engine.dispose()
        elif lang in {"bash", "text", "console", "sh"}:
            for line in body.splitlines():
                if not line.startswith("universalrag "):
                    continue
                args = shlex.split(line)[1:]
                result = runner.invoke(app, args, env=dict(os.environ))
                assert result.exit_code == 0, (line, result.stdout, result.stderr)
        else:
            continue
        ran += 1
    assert ran >= 4
