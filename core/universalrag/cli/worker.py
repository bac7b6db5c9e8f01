"""``universalrag worker``: embed the sync queue (tables attached with ``attach_table``, units queued from SQL)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from .context import CliContext

__all__ = ["register", "worker"]


def worker(
    ctx: typer.Context,
    once: bool = typer.Option(False, "--once", help="Drain the queue and exit (cron and CI friendly)."),
    batch: int = typer.Option(128, "--batch", min=1, help="Units claimed and embedded per batch."),
    corpus: list[str] = typer.Option([], "--corpus", help="Only this corpus (repeatable; default: all)."),
    files_root: list[Path] = typer.Option(
        [],
        "--files-root",
        help="A folder whose files path columns may name "
        "(repeatable; relative paths start at the first). No files are read "
        "without one.",
    ),
    allow_urls: bool = typer.Option(False, "--allow-urls", help="Fetch http(s) URLs named by path columns."),
    max_attempts: int = typer.Option(5, "--max-attempts", min=1, help="Failures before an item is parked."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary per batch."),
) -> None:
    """Embed queued units in batches; without --once, wait for new ones (LISTEN/NOTIFY) until interrupted."""
    from ..sync import BatchResult, Worker, WorkerOptions

    obj: CliContext = ctx.find_root().obj
    obj.ensure_initialised()
    out = obj.output
    rag = obj.rag
    options = WorkerOptions(
        batch_size=batch,
        max_attempts=max_attempts,
        corpora=tuple(corpus),
        file_roots=tuple(files_root),
        allow_urls=allow_urls,
    )

    def report(result: BatchResult) -> None:
        if as_json:
            out.json(result.to_dict())
            return
        out.print(
            f"batch: {result.written} written, {result.removed} removed, {result.failed} failed"
            f"{f' ({result.parked} parked)' if result.parked else ''}",
            soft_wrap=True,
        )
        for error in result.errors[:5]:
            out.print(f"  [red]error[/] {escape(str(error))}", soft_wrap=True)

    stop = threading.Event()

    def on_signal(*_: Any) -> None:
        stop.set()

    with Worker(rag.store, embedder=rag.embedder, visual_encoder=rag.visual_encoder, options=options) as w:
        if once:
            total = w.drain(on_batch=report)
            if as_json:
                out.json({"total": total.to_dict()})
            else:
                out.print(
                    f"done: {total.written} written, {total.removed} removed, {total.failed} failed, "
                    f"{total.parked} parked"
                )
            return
        previous = signal.signal(signal.SIGTERM, on_signal)
        try:
            out.print("worker: waiting for queued units (Ctrl-C to stop)")
            w.run(stop=stop, on_batch=report)
        except KeyboardInterrupt:
            stop.set()
        finally:
            signal.signal(signal.SIGTERM, previous)


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the root app."""
    app.command()(worker)
