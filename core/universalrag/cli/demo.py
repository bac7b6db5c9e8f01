"""``demo``: build a small knowledge base offline and answer questions from it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from .app import CliContext, console
from .output import ingest_progress, print_hits, print_json, print_report

__all__ = ["DEMO_SCHEMA", "register"]

DEMO_SCHEMA = "universalrag_demo"


def _demo_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "demo"


def demo(
    ctx: typer.Context,
    k: int = typer.Option(1, "-k", min=1, max=10, help="Evidence shown per question."),
    as_json: bool = typer.Option(False, "--json", help="Print questions and hits as JSON."),
    demo_schema: str = typer.Option(DEMO_SCHEMA, "--demo-schema", help="Schema the demo builds its knowledge "
                                    "base in (kept apart from your own corpora)."),
) -> None:
    """Build a small knowledge base in its own schema (embedded Postgres, bundled encoder, no network) and
    answer one question per document from it. Running it again re-ingests nothing."""
    from ..ingest.pipeline import ingest_paths
    from ..retrieve import search_corpus

    root: CliContext = ctx.find_root().obj
    obj = CliContext(root.settings.with_(schema=demo_schema), debug=root.debug)
    ctx.call_on_close(obj.close)
    started = time.perf_counter()
    obj.ensure_initialised()
    with ingest_progress(enabled=not as_json) as bar:
        report = ingest_paths(obj.store, obj.embedder, [_demo_dir() / "texts"], on_start=bar.on_start,
                              on_file=bar.on_file)
    if not as_json:
        print_report(report)
    questions = json.loads((_demo_dir() / "questions.json").read_text(encoding="utf-8"))
    results = []
    for item in questions:
        hits = search_corpus(obj.store, obj.embedder, "paragraph", item["question"], k=k)
        results.append({"question": item["question"], "hits": [h.to_dict() for h in hits]})
        if not as_json:
            console.print()
            print_hits(hits, title=f"Q: {item['question']}")
    elapsed = time.perf_counter() - started
    if as_json:
        print_json({"schema": demo_schema, "ingest": report.to_dict(), "results": results,
                    "seconds": round(elapsed, 2)})
    else:
        console.print(f"\n[dim]demo schema {demo_schema!r} on {obj.store.url_redacted}; {elapsed:.1f} s. "
                      "Answers are the retrieved evidence: no language model is configured.[/]")
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the root app."""
    app.command()(demo)
