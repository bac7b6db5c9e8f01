"""Tables (CSV, TSV, Excel, JSON records, Markdown and HTML tables, DataFrames) → header + rows of strings.

Pure parsing: no database, no embedding. Every table comes out as a :class:`ParsedTable`: a title, a
non-empty header of unique names, JSON-ready metadata, and rows of strings (as wide as the header)
delivered in batches.

- **File-backed tables** (CSV, TSV, XLSX, JSON) are read twice: once by :func:`read_tables`, which
  streams the whole file to validate it and count its rows (so bad input fails there, before any row
  is used), and again, streamed, each time :meth:`ParsedTable.batches` is iterated. Memory stays
  bounded whatever the file size; a file changed in between raises :class:`IngestError`.
- **In-memory tables** (HTML, Markdown, records, DataFrames) keep a reference to their source and
  format its cells on demand; they are re-iterable too.

Headers: names are trimmed, a blank name becomes ``column_<n>``, a repeated one gets ``_2``, ``_3``; in CSV,
TSV and HTML a blank first name over a column of words (the rows' labels, as in a table of statistics) stays
blank. In CSV, TSV, XLSX and header-less HTML tables the first non-blank row is the header unless every
filled cell in it is a number or an ISO date — then it is data and the header is ``column_1..n``
(``metadata["header_synthesized"]``). CSV and TSV also skip the lines that lead into a table (comments starting
with "#", a title, scikit-learn's line of counts) into ``metadata["description"]``, and read a first line that
starts with a number over a column of numbers as a row. Cells: numbers without a trailing ``.0`` when integral, dates
and times in ISO 8601, booleans ``true``/``false``, missing values (None, NaN, NaT, NA) empty,
nested values as JSON. Entirely blank rows of CSV, TSV, XLSX, HTML and Markdown are skipped
(counted in ``blank_rows_skipped``); records and DataFrame rows are kept one for one, so row ``i``
is record ``i``.

The readers behind these functions live in :mod:`~universalrag.ingest.tables.text_formats` (CSV, TSV),
:mod:`~universalrag.ingest.tables.json_records` (JSON: an array of records, or an object holding such arrays
under its keys, one table each), :mod:`~universalrag.ingest.tables.xlsx` and
:mod:`~universalrag.ingest.tables.html` (HTML, Markdown);
the table model and cell rules they share in :mod:`~universalrag.ingest.tables.model`, and the file checks
(path, text encoding, changes after parsing) in :mod:`~universalrag.ingest.files`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigError, IngestError
from ..files import HEAD_BYTES, check_file, declared_encoding, decode_text, read_content, read_error
from ..limits import check_columns
from .html import html_tables, markdown_tables
from .json_records import JSON_RULES, read_json
from .model import ParsedTable, fit_row, format_value, make_header, records_table, serialize_row
from .text_formats import read_csv
from .xlsx import read_xlsx

__all__ = [
    "CSV_RULES",
    "ROW_RULES",
    "TABLE_FORMATS",
    "TABLE_RULES",
    "ParsedTable",
    "read_tables",
    "render_markdown",
    "serialize_row",
    "table_from_dataframe",
    "table_from_records",
    "tables_from_html",
    "tables_from_markdown",
]

#: File extension → table format read by :func:`read_tables`.
TABLE_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".xlsx": "xlsx",
    ".json": "json",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
}

#: How a table's rows read (:func:`serialize_row`), part of every entry of :data:`TABLE_RULES`: since v2 a date
#: spelled otherwise than in ISO 8601 is followed by its ISO spelling. Bump it with any change to the row text, and
#: every table file stored before is read again.
ROW_RULES = "rows v2: name: value cells, ISO dates beside others"
#: What a CSV or TSV file becomes: since v2 a row wider than the header widens the table instead of losing its last
#: cells, and whitespace-aligned columns are columns; since v3 the lines that lead into the table (a "#" comment, a
#: title, a line of counts) are its description, not its header, and a blank first name over the rows' labels stays
#: blank; since v4 a date cell spelled otherwise than in ISO 8601 is followed by its ISO spelling.
CSV_RULES = (
    "csv v4: rows never cut, whitespace-aligned columns, leading lines skipped, label column unnamed, "
    "ISO dates beside others"
)
#: What a table file becomes, by the format its reader reads, in the identity of every such source: the ingest
#: pipeline hashes it with the file's bytes, so a file stored under an earlier rule is read again, once, at the next
#: ingest. Every format's entry holds :data:`ROW_RULES`, so a change to the row text reaches every format at once
#: (XLSX and JSON tables stored before their rows carried ISO dates were not read again when only the CSV rule said
#: so); :data:`~universalrag.ingest.tables.json_records.JSON_RULES` tells what a JSON file becomes.
TABLE_RULES: dict[str, str] = {
    "csv": f"{CSV_RULES}; {ROW_RULES}",
    "tsv": f"{CSV_RULES}; {ROW_RULES}",
    "xlsx": f"xlsx v1: one table per sheet with data; {ROW_RULES}",
    "json": f"{JSON_RULES}; {ROW_RULES}",
}


# ------------------------------------------------------------------------ rendering (a row's text: model.serialize_row)


def _md_line(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(" ".join(format_value(c).split()).replace("|", "\\|") for c in cells) + " |"


def _more_note(count: int) -> str:
    return f"\n\n(… {count} more row{'s' if count != 1 else ''})"


def render_markdown(
    title: str,
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    max_rows: int | None = None,
    max_chars: int | None = None,
) -> str:
    """A GitHub pipe table under a title line, for prompts and display.

    ``|`` in cells is escaped as ``\\|`` and line breaks become spaces. With ``max_rows`` and/or
    ``max_chars`` the table is cut and ends with ``(… N more rows)``; rows left over are counted by
    consuming ``rows``. The title, header and note are always kept, so the result exceeds
    ``max_chars`` only when they alone do.
    """
    if not header:
        raise ConfigError("A table needs at least one column to render.")
    if (max_rows is not None and max_rows < 0) or (max_chars is not None and max_chars < 0):
        raise ConfigError("max_rows and max_chars must not be negative.")
    width = len(header)
    head = (f"{title.strip()}\n\n" if title.strip() else "") + _md_line(header) + "\n" + _md_line(["---"] * width)
    lines: list[str] = []
    used, more = len(head), 0
    iterator = iter(rows)
    for row in iterator:
        if len(row) > width:
            raise ConfigError(f"Row has {len(row)} cells but the header has {width} columns.")
        line = _md_line(fit_row(list(row), width))
        if (max_rows is not None and len(lines) >= max_rows) or (
            max_chars is not None and used + 1 + len(line) > max_chars
        ):
            more = 1 + sum(1 for _ in iterator)
            break
        lines.append(line)
        used += 1 + len(line)
    if more and max_chars is not None:
        while lines and used + len(_more_note(more)) > max_chars:
            used -= 1 + len(lines.pop())
            more += 1
    return "\n".join([head, *lines]) + (_more_note(more) if more else "")


# --------------------------------------------------------------------------- records and DataFrames


def table_from_records(records: Sequence[Mapping[str, Any]], *, title: str) -> ParsedTable:
    """A table from mappings: the header is the union of their keys in first-seen order.

    Missing keys give empty cells; nested values are JSON-encoded. ``records`` is read again on
    each pass over the rows. Raises :class:`IngestError` (path = ``title``) when it is empty, an
    item is not a mapping, or no record has a key.
    """
    keys: dict[Any, None] = {}
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise IngestError(title, f"record {i} is a {type(record).__name__}, not a mapping; pass dicts.")
        keys.update(dict.fromkeys(record))
    order = list(keys)

    def rows() -> Iterator[list[str]]:
        for record in records:
            yield [format_value(record.get(k)) for k in order]

    return records_table(order, len(records), rows, title=title, name=title, source=title, fmt="records")


def _label(column: Any) -> str:
    if isinstance(column, tuple):  # MultiIndex columns
        return " ".join(p for p in (format_value(c) for c in column) if p)
    return format_value(column)


def table_from_dataframe(df: Any, *, title: str) -> ParsedTable:
    """A table from a pandas-like DataFrame (anything with ``columns``, ``index``, ``itertuples``).

    Nothing is imported: the frame is duck-typed and read lazily on each pass over the rows, so
    later changes to it show. A named index (``df.set_index("team")``) becomes leading columns;
    a default index is left out. MultiIndex column labels are joined with spaces.
    """
    if not hasattr(df, "columns") or not hasattr(df, "itertuples"):
        raise ConfigError(f"Expected a DataFrame with .columns and .itertuples(), got {type(df).__name__}.")
    index = getattr(df, "index", None)
    index_names = list(getattr(index, "names", None) or [])
    keep_index = any(n is not None for n in index_names)
    labels = [n if n is not None else f"index_{i}" for i, n in enumerate(index_names, 1)] if keep_index else []
    labels += [_label(c) for c in df.columns]
    if len(labels) == 0:
        raise IngestError(title, "the DataFrame has no columns.")
    if len(df) == 0:
        raise IngestError(title, "has a header but no rows; the DataFrame is empty.")

    def rows() -> Iterator[list[str]]:
        values = df.itertuples(index=False, name=None)
        if not keep_index:
            for row in values:
                yield [format_value(v) for v in row]
            return
        for key, row in zip(df.index, values, strict=True):
            lead = key if isinstance(key, tuple) else (key,)
            yield [format_value(v) for v in (*lead, *row)]

    header = make_header(labels)
    metadata = {
        "format": "dataframe",
        "source": title,
        "index_in_file": 0,
        "row_count": len(df),
        "column_count": len(header),
    }
    return ParsedTable(title, header, metadata, row_source=rows)


# --------------------------------------------------------------------------- HTML and Markdown


def tables_from_html(html: str, *, name: str) -> list[ParsedTable]:
    """Every ``<table>`` of ``html`` with at least one data row, in document order (``[]`` if none).

    The header comes from ``<thead>`` rows, else leading rows of ``<th>`` cells, else the first row
    (several header rows join per column: "2024 Q1"); a blank first header cell over a column of words stays blank,
    the rows' labels needing no name (``"Proline: | Min: 278"``). ``colspan`` and ``rowspan`` are expanded
    (a colspan repeats its text in header rows and fills only its first column in data rows).
    A table nested in a cell is a table of its own and its text is left out of the outer cell.
    Title: the ``<caption>``, else the nearest preceding heading followed by the short paragraph ending in a colon
    that leads into the table, if any ("Transfers — In"), else that paragraph, else "<stem of name> table N".
    """
    return html_tables(html, name=name, fmt="html")


def tables_from_markdown(text: str, *, name: str) -> list[ParsedTable]:
    """Every pipe table of Markdown ``text`` (GitHub syntax: a header row, then a ``| --- |``
    separator line, then rows), plus raw HTML tables in it, in order (``[]`` if none).

    Parsed with markdown-it, so escaped pipes, inline code and emphasis come out as plain text and
    tables in code blocks are ignored. Title: as for :func:`tables_from_html` (a pipe table has no caption).
    """
    return markdown_tables(text, name=name)


# --------------------------------------------------------------------------- files


def _read_markup(path: Path, parse: Callable[..., list[ParsedTable]], hint: str, *, html: bool) -> list[ParsedTable]:
    data = read_content(path)
    declared = declared_encoding(data[:HEAD_BYTES], html=True) if html else None
    text, _ = decode_text(data, path, declared=declared)
    tables = parse(text, name=str(path))
    if not tables:
        raise IngestError(path, f"no table found; {hint}")
    return tables


def read_tables(path: str | Path, *, format: str | None = None) -> list[ParsedTable]:
    """Parse every table in a ``.csv``, ``.tsv``, ``.xlsx``, ``.json`` (array of objects),
    ``.md``/``.markdown`` (pipe tables) or ``.html``/``.htm`` (``<table>`` elements) file.

    CSV/TSV/XLSX/JSON files are validated by one streaming pass here and streamed again by
    :meth:`ParsedTable.batches`. Titles: caption, heading or sheet name, else the file stem; a
    repeated title gets " (2)". Raises :class:`IngestError` naming the path and what to do when the
    file is missing, empty, of an unsupported type, undecodable, corrupt, or holds no table. Text formats
    may be gzip-compressed (``.csv.gz``); ``format`` (``csv``, ``tsv``, ``xlsx``, ``json``, ``markdown``,
    ``html``) overrides the extension.
    """
    p = Path(path)
    check_file(p, empty="add a table to it or leave it out.")
    readers: dict[str, Callable[[Path], list[ParsedTable]]] = {
        "csv": read_csv,
        "tsv": read_csv,
        "xlsx": read_xlsx,
        "json": read_json,
        "markdown": lambda q: _read_markup(
            q,
            tables_from_markdown,
            "a Markdown table needs a header row, a separator line such as | --- | --- |, and at least one row.",
            html=False,
        ),
        "html": lambda q: _read_markup(
            q,
            tables_from_html,
            "an HTML table needs a <table> element with at least one data row besides its header.",
            html=True,
        ),
    }
    fmt = format or TABLE_FORMATS.get(Path(p.name.lower().removesuffix(".gz")).suffix)
    if fmt not in readers:
        advice = " Re-save .xls workbooks as .xlsx." if p.suffix.lower() in (".xls", ".ods") else ""
        raise IngestError(
            p,
            f"unsupported extension {p.suffix or '(none)'!r} for tables; supported: "
            f"{', '.join(sorted(TABLE_FORMATS))}.{advice}",
        )
    try:
        tables = readers[fmt](p)
    except OSError as e:
        raise read_error(p, e) from e
    for table in tables:
        check_columns(p, len(table.header), where=f" in the table {table.title!r}")
    return tables
