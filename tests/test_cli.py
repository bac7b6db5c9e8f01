"""The `universalrag` command end to end against the real database and encoder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import DATA
from universalrag.cli import app

runner = CliRunner()
QUESTIONS = json.loads((DATA / "corpus_questions.json").read_text(encoding="utf-8"))


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_init_is_idempotent_and_status_reports_versions(cli_env: dict[str, str]) -> None:
    code, out, _ = run(cli_env, "init")
    assert code == 0 and "created corpora: document" in out.replace("\n", " ")
    code, out, _ = run(cli_env, "init")
    assert code == 0 and "none (all present)" in out
    code, out, _ = run(cli_env, "status", "--json")
    assert code == 0
    status = json.loads(out)
    assert status["postgres"].startswith("18") and status["pgvector"] >= "0.7"
    assert {c["name"] for c in status["corpora"]} == {"paragraph", "document", "table", "image", "clip", "video"}
    assert all({"name", "modality", "granularity", "rows"} <= set(c) for c in status["corpora"])
    assert status["sources"] == 0 and status["schema"] == cli_env["UNIVERSALRAG_SCHEMA"]


def test_status_never_prints_the_password(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "UNIVERSALRAG_DATABASE_URL": "postgresql://ann:hunter2@127.0.0.1:1/x"}
    code, out, err = run(env, "status", "--json")
    assert code == 1 and "hunter2" not in out + err and "***" in err


def test_ingest_search_sources_round_trip(cli_env: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in ("kestrel_point_lighthouse.txt", "sourdough_baking.md", "brennmoor_tramways.html"):
        (folder / name).write_bytes((DATA / "corpus" / name).read_bytes())
    code, out, _ = run(cli_env, "ingest", str(folder), "--json")
    assert code == 0
    first = json.loads(out)
    assert first["added"] == 3 and first["failed"] == []
    code, out, _ = run(cli_env, "ingest", str(folder), "--json")
    assert json.loads(out)["unchanged"] == 3
    rows = {c["name"]: c["rows"] for c in json.loads(run(cli_env, "status", "--json")[1])["corpora"]}
    assert rows["document"] == 3 and rows["paragraph"] == first["rows"]["paragraph"]

    item = next(q for q in QUESTIONS if q["file"] == "kestrel_point_lighthouse.txt")
    code, out, _ = run(cli_env, "search", item["question"], "--corpus", "paragraph", "-k", "3", "--json")
    assert code == 0
    hits = json.loads(out)
    assert len(hits) == 3 and any(item["answer_phrase"] in h["content"] for h in hits)
    assert {"corpus", "score", "content", "uri", "metadata"} <= set(hits[0])
    code, out, _ = run(cli_env, "search", "lighthouse", "-c", "paragraph", "--filter",
                       '{"title": {"$ilike": "%sourdough%"}}', "--json")
    assert code == 0 and json.loads(out) and all("sourdough" in h["metadata"]["title"].lower()
                                                  for h in json.loads(out))

    code, out, _ = run(cli_env, "sources", "delete", str(folder / "sourdough_baking.md"))
    assert code == 0
    sources = json.loads(run(cli_env, "sources", "list", "--json")[1])
    assert len(sources) == 2 and not any("sourdough" in s["uri"] for s in sources)


def test_ingest_with_bad_files_exits_non_zero_with_a_summary(cli_env: dict[str, str]) -> None:
    code, out, _ = run(cli_env, "ingest", str(DATA / "bad"))
    assert code == 1
    assert "failed" in out and "latin1.txt" in out and "empty.txt" in out
    status = json.loads(run(cli_env, "status", "--json")[1])
    rows = {c["name"]: c["rows"] for c in status["corpora"]}
    # picture.txt is a real PNG: it goes to the image corpus; the broken text files store nothing
    assert status["sources"] == 1 and rows["image"] == 1 and rows["document"] == rows["paragraph"] == 0


def test_route_bound_to_the_database_only_picks_corpora_with_rows(cli_env: dict[str, str]) -> None:
    question = "What does the Kestrel Point lighthouse look like from the sea?"
    code, out, _ = run(cli_env, "route", question, "--json")
    assert code == 0 and json.loads(out)["routes"] == ["image"]  # unbound: all seven routes
    run(cli_env, "ingest", str(DATA / "corpus" / "kestrel_point_lighthouse.txt"))
    code, out, _ = run(cli_env, "route", question, "--bound", "--json")
    decision = json.loads(out)
    assert code == 0 and set(decision["scores"]) == {"none", "document", "paragraph"}
    assert decision["routes"][0] in {"document", "paragraph"}


def test_search_without_a_corpus_routes_and_ask_without_a_model_gives_evidence(cli_env: dict[str, str]) -> None:
    run(cli_env, "ingest", str(DATA / "corpus" / "apollo_11.txt"), str(DATA / "corpus" / "honeybee_behaviour.md"))
    code, out, _ = run(cli_env, "search", "When did the Apollo 11 crew land on the Moon?", "--json")
    hits = json.loads(out)
    assert code == 0 and hits and hits[0]["corpus"] in {"paragraph", "document"} and "apollo" in hits[0]["uri"]
    code, out, _ = run(cli_env, "ask", "How do honeybees tell each other where flowers are?", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["answer"] is None and answer["routes"][0] in {"paragraph", "document"}
    assert set(answer) >= {"answer", "routes", "scores", "hits"} and "honeybee" in answer["hits"][0]["uri"]
    code, out, _ = run(cli_env, "ask", "How do honeybees tell each other where flowers are?")
    assert code == 0 and "No language model is configured" in out and "UNIVERSALRAG_LLM_MODEL" in out


def test_corpora_create_list_drop(cli_env: dict[str, str]) -> None:
    code, _, err = run(cli_env, "corpora", "create", "faq", "--modality", "text", "--granularity", "paragraph",
                       "--description", "Answers from the support desk")
    assert code == 0, err
    listed = json.loads(run(cli_env, "corpora", "list", "--json")[1])
    faq = next(c for c in listed if c["name"] == "faq")
    assert faq["description"] == "Answers from the support desk" and faq["dimension"] == 384
    code, _, err = run(cli_env, "corpora", "create", "Bad Name", "--modality", "text", "--description", "x")
    assert code == 1 and "Invalid corpus name" in err
    code, _, err = run(cli_env, "corpora", "drop", "paragraph", "--yes")
    assert code == 1 and "--force" in err
    code, _, _ = run(cli_env, "corpora", "drop", "faq", "--yes")
    assert code == 0
    assert "faq" not in {c["name"] for c in json.loads(run(cli_env, "corpora", "list", "--json")[1])}


def test_errors_are_one_line_and_debug_shows_the_traceback(cli_env: dict[str, str]) -> None:
    run(cli_env, "init")
    code, _, err = run(cli_env, "search", "anything", "--corpus", "nope")
    assert code == 1
    assert err.startswith("error:") and "Traceback" not in err and "nope" in err
    code, _, err = run(cli_env, "--debug", "search", "anything", "--corpus", "nope")
    assert code == 1 and "Traceback" in err
    code, _, err = run(cli_env, "search", "x", "-c", "paragraph", "--filter", "{not json")
    assert code == 1 and "--filter is not valid JSON" in err


def test_demo_routes_each_question_to_the_corpus_that_answers_it(cli_env: dict[str, str]) -> None:
    from universalrag.demo import demo_questions

    demo = ("demo", "--json", "--demo-schema", cli_env["UNIVERSALRAG_SCHEMA"])
    code, out, err = run(cli_env, *demo)
    assert code == 0, err
    result = json.loads(out)
    assert result["ingest"]["failed"] == [] and result["seconds"] < 120
    questions = demo_questions()
    assert [r["expected_route"] for r in result["results"]] == [q.route for q in questions]
    assert {q.route for q in questions} == {"none", "paragraph", "document", "table", "image", "clip", "video"}
    for item, answer in zip(questions, result["results"]):
        assert answer["routes"][0] == item.route, (item.question, answer["scores"])
        assert answer["answer"] is None  # no model configured in the test
        if item.route == "none":
            assert answer["hits"] == []
            continue
        top = answer["hits"][0]
        assert top["corpus"] == item.route and top["uri"].endswith(item.source)
        texts = [top["content"]] + [p["text"] for p in top.get("matched_parts", [])]
        assert any(item.answer_phrase in t for t in texts) or item.route == "document", (item.question, top)
        if item.route == "clip":
            assert top["start_s"] is not None and top["end_s"] > top["start_s"]
    code, out, _ = run(cli_env, *demo)
    assert json.loads(out)["ingest"]["added"] == 0  # nothing re-ingested


def _console(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")}
    env["UNIVERSALRAG_HOME"] = str(home)
    script = Path(sys.executable).with_name("universalrag")
    return subprocess.Popen([str(script), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow
def test_embedded_server_is_shared_by_concurrent_processes_and_stopped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = _console(home, "init")
    assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    procs = [_console(home, "ingest", str(DATA / "corpus" / "apollo_11.txt")),
             _console(home, "ingest", str(DATA / "corpus" / "honeybee_behaviour.md")),
             _console(home, "status", "--json")]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-500:] for o in outputs]
    assert not (home / "pgdata" / "postmaster.pid").exists()  # the last process stopped the server cleanly
    status = _console(home, "status", "--json")
    out, err = status.communicate(timeout=300)
    assert status.returncode == 0, err
    data = json.loads(out)
    assert data["sources"] == 2 and "@" in data["database"] or "host=" in data["database"]
