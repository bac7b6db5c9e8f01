"""The ``route`` command and ``router train`` / ``router eval``, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from universalrag.routing import EVAL_KEYS, bundled_heldout

runner = CliRunner()


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    """The real `universalrag` command (its root turns library errors into one line)."""
    from universalrag.cli import app as root

    return root


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_route_json_and_text(app: typer.Typer) -> None:
    res = runner.invoke(app, ["route", "What does a snow leopard look like?", "--prior", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert list(out) == ["query", "routes", "scores", "router", "latency_ms"]
    assert out["routes"][0] == "image" and out["router"] == "trained"
    res = runner.invoke(app, ["route", "What is 7 times 8?", "--prior", "--candidates", "table,image"])
    assert res.exit_code == 0 and "none" in res.stdout


def test_route_llm_over_local_server(app: typer.Typer) -> None:
    from tests.support.openai_server import OpenAICompatServer

    with OpenAICompatServer(chat_reply='{"routes": ["clip"]}') as srv:
        res = runner.invoke(
            app,
            [
                "route",
                "the moment when he falls",
                "--router",
                "llm",
                "--json",
                "--llm-model",
                "m",
                "--llm-url",
                srv.base_url,
                "--llm-key",
                "sk-hidden",
            ],
        )
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["routes"] == ["clip"]
        srv.status = 500
        res = runner.invoke(
            app,
            ["route", "q", "--router", "llm", "--llm-model", "m", "--llm-url", srv.base_url, "--llm-key", "sk-hidden"],
        )
    # a failing model: the trained router decides instead, and the CLI says so
    assert res.exit_code == 0, res.output
    assert "llm->trained" in res.output and "HTTP 500" in res.output
    assert "Traceback" not in res.output and "sk-hidden" not in res.output


def test_eval_json_has_exactly_the_specified_keys(app: typer.Typer, tmp_path: Path) -> None:
    rows = [{"query": r.query, "routes": list(r.routes), "source": r.source} for r in bundled_heldout()[::6]]
    data = _write(tmp_path / "eval.jsonl", rows)
    res = runner.invoke(app, ["router", "eval", "--data", str(data), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert tuple(report) == EVAL_KEYS
    assert report["n"] == len(rows) and set(report["latency_ms"]) == {"p50", "p95"}
    assert 0.0 <= report["accuracy"] <= 1.0 and report["macro_accuracy"] > 0.5
    assert set(report["per_source"]) == {r["source"] for r in rows}
    assert sum(sum(c.values()) for c in report["confusion"].values()) == len(rows)
    res = runner.invoke(app, ["router", "eval", "--data", str(data), "--val-split", "0.5"])
    assert res.exit_code == 0 and "per source" in res.stdout


def test_train_prints_per_source_and_per_route(app: typer.Typer, tmp_path: Path) -> None:
    rows = [{"query": r.query, "routes": list(r.routes), "source": r.source} for r in bundled_heldout()]
    data = _write(tmp_path / "train.jsonl", rows)
    out = tmp_path / "model"
    res = runner.invoke(
        app,
        [
            "router",
            "train",
            "--data",
            str(data),
            "--out",
            str(out),
            "--mode",
            "frozen",
            "--epochs",
            "10",
            "--val-split",
            "0.25",
            "--no-own-queries",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "per source" in res.stdout and "per route" in res.stdout and "heldout_clip" in res.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["mode"] == "frozen" and "validation" in config["metrics"]
    res = runner.invoke(app, ["route", "show me a picture of a heron", "--model", str(out), "--json"])
    assert res.exit_code == 0, res.output


def test_errors_are_one_line(app: typer.Typer, tmp_path: Path) -> None:
    res = runner.invoke(app, ["router", "eval", "--data", str(tmp_path / "missing.jsonl"), "--json"])
    assert res.exit_code == 1 and "Cannot read routing data" in res.output and "Traceback" not in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    res = runner.invoke(app, ["router", "train", "--data", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "bad.jsonl:1" in res.output
    res = runner.invoke(app, ["route", "q", "--router", "llm"])
    assert res.exit_code == 1 and "--llm-model" in res.output
    res = runner.invoke(app, ["route", "q", "--router", "magic"])
    assert res.exit_code == 1 and "Unknown router" in res.output
