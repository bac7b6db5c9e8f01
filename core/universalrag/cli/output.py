"""Rendering helpers shared by the commands: JSON to stdout, hits and reports as rich tables."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..ingest.pipeline import FileOutcome, IngestReport
from ..types import Hit, Modality, RouteDecision
from .app import console

__all__ = ["ingest_progress", "print_hits", "print_json", "print_report", "snippet"]


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def snippet(text: str, width: int = 220) -> str:
    """The first ``width`` characters of ``text`` on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _span(hit: Hit) -> str:
    if hit.start_s is None and hit.end_s is None:
        return ""
    return f" [{hit.start_s or 0:.1f}s–{hit.end_s or 0:.1f}s]"


def print_hits(hits: Sequence[Hit], *, title: str | None = None) -> None:
    """Hits as a numbered list with score, corpus, title/uri and a snippet."""
    if title:
        console.print(f"[bold]{title}[/]")
    if not hits:
        console.print("  (no results)")
        return
    for i, hit in enumerate(hits, 1):
        label = snippet(str(hit.metadata.get("title") or hit.uri or hit.id), 80)
        console.print(f"  {i}. [cyan]{hit.score:.3f}[/] [magenta]{hit.corpus}[/]{_span(hit)} [bold]{label}[/]")
        if hit.matched_parts and hit.modality is Modality.TABLE:
            index, text, _score = hit.matched_parts[0]
            console.print(f"     matched row {index + 1}: {snippet(text)}", soft_wrap=True)
        else:
            console.print(f"     {snippet(hit.content)}", soft_wrap=True)


def print_decision(decision: RouteDecision) -> None:
    """The routes chosen and the probability of each candidate, best first."""
    ranked = sorted(decision.scores.items(), key=lambda kv: -kv[1])
    scores = ", ".join(f"{name} {p:.2f}" for name, p in ranked if p >= 0.01 or name in decision.routes)
    console.print(f"[bold]route[/] [magenta]{' + '.join(decision.routes)}[/] [dim]({decision.router}, "
                  f"{decision.latency_ms:.0f} ms{'; ' + scores if scores else ''})[/]", soft_wrap=True)


def print_report(report: IngestReport) -> None:
    """The end-of-run summary: counts, rows per corpus, and every failure with its reason."""
    summary = report.to_dict()
    table = Table(title="ingest summary", show_header=False, box=None)
    for key in ("added", "replaced", "unchanged"):
        table.add_row(key, str(summary[key]))
    table.add_row("failed", str(len(report.failed)))
    for corpus, n in summary["rows"].items():  # type: ignore[union-attr]
        table.add_row(f"rows → {corpus}", str(n))
    console.print(table)
    for outcome in report.failed:
        console.print(f"[red]failed[/] {outcome.path}: {outcome.error}", soft_wrap=True)


class ingest_progress:
    """A progress bar fed by ``ingest_paths``'s ``on_start``/``on_file`` callbacks."""

    def __init__(self, *, enabled: bool = True) -> None:
        self._progress = Progress(
            TextColumn("[bold]ingest[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"), console=console, disable=not enabled, transient=False,
        )
        self._task: Any = None

    def __enter__(self) -> ingest_progress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)  # type: ignore[arg-type]

    def on_start(self, total: int) -> None:
        self._task = self._progress.add_task("", total=total)

    def on_file(self, outcome: FileOutcome) -> None:
        self._progress.update(self._task, advance=1, description=f"{outcome.status}: {outcome.path}")
