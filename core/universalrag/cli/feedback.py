"""``universalrag router feedback``, ``adapt``, ``status`` and ``reset``: learning routing from the user's content,
and seeing or undoing what was learned.

universalrag router feedback (DECISION_ID | "QUERY") --route table [--route paragraph]
universalrag router adapt [--per-corpus 20] [--holdout 0.25] [--seed 0] [--force] [--json]
universalrag router status [--json]
universalrag router reset
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
        raise ConfigError(
            "Query synthesis (universalrag.routing.synth) is not available in this version; "
            "adapt from Python with UniversalRAG.adapt_router(examples)."
        ) from e
    return list(synth.synthesize_queries(rag.store, per_corpus=per_corpus, seed=seed))


def _status(rag: Any) -> dict[str, Any]:
    """Which combiner decides, the shipped one's version and the adapted one's record (``None`` when none)."""
    from ..routing.combiner import Combiner
    from ..store.routing_log import combiner_record

    record = combiner_record(rag.store)
    adapted = (
        None
        if record is None
        else {
            "version": record["version"],
            "created_at": record["created_at"].isoformat() if record["created_at"] else None,
            **{k: (record["report"] or {}).get(k) for k in ("before", "after", "train", "heldout", "feedback")},
        }
    )
    current = rag.combiner
    return {
        "combiner": current.version if current is not None else None,
        "shipped": Combiner.default().version,
        "adapted": adapted,
    }


def register(router_app: typer.Typer) -> None:
    """Add ``feedback``, ``adapt``, ``status`` and ``reset`` to the ``router`` sub-app."""

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
        typer.echo(
            f"trained on {data['train']} questions ({data['feedback']} from feedback), held out {data['heldout']}"
        )
        if before:
            typer.echo(
                f"held-out accuracy: {before['accuracy']:.1%} before, {after['accuracy']:.1%} after; "
                f"false none {before['false_none']:.1%} → {after['false_none']:.1%}"
            )
        typer.echo("stored as this database's router" if data["saved"] else "not stored (not better; --force)")

    @router_app.command("status")
    def status(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print {combiner, shipped, adapted} as JSON."),
    ) -> None:
        """Which combiner decides here: the shipped one, or one `router adapt` stored (when, and how it measured)."""
        data = _status(_rag(_root(ctx)))
        if as_json:
            typer.echo(json.dumps(data))
            return
        adapted = data["adapted"]
        if adapted is None:
            typer.echo(
                f"combiner: the shipped one ({data['shipped']}); none adapted to this database "
                "(`universalrag router adapt`)"
            )
            return
        typer.echo(
            f"combiner: {adapted['version']}, adapted to this database at {adapted['created_at']} "
            f"on {adapted['train']} questions ({adapted['feedback']} from feedback)"
        )
        before, after = adapted.get("before") or {}, adapted.get("after") or {}
        if before and after:
            typer.echo(
                f"held-out accuracy when adapted: {before['accuracy']:.1%} before, {after['accuracy']:.1%} "
                f"after ({adapted['heldout']} questions)"
            )
        typer.echo(f"`universalrag router reset` returns to the shipped combiner ({data['shipped']})")

    @router_app.command("reset")
    def reset(ctx: typer.Context) -> None:
        """Forget the combiner `router adapt` stored here: the shipped combiner decides again."""
        from ..routing.combiner import Combiner

        removed = _rag(_root(ctx)).reset_router()
        shipped = Combiner.default().version
        typer.echo(
            f"removed the adapted combiner {removed}; the shipped combiner ({shipped}) decides again"
            if removed
            else f"no adapted combiner is stored here; the shipped combiner ({shipped}) decides"
        )
