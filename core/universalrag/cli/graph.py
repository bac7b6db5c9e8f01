"""``graph build|stats|show``: the knowledge graph from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from ..errors import InvalidInputError
from .context import CliContext

if TYPE_CHECKING:  # the graph package is imported by the commands that use it: --help stays quick
    from ..graph.api import Graph
    from ..graph.records import WriteCounts

__all__ = ["register"]

graph_app = typer.Typer(
    help="Build, count and inspect the knowledge graph (entities, relations, the units that name them).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

_URI_OPTION = typer.Option([], "--uri", help="Only this stored source (repeatable); default: every source.")
_PNG_OPTION = typer.Option(None, "--png", help="Also draw the neighbourhood to this PNG file.")


def _obj(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj


def _graph(obj: CliContext) -> Graph:
    obj.ensure_initialised()
    return obj.rag.graph


@graph_app.command("build")
def graph_build(
    ctx: typer.Context,
    uri: list[str] = _URI_OPTION,
    vectors: bool = typer.Option(True, "--vectors/--no-vectors", help="Then compute the missing entity vectors."),
    align: bool = typer.Option(
        True, "--align/--no-align", help="Then merge entities of one type whose names mean the same thing."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """(Re)build the graph of the stored sources from their units, one transaction per source: for corpora ingested
    before the graph existed (ingestion keeps the graph of what it writes), then compute the entity vectors that
    ingestion leaves out, then merge the entities of one type whose names' vectors are alike (docs/graph.md)."""
    obj = _obj(ctx)
    graph = _graph(obj)

    def progress(source: str, counts: WriteCounts) -> None:
        if not as_json:
            obj.output.line(f"{source}: {counts.entities} entities, {counts.mentions} mentions")

    report = graph.build(uris=uri or None, on_source=progress, vectors=vectors, align=align)
    if as_json:
        obj.output.json(
            {
                "sources": report.sources,
                "units": report.units,
                "entities": report.entities,
                "relations": report.relations,
                "mentions": report.mentions,
                "merged": report.merged,
                "seconds": round(report.seconds, 3),
            }
        )
        return
    obj.output.line(
        f"Built the graph of {report.sources} sources ({report.units} units) in {report.seconds:.1f} s: "
        f"{report.entities} entities written, {report.relations} relations, {report.mentions} mentions; "
        f"{report.merged} entities merged into another by name similarity."
    )


@graph_app.command("stats")
def graph_stats(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """How many entities (by type), relations (by kind), mentions and sources the graph holds."""
    obj = _obj(ctx)
    stats = _graph(obj).stats()
    if as_json:
        obj.output.json(stats.to_dict())
        return
    obj.output.line(
        f"{stats.entities} entities ({stats.embedded} with vectors), {stats.relations} relations, "
        f"{stats.mentions} mentions, from {stats.sources} sources"
    )
    if stats.types:
        obj.output.line("types: " + ", ".join(f"{k} {v}" for k, v in list(stats.types.items())[:15]))
    if stats.keywords:
        obj.output.line("relations: " + ", ".join(f"{k} {v}" for k, v in stats.keywords.items()))


@graph_app.command("show")
def graph_show(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="An entity's name (or alias); near names are listed when none matches."),
    hops: int = typer.Option(1, "--hops", min=1, max=3, help="How far to walk (1-3)."),
    limit: int = typer.Option(30, "--limit", min=1, max=1000, help="At most this many neighbours."),
    png: Path | None = _PNG_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """An entity: its type, description and names, the units that are or mention it, and its neighbours."""
    obj = _obj(ctx)
    graph = _graph(obj)
    entity = graph.entity(name)
    if entity is None:
        near = graph.entities(name, limit=10)
        hint = ("; near names: " + ", ".join(repr(e.name) for e in near)) if near else ""
        raise InvalidInputError(f"No entity is called {name!r}{hint}.")
    neighbours = graph.neighbours(entity, hops=hops, limit=limit)
    units = graph.units(entity, limit=10)
    if png is not None:
        graph.draw(png, entity, hops=hops, limit=min(limit + 1, 200))
    if as_json:
        obj.output.json(
            {
                "entity": {
                    "id": entity.id,
                    "name": entity.name,
                    "type": entity.type,
                    "description": entity.description,
                    "aliases": list(entity.aliases),
                },
                "units": [{"corpus": h.corpus, "id": h.id, "uri": h.uri, "content": h.content[:200]} for h in units],
                "neighbours": [
                    {
                        "id": n.entity.id,
                        "name": n.entity.name,
                        "type": n.entity.type,
                        "hops": n.hops,
                        "via": list(n.via),
                    }
                    for n in neighbours
                ],
                "png": str(png) if png is not None else None,
            }
        )
        return
    obj.output.print(Text.assemble((entity.name, "bold"), f" ({entity.type})"), soft_wrap=True)
    if entity.description:
        obj.output.line(f"  {entity.description}")
    if entity.aliases:
        obj.output.line("  also: " + ", ".join(entity.aliases))
    for h in units:
        snippet = " ".join(h.content.split())[:90]
        obj.output.line(f"  in {h.corpus} {h.id[:8]}: {snippet}")
    for n in neighbours:
        obj.output.line(f"  {'  ' * (n.hops - 1)}-[{' > '.join(n.via)}]- {n.entity.name} ({n.entity.type})")
    if png is not None:
        obj.output.line(f"Drew {png}")


def register(app: typer.Typer) -> None:
    """Add the ``graph`` group to the root app."""
    app.add_typer(graph_app, name="graph")
