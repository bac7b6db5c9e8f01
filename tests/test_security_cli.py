"""The command line never reads user content as markup, also on a terminal, and refuses hostile corpus names.

Real CLI (typer's runner) against the real PostgreSQL and MiniLM; the terminal is forced through the
invocation (colour, width), as a person's shell would have it. A hyperlink would appear as the OSC 8 escape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.cli.context import Invocation

runner = CliRunner()
HOSTILE = "[/bold] [/] [link=https://evil.example/x]click me[/link] [red]alarm[/red] [bold"
OSC8 = "\x1b]8;"


def _run(env: dict[str, str], *args: str, terminal: bool = True) -> tuple[int, str, str]:
    obj = Invocation(environ=env, terminal=terminal, width=120, color=terminal)
    result = runner.invoke(app, list(args), env=env, obj=obj)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def hostile_env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "notes [bold] [red]"
    folder.mkdir()
    (folder / "[link=x]harbour.txt").write_text(
        f"Zorblax harbour notes\n\nThe harbour master wrote {HOSTILE} in the Zorblax log book.", "utf-8"
    )
    code, out, err = _run(cli_env, "ingest", str(folder), terminal=False)
    assert code == 0, out + err
    code, out, err = _run(
        cli_env,
        "corpora",
        "create",
        "notes",
        "--modality",
        "text",
        "--description",
        f"Notes {HOSTILE}",
        "--example",
        f"question {HOSTILE}",
        terminal=False,
    )
    assert code == 0, out + err
    return cli_env


@pytest.mark.parametrize(
    "args",
    [
        ("search", f"Zorblax {HOSTILE}", "-c", "paragraph", "-k", "2"),
        ("search", f"Zorblax harbour log {HOSTILE}", "-k", "2"),
        ("search", "Zorblax", "--corpus", "[/bold]nope"),
        ("ask", f"What did the Zorblax harbour master write? {HOSTILE}"),
        ("route", f"Zorblax {HOSTILE}"),
        ("corpora", "list"),
        ("sources", "list"),
        ("status",),
    ],
    ids=["search-corpus", "search-routed", "unknown-corpus", "ask", "route", "corpora-list", "sources-list", "status"],
)
def test_user_content_is_printed_literally_on_a_terminal(hostile_env: dict[str, str], args: tuple[str, ...]) -> None:
    code, out, err = (
        _run(hostile_env, *args, "--no-server") if args[0] in ("search", "ask", "route") else _run(hostile_env, *args)
    )
    text = out + err
    assert "Traceback" not in text and "MarkupError" not in text, text
    assert OSC8 not in text  # no live link
    if args[2:4] == ("--corpus", "[/bold]nope"):
        assert code == 1 and "[/bold]nope" in err
        return
    assert code == 0, text
    if args[0] in ("search", "ask"):
        assert "[link=https://evil.example/x]click me[/link]" in " ".join(out.split())
    if args[0] == "corpora":
        assert "[/bold] [/]" in out
    if args[0] == "sources":
        assert "%5Blink%3Dx%5Dharbo" in out.replace("\n", "")  # the URI, percent-encoded (a long one wraps)


def test_hostile_corpus_names_through_the_cli(hostile_env: dict[str, str]) -> None:
    for name in ("x'; DROP TABLE corpora; --", 'a"b', "a\\b", "../etc", "ÄÖ", "a b", "a" * 200, "none", "[/bold]"):
        code, out, err = _run(
            hostile_env, "corpora", "create", name, "--modality", "text", "--description", "d", terminal=False
        )
        assert code in (1, 2) and "Traceback" not in out + err, (name, out, err)
        assert not any(w in err for w in ("SELECT ", "[SQL:", "INSERT ")), err
        if name == "none":  # a valid route: search nothing
            continue
        code, out, err = _run(hostile_env, "search", "harbour", "-c", name, "--no-server", terminal=False)
        assert code == 1 and "No corpus named" in err and "[SQL:" not in err
    code, out, _ = _run(hostile_env, "corpora", "list", "--json", terminal=False)
    assert {c["name"] for c in json.loads(out)} >= {"paragraph", "notes"} and len(json.loads(out)) == 7
