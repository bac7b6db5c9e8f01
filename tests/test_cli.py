"""The `universalrag` command end to end against the real database and encoder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.fusion import lifted as lifted_score

runner = CliRunner()
QUESTIONS = json.loads((DATA / "corpus_questions.json").read_text(encoding="utf-8"))


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env, prog_name="universalrag")
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
    code, out, _ = run(
        cli_env, "search", "lighthouse", "-c", "paragraph", "--filter", '{"title": {"$ilike": "%sourdough%"}}', "--json"
    )
    assert code == 0 and json.loads(out) and all("sourdough" in h["metadata"]["title"].lower() for h in json.loads(out))

    code, out, _ = run(cli_env, "sources", "delete", str(folder / "sourdough_baking.md"))
    assert code == 0
    sources = json.loads(run(cli_env, "sources", "list", "--json")[1])
    assert len(sources) == 2 and not any("sourdough" in s["uri"] for s in sources)


def test_ingest_with_bad_files_exits_non_zero_with_a_summary(cli_env: dict[str, str]) -> None:
    code, out, _ = run(cli_env, "ingest", str(DATA / "bad"))
    assert code == 1
    assert "failed" in out and "blank.md" in out and "empty.txt" in out
    status = json.loads(run(cli_env, "status", "--json")[1])
    rows = {c["name"]: c["rows"] for c in status["corpora"]}
    # picture.txt is a real PNG: it goes to the image corpus; latin1.txt is read in its detected encoding;
    # the empty and blank files store nothing
    assert status["sources"] == 2 and rows["image"] == 1 and rows["document"] == 1


def test_route_bound_to_the_database_only_picks_corpora_with_rows(cli_env: dict[str, str]) -> None:
    question = "What does the Kestrel Point lighthouse look like from the sea?"
    code, out, _ = run(cli_env, "route", question, "--prior", "--json")
    assert code == 0 and json.loads(out)["routes"] == ["image"]  # the question-only prior, unbound: seven routes
    code, out, _ = run(cli_env, "route", question, "--json")
    assert code == 0 and json.loads(out)["routes"] == ["none"]  # as search: an empty database has nothing to search
    run(cli_env, "ingest", str(DATA / "corpus" / "kestrel_point_lighthouse.txt"))
    code, out, _ = run(cli_env, "route", question, "--prior", "--bound", "--json")
    decision = json.loads(out)
    assert code == 0 and set(decision["scores"]) == {"none", "document", "paragraph"}
    assert decision["routes"][0] in {"document", "paragraph"}
    code, out, _ = run(cli_env, "route", question, "--json")  # as search: the text that answers it is found
    decision = json.loads(out)
    assert code == 0 and decision["router"].startswith("evidence") and decision["evidence"]
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
    code, _, err = run(
        cli_env,
        "corpora",
        "create",
        "faq",
        "--modality",
        "text",
        "--granularity",
        "paragraph",
        "--description",
        "Answers from the support desk",
    )
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
    for item, answer in zip(questions, result["results"], strict=True):
        assert answer["routes"][0] == item.route, (item.question, answer["scores"])
        assert answer["answer"] is None  # no model configured in the test
        if item.route == "none":
            assert answer["hits"] == []
            continue
        # every hit comes from a chosen corpus; where a sibling granularity was chosen too (a paragraph beside the
        # document), hits merge by similarity, so the routed corpus's best hit may come second
        assert {h["corpus"] for h in answer["hits"]} <= set(answer["routes"]), (item.question, answer["routes"])
        # a document that is one passage comes back once, as that passage (the merge keeps one hit of each text)
        found = [
            h
            for h in answer["hits"]
            if h["corpus"] == item.route or item.route == "document" and h["corpus"] == "paragraph"
        ]
        assert found, (item.question, answer)
        top = found[0]
        # a figure of a PDF is stored as a picture of its own; its metadata names the PDF it came from
        origin = str(top["metadata"].get("source") or top["uri"])
        assert origin.endswith(item.source), (item.question, top)
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
    return subprocess.Popen([str(script), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_embedded_server_is_shared_by_concurrent_processes_and_stopped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = _console(home, "init")
    assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    procs = [
        _console(home, "ingest", str(DATA / "corpus" / "apollo_11.txt")),
        _console(home, "ingest", str(DATA / "corpus" / "honeybee_behaviour.md")),
        _console(home, "status", "--json"),
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-500:] for o in outputs]
    assert not (home / "pgdata" / "postmaster.pid").exists()  # the last process stopped the server cleanly
    status = _console(home, "status", "--json")
    out, err = status.communicate(timeout=300)
    assert status.returncode == 0, err
    data = json.loads(out)
    assert data["sources"] == 2 and "@" in data["database"] or "host=" in data["database"]


# -- a CLI for people and for pipes ---------------------------------------------------------------


MODEL_LIBRARIES = ("torch", "transformers", "sklearn", "av", "PIL")


def _heavy_modules_after(
    *args: str,
    env: dict[str, str] | None = None,
    heavy: tuple[str, ...] = (*MODEL_LIBRARIES, "numpy", "sqlalchemy", "psycopg"),
) -> list[str]:
    """Run the command in a fresh interpreter and list the heavy libraries it imported."""
    code = (
        "import sys\nfrom universalrag.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"heavy = {heavy!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy and '.' not in m))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_help_and_status_import_no_model_library(cli_env: dict[str, str]) -> None:
    assert _heavy_modules_after("--help") == []
    assert _heavy_modules_after("search", "--help") == []
    run(cli_env, "init")
    assert _heavy_modules_after("status", env=cli_env, heavy=MODEL_LIBRARIES) == []  # the database, no model


def test_flags_are_plain_and_usage_mistakes_are_usage_errors(cli_env: dict[str, str]) -> None:
    code, out, _ = run(cli_env, "search", "--help")
    assert code == 0 and "<bool>" not in out
    assert any(line.split()[:1] == ["--json"] and "Print" in line for line in out.splitlines())
    code, _, err = run(cli_env, "search")
    assert code == 2 and "Usage: universalrag search" in err and "Missing argument" in err
    assert "internal error" not in err and "MissingParameter" not in err
    code, _, err = run(cli_env, "search", "x", "-k", "many")
    assert code == 2 and "Usage: universalrag search" in err and "'-k'" in err
    code, _, err = run(cli_env, "ingest", "--no-such-option", "x")
    assert code == 2 and "No such option" in err


def test_search_status_and_lists_initialise_on_first_use(cli_env: dict[str, str]) -> None:
    code, out, err = run(cli_env, "search", "anything at all", "-c", "paragraph", "--json")
    assert code == 0, err
    assert json.loads(out) == []
    code, out, err = run(cli_env, "sources", "list", "--json")
    assert code == 0 and json.loads(out) == []


def test_status_initialises_a_fresh_schema(cli_env: dict[str, str]) -> None:
    code, out, err = run(cli_env, "status", "--json")
    assert code == 0, err
    assert {c["name"] for c in json.loads(out)["corpora"]} >= {"paragraph", "document"}


def test_a_schema_made_by_an_older_version_is_upgraded_on_first_use(cli_env: dict[str, str], tmp_path: Path) -> None:
    """A user upgrades the library over a schema an older version made (revision 0005, before the ``server``
    column): Python says how to upgrade, the CLI upgrades it on first use and keeps what was ingested."""
    from universalrag import Settings, UniversalRAG
    from universalrag.errors import StoreError
    from universalrag.store import Store, migrate

    (tmp_path / "kept.txt").write_text("The lighthouse keeper logs the fog horn hours every night.\n", encoding="utf-8")
    code, _, err = run(cli_env, "ingest", str(tmp_path / "kept.txt"))
    assert code == 0, err
    settings = Settings.from_env(cli_env)
    with Store(settings=settings) as store:
        store.downgrade("0005")
        assert store.revision() == "0005"
    with UniversalRAG(settings=settings) as rag, pytest.raises(StoreError, match="universalrag init"):
        rag.search("fog horn", routes=["paragraph"])
    code, out, err = run(cli_env, "search", "fog horn hours", "-c", "paragraph", "--json")
    assert code == 0, err
    assert "lighthouse keeper" in json.loads(out)[0]["content"]
    with Store(settings=settings) as store:
        assert store.revision() == migrate.SHIPPED_HEAD


def test_piped_output_is_whole_lines(cli_env: dict[str, str], tmp_path: Path) -> None:
    deep = tmp_path / ("a_rather_long_folder_name_for_testing_output_" * 2) / "nested_again_and_again"
    deep.mkdir(parents=True)
    target = deep / "ostbreen_glacier_field_notes_with_a_long_name.txt"
    target.write_bytes((DATA / "corpus" / "kestrel_point_lighthouse.txt").read_bytes())
    assert len(str(target)) > 120
    code, out, _ = run(cli_env, "ingest", str(deep))
    assert code == 0
    assert f"added: {target}" in out.splitlines()  # one whole line per file, no progress bar
    assert "…" not in out and "━" not in out
    code, out, _ = run(cli_env, "sources", "list")
    line = next(ln for ln in out.splitlines() if "ostbreen" in ln)
    assert target.as_uri() in line and line.endswith(line.split()[-1])  # not wrapped at 80 columns
    code, out, _ = run(cli_env, "search", "lighthouse keeper", "-c", "paragraph", "-k", "1")
    hit_lines = out.splitlines()
    assert len(hit_lines) == 3 and "…" not in out  # title, hit, and its whole text on one line
    code, out, _ = run(cli_env, "status", "--json")
    assert len(out.strip().splitlines()) == 1 and json.loads(out)["sources"] == 1  # JSON: one line in a pipe


def test_user_content_is_never_markup(cli_env: dict[str, str], tmp_path: Path) -> None:
    note = tmp_path / "zorblax.txt"
    note.write_text(
        "Zorblax notes\n\nThe [/bold] tag and [link=https://example.org]a link[/link] stay as "
        "written in the Zorblax field notes about [red]glaciers[/red].\n",
        encoding="utf-8",
    )
    assert run(cli_env, "ingest", str(note))[0] == 0
    code, out, err = run(cli_env, "search", "[/bold] Zorblax [link=x]", "-c", "paragraph", "-k", "1")
    assert code == 0, err
    assert "paragraph: [/bold] Zorblax [link=x]" in out
    assert "[link=https://example.org]a link[/link]" in out and "[red]glaciers[/red]" in out
    code, _, err = run(cli_env, "search", "x", "--corpus", "[/bold]nope")
    assert code == 1 and "[/bold]nope" in err


def test_fused_hits_show_their_similarity_and_rank(cli_env: dict[str, str], tmp_path: Path) -> None:
    missions = tmp_path / "apollo_missions.csv"
    missions.write_text(
        "mission,crew,launch,lunar landing\nApollo 11,Armstrong Aldrin Collins,16 July 1969,"
        "20 July 1969\nApollo 12,Conrad Bean Gordon,14 November 1969,19 November 1969\n"
        "Apollo 13,Lovell Swigert Haise,11 April 1970,none (aborted)\n",
        encoding="utf-8",
    )
    code, out, _ = run(cli_env, "ingest", str(DATA / "corpus" / "apollo_11.txt"), str(missions), "--json")
    assert code == 0 and json.loads(out)["rows"].get("table")
    question = "When did the Apollo 11 crew land on the Moon?"
    # a tiny threshold makes the router pick several corpora; both use the bundled encoder, so their hits merge
    # by similarity (one scale): the score shown is each corpus's own similarity, the order follows it
    args = ("search", question, "--router", "trained", "--threshold", "0.0001", "-k", "5")
    code, out, err = run(cli_env, *args, "--json")
    assert code == 0, err
    hits = json.loads(out)
    assert len({h["corpus"] for h in hits}) >= 2
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    lifted = [lifted_score(h["similarity"], table=h["corpus"] == "table") for h in hits]  # tables lifted to merge
    assert lifted == sorted(lifted, reverse=True)
    own = {
        h["id"]: h["score"]
        for c in {h["corpus"] for h in hits}
        for h in json.loads(run(cli_env, "search", question, "-c", c, "-k", "5", "--json")[1])
    }
    assert all(abs(h["similarity"] - own[h["id"]]) < 1e-6 and h["similarity"] > 0.2 for h in hits)
    assert all(abs(h["score"] - h["similarity"]) < 1e-6 for h in hits)
    code, out, _ = run(cli_env, *args)
    first = next(ln for ln in out.splitlines() if ln.strip().startswith("1. "))
    assert first.split()[1] == f"{hits[0]['similarity']:.3f}" and "fused score" not in first


def test_rank_fused_hits_show_their_similarity_beside_the_fused_score() -> None:
    """Where corpora are on different scales, the order is reciprocal rank: the line shows the similarity a
    person can read and the rank-based score beside it."""
    import io

    from universalrag.cli.context import Output
    from universalrag.cli.output import print_hits
    from universalrag.fusion import fuse
    from universalrag.types import Hit

    text = [Hit(corpus="paragraph", id="p1", score=0.61, content="a passage")]
    images = [Hit(corpus="image", id="i1", score=0.27, content="a photo", channel_scores={"visual": 0.3})]
    hits = fuse([text, images], spaces=["minilm/384", "clip/512"])
    stdout = io.StringIO()
    print_hits(Output(terminal=False, stdout=stdout, stderr=io.StringIO()), hits)
    first = next(ln for ln in stdout.getvalue().splitlines() if ln.strip().startswith("1. "))
    assert first.split()[1] == "0.610" and "fused score 0.0164" in first


def test_ingest_accepts_an_asr_choice(cli_env: dict[str, str]) -> None:
    code, out, err = run(cli_env, "ingest", str(DATA / "corpus" / "apollo_11.txt"), "--asr", "openai", "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == 1
    code, _, err = run(cli_env, "ingest", str(DATA / "corpus" / "apollo_11.txt"), "--asr", "bogus")
    assert code == 1 and "Unknown ASR engine 'bogus'" in err and "faster-whisper" in err


def test_ctrl_c_during_ingest_says_what_was_kept_and_a_rerun_continues(cli_env: dict[str, str], tmp_path: Path) -> None:
    FILES = 60  # enough that the interrupt lands mid-folder (files are embedded 128 passages at a time)
    folder = tmp_path / "many"
    folder.mkdir()
    sources = sorted((DATA / "corpus").glob("*.txt")) + sorted((DATA / "corpus").glob("*.md"))
    for i in range(FILES):
        src = sources[i % len(sources)]
        (folder / f"{i:02d}_{src.name}").write_text(
            src.read_text(encoding="utf-8") + f"\n\nCopy {i}.\n", encoding="utf-8"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIVERSALRAG_")} | cli_env
    script = Path(sys.executable).with_name("universalrag")
    proc = subprocess.Popen(
        [str(script), "ingest", str(folder)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("added: "), first + (proc.stderr.read() if proc.stderr else "")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "stopping after the current file" in err
    assert "interrupted: stopped after" in err and "Run the same command again to continue" in err
    kept = int(err.split("files: ", 1)[1].split(" sources were committed")[0])
    assert 1 <= kept < FILES
    assert json.loads(run(cli_env, "status", "--json")[1])["sources"] == kept
    code, out, _ = run(cli_env, "ingest", str(folder), "--json")
    report = json.loads(out)
    assert code == 0 and report["unchanged"] == kept and report["added"] == FILES - kept
