"""A user-defined corpus becomes routable without retraining, through example queries registered with it."""

from __future__ import annotations

import json

from conftest import DATA
from typer.testing import CliRunner

from universalrag.cli import app
from universalrag.pipeline import UniversalRAG


def test_a_corpus_created_with_examples_receives_its_questions(cli_env: dict[str, str], settings, minilm) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    created = runner.invoke(
        app,
        [
            "corpora",
            "create",
            "baking",
            "--modality",
            "text",
            "--granularity",
            "paragraph",
            "--description",
            "Home baking notes: bread, sourdough starters, dough, ovens",
            "--example",
            "How long should sourdough dough rise before baking?",
            "--example",
            "What flour is best for bread?",
            "--example",
            "How do I feed my starter?",
        ],
        env=cli_env,
    )
    assert created.exit_code == 0, created.stderr
    listed = json.loads(runner.invoke(app, ["corpora", "list", "--json"], env=cli_env).stdout)
    assert any(c["name"] == "baking" for c in listed)

    rag = UniversalRAG(settings=settings, embedder=minilm, generator=None, visual_encoder=None)
    assert rag.ingest([DATA / "corpus" / "sourdough_baking.md"], corpus="baking").ok
    assert rag.ingest([DATA / "corpus" / "apollo_11.txt"]).ok

    baking = rag.route("How often should I feed a sourdough starter kept in the fridge?")
    assert baking.routes[0] == "baking" and "baking" in baking.scores
    assert baking.router == "evidence(trained)"
    assert baking.evidence["baking"]["examples"] > baking.evidence["paragraph"]["examples"]
    moon = rag.route("Who was the first person to walk on the Moon?")
    assert moon.routes[0] in {"paragraph", "document"}
    hits = rag.retrieve("How often should I feed a sourdough starter kept in the fridge?", k=2)
    assert hits and all(h.corpus == "baking" for h in hits[:1])
    rag.close()
