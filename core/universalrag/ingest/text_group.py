"""Text files prepared as a group: each parsed and planned on its own, all embedded in one call, then turned back
into one :class:`~universalrag.ingest.units.Prepared` source per file. No database writes.

The encoder is fastest on one large batch it sorts by length, so the group's call holds every text of every
file: chunks of the documents, paragraphs, and the previews and rows of the tables Markdown and HTML pages hold
(see :mod:`universalrag.ingest.table_plan`). A page whose tables hold more rows than one batch
(``IngestOptions.table_batch_rows``) streams those rows while it is written, as a table file does. A file that
cannot be read or planned fails on its own; the others go on.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import IngestError, NoTextError, UniversalRAGError
from ..types import Modality, PartBatch
from .embed_ahead import EmbedAhead
from .files import HEAD_BYTES, NO_TEXT_REASON, declared_encoding, decode_text, read_content
from .guard import file_failure, is_file_failure
from .report import FileOutcome, Progress
from .run import IngestRun, failed_outcome
from .table_plan import TablePlan, plan_table_units
from .text.document import TextDocument
from .units import Prepared, TextPlan, plan_text_units, source_record, table_units

if TYPE_CHECKING:
    from .tables.model import ParsedTable

__all__ = [
    "EMBED_SLICE",
    "TABLES_IN_TEXT",
    "TextFile",
    "page_tables",
    "plan_text_file",
    "prepare_text_group",
    "text_prepared",
]

#: Text formats whose tables also go to the table corpus.
TABLES_IN_TEXT = ("md", "html", "rst", "ipynb")
#: What a page holds when it may hold a table: an HTML table; (Markdown) a pipe beside a run of dashes, which
#: every delimiter row of a pipe table has (``| --- |``, ``--|--``, ``|:-:|``); (reStructuredText) the border of
#: a simple table (``=====  =====``), of a grid table (``+----+``) or a table directive; (notebooks) an HTML
#: table in an output or a pipe table in a Markdown cell. Pages without it skip the parse.
_HTML_OR_PIPE_TABLE = re.compile(r"<table|\|[ \t]*:?-|-:?[ \t]*\|", re.IGNORECASE)
_TABLE_SYNTAX = {
    "html": re.compile(r"<table", re.IGNORECASE),
    "md": _HTML_OR_PIPE_TABLE,
    "ipynb": _HTML_OR_PIPE_TABLE,
    "rst": re.compile(r"^[ \t]*(?:=+(?:[ \t]+=+)+[ \t]*$|\+[-=]+\+|\.\. (?:list-|csv-)?table::)", re.MULTILINE),
}


@dataclass(slots=True)
class TextFile:
    """A text file parsed and planned: the texts it needs embedded, and how their vectors become its units."""

    path: Path
    uri: str
    content_hash: str
    doc: TextDocument
    text: TextPlan
    tables: TablePlan | None = None  # the page's tables, embedded in the group's call
    large_tables: Sequence[ParsedTable] = ()  # more rows than one batch: embedded while written

    @property
    def texts(self) -> list[str]:
        """Every text to embed: the document's, then its tables'."""
        return self.text.texts + (self.tables.texts if self.tables is not None else [])


def page_tables(path: Path, fmt: str) -> list[ParsedTable]:
    """The tables of a Markdown (``fmt="md"``), reStructuredText (``"rst"``), notebook (``"ipynb"``) or HTML page,
    ``[]`` when it has none or they cannot be read: a page without tables is still a good document. A page without
    table syntax is not parsed for tables."""
    from .tables.read import tables_from_html, tables_from_markdown
    from .text.notebook import notebook_to_html
    from .text.rst import rst_to_html

    try:
        data = read_content(path)
        text, _ = decode_text(
            data, path, declared=declared_encoding(data[:HEAD_BYTES], html=True) if fmt == "html" else None
        )
        if not _TABLE_SYNTAX[fmt].search(text):
            return []
        if fmt == "md":
            return tables_from_markdown(text, name=str(path))
        converters: dict[str, Callable[[str], str | None]] = {"rst": rst_to_html, "ipynb": notebook_to_html}
        to_html = converters.get(fmt)
        html = to_html(text) if to_html is not None else text
        return [] if html is None else tables_from_html(html, name=str(path))
    except (IngestError, ValueError):  # ValueError: a notebook that is not one (its text read says why)
        return []


def plan_text_file(run: IngestRun, path: Path, uri: str, content_hash: str) -> TextFile:
    """Parse a text file (or take the page this run already read) and plan its document and paragraph units,
    plus the tables of a Markdown or HTML page when the table corpus exists and no corpus is named. The passages
    of a page whose tables go to the table corpus are cut from its prose, where each table's cells are replaced by
    one line naming the table (:attr:`~universalrag.ingest.text.document.TextDocument.prose`): a table is searched
    as a table, with its header, and its rows do not come back a second time as passages of run-together cells
    that outrank it. The whole document keeps its tables (a reader of the document misses nothing)."""
    from .text.document import read_text_file

    doc = run.parsed.pop(path, None) or read_text_file(path, format=run.formats.get(path))
    specs = [run.spec(n, "text") for n in run.targets("text")]
    tables: list[ParsedTable] = []
    if run.corpus is None and doc.format in TABLES_IN_TEXT and "table" in run.store.corpora():
        tables = page_tables(path, doc.format)
    passages = doc.prose if tables else None
    planned = TextFile(path, uri, content_hash, doc, plan_text_units(doc, specs, uri=uri, passage_text=passages))
    if sum(int(t.metadata.get("row_count", 0)) for t in tables) > run.options.table_batch_rows:
        planned.large_tables = tables
    elif tables:
        planned.tables = plan_table_units(tables, run.spec("table", "table"), uri=uri)
    return planned


def text_prepared(run: IngestRun, planned: TextFile, vectors: np.ndarray) -> Prepared:
    """A planned file's source, units and row parts from its vectors (one per text of ``planned.texts``)."""
    n = len(planned.text.texts)
    units = planned.text.build(vectors[:n])
    parts: Iterable[PartBatch] = ()
    if planned.tables is not None:
        table_list, parts = planned.tables.build(vectors[n:])
        units += table_list
    elif planned.large_tables:
        table_list, parts = table_units(
            planned.large_tables,
            run.spec("table", "table"),
            run.embedder,
            uri=planned.uri,
            batch_rows=run.options.table_batch_rows,
        )
        units += table_list
    meta = {"title": planned.doc.title, "format": planned.doc.format, "path": planned.path.name}
    record = source_record(planned.uri, planned.content_hash, Modality.TEXT, units, metadata=meta)
    return Prepared(record, units, parts)


#: Texts embedded per encoder call within a group: each call is a point where progress is reported and a stop asked
#: for is honoured, so it must stay short (a few seconds on a busy machine).
EMBED_SLICE = 128


def _plan(run: IngestRun, path: Path, uri: str, content_hash: str) -> TextFile | FileOutcome:
    """A file planned, or its outcome when it has no text (``skipped``) or cannot be read (``failed``)."""
    try:
        return plan_text_file(run, path, uri, content_hash)
    except NoTextError as e:
        return FileOutcome(path=str(path), status="skipped", reason=NO_TEXT_REASON, error=e.reason)
    except UniversalRAGError as e:
        return failed_outcome(path, e)
    except Exception as e:  # a reader failed on this file in a way it did not word: the file fails alone
        if not is_file_failure(e):
            raise
        return failed_outcome(path, file_failure(path, e))


class _GroupVectors:
    """The vectors of a group's texts as they are planned and embedded: rows grow with each file planned."""

    def __init__(self, dimension: int) -> None:
        self.rows = np.zeros((0, dimension), dtype=np.float32)

    def fit(self, n: int) -> None:
        """Room for ``n`` rows; rows already filled keep their values (a file built earlier keeps its own copy)."""
        if n > len(self.rows):
            grown = np.zeros((max(n, 2 * len(self.rows)), self.rows.shape[1]), dtype=np.float32)
            grown[: len(self.rows)] = self.rows
            self.rows = grown


def prepare_text_group(
    run: IngestRun,
    group: Sequence[tuple[Path, str, str]],
) -> Iterator[list[tuple[Path, Prepared | FileOutcome]]]:
    """Chunks of ``(path, prepared source or failed outcome)`` for the ``(path, uri, content hash)`` of ``group``,
    in order. Their texts are embedded :data:`EMBED_SLICE` at a time on a worker thread
    (:class:`~universalrag.ingest.embed_ahead.EmbedAhead`) while the files after them are read and the caller
    writes the files already embedded, so the encoder does not wait for the parser nor for the database.
    ``run.on_progress`` hears how many of the passages read so far are embedded after each call, named by the file
    they belong to; each chunk holds the files whose texts are all embedded by then. Between files and between
    calls, ``run.options.should_stop`` is asked: when it says stop, the calls not started are dropped, the one
    running is finished and its files given, and :class:`KeyboardInterrupt` is raised, after the caller has taken
    every file embedded so far (a caller writes each chunk before asking for the next). A source is built only when
    its chunk is asked for. A file with no readable text is ``skipped``
    (:data:`~universalrag.ingest.files.NO_TEXT_REASON`, its own reason as ``error``): the caller fails it when the
    user named it. When the encoder fails, every file not embedded yet fails with its error."""
    stop = run.options.should_stop or (lambda: False)
    planned: list[TextFile | FileOutcome] = []
    ends: list[int] = []  # the end of each planned file's rows among the group's texts
    texts: list[str] = []
    vectors = _GroupVectors(run.embedder.dimension)
    done = taken = submitted = 0

    def chunk() -> list[tuple[Path, Prepared | FileOutcome]]:
        """The planned files whose texts are all embedded and not given yet, built."""
        nonlocal taken
        out: list[tuple[Path, Prepared | FileOutcome]] = []
        while taken < len(planned) and ends[taken] <= done:
            path, p = group[taken][0], planned[taken]
            out.append((path, p if isinstance(p, FileOutcome) else _built(run, p, vectors.rows, ends[taken])))
            taken += 1
        return out

    def collect(ahead: EmbedAhead) -> None:
        """Take the oldest slice (waiting for it) into the vectors, and report progress."""
        nonlocal done
        start, embedded = ahead.take()
        vectors.rows[start : start + len(embedded)] = embedded
        done = start + len(embedded)
        if run.on_progress is not None:
            current = group[min(bisect.bisect_left(ends, done), len(group) - 1)][0]
            run.on_progress(Progress(path=str(current), done=done, total=len(texts), what="passages", stage="embedded"))

    with EmbedAhead(run.embedder) as ahead:
        try:
            stopped = False
            for path, uri, content_hash in group:
                if stop():
                    stopped = True
                    break
                p = _plan(run, path, uri, content_hash)
                planned.append(p)
                if isinstance(p, TextFile):
                    texts.extend(p.texts)
                    vectors.fit(len(texts))
                ends.append(len(texts))
                while len(texts) - submitted >= EMBED_SLICE:
                    ahead.submit(submitted, texts[submitted : submitted + EMBED_SLICE])
                    submitted += EMBED_SLICE
                while ahead.ready():
                    collect(ahead)
                if ready := chunk():
                    yield ready
            if not stopped and submitted < len(texts):
                ahead.submit(submitted, texts[submitted:])
                submitted = len(texts)
            if ready := chunk():  # files without texts at the end of the group
                yield ready
            while len(ahead):
                if stopped or stop():
                    stopped = True
                    ahead.drop_pending()  # the call running is finished and its files kept
                    if not len(ahead):
                        break
                collect(ahead)
                if ready := chunk():
                    yield ready
        except UniversalRAGError as e:  # the encoder failed: the files not embedded yet fail; those written stay
            failed: list[tuple[Path, Prepared | FileOutcome]] = [
                (group[i][0], p if isinstance(p, FileOutcome) else failed_outcome(group[i][0], e))
                for i, p in enumerate(planned)
                if i >= taken
            ]
            yield failed + [(path, failed_outcome(path, e)) for path, _, _ in group[len(planned) :]]
            return
        if stopped:
            raise KeyboardInterrupt


def _built(run: IngestRun, planned: TextFile, vectors: np.ndarray, end: int) -> Prepared | FileOutcome:
    """The source of a planned file from its rows of the group's ``vectors`` (ending at ``end``), or its failure."""
    try:
        return text_prepared(run, planned, vectors[end - len(planned.texts) : end])
    except UniversalRAGError as e:
        return failed_outcome(planned.path, e)
    except Exception as e:  # as above
        if not is_file_failure(e):
            raise
        return failed_outcome(planned.path, file_failure(planned.path, e))
