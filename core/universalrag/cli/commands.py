"""``init``, ``status``, ``ingest``, ``search``, ``ask`` and ``sources``: thin shells over
:class:`~universalrag.UniversalRAG`. Every command that needs the schema creates it on first use."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from ..errors import ConfigError, UniversalRAGError
from ..evidence import UNIT_TEXT_TOKENS
from .context import CliContext
from .interrupt import StopAfterCurrent
from .output import (
    IngestProgress,
    folders_without_input,
    hit_dict,
    print_decision,
    print_hits,
    print_report,
    warnings_shown,
)
from .query_input import QueryArg, QueryFileOpt, read_query
from .routers import (
    LLMKeyOpt,
    LLMModelOpt,
    LLMUrlOpt,
    ModelDirOpt,
    NoServerOpt,
    OptionalRouterOpt,
    RouterOptions,
    TauOpt,
    ThresholdOpt,
    router_for,
)

__all__ = ["register"]

JsonOpt = typer.Option(False, "--json", help="Print JSON.")
AnswerModelOpt = typer.Option(
    None,
    "--llm-model",
    help="Chat model for the answer (and the llm/ensemble routers); default: UNIVERSALRAG_LLM_MODEL.",
)
LLMTimeoutOpt = typer.Option(
    None,
    "--timeout",
    min=0.1,
    max=3600,
    help="Seconds each language-model call may take in all, retries included "
    "(default: UNIVERSALRAG_LLM_TIMEOUT, else 60).",
)


def _obj(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj


def init(ctx: typer.Context) -> None:
    """Create or upgrade the schema and the built-in corpora (safe to run again; other commands do this on
    first use)."""
    obj = _obj(ctx)
    created = obj.rag.init()
    out = obj.output
    out.print(Text(f"schema {obj.settings.schema} at revision {obj.store.revision()} on {obj.store.url_redacted}"))
    out.print(Text("created corpora: " + (", ".join(created) if created else "none (all present)")))


def status(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """Database, versions, corpora with row counts, number of sources, sync backlog of attached tables."""
    from ..sync.status import backfill_line, sync_status

    obj = _obj(ctx)
    obj.ensure_initialised()
    store = obj.store
    info = store.server_info()
    specs = store.corpora(refresh=True)
    counts = store.counts()
    parts = store.part_counts()
    data: dict[str, Any] = {
        "database": info.url,
        "postgres": info.postgres,
        "pgvector": info.pgvector,
        "schema": store.schema,
        "revision": store.revision(),
        "corpora": [
            {
                "name": s.name,
                "modality": str(s.modality),
                "granularity": str(s.granularity),
                "rows": counts[s.name],
                "parts": parts.get(s.name),  # row or chunk vectors of a multi-vector corpus
                "embedder": s.embedder,
                "dimension": s.dimension,
                "parent": s.parent,
                "builtin": s.builtin,
                "description": s.description,
            }
            for s in specs.values()
        ],
        "sources": len(store.sources()),
        "sync": [dataclasses.asdict(s) for s in sync_status(store)],
    }
    if as_json:
        obj.output.json(data)
        return
    for key in ("database", "postgres", "pgvector"):
        obj.output.print(Text(f"{key:<9} {data[key]}"))
    obj.output.print(Text(f"schema    {data['schema']} (revision {data['revision']})\nsources   {data['sources']}"))
    for c in data["corpora"]:
        what = {"table": "row", "text": "chunk"}.get(str(c["modality"]), "part")
        vectors = f", {c['parts']:,} {what} vectors" if c["parts"] is not None else ""
        obj.output.print(
            Text(f"  {c['name']:<12} {c['modality']:<6} {c['granularity']:<10} {c['rows']:>8} rows{vectors}")
        )
    for q in data["sync"]:
        line = (
            f"  sync {q['corpus']:<12} backlog {q['backlog']}, in progress {q['in_progress']}, retrying "
            f"{q['retrying']}, failed {q['failed']}, lag {q['lag_s']:.1f} s"
        )
        obj.output.print(Text(line + (f" — last error: {q['last_error']}" if q["last_error"] else "")))
        if q["backfill"] is not None:
            obj.output.print(Text("       " + backfill_line(q["backfill"])))


def ingest(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="Files or folders (walked recursively)."),
    corpus: str | None = typer.Option(None, "--corpus", help="Send every file to this corpus."),
    detector: str = typer.Option(
        "content", "--detector", help="Video scene detector: content, adaptive, histogram or hash."
    ),
    min_clip: float = typer.Option(20.0, "--min-clip", min=0.5, help="Shortest video clip, seconds."),
    max_clip: float = typer.Option(180.0, "--max-clip", min=1.0, help="Longest video clip, seconds."),
    asr: str | None = typer.Option(
        None,
        "--asr",
        help="Speech recognition for videos without subtitles: "
        "openai, faster-whisper or whisper (default: UNIVERSALRAG_ASR, else none).",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Fail on files in the folders that are not ingested "
        "(binary files, caches, empty files) instead of skipping them, and on a folder "
        "with nothing to ingest.",
    ),
    prune: bool = typer.Option(
        False, "--prune", help="Also delete the stored sources under the folders given whose file no longer exists."
    ),
    describe: bool | None = typer.Option(
        None,
        "--describe/--no-describe",
        help="Have the chat model (UNIVERSALRAG_LLM_MODEL, one that reads images) describe every image, figure, "
        "table and video scene; one cached call per unit (default: UNIVERSALRAG_DESCRIBE, else off).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Ingest files and folders: text, tables, images and videos go to their corpora by content type.

    Unchanged files are left alone, changed ones replaced; files in the folders that are not ingested (or
    empty) are skipped (counted in the summary). With --prune, sources under the folders whose file was deleted
    or moved away are deleted too ("removed"). A file that fails leaves no rows and the command ends with exit
    code 1 after the others are done. Each file is committed on its own: after Ctrl-C, run the
    same command again to continue."""
    from ..ingest import IngestOptions
    from ..ingest.detect import is_folder
    from ..ingest.pipeline import prune_missing
    from ..ingest.video import VideoOptions

    obj = _obj(ctx)
    if asr:
        obj = obj.with_settings(obj.settings.with_(asr=asr))
    rag = obj.rag
    options = IngestOptions.from_settings(
        obj.settings,
        visual_encoder=rag.visual_encoder,
        video=VideoOptions(detector=detector, min_clip_s=min_clip, max_clip_s=max_clip),
        describe=describe,
    )
    progress = IngestProgress(obj.output, quiet=as_json)
    stop = StopAfterCurrent(obj.output)
    # the pipeline stops at its own safe points: between files, and between the embedding calls of a group of text
    # files, once every file embedded so far is written
    options = dataclasses.replace(options, should_stop=lambda: stop.requested)

    def on_file(outcome: Any) -> None:
        progress.on_file(outcome)

    def on_removed(outcome: Any) -> None:
        progress.on_removed(outcome)
        stop.check()  # between sources: each was deleted in its own transaction

    folders = [p for p in paths if is_folder(p)]
    try:
        with stop, progress:
            report = rag.ingest(
                paths,
                corpus=corpus,
                options=options,
                on_start=progress.on_start,
                on_file=on_file,
                on_progress=progress.on_batch,
                strict=strict,
            )
            if prune:  # only after every file is in: a file moved within the folders is added before it is removed
                report.outcomes += prune_missing(obj.store, folders, on_file=on_removed)
    except KeyboardInterrupt:
        obj.output.error(progress.interrupted_message(rolled_back=stop.forced), label="interrupted")
        raise typer.Exit(130) from None
    except UniversalRAGError:
        if not stop.forced:  # a database call cut short by the second Ctrl-C surfaces as a store error
            raise
        obj.output.error(progress.interrupted_message(rolled_back=True), label="interrupted")
        raise typer.Exit(130) from None
    if as_json:
        obj.output.json(report.to_dict())
    else:
        print_report(obj.output, report)
    idle = folders_without_input(folders, report)
    _note_idle_folders(obj, idle)
    if not report.ok or (strict and idle):
        raise typer.Exit(1)


def _note_idle_folders(obj: CliContext, folders: list[Path]) -> None:
    """Say on stderr which folders gave nothing to ingest, and what would have been: zero counts alone read as
    success, yet nothing of those folders can be searched."""
    from ..ingest.detect import SUPPORTED

    for folder in folders:
        obj.output.error(f"no supported files found in {folder}; supported: {SUPPORTED}.", label="note")


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


def _rag(obj: CliContext, router: str | None, opts: RouterOptions, *, hybrid: bool) -> Any:
    """The pipeline for a search/ask: the default one (trained router extended to user corpora), or one routed
    by the named router from the registry. ``hybrid`` is set per command (a served session is serial)."""
    rag = (
        obj.rag
        if router is None
        else obj.session.rag_with_router(obj.settings, (router, opts), router_for(obj, router, opts))
    )
    rag.hybrid = hybrid
    return rag


def _hint_if_empty(obj: CliContext) -> None:
    """Say so on stderr when no corpus holds a unit (a search of an empty knowledge base finds nothing, and silence
    reads as "nothing relevant")."""
    if not any(obj.store.counts().values()):
        obj.output.error(
            "the knowledge base is empty: add files with `universalrag ingest PATH...` (a file or a folder), or "
            "try `universalrag demo`.",
            label="note",
        )


def search(
    ctx: typer.Context,
    query: QueryArg = None,
    query_file: QueryFileOpt = None,
    corpus: str | None = typer.Option(
        None, "--corpus", "-c", help="Search this corpus (default: let the router choose)."
    ),
    k: int = typer.Option(
        5,
        "-k",
        "--k",
        min=1,
        max=1000,
        help="How many results in all (the corpora searched are merged into one ranking).",
    ),
    filter: str | None = typer.Option(None, "--filter", help='Metadata filter as JSON, e.g. \'{"lang": "en"}\'.'),
    router: OptionalRouterOpt = None,
    hybrid: bool = typer.Option(False, "--hybrid", help="Fuse dense and full-text rankings."),
    as_json: bool = typer.Option(
        False, "--json", help="Print the hits as JSON, each with the route decision (routes, scores, router)."
    ),
    whole: bool = typer.Option(
        False, "--whole", help="Print whole units (by default a unit's text is cut at about 1,000 tokens)."
    ),
    model_dir: ModelDirOpt = None,
    threshold: ThresholdOpt = None,
    llm_model: LLMModelOpt = None,
    llm_url: LLMUrlOpt = None,
    llm_key: LLMKeyOpt = None,
    timeout: float | None = LLMTimeoutOpt,
    tau: TauOpt = 0.9,
    no_server: bool = NoServerOpt,
) -> None:
    """Search one corpus, or route the query and search the corpora the router picks (no generation).
    The query is the argument, standard input with '-', or a file with --query-file."""
    obj = _with_timeout(_obj(ctx), timeout)
    query = read_query(query, query_file, served=obj.served)
    filters = _parse_filter(filter)
    obj.ensure_initialised()
    opts = RouterOptions(model_dir, threshold, llm_model, llm_url, llm_key, obj.settings.llm_timeout, tau)
    rag = _rag(obj, router, opts, hybrid=hybrid)
    with warnings_shown(obj.output):
        plan = rag.plan(query, k=k, filter=filters, routes=[corpus] if corpus else None, allow_none=False)
        if corpus:
            decision, routes = None, [corpus]
            hits = rag.retrieve(plan)
        else:  # one probe of every corpus decides and is the retrieval; a search never comes back empty-handed
            decision, hits = rag.search(plan)
            routes = list(decision.routes)
    if not hits and not filters:
        _hint_if_empty(obj)
    if as_json:
        chosen = decision.to_dict() if decision is not None else {"routes": routes, "router": "--corpus"}
        limit = None if whole else UNIT_TEXT_TOKENS
        obj.output.json([{**hit_dict(h, i, max_tokens=limit), "decision": chosen} for i, h in enumerate(hits, 1)])
        return
    if plan.corrections:  # as a search engine says "showing results for"
        obj.output.print(Text(f"searched for: {plan.text}", "yellow"))
    if decision is not None:
        print_decision(obj.output, decision, filtered_out=bool(filters) and not hits)
    elif filters and not hits:
        obj.output.print(Text("no unit of this corpus matches the filter", "yellow"))
    print_hits(obj.output, hits, title=f"{', '.join(routes)}: {query}", query=query)


def ask(
    ctx: typer.Context,
    question: QueryArg = None,
    query_file: QueryFileOpt = None,
    router: OptionalRouterOpt = None,
    k: int = typer.Option(
        5,
        "-k",
        "--k",
        min=1,
        max=100,
        help="How much evidence in all (the corpora searched are merged into one ranking).",
    ),
    filter: str | None = typer.Option(None, "--filter", help="Metadata filter as JSON."),
    hybrid: bool = typer.Option(False, "--hybrid", help="Fuse dense and full-text rankings."),
    as_json: bool = typer.Option(
        False, "--json", help='Print {"answer", "routes", "scores", "hits", "warning"} as JSON.'
    ),
    model_dir: ModelDirOpt = None,
    threshold: ThresholdOpt = None,
    llm_model: str | None = AnswerModelOpt,
    llm_url: LLMUrlOpt = None,
    llm_key: LLMKeyOpt = None,
    timeout: float | None = LLMTimeoutOpt,
    tau: TauOpt = 0.9,
    no_server: bool = NoServerOpt,
) -> None:
    """Answer a question: route, retrieve, and generate with the configured chat model (evidence only when
    none is configured, or when the model fails or times out: then a warning says what happened). The
    question is the argument, standard input with '-', or a file with --query-file."""
    obj = _with_timeout(_obj(ctx), timeout)
    # the model named here answers too: `ask --llm-model M` saying "no language model is configured" misleads
    obj = obj.with_settings(obj.settings.with_(llm_model=llm_model, llm_base_url=llm_url, llm_api_key=llm_key))
    question = read_query(question, query_file, served=obj.served)
    filters = _parse_filter(filter)
    obj.ensure_initialised()
    opts = RouterOptions(model_dir, threshold, llm_model, llm_url, llm_key, obj.settings.llm_timeout, tau)
    with warnings_shown(obj.output):
        answer = _rag(obj, router, opts, hybrid=hybrid).query(question, k=k, filter=filters)
    out = obj.output
    if as_json:  # a failed model's reason (also logged on stderr) goes in the JSON: "answer": null says nothing
        data = answer.to_dict()
        out.json({**data, "hits": [hit_dict(h, i) for i, h in enumerate(answer.hits, 1)], "warning": answer.warning})
        return
    print_decision(out, answer.decision)
    print_hits(out, answer.hits, title="evidence", query=question)
    if answer.warning is not None:  # the model failed: the evidence stands, with the reason
        out.error(f"no answer, only the evidence above: {answer.warning}", label="warning")
    elif answer.text is None:
        out.print(
            "\n[yellow]No language model is configured, so this is the evidence only.[/] Set "
            "UNIVERSALRAG_LLM_MODEL (and UNIVERSALRAG_LLM_BASE_URL / UNIVERSALRAG_LLM_API_KEY for a "
            "server such as vLLM, Ollama or OpenAI) to get an answer.",
            soft_wrap=True,
        )
    else:
        out.print(Text.assemble("\n", ("answer", "bold"), f" {answer.text}"), soft_wrap=True)
        if answer.citations:
            out.print(Text(f"cites: {', '.join(answer.citations)}", style="dim"))


def _with_timeout(obj: CliContext, timeout: float | None) -> CliContext:
    """The context with ``--timeout`` as the language-model timeout (routers and answers), when given."""
    return obj if timeout is None else obj.with_settings(obj.settings.with_(llm_timeout=timeout))


sources_app = typer.Typer(help="List or delete ingested sources.", no_args_is_help=True, rich_markup_mode=None)


@sources_app.command("list")
def sources_list(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Every ingested source."""
    obj = _obj(ctx)
    obj.ensure_initialised()
    rows = obj.store.sources()
    if as_json:
        obj.output.json(rows)
        return
    for r in rows:
        scope = f"  [--corpus {r['scope']}]" if r.get("scope") else ""
        obj.output.print(
            Text.assemble(r["uri"], (f"{scope}  {', '.join(r['corpora'])}  {r['content_hash'][:12]}", "dim"))
        )
    obj.output.print(f"{len(rows)} sources")


@sources_app.command("delete")
def sources_delete(
    ctx: typer.Context,
    uri: str = typer.Argument(..., help="The source's URI or file path, or a folder: every source under it."),
    corpus: str | None = typer.Option(
        None, "--corpus", help="Delete only what was ingested with --corpus NAME (default: everything from this file)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before deleting a folder's sources."),
) -> None:
    """Delete a source and every unit made from it (paragraphs, documents, rows, clips); given a folder, every
    source under it (after saying how many, and asking unless --yes)."""
    from ..ingest.pipeline import sources_under

    obj = _obj(ctx)
    obj.ensure_initialised()
    path = Path(uri)
    # a folder, or one deleted from disk whose files are still stored (a stored file of that path stays a file)
    if "://" not in uri and (path.is_dir() or not path.exists()):
        sources = obj.store.sources()
        if path.is_dir() or (
            obj.store.source_state(path.resolve().as_uri(), scope=corpus or "") is None and sources_under(sources, path)
        ):
            _delete_folder(obj, path, sources_under(sources, path, scope=corpus), corpus=corpus, yes=yes)
            return
    key = Path(uri).resolve().as_uri() if "://" not in uri else uri
    if not obj.store.delete_source(key, scope=corpus):
        where = f" ingested with --corpus {corpus}" if corpus else ""
        raise ConfigError(f"No source {key!r}{where} is stored; `universalrag sources list` shows what is.")
    obj.output.print(Text(f"deleted {key}" + (f" from {corpus}" if corpus else "")))


def _delete_folder(obj: CliContext, folder: Path, found: Mapping[str, Path], *, corpus: str | None, yes: bool) -> None:
    """Delete the stored sources ``found`` under ``folder`` (by URI), one transaction each, after a confirmation:
    a folder may hold thousands of sources, so its count is shown first. A source that fails to go is reported and
    the others go on (exit code 1)."""
    where = f" ingested with --corpus {corpus}" if corpus else ""
    if not found:
        raise ConfigError(
            f"No source under {folder.resolve().as_uri()!r}{where} is stored; `universalrag sources "
            "list` shows what is."
        )
    if not yes:
        typer.confirm(f"Delete the {len(found)} sources under {folder}{where}?", abort=True)
    deleted, failed = 0, 0
    for key in sorted(found):
        try:
            deleted += int(obj.store.delete_source(key, scope=corpus))
        except UniversalRAGError as e:
            failed += 1
            obj.output.error(f"{found[key]}: {e}")
    obj.output.print(Text(f"deleted {deleted} sources under {folder}" + (f" from {corpus}" if corpus else "")))
    if failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add these commands to the root app."""
    app.command()(init)
    app.command()(status)
    app.command()(ingest)
    app.command()(search)
    app.command()(ask)
    app.add_typer(sources_app, name="sources")
