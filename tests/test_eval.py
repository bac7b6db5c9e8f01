"""`universalrag.eval` end to end: every strategy over a small real knowledge base (real PostgreSQL + pgvector,
the real bundled MiniLM), the unified baseline's one shared table and HNSW index inspected in the catalog,
answers from a chat model behind the OpenAI-compatible test server, and the `universalrag eval rag` command."""

from __future__ import annotations

import itertools
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import DATA
from support.media import write_photo
from support.openai_server import OpenAICompatServer
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.errors import ConfigError
from universalrag.eval import (
    UnifiedIndex,
    build_strategy,
    evaluate,
    examples_from,
    read_examples,
    strategy_names,
)

pytestmark = pytest.mark.slow
QUESTIONS = json.loads((DATA / "corpus_questions.json").read_text(encoding="utf-8"))
TEXTS = ("kestrel_point_lighthouse.txt", "sourdough_baking.md", "apollo_11.txt")
CAPTION = "A white cup of black coffee on a saucer, seen from above."


@pytest.fixture(scope="module")
def kb(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Three texts, a CSV table and a captioned photograph, ingested once (schema dropped afterwards)."""
    from universalrag.config import Settings
    from universalrag.pipeline import UniversalRAG

    folder = tmp_path_factory.mktemp("eval") / "kb"
    folder.mkdir()
    for name in TEXTS:
        shutil.copy(DATA / "corpus" / name, folder / name)
    shutil.copy(DATA / "tables" / "nba_2023.csv", folder / "nba_2023.csv")
    write_photo(folder / "IMG_0042.jpg", name="coffee")
    (folder / "IMG_0042.jpg.txt").write_text(CAPTION, encoding="utf-8")
    rag = UniversalRAG(
        settings=Settings(database_url=database_url, schema="evalrag_" + uuid.uuid4().hex[:12]),
        generator=None,
        visual_encoder=None,
        log_decisions=False,
    )
    report = rag.ingest([folder])
    assert report.ok, report.failed
    rag.folder = folder  # type: ignore[attr-defined]
    yield rag
    with rag.store.transaction() as conn:
        conn.execute(sa.schema.DropSchema(rag.store.schema, cascade=True, if_exists=True))
    rag.close()


def _rows(folder: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {"query": q["question"], "routes": ["paragraph"], "evidence": [str(folder / q["file"])], "source": "text"}
        for q in QUESTIONS
        if q["file"] in TEXTS
    ][:6]
    rows += [
        {
            "query": "How many games did the Boston Celtics win in the 2023 NBA season?",
            "routes": ["table"],
            "evidence": [{"uri": str(folder / "nba_2023.csv"), "table": 0}],
            "source": "tables",
            "answer": "57",
        },
        {
            "query": "Show me the photo of black coffee in a white cup from above",
            "routes": ["image"],
            "evidence": [str(folder / "IMG_0042.jpg")],
            "source": "images",
        },
        {"query": "What is 17 multiplied by 3?", "routes": ["none"], "answer": "51", "source": "none"},
    ]
    return rows


@pytest.fixture(scope="module")
def examples(kb: Any) -> list[Any]:
    return examples_from(_rows(kb.folder))


def _per_question(report: Any, name: str) -> list[Any]:
    return report.strategies[name].results


def test_every_strategy_end_to_end(kb: Any, examples: list[Any]) -> None:
    corpora = kb.store.nonempty()
    assert {"paragraph", "document", "table", "image"} <= set(corpora)
    names = ["routed", "unified", "all", "oracle", "random", "none", "table", "corpus:paragraph"]
    assert set(strategy_names(kb)) >= {"routed", "unified", "all", "oracle", "random", "none", *corpora}
    report = evaluate(kb, examples, [build_strategy(n, kb) for n in names], k=5)
    out = report.to_dict()
    s = out["strategies"]
    assert out["metrics"] == ["recall", "mrr", "routing_accuracy"]  # evidence only: no answer metrics
    assert out["sources"] == {"images": 1, "none": 1, "tables": 1, "text": 6}

    # none: nothing retrieved; right exactly on the question that needs no retrieval
    assert all(r.hit_ids == () and r.routes == ("none",) for r in _per_question(report, "none"))
    assert s["none"]["overall"]["recall"] == 0.0 and s["none"]["per_source"]["none"]["routing_accuracy"] == 1.0
    assert s["none"]["per_source"]["text"]["routing_accuracy"] == 0.0
    # oracle: the gold corpora, which hold the gold evidence of these easy questions
    assert s["oracle"]["overall"]["routing_accuracy"] == 1.0
    assert s["oracle"]["overall"]["recall"] == 1.0
    # one corpus: the table corpus finds the table question only
    assert s["table"]["per_source"]["tables"]["recall"] == 1.0 and s["table"]["per_source"]["text"]["recall"] == 0.0
    assert all(r.routes == ("table",) for r in _per_question(report, "table"))
    assert s["paragraph"]["per_source"]["text"]["recall"] == 1.0
    assert s["paragraph"]["per_source"]["images"]["recall"] == 0.0
    # all: every corpus searched, so never the single gold route
    assert all(set(r.routes) == set(corpora) for r in _per_question(report, "all"))
    assert s["all"]["overall"]["routing_accuracy"] == 0.0
    # unified: does not route (no routing accuracy) and searches across corpora
    assert "routing_accuracy" not in s["unified"]["overall"]
    assert all(r.routes is None for r in _per_question(report, "unified"))
    assert (
        s["unified"]["per_source"]["images"]["recall"] == 1.0 and s["unified"]["per_source"]["tables"]["recall"] == 1.0
    )
    # random: one route each, drawn among none and the corpora, the same on every run
    drawn = [r.routes for r in _per_question(report, "random")]
    assert all(len(r) == 1 and r[0] in {"none", *corpora} for r in drawn)
    again = evaluate(kb, examples, [build_strategy("random", kb)], k=5)
    assert [r.routes for r in _per_question(again, "random")] == drawn
    assert len({r for r in drawn}) > 1  # not one fixed route
    # routed: the library default finds the evidence and beats a random route
    assert s["routed"]["overall"]["recall"] >= 0.8
    assert s["routed"]["overall"]["recall"] > s["random"]["overall"]["recall"]
    assert s["routed"]["overall"]["mrr"] <= s["routed"]["overall"]["recall"]
    # latency per stage
    assert {"route", "retrieve", "total"} <= set(s["routed"]["latency_ms"])
    assert s["routed"]["latency_ms"]["route"]["p50"] > 0 and s["none"]["latency_ms"]["retrieve"]["p50"] == 0.0


def test_mrr_follows_the_rank_of_the_first_gold_hit(kb: Any, examples: list[Any]) -> None:
    report = evaluate(kb, examples, [build_strategy("all", kb)], k=5)
    for r in _per_question(report, "all"):
        if r.example.evidence:
            expected = 0.0 if r.gold_rank is None else 1.0 / r.gold_rank
            assert r.metrics["mrr"] == pytest.approx(expected) and r.metrics["recall"] == float(r.gold_rank is not None)


def test_the_unified_baseline_shares_one_table_and_one_hnsw_index(kb: Any) -> None:
    index = UnifiedIndex(kb.store, kb.embedder)
    state = index.build()
    schema = kb.store.schema
    corpora = set(kb.store.nonempty())
    with kb.store.transaction() as conn:
        tables = (
            conn.execute(
                sa.text(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :s AND c.relkind = 'r' AND c.relname LIKE 'eval%'"
                ),
                {"s": schema},
            )
            .scalars()
            .all()
        )
        indexes = conn.execute(
            sa.text("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = :s AND tablename = 'eval_unified'"),
            {"s": schema},
        ).all()
        in_table = set(conn.execute(sa.text(f'SELECT DISTINCT corpus FROM "{schema}".eval_unified')).scalars())
        rows = conn.execute(sa.text(f'SELECT count(*) FROM "{schema}".eval_unified')).scalar_one()
        conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        vector = "[" + ",".join(["0.05"] * 384) + "]"
        plan = "\n".join(
            conn.execute(
                sa.text(
                    f"EXPLAIN SELECT unit_id FROM \"{schema}\".eval_unified ORDER BY embedding <=> '{vector}'::vector "
                    "LIMIT 5"
                )
            ).scalars()
        )
    assert tables == ["eval_unified"]
    hnsw = [d for _, d in indexes if "USING hnsw" in d]
    assert len(hnsw) == 1 and "vector_cosine_ops" in hnsw[0]
    assert in_table == corpora == set(state.corpora)  # the image corpus too, by its caption's text vector
    assert rows == state.rows == sum(units + parts for units, parts in state.corpora.values())
    assert "eval_unified_hnsw" in plan
    # one search ranks units of different corpora together
    coffee = index.search(kb.embedder.embed_query("a photo of black coffee in a white cup"), k=5)
    celtics = index.search(kb.embedder.embed_query("Boston Celtics wins losses conference"), k=5)
    assert coffee[0].corpus == "image" and celtics[0].corpus == "table"
    assert len({h.corpus for h in coffee + celtics}) >= 3
    assert all(a.score >= b.score for a, b in itertools.pairwise(coffee))
    assert index.build().built is False  # unchanged corpora: kept


def test_answers_from_a_chat_model(kb: Any) -> None:
    from universalrag.generate import OpenAIChatGenerator

    def reply(body: dict[str, Any]) -> str:
        text = json.dumps(body)  # the question and its evidence
        if "Which corpus" in text:
            return "(B)"
        if "multiplied" in text:
            return "The answer is 51."
        return "57" if "Boston Celtics" in text else "I do not know"

    rows = [r for r in _rows(kb.folder) if "answer" in r] + [
        {
            "query": "Which corpus holds spreadsheets?",
            "choices": ["image", "table", "video"],
            "answer": "B",
            "source": "mc",
        }
    ]
    with OpenAICompatServer(chat_reply=reply) as server:
        generator = OpenAIChatGenerator("test-model", base_url=server.base_url, api_key="test")
        report = evaluate(
            kb,
            examples_from(rows),
            [build_strategy("routed", kb), build_strategy("none", kb)],
            k=3,
            generator=generator,
        )
        chats = [r for r in server.requests if r["path"] == "/v1/chat/completions"]
    out = report.to_dict()
    assert len(chats) == 2 * len(rows)
    assert {"exact_match", "f1", "rouge_l", "choice_accuracy"} <= set(out["metrics"])
    routed = out["strategies"]["routed"]["per_source"]
    assert routed["tables"]["exact_match"] == 1.0 and routed["none"]["exact_match"] == 0.0
    assert routed["none"]["f1"] == pytest.approx(0.5)  # "answer is 51" vs "51": P 1/3, R 1
    assert routed["mc"]["choice_accuracy"] == 1.0
    assert "generate" in out["strategies"]["none"]["latency_ms"]
    assert out["generator"] == generator.name


def test_oracle_without_gold_routes_and_unknown_strategies_are_refused(kb: Any) -> None:
    examples = examples_from([{"query": "Where is Kestrel Point?"}])
    with pytest.raises(ConfigError, match="gold 'routes'"):
        evaluate(kb, examples, [build_strategy("oracle", kb)])
    with pytest.raises(ConfigError, match="Unknown strategy 'telepathy'"):
        build_strategy("telepathy", kb)


# -- the command ---------------------------------------------------------------------------------------------------
runner = CliRunner()


def _env(kb: Any, tmp_path: Path, **extra: str) -> dict[str, str]:
    url = kb.store.url
    return {
        "UNIVERSALRAG_DATABASE_URL": url,
        "UNIVERSALRAG_SCHEMA": kb.store.schema,
        "UNIVERSALRAG_HOME": str(tmp_path / "home"),
        "UNIVERSALRAG_LLM_MODEL": "",
        **extra,
    }


def _data(kb: Any, tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _rows(kb.folder)) + "\n", encoding="utf-8")
    return path


def test_cli_json_and_plot(kb: Any, tmp_path: Path) -> None:
    png = tmp_path / "eval.png"
    result = runner.invoke(
        app,
        [
            "eval",
            "rag",
            "--data",
            str(_data(kb, tmp_path)),
            "--json",
            "-k",
            "3",
            "-s",
            "routed",
            "-s",
            "unified",
            "-s",
            "oracle",
            "-s",
            "table",
            "--plot",
            str(png),
        ],
        env=_env(kb, tmp_path),
        prog_name="universalrag",
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report["strategies"]) == ["routed", "unified", "oracle", "table"] and report["k"] == 3
    assert report["generator"] is None and report["questions"] == 9
    assert report["strategies"]["oracle"]["overall"]["recall"] == 1.0
    assert report["notes"]["unified_index"]["table"] == "eval_unified"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert report["plot"] == str(png)


def test_cli_table_and_answers_with_a_configured_chat_model(kb: Any, tmp_path: Path) -> None:
    with OpenAICompatServer(chat_reply="57") as server:
        env = _env(
            kb,
            tmp_path,
            UNIVERSALRAG_LLM_MODEL="test-model",
            UNIVERSALRAG_LLM_BASE_URL=server.base_url,
            UNIVERSALRAG_LLM_API_KEY="test",
        )
        result = runner.invoke(
            app,
            ["eval", "rag", "--data", str(_data(kb, tmp_path)), "-s", "oracle", "-s", "none"],
            env=env,
            prog_name="universalrag",
        )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split("\t") == [
        "strategy",
        "recall",
        "mrr",
        "routing_accuracy",
        "exact_match",
        "f1",
        "rouge_l",
        "p50_ms",
    ]
    oracle = dict(zip(lines[0].split("\t"), lines[1].split("\t"), strict=True))
    assert oracle["strategy"] == "oracle" and float(oracle["recall"]) == 1.0
    assert float(oracle["exact_match"]) == pytest.approx(0.5)  # tables right ("57"), none wrong; 2 sources


def test_cli_bad_input(kb: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "ok"}\n{"query": "x", "evidence": [{"uri": "a", "table": "two"}]}\n', encoding="utf-8")
    result = runner.invoke(app, ["eval", "rag", "--data", str(bad)], env=_env(kb, tmp_path), prog_name="universalrag")
    assert result.exit_code == 1 and "line 2" in result.stderr and "0-based index" in result.stderr
    data = _data(kb, tmp_path)
    result = runner.invoke(
        app, ["eval", "rag", "--data", str(data), "-s", "telepathy"], env=_env(kb, tmp_path), prog_name="universalrag"
    )
    assert result.exit_code == 1 and "Unknown strategy 'telepathy'" in result.stderr
    result = runner.invoke(
        app,
        ["eval", "rag", "--data", str(data), "--plot", str(tmp_path / "x.jpg")],
        env=_env(kb, tmp_path),
        prog_name="universalrag",
    )
    assert result.exit_code == 1 and "ending in .png" in result.stderr
    assert read_examples(data)  # the good file reads


def test_the_unified_index_is_rebuilt_when_the_corpora_change(kb: Any) -> None:
    index = UnifiedIndex(kb.store, kb.embedder)
    before = index.build()
    kb.ingest([DATA / "corpus" / "st_aldric_organ.md"])
    after = UnifiedIndex(kb.store, kb.embedder).build()
    assert after.built and after.rows > before.rows
    assert after.corpora["paragraph"][0] > before.corpora["paragraph"][0]
    hits = UnifiedIndex(kb.store, kb.embedder).search(kb.embedder.embed_query("St Aldric church organ pipes"), k=3)
    assert any(h.uri and h.uri.endswith("st_aldric_organ.md") for h in hits)


def test_a_file_replaced_with_as_many_units_rebuilds_the_unified_index(kb: Any, tmp_path: Path) -> None:
    """Same row counts, new unit ids: the shared index must not keep searching the replaced units (it did when
    only the counts were compared, and every hit of a re-ingested corpus then missed its gold)."""
    note = tmp_path / "ferry_note.txt"
    note.write_text(
        "The harbour ferry timetable changed in March: crossings now leave every forty minutes.\n", encoding="utf-8"
    )
    assert kb.ingest([note]).ok
    first = UnifiedIndex(kb.store, kb.embedder).build()
    assert not UnifiedIndex(kb.store, kb.embedder).build().built  # unchanged: reused
    note.write_text("The glacier front retreated by forty metres over the summer of the survey.\n", encoding="utf-8")
    assert kb.ingest([note]).ok
    again = UnifiedIndex(kb.store, kb.embedder)
    state = again.build()
    assert state.built and state.corpora == first.corpora  # as many rows as before, rebuilt all the same
    hits = again.search(kb.embedder.embed_query("how far did the glacier front retreat"), k=3)
    assert hits and "glacier" in hits[0].content
    current = kb.retrieve("how far did the glacier front retreat", routes=[hits[0].corpus], k=3)
    assert hits[0].id in {h.id for h in current}
    kb.store.delete_source(str(note))


def test_cli_reads_evidence_paths_relative_to_the_current_folder_and_warns_about_missing_ones(
    kb: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data file kept in its own folder whose evidence paths are written from the current folder: they are
    matched against the ingested sources there, and evidence naming no ingested file is warned about once (on
    stderr: stdout stays the JSON report) instead of silently scoring 0."""
    monkeypatch.chdir(kb.folder.parent)
    questions = tmp_path / "eval" / "questions.jsonl"
    questions.parent.mkdir()
    rows = [
        {"query": q["question"], "routes": ["paragraph"], "evidence": [f"{kb.folder.name}/{q['file']}"]}
        for q in QUESTIONS
        if q["file"] == "apollo_11.txt"
    ][:2]
    rows.append(
        {
            "query": "Who designed the lighthouse?",
            "routes": ["paragraph"],
            "evidence": [f"{kb.folder.name}/no_such_file.md", "not-ingested.txt"],
        }
    )
    questions.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = runner.invoke(
        app,
        ["eval", "rag", "--data", str(questions), "--json", "-s", "oracle"],
        env=_env(kb, tmp_path),
        prog_name="universalrag",
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["strategies"]["oracle"]["overall"]["recall"] == pytest.approx(2 / 3, abs=1e-3)  # cwd-relative: hit
    assert report["notes"]["unmatched_evidence"] == {
        "questions": 1,
        "items": [f"{kb.folder.name}/no_such_file.md", "not-ingested.txt"],
        "lines": [3],
    }
    assert result.stderr.count("warning:") == 1
    assert "1 of 3 questions names no ingested source" in result.stderr and "no_such_file.md" in result.stderr
    # all matched: no warning, no note
    questions.write_text("\n".join(json.dumps(r) for r in rows[:2]) + "\n", encoding="utf-8")
    result = runner.invoke(
        app,
        ["eval", "rag", "--data", str(questions), "--json", "-s", "oracle"],
        env=_env(kb, tmp_path),
        prog_name="universalrag",
    )
    assert result.exit_code == 0 and "warning" not in result.stderr
    assert json.loads(result.stdout)["strategies"]["oracle"]["overall"]["recall"] == 1.0


def test_evidence_is_read_against_the_data_folder_first() -> None:
    """Both readings name an ingested source: the data file's folder wins (the documented rule)."""
    from universalrag.eval.data import check_evidence

    base = Path("/srv/data/eval")
    example = examples_from([{"query": "q", "evidence": ["docs/a.csv"]}], base=base)[0]
    here = (Path.cwd() / "docs/a.csv").resolve().as_uri()
    there = (base / "docs/a.csv").resolve().as_uri()
    assert check_evidence([example], {here, there}).examples[0].evidence[0].uri == there
    assert check_evidence([example], {here}).examples[0].evidence[0].uri == here
    check = check_evidence([example], set())
    assert check.unmatched and check.examples[0].evidence[0].uri == there
