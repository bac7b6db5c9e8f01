"""``corpora list|create|drop``."""

from __future__ import annotations

from typing import Any

import typer
from rich.text import Text

from ..errors import ConfigError
from ..types import CorpusSpec, Granularity, Modality
from .context import CliContext

__all__ = ["register"]

corpora_app = typer.Typer(help="List, create or drop corpora.", no_args_is_help=True, rich_markup_mode=None)


def _obj(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj


@corpora_app.command("list")
def corpora_list(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every registered corpus with its row count and its server (``null``/none: the home database)."""
    obj = _obj(ctx)
    obj.ensure_initialised()
    store = obj.store
    specs, counts = store.corpora(refresh=True), store.counts()
    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "modality": str(s.modality),
            "granularity": str(s.granularity),
            "rows": counts[s.name],
            "dimension": s.dimension,
            "embedder": s.embedder,
            "parent": s.parent,
            "builtin": s.builtin,
            "server": store.server_of(s.name),
            "description": s.description,
        }
        for s in specs.values()
    ]
    if as_json:
        obj.output.json(rows)
        return
    for r in rows:
        where = f", on server {r['server']}" if r["server"] else ""
        obj.output.print(
            Text.assemble(
                (r["name"], "bold"),
                f" ({r['modality']}/{r['granularity']}, {r['rows']} rows"
                f"{', built in' if r['builtin'] else ''}{where}): {r['description']}",
            ),
            soft_wrap=True,
        )


@corpora_app.command("create")
def corpora_create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="1-40 characters: a lowercase letter, then letters, digits or _."),
    modality: Modality = typer.Option(..., "--modality", help="What the corpus holds."),
    granularity: Granularity = typer.Option(Granularity.OTHER, "--granularity", help="How large one unit is."),
    description: str = typer.Option(
        ..., "--description", help="What questions it answers (routers and agent tool descriptions use this)."
    ),
    parent: str | None = typer.Option(None, "--parent", help="Corpus whose units contain these."),
    multi_vector: bool = typer.Option(False, "--multi-vector", help="Several vectors per unit (chunks, rows)."),
    example: list[str] = typer.Option(
        [], "--example", help="A question this corpus answers (repeatable): the router sends similar questions here."
    ),
    server: str | None = typer.Option(
        None,
        "--server",
        help="Create it on this member server (an alias of UNIVERSALRAG_SERVERS) instead of the home database.",
    ),
) -> None:
    """Create a user-defined corpus for the configured embedder (on the home database, or on --server)."""
    obj = _obj(ctx)
    obj.ensure_initialised()
    embedder = obj.rag.embedder
    try:
        spec = CorpusSpec(
            name=name,
            modality=modality,
            granularity=granularity,
            description=description,
            dimension=embedder.dimension,
            embedder=embedder.name,
            parent=parent,
            multi_vector=multi_vector,
            metadata={"examples": list(example)} if example else {},
        )
    except ValueError as e:  # the spec's own validation of what the user typed (name rule, dimension)
        raise ConfigError(str(e)) from None
    obj.store.create_corpus(spec, server=server)
    where = f" on server {server}" if server else ""
    obj.output.print(Text(f"created corpus {name}{where} ({modality}/{granularity}, {embedder.dimension} dimensions)"))


@corpora_app.command("drop")
def corpora_drop(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="The corpus to drop, with all its rows."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    force: bool = typer.Option(False, "--force", help="Allow dropping a built-in corpus."),
) -> None:
    """Drop a corpus and every row in it."""
    obj = _obj(ctx)
    obj.ensure_initialised()
    store = obj.store
    spec = store.corpus(name)
    if spec.builtin and not force:
        raise ConfigError(f"{name!r} is a built-in corpus; pass --force to drop it (`init` re-creates it empty).")
    if not yes:
        typer.confirm(f"Drop corpus {name!r} and all its rows?", abort=True)
    store.drop_corpus(name)
    obj.output.print(Text(f"dropped corpus {name}"))


def register(app: typer.Typer) -> None:
    """Add the ``corpora`` group to the root app."""
    app.add_typer(corpora_app, name="corpora")
