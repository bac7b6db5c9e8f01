"""Files → units → embeddings → one transaction per source.

``ingest_paths`` walks files and folders, detects each file's modality by its content, sends it to its
corpora (``--corpus`` overrides) and writes it in one transaction. Files a folder walk finds that are not
ingested (binary files of other types, such as ``.npy`` or ``__pycache__``) are skipped and counted, not
failed; ``strict=True`` fails them instead. So are empty files a walk finds (``__init__.py``, a note not yet
written): they are skipped as ``empty``, and fail only under ``strict``. A file named explicitly that is not
ingested, or is empty, always fails with the reason.

Each file is announced before its work starts (``on_progress`` hears ``done=0``), so a progress display names the
file being read and embedded, not only the last one finished. :func:`prune_missing` deletes the stored sources
under a folder whose file is gone.

Idempotent by content hash: a source whose hash is unchanged is skipped before it is parsed or embedded.
A source is a file in a scope: the default corpora of its kind, or the corpus named with ``corpus``. So
ingesting a file into a user corpus adds to that corpus and leaves the file's units in the default corpora
alone, and re-ingesting a changed file replaces only the units of the scope it is ingested into. A file
that fails (bad input, embedding error, database error) is reported with its reason and leaves no rows;
the other files go on.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..embed.base import Embedder
from ..errors import ConfigError, IngestError, UniversalRAGError
from ..evidence import uri_file
from ..store import Store
from ..store.index_build import BuildProgress
from ..types import Granularity, Modality
from .companions import alt_texts, fingerprint, sidecar_files
from .detect import Detection, detect, is_folder, iter_files, unsupported_error
from .files import EMPTY_REASON, check_file, empty_error, hash_file, is_empty
from .guard import file_failure, from_caller, is_file_failure
from .large import StagedSource, staged_table, staged_text
from .limits import use_limits
from .report import FileOutcome, IngestReport, Progress
from .run import DEFAULT_CORPORA, IngestOptions, IngestRun, failed_outcome
from .tables.read import CSV_RULES, TABLE_RULES
from .text_group import TABLES_IN_TEXT, prepare_text_group
from .units import Prepared, image_units, source_record, table_units, video_units
from .video.planning import VideoOptions

if TYPE_CHECKING:
    from ..store.sources import SourceHook
    from ..types import Unit
    from .tables.model import ParsedTable

__all__ = [
    "CSV_RULES",
    "DEFAULT_CORPORA",
    "PAGE_RULES",
    "PASSAGE_RULES",
    "PDF_RULES",
    "FileOutcome",
    "IngestOptions",
    "IngestReport",
    "Progress",
    "ingest_paths",
    "ingest_tables",
    "prune_missing",
    "sources_under",
]

_log = logging.getLogger(__name__)

#: Text files embedded together in one call.
_TEXT_GROUP_FILES = 64


def _prepare_table(run: IngestRun, path: Path, uri: str, content_hash: str) -> Prepared | StagedSource:
    from .tables.read import read_tables

    tables = read_tables(path, format=run.formats.get(path))
    spec = run.spec(run.targets("table")[0], "table")
    if spec.granularity is not Granularity.TABLE and not spec.multi_vector:
        raise ConfigError(f"Corpus {spec.name!r} cannot hold tables: create it with --multi-vector.")
    opts = run.options
    if sum(int(t.metadata.get("row_count", 0)) for t in tables) > opts.stage_rows:
        return staged_table(
            tables,
            spec,
            run.embedder,
            uri=uri,
            content_hash=content_hash,
            metadata={"tables": len(tables), "path": path.name},
            batch_rows=opts.table_batch_rows,
            max_embedded_rows=opts.max_embedded_rows,
        )
    units, parts = table_units(tables, spec, run.embedder, uri=uri, batch_rows=run.options.table_batch_rows)
    meta = {"tables": len(tables), "path": path.name}
    return Prepared(source_record(uri, content_hash, Modality.TABLE, units, metadata=meta), units, parts)


def _prepare_image(run: IngestRun, path: Path, uri: str, content_hash: str) -> Prepared:
    from .images.read import read_image

    info = read_image(path, caption=run.options.captions.get(str(path)), alt=run.alts.get(path.resolve()))
    spec = run.spec(run.targets("image")[0], "image")
    visual = run.options.visual_encoder if spec.visual_dimension else None
    units = image_units(info, spec, run.embedder, uri=uri, visual=visual)
    return Prepared(source_record(uri, content_hash, Modality.IMAGE, units, metadata={"path": path.name}), units)


def _prepare_video(run: IngestRun, path: Path, uri: str, content_hash: str) -> Prepared:
    from .video.planning import plan_video

    plan = plan_video(path, options=run.options.video or VideoOptions())
    specs = [run.spec(n, "video") for n in run.targets("video")]
    clip = next((s for s in specs if s.granularity is Granularity.CLIP), None)
    video = next((s for s in specs if s is not clip), None)
    visual = run.options.visual_encoder if any(s.visual_dimension for s in specs) else None
    units = video_units(plan, video=video, clip=clip, embedder=run.embedder, uri=uri, visual=visual)
    meta = {"title": plan.title, "duration_s": plan.probe.duration_s, "clips": len(plan.clips), "path": path.name}
    return Prepared(source_record(uri, content_hash, Modality.VIDEO, units, metadata=meta), units)


def _prepare_document(run: IngestRun, path: Path, uri: str, content_hash: str) -> Prepared:
    """A PDF, Word or PowerPoint file: its document, passages, tables and figures, each in its own corpus (only
    the text units, in the named corpus, with ``--corpus``)."""
    from .documents.prepare import figure_folder, prepare_document
    from .documents.units import DocumentTargets

    existing = set(run.store.corpora())
    specs = {}
    for name in run.targets("document"):
        kind = {"table": "table", "image": "image"}.get(name, "text") if run.corpus is None else "text"
        if run.corpus is None and name not in existing:
            continue  # a schema without, say, an image corpus still takes the document's text
        specs[name] = run.spec(name, kind)
    text = [s for s in specs.values() if s.modality is Modality.TEXT]
    targets = DocumentTargets(
        document=next((s for s in text if s.granularity is Granularity.DOCUMENT), None),
        paragraph=next((s for s in text if s.granularity is not Granularity.DOCUMENT), None),
        table=specs.get("table") if run.corpus is None else None,
        image=specs.get("image") if run.corpus is None else None,
    )
    visual = run.options.visual_encoder if targets.image is not None and targets.image.visual_dimension else None
    folder = figure_folder(run.store.settings.home_dir, run.store.schema, content_hash)
    return prepare_document(
        path,
        targets,
        run.embedder,
        uri=uri,
        content_hash=content_hash,
        figure_dir=folder,
        visual=visual,
        options=run.options.documents,
        batch_rows=run.options.table_batch_rows,
    )


def _text_group(run: IngestRun, group: Sequence[tuple[Path, str, str]]) -> Iterator[list[FileOutcome]]:
    """Ingest several text files embedded together (:mod:`universalrag.ingest.text_group`), one list of outcomes
    per chunk of files embedded: each file is still written in its own transaction and fails on its own, and a
    chunk is written whole before its outcomes are given (a stop keeps every file embedded)."""
    for chunk in prepare_text_group(run, group):
        yield [_write_text(run, path, prepared) for path, prepared in chunk]


def _write_text(run: IngestRun, path: Path, prepared: Prepared | FileOutcome) -> FileOutcome:
    if isinstance(prepared, FileOutcome):
        return prepared
    try:
        return _write(run, path, "text", prepared)
    except UniversalRAGError as e:
        return failed_outcome(path, e)
    except Exception as e:  # as in ingest_paths: the file fails alone
        if not is_file_failure(e):
            raise
        return failed_outcome(path, file_failure(path, e))


def _stop_if_asked(run: IngestRun) -> None:
    """Raise :class:`KeyboardInterrupt` when ``options.should_stop`` says to (between files)."""
    if run.options.should_stop is not None and run.options.should_stop():
        raise KeyboardInterrupt


#: Kind → how a file of that kind becomes units (text files are batched by :func:`_text_group`).
_HANDLERS: dict[str, Callable[[IngestRun, Path, str, str], Prepared | StagedSource]] = {
    "table": _prepare_table,
    "image": _prepare_image,
    "video": _prepare_video,
    "document": _prepare_document,
}


#: What a Markdown or HTML page becomes, in the identity of every such source: changing it makes the next ingest
#: replace pages ingested under the rule before (v2: their passages used to hold their tables' cells; v3: a
#: heading whose anchor had a chrome-like class lost its text, what lay outside a page's ``<main>`` was kept, a table
#: under a heading with a permalink mark had the mark in its title, and a Markdown page's front-matter description
#: was dropped; v4: every ``<br>`` ended a paragraph, and reStructuredText showed Sphinx's build conditions, context
#: directives and bare version numbers, and read grammars as markup; v5: MyST Markdown's roles, targets and
#: directives showed as raw markup, a reStructuredText page's leading note or :orphan: hid its title, a field list's
#: name and value parted, and a simple table with a blank first header cell lost its column names; v6: a table's
#: date cells carry their ISO spelling; v7: a long element named like chrome that is mostly links, Texinfo's main
#: menu, is navigation).
PAGE_RULES = (
    "pages v7: passages cut from the prose, tables in the table corpus, main landmark, headings whole, "
    "front-matter description, <br> a line break, Sphinx directives as shown, MyST read, "
    "fields on one line, simple tables' names kept, ISO dates beside others, long link menus dropped"
)
#: How any text is cut into passages, in the identity of every text source (plain text too): since v2 a heading, a
#: term or an option name starts the passage of the text it introduces instead of ending the one before; since v3
#: plain text keeps a list's items and lines laid out in columns on lines of their own; since v4 a command line
#: ("python -m pip install --upgrade pkg") stays with the instruction before it instead of heading the next text;
#: since v5 a heading starts a passage rather than ending one with the start of its section, a numbered FAQ entry
#: stays whole, the signatures one description documents stay with it, Org-mode files keep their headings and
#: blocks, and plain-text lines broken by hand keep their lines.
PASSAGE_RULES = (
    "passages v5: leads kept with their text, plain text's lists and columns kept, commands not leads, "
    "sections start passages, FAQ entries and signature groups whole, Org-mode headings"
)
#: What a PDF becomes, in the identity of every PDF source: since v2 its tables set with white space alone are
#: tables (their cells used to run together in the passages, column after column); since v3 a table's first row is
#: no longer clipped nor a line inside a table's box dropped unless the table holds it, a line's pieces keep their
#: order, and contents and index pages (dot leaders) are navigation, not passages; since v4 a definition's category
#: tag ("[Function]") leads its line, an underscore drawn as a rule is "_", a title wrapped over two lines is one
#: heading, prose on a contents page is kept, a folio a little inside the margin is dropped and a two-line header
#: heads a table set without rules. PDFs ingested before are replaced once at the next ingest.
PDF_RULES = (
    "pdf v4: tables set without rules found, rows kept, lines in order, contents pages left out, "
    "definition tags and drawn underscores, wrapped titles, prose on contents pages, folios, two-line headers"
)


def _unchanged(run: IngestRun, kind: str, uri: str, content_hash: str) -> bool:
    state = run.store.source_state(uri, scope=run.scope(kind))
    if state is None or state[0] != content_hash:
        return False
    allowed = set(run.targets(kind)) | ({"table"} if kind == "text" and run.corpus is None else set())
    return set(state[1]) <= allowed and (run.corpus is None or set(state[1]) == {run.corpus})


def _classify(run: IngestRun, path: Path, *, walked: bool) -> tuple[Detection, str, str]:
    """(what the file is, uri, content hash); uri and hash are empty when it is not ingested, as is an empty file
    a folder walk found (``walked``; its reason is :data:`EMPTY_REASON`). IngestError when it cannot be read at
    all. The hash of an image or video covers its sidecars and the texts given
    with it (:func:`~universalrag.ingest.companions.fingerprint`), so editing only those replaces the source; that
    of a Markdown or HTML page covers :data:`PAGE_RULES` and that of any text :data:`PASSAGE_RULES`, that of a PDF
    :data:`PDF_RULES`, that of a table file :data:`~universalrag.ingest.tables.read.TABLE_RULES` (for its format). With
    model descriptions on, the hash of a file that holds images, tables or scenes covers the describer's model and
    prompt, so turning them on (or changing the model) replaces the file's units with described ones."""
    check_file(path)
    if walked and is_empty(path):
        return Detection(None, reason=EMPTY_REASON), "", ""
    found = detect(path)
    if found.kind is None:
        return found, "", ""
    run.formats[path] = found.format
    rules = (
        f"{PAGE_RULES}; {PASSAGE_RULES}"
        if found.kind == "text" and found.format in TABLES_IN_TEXT
        else PASSAGE_RULES
        if found.kind == "text"
        else PDF_RULES
        if found.kind == "document" and found.format == "pdf"
        else TABLE_RULES.get(found.format or "")
        if found.kind == "table"
        else None
    )
    describer = run.options.describer
    described = found.kind != "text" or found.format in TABLES_IN_TEXT  # a kind that holds non-text units
    texts = (
        run.options.captions.get(str(path)),
        run.alts.get(path.resolve()),
        rules,
        describer.identity if describer is not None and described else None,
    )
    return found, path.resolve().as_uri(), fingerprint(path, hash_file(path), texts=texts)


def _large_text(run: IngestRun, path: Path) -> bool:
    """A plain-text file too large to read whole (streamed by :func:`universalrag.ingest.large.staged_text`);
    IngestError for another text format too large to parse whole."""
    size = path.stat().st_size
    if run.formats.get(path) == "txt":
        return size > run.options.large_text_bytes
    if size > run.options.max_markup_bytes:
        raise IngestError(
            path,
            f"is {size / 1e6:.0f} MB of {run.formats.get(path) or 'marked-up'} text, more than "
            f"the {run.options.max_markup_bytes / 1e6:.0f} MB that are parsed whole; save its "
            "text as a .txt file, which is streamed in batches, or split it.",
        )
    return False


def _prepare_large_text(run: IngestRun, path: Path, uri: str, content_hash: str) -> StagedSource:
    specs = [run.spec(n, "text") for n in run.targets("text")]
    return staged_text(
        path, specs, run.embedder, uri=uri, content_hash=content_hash, batch_passages=run.options.text_batch_passages
    )


def _write(run: IngestRun, path: Path, kind: str, prepared: Prepared | StagedSource) -> FileOutcome:
    if isinstance(prepared, StagedSource):
        staged = prepared

        def committed(done: int) -> None:
            progress = Progress(path=str(path), done=done, total=max(done, staged.batches), what=staged.what)
            _log.info("%s: %d of about %d %s committed", path.name, progress.done, progress.total, progress.what)
            if run.on_progress is not None:
                run.on_progress(progress)

        result = run.store.write_staged(
            replace(staged.source, scope=run.scope(kind)), staged.produce, on_batch=committed
        )
        return FileOutcome(
            path=str(path), status=result.status, kind=kind, corpora=staged.source.corpora, rows=dict(result.rows)
        )
    if run.options.describer is not None:  # a chat model describes the images, figures, tables and scenes first
        prepared = run.options.describer.enrich(
            prepared,
            run.embedder,
            run.store.corpus,
            path=str(path),
            on_progress=run.on_progress,
            should_stop=run.options.should_stop,
        )
    graph = run.options.graph  # the source's graph is extracted here and written in its transaction
    result = run.store.write_source(
        replace(prepared.source, scope=run.scope(kind)),
        prepared.units,
        parts=prepared.parts,
        hook=None if graph is None else graph(prepared.units, prepared.source.uri),
    )
    return FileOutcome(
        path=str(path), status=result.status, kind=kind, corpora=prepared.source.corpora, rows=dict(result.rows)
    )


def _refusal(path: Path, found: Detection) -> IngestError:
    """Why a file that is not ingested fails (named explicitly, or found under ``strict``): empty, or not a
    supported kind (with what is)."""
    return empty_error(path) if found.reason == EMPTY_REASON else unsupported_error(path, found)


def _started(run: IngestRun, path: Path, what: str, total: int = 1) -> None:
    """Tell ``on_progress`` that work on ``path`` begins: ``done=0`` of ``total`` transactions committed (one for
    a whole file; a group of text files read and embedded together names its first file, ``total`` the group)."""
    if run.on_progress is not None:
        run.on_progress(Progress(path=str(path), done=0, total=total, what=what))


def ingest_tables(
    store: Store,
    embedder: Embedder,
    tables: Sequence[ParsedTable],
    *,
    uri: str,
    corpus: str = "table",
    batch_rows: int = 1024,
    graph: Callable[[Sequence[Unit], str], SourceHook] | None = None,
) -> FileOutcome:
    """Ingest tables built in Python (``table_from_dataframe``, ``table_from_records``) as one source ``uri``.

    Idempotent like files: the content hash covers titles, headers and every cell, so the same tables under
    the same ``uri`` change nothing and changed ones replace the old rows in one transaction. ``graph`` writes the
    source's knowledge-graph rows with them (as ``IngestOptions.graph``).
    """
    run = IngestRun(store=store, embedder=embedder, options=IngestOptions(table_batch_rows=batch_rows), corpus=corpus)
    digest = hashlib.sha256()
    for table in tables:
        digest.update(repr((table.title, list(table.header))).encode())
        for rows in table.batches(batch_rows):
            digest.update(repr(rows).encode())
    content_hash = digest.hexdigest()
    if _unchanged(run, "table", uri, content_hash):
        return FileOutcome(path=uri, status="unchanged", kind="table")
    units, parts = table_units(tables, run.spec(corpus, "table"), embedder, uri=uri, batch_rows=batch_rows)
    source = source_record(uri, content_hash, Modality.TABLE, units, metadata={"tables": len(tables)})
    source = replace(source, scope=run.scope("table"))
    result = store.write_source(source, units, parts=parts, hook=None if graph is None else graph(units, uri))
    store.settle(source.corpora)
    store.grow_vector_indexes(sorted(source.corpora))
    return FileOutcome(path=uri, status=result.status, kind="table", corpora=source.corpora, rows=dict(result.rows))


def ingest_paths(
    store: Store,
    embedder: Embedder,
    paths: Sequence[str | Path],
    *,
    corpus: str | None = None,
    options: IngestOptions | None = None,
    on_file: Callable[[FileOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    strict: bool = False,
) -> IngestReport:
    """Ingest files and folders (walked recursively) into their corpora; see the module docstring.

    When it has written, the corpora's full-text indexes are settled (:meth:`~universalrag.store.Store.settle`: no
    entry waits in a pending list that every later lookup would read).

    Files found in a folder that are not ingested are reported as ``skipped`` with the reason; with
    ``strict`` they fail instead (and so does the run). A path given explicitly that is not ingested fails.

    ``corpus`` sends every file to that corpus instead of the defaults of its kind. ``on_start`` is told how
    many files were found, ``on_file`` each outcome as it happens (for progress bars), ``on_progress`` each
    committed batch of a large source (:mod:`universalrag.ingest.large`). Caption and subtitle
    sidecars found next to images and videos are used as their text, not ingested on their own.
    """
    # what the caller's callbacks raise is theirs, never a file's failure (ingest.guard)
    on_file, on_start, on_progress = from_caller(on_file), from_caller(on_start), from_caller(on_progress)
    run = IngestRun(
        store=store, embedder=embedder, options=options or IngestOptions(), corpus=corpus, on_progress=on_progress
    )
    store.corpora()  # fail fast (StoreError) when the database cannot be reached
    if corpus is not None:
        store.corpus(corpus)  # fail fast on an unknown corpus
    files = list(iter_files([Path(p) for p in paths]))
    named = {Path(p).absolute() for p in paths if not is_folder(Path(p))}
    sidecars = sidecar_files(files)
    files = [f for f in files if f.resolve() not in sidecars]
    run.alts = alt_texts(files, run.parsed)
    if on_start is not None:
        on_start(len(files))
    report = IngestReport()
    pending: list[tuple[Path, str, str]] = []

    def emit(outcome: FileOutcome) -> None:
        report.outcomes.append(outcome)
        if on_file is not None:
            on_file(outcome)

    def flush() -> None:
        if pending:
            _started(run, pending[0][0], "text files" if len(pending) > 1 else "text", total=len(pending))
        group = list(pending)
        pending.clear()
        for chunk in _text_group(run, group):
            for outcome in chunk:
                if outcome.status == "skipped" and (strict or Path(outcome.path).absolute() in named):
                    outcome = FileOutcome(path=outcome.path, status="failed", error=outcome.error)  # no text, named
                emit(outcome)

    for path in files:
        try:
            walked = path.absolute() not in named
            found, uri, content_hash = _classify(run, path, walked=walked)
            kind = found.kind
            if kind is None:
                if strict or not walked:
                    raise _refusal(path, found)
                outcome = FileOutcome(path=str(path), status="skipped", reason=found.reason)
            elif _unchanged(run, kind, uri, content_hash):
                run.parsed.pop(path, None)
                outcome = FileOutcome(path=str(path), status="unchanged", kind=kind)
            elif kind == "text" and _large_text(run, path):
                flush()  # the group's files come first, and their announcement before this one's
                _started(run, path, kind)
                outcome = _write(run, path, kind, _prepare_large_text(run, path, uri, content_hash))
            elif kind == "text":
                pending.append((path, uri, content_hash))
                if len(pending) >= _TEXT_GROUP_FILES:
                    flush()
                _stop_if_asked(run)
                continue
            else:
                flush()  # the group's files come first, and their announcement before this one's
                _started(run, path, kind)
                with use_limits(run.options.limits):
                    prepared = _HANDLERS[kind](run, path, uri, content_hash)
                outcome = _write(run, path, kind, prepared)
        except UniversalRAGError as e:
            outcome = failed_outcome(path, e)
        except Exception as e:  # a reader failed on this file in a way it did not word: the file fails alone
            if not is_file_failure(e):
                raise
            outcome = failed_outcome(path, file_failure(path, e))
        flush()  # keep the outcomes in file order
        emit(outcome)
        _stop_if_asked(run)
    flush()
    written = {c for o in report.outcomes if o.status in ("added", "replaced") for c in o.corpora}
    store.settle(written)
    if written:  # a corpus left to choose its index that has outgrown the threshold: rebuilt binary-quantised
        store.grow_vector_indexes(sorted(written), on_progress=_index_progress(on_progress))
    return report


def _index_progress(on_progress: Callable[[Progress], None] | None) -> Callable[[BuildProgress], None] | None:
    """An index build's progress as ingest reports a large source's (the index where a file's path goes)."""
    if on_progress is None:
        return None

    def report(reading: BuildProgress) -> None:
        on_progress(
            Progress(
                path=f"HNSW index of {reading.table}",
                done=reading.done,
                total=reading.total,
                what=reading.what,
                stage=reading.phase,
            )
        )

    return report


def _gone(uri: str) -> bool:
    """True only when the local file of a ``file://`` ``uri`` certainly no longer exists: another error (a folder
    that cannot be read, an unmounted disk's permission error) keeps the source, since pruning must never delete
    what may still be there."""
    local = uri_file(uri)
    if local is None:
        return False
    try:
        os.stat(local)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def sources_under(sources: Iterable[Mapping[str, Any]], folder: Path, *, scope: str | None = None) -> dict[str, Path]:
    """Of ``sources`` (``Store.sources()`` rows), those under ``folder`` (any depth; in every scope, or only in
    ``scope``), by URI, each with its path as the user would write it (``folder`` as given, then the rest). The
    folder is matched by its real path, as walked files are stored; it need not exist any more."""
    root = folder.resolve().as_uri()
    prefix = root if root.endswith("/") else root + "/"
    return {
        r["uri"]: folder / unquote(r["uri"][len(prefix) :])
        for r in sources
        if str(r["uri"]).startswith(prefix) and (scope is None or r["scope"] == scope)
    }


def prune_missing(
    store: Store, folders: Sequence[str | Path], *, on_file: Callable[[FileOutcome], None] | None = None
) -> list[FileOutcome]:
    """Delete the stored sources under ``folders`` whose file no longer exists, as a sync tool deletes what was
    deleted at the source, so a file moved away stops being found. Each file's sources (every scope) go in one
    transaction of their own; one that fails is reported ``failed`` and the others go on. Nothing outside the
    folders is touched, nor a source whose file is still there or cannot be looked at, and a path that is not
    an existing folder prunes nothing (a missing or unmounted folder must not empty the store). Returns the
    outcomes: ``removed`` (with the corpora the source was in) or ``failed``; ``on_file`` hears each."""
    outcomes: list[FileOutcome] = []
    seen: set[str] = set()
    sources = store.sources()
    corpora = {r["uri"]: tuple(r["corpora"]) for r in sources}
    for folder in (Path(f) for f in folders):
        if not folder.is_dir():
            continue
        for uri, path in sorted(sources_under(sources, folder).items()):
            if uri in seen or not _gone(uri):
                continue
            seen.add(uri)
            try:
                store.delete_source(uri)
                outcome = FileOutcome(path=str(path), status="removed", corpora=corpora.get(uri, ()))
            except UniversalRAGError as e:
                outcome = failed_outcome(path, e)
            outcomes.append(outcome)
            if on_file is not None:
                on_file(outcome)
    return outcomes
