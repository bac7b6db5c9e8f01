"""The ``route`` command and the ``router`` sub-commands (``train``, ``eval``).

universalrag route "QUERY" [--router trained|llm|ensemble|examples] [--json]
universalrag router train --data FILE.jsonl [--out DIR] [--val-split 0.1] [--epochs N]
universalrag router eval --data FILE.jsonl [--router ...] [--val-split F] --json
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from ..errors import ConfigError
from .context import CliContext, Output
from .output import warnings_shown
from .query_input import QueryArg, QueryFileOpt, read_query
from .routers import (
    PRIOR_ONLY_NOTE,
    LLMKeyOpt,
    LLMModelOpt,
    LLMUrlOpt,
    ModelDirOpt,
    NoServerOpt,
    RouterOpt,
    RouterOptions,
    TauOpt,
    ThresholdOpt,
    TimeoutOpt,
    router_for,
    routes_as_search,
    searches_with_evidence,
)

__all__ = ["register"]


def _obj(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj


def _progress(out: Output) -> Any:
    """A transient progress bar on stderr; disabled unless stdout is a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out.err,
        transient=True,
        disable=not out.terminal,
    )


def _accuracy_table(title: str, values: Mapping[str, float], counts: Mapping[str, int] | None = None) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("name")
    table.add_column("accuracy", justify="right")
    if counts:
        table.add_column("n", justify="right")
    for name, acc in values.items():
        row: list[Any] = [Text(name), f"{acc:.1%}"] + ([str(counts.get(name, ""))] if counts else [])
        table.add_row(*row)  # source names come from the user's data: never markup
    return table


def _print_report(out: Output, report: Mapping[str, Any], *, heading: str) -> None:
    out.print(
        f"[bold]{heading}[/]: n={report['n']}  accuracy={report['accuracy']:.1%}  "
        f"macro={report['macro_accuracy']:.1%}  exact set={report['exact_set']:.1%}  "
        f"latency p50={report['latency_ms']['p50']:.1f} ms p95={report['latency_ms']['p95']:.1f} ms"
    )
    out.print(_accuracy_table("per source", report["per_source"]))
    out.print(_accuracy_table("per route (gold primary)", report["per_route"]))


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _evaluate(out: Output, router: Any, rows: list[Any], label: str) -> dict[str, Any]:
    from ..routing import evaluate

    with _progress(out) as bar:
        task = bar.add_task(label, total=len(rows))
        return evaluate(router, rows, progress=lambda done, total: bar.update(task, completed=done))


def register(app: typer.Typer) -> None:
    """Add ``route`` and the ``router`` sub-app (``train``, ``eval``) to ``app``."""
    router_app = typer.Typer(help="Train and evaluate routers.", no_args_is_help=True, rich_markup_mode=None)

    @app.command("route")
    def route(
        ctx: typer.Context,
        query: QueryArg = None,
        query_file: QueryFileOpt = None,
        bound: bool = typer.Option(
            False, "--bound", help="Choose only among the database's corpora that hold rows (plus none)."
        ),
        router: RouterOpt = "trained",
        as_json: bool = typer.Option(False, "--json", help="Print the decision as JSON."),
        evidence: bool | None = typer.Option(
            None,
            "--evidence/--prior",
            help="--evidence (the default with the shipped trained router): the decision "
            "`search` makes, from the router's prior, probes of your corpora and the combiner. --prior: the "
            "question-only prior, which never looks at your corpora.",
        ),
        candidates: str | None = typer.Option(None, "--candidates", help="Comma-separated routes to choose from."),
        model_dir: ModelDirOpt = None,
        threshold: ThresholdOpt = None,
        llm_model: LLMModelOpt = None,
        llm_url: LLMUrlOpt = None,
        llm_key: LLMKeyOpt = None,
        timeout: TimeoutOpt = 30.0,
        tau: TauOpt = 0.9,
        no_server: bool = NoServerOpt,
    ) -> None:
        """Route a query: which corpora should be searched for it (the argument, '-' for standard input, or
        --query-file). By default the decision search makes (prior, probes of your corpora, combiner); --prior
        shows the router's question-only prior."""
        obj = _obj(ctx)
        query = read_query(query, query_file, served=obj.served)
        opts = RouterOptions(model_dir, threshold, llm_model, llm_url, llm_key, timeout, tau)
        chosen = _csv(candidates)
        if bound:
            from ..retrieve import routing_candidates

            obj.ensure_initialised()
            available = routing_candidates(obj.store)
            chosen = [c for c in available if chosen is None or c in chosen]
        as_search = searches_with_evidence(router, opts)
        if evidence and not as_search:
            raise ConfigError(
                "--evidence shows the decision search makes, with the default trained router; drop "
                "--router, --model and --threshold, or drop --evidence."
            )
        evidence = as_search if evidence is None else evidence
        with warnings_shown(obj.output):
            if evidence:
                obj.ensure_initialised()
                decision = routes_as_search(obj, query, chosen)
            else:
                decision = router_for(obj, router, opts).route(query, candidates=chosen)
        out = obj.output
        if as_json:
            out.line(json.dumps({"query": query, **decision.to_dict()}, ensure_ascii=False))
            return
        how = (
            "with the probes of your corpora, as search"
            if evidence
            else "question-only prior, your corpora not looked at"
            if as_search
            else "from the question alone"
        )
        out.print(
            Text.assemble(
                ("none" if decision.fallback else ", ".join(decision.routes), "bold"),
                f"  ({decision.router}, {decision.latency_ms:.1f} ms; {how})",
            )
        )
        if decision.fallback:  # as search: `none` concluded, the likeliest corpora searched all the same
            searched = ", ".join(decision.routes)
            out.print(
                Text(
                    f"  nothing in your corpora looked relevant; search still searches {searched}, and ask "
                    "answers without retrieval",
                    "dim",
                )
            )
        ranked = sorted(decision.scores.items(), key=lambda kv: -kv[1])
        if not out.terminal:
            for name, score in ranked:
                out.line(f"{name}\t{score:.3f}")
            return
        from rich.table import Table

        table = Table("route", "score")
        for name, score in ranked:
            table.add_row(name, f"{score:.3f}")
        out.print(table)

    @router_app.command("train")
    def train(
        ctx: typer.Context,
        data: Path = typer.Option(..., "--data", help="Labelled queries (JSON lines: query, routes, source)."),
        out_dir: Path = typer.Option(Path("universalrag-router"), "--out", help="Directory for the trained router."),
        val_split: float = typer.Option(0.1, "--val-split", help="Share of each source held out for validation."),
        epochs: int | None = typer.Option(None, "--epochs", help="Training epochs (default: per mode)."),
        mode: str = typer.Option("finetune", "--mode", help="finetune (layers + head) or frozen (head only)."),
        layers: int = typer.Option(6, "--layers", help="finetune: how many top transformer layers to train."),
        seed: int = typer.Option(0, "--seed", help="Random seed (split, initialisation, batches)."),
        own_queries: bool = typer.Option(
            True, "--own-queries/--no-own-queries", help="Add the project's own queries to the training data."
        ),
        threads: int | None = typer.Option(None, "--threads", help="torch threads (default: torch's choice)."),
        as_json: bool = typer.Option(False, "--json", help="Print the validation report as JSON."),
    ) -> None:
        """Train a router and print its validation accuracy per source and per route."""
        from ..routing import TrainedRouter, bundled_heldout, bundled_queries, read_jsonl, split_by_source
        from ..routing.trained_router import annotate_artefact
        from ..routing.training import TrainConfig, train_router

        cfg = TrainConfig.for_mode(
            mode, trainable_layers=layers, seed=seed, num_threads=threads, **({"epochs": epochs} if epochs else {})
        )
        out = _obj(ctx).output
        rows = read_jsonl(data)
        train_rows, val_rows = split_by_source(rows, val_fraction=val_split, seed=seed)
        if own_queries:
            train_rows += bundled_queries()
        out.err.print(
            f"training on {len(train_rows)} queries, validating on {len(val_rows)} ({cfg.mode}, {cfg.epochs} epochs)"
        )
        with _progress(out) as bar:
            tasks: dict[str, Any] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done)

            result = train_router(train_rows, config=cfg, progress=progress)
        result.save(
            out_dir, data={"file": data.name, "rows": len(rows), "val_split": val_split, "own_queries": own_queries}
        )
        router = TrainedRouter(out_dir, num_threads=threads).load()
        report: dict[str, Any] = {"out": str(out_dir), "seconds": round(result.seconds, 1)}
        if val_rows:
            report["validation"] = _evaluate(out, router, val_rows, "validating")
        report["own_heldout"] = _evaluate(out, router, bundled_heldout(), "own held-out")
        annotate_artefact(out_dir, metrics={k: v for k, v in report.items() if k not in ("out", "seconds")})
        if as_json:
            out.line(json.dumps(report, ensure_ascii=False))
            return
        out.print(Text(f"saved to {report['out']} in {result.seconds:.0f} s"))
        if "validation" in report:
            _print_report(out, report["validation"], heading="validation")
        if "own_heldout" in report:
            _print_report(out, report["own_heldout"], heading="own held-out queries")

    @router_app.command("eval")
    def evaluate_cmd(
        ctx: typer.Context,
        data: Path | None = typer.Option(None, "--data", help="Labelled queries (JSON lines)."),
        router: RouterOpt = "trained",
        val_split: float | None = typer.Option(
            None, "--val-split", help="Evaluate only the held-out part of this split (as in train)."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed of that split."),
        heldout: bool = typer.Option(False, "--own-heldout", help="Evaluate on the project's held-out queries."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        model_dir: ModelDirOpt = None,
        threshold: ThresholdOpt = None,
        llm_model: LLMModelOpt = None,
        llm_url: LLMUrlOpt = None,
        llm_key: LLMKeyOpt = None,
        timeout: TimeoutOpt = 30.0,
        tau: TauOpt = 0.9,
    ) -> None:
        """Evaluate a router: accuracy (primary route among the gold routes), per route, per source, latency — of
        its question-only prior (`eval rag -s routed` measures routing as search does it, with your corpora)."""
        from ..routing import bundled_heldout, read_jsonl, split_by_source

        if (data is None) == (not heldout):
            raise ConfigError("Pass either --data FILE.jsonl or --own-heldout.")
        rows = bundled_heldout() if heldout else read_jsonl(data)  # type: ignore[arg-type]
        if val_split is not None:
            rows = split_by_source(rows, val_fraction=val_split, seed=seed)[1]
            if not rows:
                raise ConfigError(f"The split {val_split} holds out no rows; use a larger --val-split.")
        opts = RouterOptions(model_dir, threshold, llm_model, llm_url, llm_key, timeout, tau)
        obj = _obj(ctx)
        report = _evaluate(obj.output, router_for(obj, router, opts), rows, f"evaluating {router}")
        if as_json:
            obj.output.line(json.dumps(report, ensure_ascii=False))
            return
        _print_report(obj.output, report, heading=f"{router} router ({PRIOR_ONLY_NOTE})")

    from . import feedback

    feedback.register(router_app)  # noqa: E702 - `router feedback` and `router adapt`
    app.add_typer(router_app, name="router")
