"""The ``eval`` sub-commands: ``eval rag`` compares retrieval strategies (and answers, with a chat model) on
questions with gold answers, routes and evidence.

universalrag eval rag --data FILE.jsonl [--strategy S ...] [-k K] [--json] [--plot PNG] [--evidence-only]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from .context import CliContext, Output

if TYPE_CHECKING:
    from ..eval.data import EvidenceCheck

__all__ = ["register"]

_DEFAULT = ("routed", "unified", "all", "oracle", "random", "none")
_LABELS = {
    "recall": "recall@{k}",
    "mrr": "MRR",
    "routing_accuracy": "routing",
    "exact_match": "EM",
    "f1": "F1",
    "rouge_l": "ROUGE-L",
    "choice_accuracy": "MC acc",
}


def _progress(out: Output) -> Any:
    """One bar per strategy on stderr (a terminal only)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    return Progress(*columns, console=out.err, transient=True, disable=not out.terminal)


def _table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    metrics = report["metrics"]
    table = Table(
        title=f"{report['questions']} questions, k={report['k']}"
        + (f", answers by {report['generator']}" if report["generator"] else ", evidence only"),
        title_justify="left",
    )
    table.add_column("strategy")
    for m in metrics:
        table.add_column(_LABELS.get(m, m).format(k=report["k"]), justify="right")
    table.add_column("p50 ms", justify="right")
    for name, summary in report["strategies"].items():
        cells = [f"{summary['overall'][m]:.3f}" if m in summary["overall"] else "-" for m in metrics]
        p50 = summary["latency_ms"].get("total", {}).get("p50")
        table.add_row(Text(name), *cells, "-" if p50 is None else f"{p50:.1f}")
    return table


def _per_source(report: dict[str, Any]) -> Any:
    from rich.table import Table

    metrics = report["metrics"]
    table = Table(title="per source", title_justify="left")
    table.add_column("strategy")
    table.add_column("source")
    for m in metrics:
        table.add_column(_LABELS.get(m, m).format(k=report["k"]), justify="right")
    for name, summary in report["strategies"].items():
        for source, values in summary["per_source"].items():
            table.add_row(Text(name), Text(source), *[f"{values[m]:.3f}" if m in values else "-" for m in metrics])
    return table


def _plain(out: Output, report: dict[str, Any]) -> None:
    metrics = report["metrics"]
    out.line("\t".join(["strategy", *metrics, "p50_ms"]))
    for name, summary in report["strategies"].items():
        p50 = summary["latency_ms"].get("total", {}).get("p50", 0.0)
        out.line("\t".join([name, *(f"{summary['overall'].get(m, float('nan')):.4f}" for m in metrics), f"{p50:.1f}"]))


def _warn_unmatched(out: Output, check: EvidenceCheck) -> None:
    """One warning on stderr (stdout stays the report, valid JSON with --json) when some questions' gold
    evidence is not in the database: their recall and MRR of 0 would otherwise look like a retrieval failure."""
    message = check.warning()
    if message is not None:
        out.error(message, label="warning")


def register(app: typer.Typer) -> None:
    """Add the ``eval`` sub-app (``rag``) to ``app``."""
    eval_app = typer.Typer(help="Evaluate retrieval-augmented generation.", no_args_is_help=True, rich_markup_mode=None)

    @eval_app.command("rag")
    def rag_cmd(
        ctx: typer.Context,
        data: Path = typer.Option(
            ...,
            "--data",
            help="Questions (JSON lines: query, answer, routes, evidence, "
            "source). A relative evidence path is read against the data file's folder; when "
            "that names no ingested source but the path against the current folder does, "
            "against the current folder. Evidence naming no ingested source is warned about "
            "(on stderr) and counts as a miss.",
        ),
        strategy: list[str] = typer.Option(
            [],
            "--strategy",
            "-s",
            help="routed, unified, all, oracle, random, none or a corpus name; repeat for "
            "several (default: routed, unified, all, oracle when the data has routes, random, none).",
        ),
        k: int = typer.Option(5, "-k", "--k", help="Hits per question (recall@k, MRR)."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
        plot: Path | None = typer.Option(None, "--plot", help="Write a bar chart per strategy to this PNG file."),
        evidence_only: bool = typer.Option(
            False, "--evidence-only", help="Do not generate answers even when a chat model is configured."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of the random strategy."),
    ) -> None:
        """Compare strategies on questions with gold answers, routes or evidence (retrieval metrics; answer
        metrics too when a chat model is configured).

        Gold evidence is a unit id or a source's path or uri as ingested (`universalrag sources list`); a relative
        path is read against the data file's folder, else against the current folder when only that names an
        ingested source."""
        from ..eval import build_strategy, check_plot_target, evaluate, plot_report, read_examples
        from ..eval.runner import match_evidence
        from ..pipeline import UniversalRAG

        if plot is not None:
            check_plot_target(plot)  # before the run, not after it

        obj: CliContext = ctx.find_root().obj
        out = obj.output
        examples = read_examples(data)
        if k < 1:
            raise typer.BadParameter("k must be at least 1.", param_hint="-k")
        obj.ensure_initialised()
        check = match_evidence(obj.store, examples)
        examples = check.examples
        _warn_unmatched(out, check)
        base = obj.rag
        # its own facade over the same store and encoders: evaluation questions stay out of the routing log
        rag = UniversalRAG(
            settings=obj.settings,
            store=base.store,
            embedder=base.embedder,
            visual_encoder=base.visual_encoder,
            generator=None,
            log_decisions=False,
        )
        names = list(dict.fromkeys(strategy)) or [
            s for s in _DEFAULT if s != "oracle" or all(e.routes is not None for e in examples)
        ]
        strategies = [build_strategy(n, rag, seed=seed) for n in names]
        generator = None if evidence_only else base.generator
        with _progress(out) as bar:
            tasks: dict[str, Any] = {}

            def progress(name: str, done: int, total: int) -> None:
                if name not in tasks:
                    tasks[name] = bar.add_task(name, total=total)
                bar.update(tasks[name], completed=done)

            report = evaluate(rag, examples, strategies, k=k, generator=generator, progress=progress).to_dict()
        unified = next((s for s in strategies if s.name == "unified"), None)
        if unified is not None and getattr(unified, "index", None) is not None:
            report["notes"]["unified_index"] = unified.index.describe()  # type: ignore[attr-defined]
        if check.unmatched:
            report["notes"]["unmatched_evidence"] = check.to_dict()
        if plot is not None:
            report["plot"] = str(plot_report(report, plot))
        if as_json:
            out.json(report)
            return
        if not out.terminal:
            _plain(out, report)
            return
        out.print(_table(report))
        if len(report["sources"]) > 1:
            out.print(_per_source(report))
        if "plot" in report:
            out.print(Text(f"plot: {report['plot']}"))

    app.add_typer(eval_app, name="eval")
