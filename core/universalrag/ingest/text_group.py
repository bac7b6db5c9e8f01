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
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import EmbeddingError, IngestError, NoTextError, UniversalRAGError
from ..types import Modality, PartBatch
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


def prepare_text_group(
    run: IngestRun,
    group: Sequence[tuple[Path, str, str]],
) -> Iterator[list[tuple[Path, Prepared | FileOutcome]]]:
    """Chunks of ``(path, prepared source or failed outcome)`` for the ``(path, uri, content hash)`` of ``group``,
    in order. Their texts are embedded :data:`EMBED_SLICE` at a time (``run.on_progress`` hears how many of the
    group's passages are embedded after each call, named by the file they belong to); each chunk holds the files
    whose texts are all embedded by then. Between calls, ``run.options.should_stop`` is asked: when it says stop,
    :class:`KeyboardInterrupt` is raised there, after the caller has taken every file embedded so far (a caller
    writes each chunk before asking for the next). A source is built only when its chunk is asked for. A file with
    no readable text is ``skipped`` (:data:`~universalrag.ingest.files.NO_TEXT_REASON`, its own reason as
    ``error``): the caller fails it when the user named it."""
    planned: list[TextFile | FileOutcome] = []
    stop = run.options.should_stop or (lambda: False)
    for path, uri, content_hash in group:
        if stop():  # nothing of the group is embedded yet: nothing is lost
            raise KeyboardInterrupt
        try:
            planned.append(plan_text_file(run, path, uri, content_hash))
        except NoTextError as e:
            planned.append(FileOutcome(path=str(path), status="skipped", reason=NO_TEXT_REASON, error=e.reason))
        except UniversalRAGError as e:
            planned.append(failed_outcome(path, e))
        except Exception as e:  # a reader failed on this file in a way it did not word: the file fails alone
            if not is_file_failure(e):
                raise
            planned.append(failed_outcome(path, file_failure(path, e)))
    texts = [t for p in planned if isinstance(p, TextFile) for t in p.texts]
    ends = list(itertools.accumulate(len(p.texts) if isinstance(p, TextFile) else 0 for p in planned))
    vectors = np.zeros((len(texts), run.embedder.dimension), dtype=np.float32)
    done = taken = 0
    while True:
        chunk: list[tuple[Path, Prepared | FileOutcome]] = []
        while taken < len(planned) and ends[taken] <= done:
            path, p = group[taken][0], planned[taken]
            chunk.append((path, p if isinstance(p, FileOutcome) else _built(run, p, vectors, ends[taken])))
            taken += 1
        if chunk:
            yield chunk
        if done >= len(texts):
            return
        if stop():
            raise KeyboardInterrupt
        batch = texts[done : done + EMBED_SLICE]
        try:
            embedded = run.embedder.embed(batch)
            if len(embedded) != len(batch):
                raise EmbeddingError(
                    f"The encoder {run.embedder.name!r} returned {len(embedded)} vectors for "
                    f"{len(batch)} texts; its embed() must return one vector per text, in order."
                )
        except UniversalRAGError as e:  # the files not embedded yet fail; those written stay
            yield [
                (group[i][0], p if isinstance(p, FileOutcome) else failed_outcome(group[i][0], e))
                for i, p in enumerate(planned)
                if i >= taken
            ]
            return
        vectors[done : done + len(batch)] = embedded
        done += len(batch)
        if run.on_progress is not None:
            current = group[min(bisect.bisect_left(ends, done), len(group) - 1)][0]
            run.on_progress(Progress(path=str(current), done=done, total=len(texts), what="passages", stage="embedded"))


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
