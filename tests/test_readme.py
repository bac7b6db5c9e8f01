"""The README's code runs: every Python, SQL and command-line block is executed offline against the test
database, in the order it appears, in a folder holding the files the README names. A block preceded by
``<!-- readme-test: skip REASON -->`` is not run (the reason must be given: a chat model, a network service);
the two setup commands are what CI itself runs.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import REPO
from support.shared_data import ROUTING_TRAIN, present

README = (REPO / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(
    r"(?:<!-- readme-test: skip (?P<skip>[^>]*?)-->\s*\n)?^(?P<indent>[ \t]*)```(?P<lang>\w*)\n"
    r"(?P<body>.*?)^(?P=indent)```",
    re.S | re.M,
)
SETUP = ("python3 -m venv",)


def blocks() -> list[tuple[str, str, str | None]]:
    """(language, code, skip reason) of every fenced block, indentation removed."""
    out = []
    for m in BLOCK.finditer(README):
        indent = len(m["indent"])
        body = "\n".join(line[indent:] for line in m["body"].splitlines())
        out.append((m["lang"] or "text", body, m["skip"]))
    return out


def test_names_no_path_outside_the_repository() -> None:
    """A user's clone has nothing beside it: the README's commands and links stay inside the repository."""
    assert not re.findall(r"\.\./|/work/|/tmp/", README)


def test_every_skipped_block_says_why() -> None:
    for lang, body, skip in blocks():
        if skip is not None:
            assert skip.strip(), f"a skipped {lang} block needs a reason:\n{body}"


def _readme_files(root: Path) -> None:
    """The files the README's Python example ingests, made from the test knowledge base."""
    from support.kb import mixed_folder

    kb = root / "kb"
    mixed_folder(kb)
    (root / "docs").mkdir()
    shutil.copy(kb / "lighthouse.txt", root / "docs" / "lighthouse.txt")
    shutil.copy(kb / "ferries.xlsx", root / "sales.xlsx")
    (root / "photos").mkdir()
    for photo in kb.glob("IMG_*"):
        shutil.copy(photo, root / "photos" / photo.name)
    video = next(p for p in kb.iterdir() if p.suffix in {".mp4", ".mkv", ".webm"})
    shutil.copy(video, root / ("talk" + video.suffix))
    for sidecar in kb.glob(video.stem + ".*"):
        if sidecar != video:
            shutil.copy(sidecar, root / ("talk" + sidecar.suffix))
    shutil.rmtree(kb)
    # the labelled routing questions the README's commands read: the public sets when this machine has them, else
    # the project's own held-out questions, as the README suggests
    routing = ROUTING_TRAIN if present(ROUTING_TRAIN) else REPO / "core/universalrag/routing/data/heldout.jsonl"
    shutil.copy(routing, root / "routing.jsonl")


def _chat_models() -> dict[str, Any]:
    """What the adapter examples call ``chat_model`` and ``llm``: offline fakes (no chat model here)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from llama_index.core.llms import MockLLM

    return {"chat_model": FakeListChatModel(responses=["(fake answer)"] * 20), "llm": MockLLM()}


@pytest.mark.slow
def test_every_block_runs(
    cli_env: dict[str, str], schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from universalrag.cli import app

    work = tmp_path / "work"
    work.mkdir()
    _readme_files(work)
    monkeypatch.chdir(work)
    for key, value in cli_env.items():
        monkeypatch.setenv(key, value)
    namespace: dict[str, Any] = {"__name__": "readme", **_chat_models()}
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
