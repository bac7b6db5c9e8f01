"""``init``, ``status``, ``ingest``, ``search`` and ``sources``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..errors import ConfigError
from .app import CliContext, console
from .output import ingest_progress, print_decision, print_hits, print_json, print_report

__all__ = ["register"]


def _obj(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj  # type: ignore[no-any-return]


def init(ctx: typer.Context) -> None:
    """Create or upgrade the schema and the built-in corpora (safe to run again)."""
    obj = _obj(ctx)
    created = obj.ensure_initialised()
    console.print(f"schema [bold]{obj.settings.schema}[/] at revision {obj.store.revision()} "
                  f"on {obj.store.url_redacted}")
    console.print("created corpora: " + (", ".join(created) if created else "none (all present)"))


def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Database, versions, corpora with row counts, number of sources."""
    store = _obj(ctx).store
    info = store.server_info()
    specs = store.corpora(refresh=True)
    counts = store.counts()
    data = {
        "database": info.url,
        "postgres": info.postgres,
        "pgvector": info.pgvector,
        "schema": store.schema,
        "revision": store.revision(),
        "corpora": [
            {"name": s.name, "modality": str(s.modality), "granularity": str(s.granularity), "rows": counts[s.name],
             "embedder": s.embedder, "dimension": s.dimension, "parent": s.parent, "builtin": s.builtin,
             "description": s.description}
            for s in specs.values()
        ],
        "sources": len(store.sources()),
    }
    if as_json:
        print_json(data)
        return
    console.print(f"database  {data['database']}\npostgres  {data['postgres']}\npgvector  {data['pgvector']}\n"
                  f"schema    {data['schema']} (revision {data['revision']})\nsources   {data['sources']}")
    for c in data["corpora"]:  # type: ignore[union-attr]
        console.print(f"  {c['name']:<12} {c['modality']:<6} {c['granularity']:<10} {c['rows']:>8} rows")


def ingest(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="Files or folders (walked recursively)."),
    corpus: str | None = typer.Option(None, "--corpus", help="Send every file to this corpus."),
    detector: str = typer.Option("content", "--detector", help="Video scene detector: content or adaptive."),
    min_clip: float = typer.Option(20.0, "--min-clip", min=0.5, help="Shortest video clip, seconds."),
    max_clip: float = typer.Option(180.0, "--max-clip", min=1.0, help="Longest video clip, seconds."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Ingest files and folders: text, tables, images and videos go to their corpora by content type.

    Unchanged files are skipped, changed ones replaced; a file that fails leaves no rows and the command
    ends with exit code 1 after the others are done."""
    from ..ingest.pipeline import IngestOptions, ingest_paths
    from ..ingest.video import VideoOptions

    obj = _obj(ctx)
    obj.ensure_initialised()
    options = IngestOptions(visual_encoder=obj.visual_encoder,
                            video=VideoOptions(detector=detector, min_clip_s=min_clip, max_clip_s=max_clip))
    with ingest_progress(enabled=not as_json) as bar:
        report = ingest_paths(obj.store, obj.embedder, paths, corpus=corpus, options=options,
                              on_start=bar.on_start, on_file=bar.on_file)
    if as_json:
        print_json(report.to_dict())
    else:
        print_report(report)
    if not report.ok:
        raise typer.Exit(1)


def _parse_filter(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(f"--filter is not valid JSON ({e.msg} at character {e.pos}).") from None
    if not isinstance(value, dict):
        raise ConfigError('--filter must be a JSON object, for example \'{"lang": "en"}\'.')
    return value


def _router(kind: str | None) -> Any:
    if kind is None:
        return None
    from .routing import ROUTER_KINDS, RouterOptions

    if kind not in ROUTER_KINDS:
        raise ConfigError(f"Unknown router {kind!r}; choose one of {', '.join(ROUTER_KINDS)}.")
    return ROUTER_KINDS[kind](RouterOptions())


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for."),
    corpus: str | None = typer.Option(None, "--corpus", "-c", help="Search this corpus (default: let the "
                                      "router choose)."),
    k: int = typer.Option(5, "-k", "--k", min=1, max=1000, help="How many results (per corpus)."),
    filter: str | None = typer.Option(None, "--filter", help='Metadata filter as JSON, e.g. \'{"lang": "en"}\'.'),
    router: str | None = typer.Option(None, "--router", help="trained (default), llm, ensemble or examples."),
    hybrid: bool = typer.Option(False, "--hybrid", help="Fuse dense and full-text rankings."),
    as_json: bool = typer.Option(False, "--json", help="Print the hits as JSON."),
) -> None:
    """Search one corpus, or route the query and search the corpora the router picks (no generation)."""
    obj = _obj(ctx)
    rag = obj.rag(router=_router(router), hybrid=hybrid)
    decision = None if corpus else rag.route(query)
    routes = [corpus] if corpus else list(decision.routes)
    hits = rag.retrieve(query, k=k, routes=routes, filters=_parse_filter(filter))
    if as_json:
        print_json([h.to_dict() for h in hits])
        return
    if decision is not None:
        print_decision(decision)
    print_hits(hits, title=f"{', '.join(routes)}: {query}")


def ask(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="The question."),
    router: str | None = typer.Option(None, "--router", help="trained (default), llm, ensemble or examples."),
    k: int = typer.Option(5, "-k", "--k", min=1, max=100, help="Evidence per corpus."),
    filter: str | None = typer.Option(None, "--filter", help="Metadata filter as JSON."),
    hybrid: bool = typer.Option(False, "--hybrid", help="Fuse dense and full-text rankings."),
    as_json: bool = typer.Option(False, "--json", help='Print {"answer", "routes", "scores", "hits"} as JSON.'),
) -> None:
    """Answer a question: route, retrieve, and generate with the configured chat model (evidence only when
    none is configured)."""
    obj = _obj(ctx)
    rag = obj.rag(router=_router(router), hybrid=hybrid)
    answer = rag.query(question, k=k, filters=_parse_filter(filter))
    if as_json:
        print_json(answer.to_dict())
        return
    print_decision(answer.decision)
    print_hits(answer.hits, title="evidence")
    if answer.text is None:
        console.print("\n[yellow]No language model is configured, so this is the evidence only.[/] Set "
                      "UNIVERSALRAG_LLM_MODEL (and UNIVERSALRAG_LLM_BASE_URL / UNIVERSALRAG_LLM_API_KEY for a "
                      "server such as vLLM, Ollama or OpenAI) to get an answer.")
    else:
        console.print(f"\n[bold]answer[/] {answer.text}", soft_wrap=True)
        if answer.citations:
            console.print(f"[dim]cites: {', '.join(answer.citations)}[/]")


sources_app = typer.Typer(help="List or delete ingested sources.", no_args_is_help=True)


@sources_app.command("list")
def sources_list(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every ingested source."""
    rows = _obj(ctx).store.sources()
    if as_json:
        print_json(rows)
        return
    for r in rows:
        console.print(f"{r['uri']}  [dim]{', '.join(r['corpora'])}  {r['content_hash'][:12]}[/]")
    console.print(f"{len(rows)} sources")


@sources_app.command("delete")
def sources_delete(ctx: typer.Context, uri: str = typer.Argument(..., help="The source's URI or file path.")) -> None:
    """Delete a source and every unit made from it (paragraphs, documents, rows, clips)."""
    path = Path(uri)
    key = path.resolve().as_uri() if "://" not in uri else uri
    if not _obj(ctx).store.delete_source(key):
        raise ConfigError(f"No source {key!r} is stored; `universalrag sources list` shows what is.")
    console.print(f"deleted {key}")


def register(app: typer.Typer) -> None:
    """Add these commands to the root app."""
    app.command()(init)
    app.command()(status)
    app.command()(ingest)
    app.command()(search)
    app.command()(ask)
    app.add_typer(sources_app, name="sources")
