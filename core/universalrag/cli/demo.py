"""``demo``: build a small multimodal knowledge base offline and ask one question per route."""

from __future__ import annotations

import time
from typing import Any

import typer
from rich.text import Text

from .context import CliContext
from .output import IngestProgress, print_decision, print_hits, print_report

__all__ = ["register"]


def demo(
    ctx: typer.Context,
    k: int = typer.Option(1, "-k", min=1, max=10, help="Evidence shown per question."),
    as_json: bool = typer.Option(False, "--json", help="Print the questions, decisions, hits and answers as JSON."),
    demo_schema: str | None = typer.Option(
        None,
        "--demo-schema",
        help="Schema the demo builds its knowledge "
        "base in, kept apart from your own corpora (default: universalrag_demo).",
    ),
) -> None:
    """Build a knowledge base of documents, tables, photographs and a subtitled video (embedded Postgres,
    bundled encoder, no network), then ask one question per route: none, paragraph, document, table, image,
    clip, video. Running it again re-ingests nothing."""
    from ..demo import demo_questions, open_demo
    from ..demo.open import DEMO_SCHEMA

    demo_schema = demo_schema or DEMO_SCHEMA
    root: CliContext = ctx.find_root().obj
    obj = root.with_settings(root.settings.with_(schema=demo_schema))
    out = obj.output
    started = time.perf_counter()
    folder = obj.settings.home_dir / "demo" / demo_schema
    progress = IngestProgress(out, quiet=as_json)
    with progress:
        rag, report = open_demo(rag=obj.rag, on_start=progress.on_start, on_file=progress.on_file, strict=False)
    if not as_json:
        print_report(out, report)
    results: list[dict[str, Any]] = []
    for item in demo_questions():
        answer = rag.query(item.question, k=k)
        results.append({"question": item.question, "expected_route": item.route, **answer.to_dict()})
        if not as_json:
            out.print(Text.assemble("\n", (f"Q ({item.route}):", "bold"), f" {item.question}"))
            print_decision(out, answer.decision)
            if answer.hits:
                print_hits(out, answer.hits[:k])
            if answer.text is not None:
                out.print(Text.assemble("  ", ("answer", "bold"), f" {answer.text}"), soft_wrap=True)
    elapsed = time.perf_counter() - started
    if as_json:
        out.json({"schema": demo_schema, "ingest": report.to_dict(), "results": results, "seconds": round(elapsed, 2)})
    else:
        model = obj.settings.llm_model
        note = (
            f"answers by {model}"
            if model
            else "no language model is configured, so each question shows "
            "its evidence; set UNIVERSALRAG_LLM_MODEL (and UNIVERSALRAG_LLM_BASE_URL) for answers"
        )
        out.print(
            Text(
                f"\ndemo schema {demo_schema!r} on {obj.store.url_redacted}; files in {folder}; "
                f"{elapsed:.1f} s; {note}.",
                style="dim",
            ),
            soft_wrap=True,
        )
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the root app."""
    app.command()(demo)
