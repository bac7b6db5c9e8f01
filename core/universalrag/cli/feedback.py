"""``universalrag router feedback`` and ``universalrag router adapt``: learning routing from the user's content.

universalrag router feedback (DECISION_ID | "QUERY") --route table [--route paragraph]
universalrag router adapt [--per-corpus 20] [--holdout 0.25] [--seed 0] [--force] [--json]
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import typer

from ..errors import ConfigError

__all__ = ["register"]


def _root(ctx: typer.Context) -> Any:
    root = ctx.find_root().obj
    if root is None:
        raise ConfigError("Run this through the `universalrag` command.")
    root.ensure_initialised()
    return root


def _rag(root: Any) -> Any:
    """The invocation's pipeline (``CliContext.rag`` is a property on newer contexts, a method on older ones)."""
    rag = root.rag
    return rag() if callable(rag) else rag


def _synthesize(rag: Any, per_corpus: int, seed: int) -> list[Any]:
    try:
        synth = importlib.import_module("universalrag.routing.synth")
    except ModuleNotFoundError as e:
        raise ConfigError("Query synthesis (universalrag.routing.synth) is not available in this version; "
                          "adapt from Python with UniversalRAG.adapt_router(examples).") from e
    return list(synth.synthesize_queries(rag.store, per_corpus=per_corpus, seed=seed))


def register(router_app: typer.Typer) -> None:
    """Add ``feedback`` and ``adapt`` to the ``router`` sub-app."""

    @router_app.command("feedback")
    def feedback(
        ctx: typer.Context,
        decision: str = typer.Argument(..., help="A logged decision's id, or the query (its latest decision)."),
        route: list[str] = typer.Option(..., "--route", help="The right route (repeat for several; 'none')."),
    ) -> None:
        """Mark a routing decision wrong and give the right route; `router adapt` learns from it."""
        rag = _rag(_root(ctx))
        decision_id = rag.feedback(decision, route)
        rag.decision_log().flush()
        typer.echo(f"feedback recorded on decision {decision_id}: {', '.join(route)}")

    @router_app.command("adapt")
    def adapt(
        ctx: typer.Context,
        per_corpus: int = typer.Option(20, "--per-corpus", help="Training questions written per corpus."),
        holdout: float = typer.Option(0.25, "--holdout", help="Share held out to measure before/after."),
        seed: int = typer.Option(0, "--seed", help="Seed of the question sample and the split."),
        force: bool = typer.Option(False, "--force", help="Store the adapted combiner even if not better."),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    ) -> None:
        """Adapt routing to this database: questions written from your own units, plus logged feedback."""
        rag = _rag(_root(ctx))
        examples = _synthesize(rag, per_corpus, seed)
        report = rag.adapt_router(examples, holdout=holdout, seed=seed, force=force)
        data = report.to_dict()
        if as_json:
            typer.echo(json.dumps(data))
            return
        before, after = data["before"], data["after"]
        typer.echo(f"trained on {data['train']} questions ({data['feedback']} from feedback), "
                   f"held out {data['heldout']}")
        if before:
            typer.echo(f"held-out accuracy: {before['accuracy']:.1%} before, {after['accuracy']:.1%} after; "
                       f"false none {before['false_none']:.1%} → {after['false_none']:.1%}")
        typer.echo("stored as this database's router" if data["saved"] else "not stored (not better; --force)")
