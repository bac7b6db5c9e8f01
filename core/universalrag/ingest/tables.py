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

Headers: names are trimmed, a blank name becomes ``column_<n>``, a repeated one gets ``_2``, ``_3``.
In CSV, TSV, XLSX and header-less HTML tables the first non-blank row is the header unless every
filled cell in it is a number or an ISO date — then it is data and the header is ``column_1..n``
(``metadata["header_synthesized"]``). Cells: numbers without a trailing ``.0`` when integral, dates
and times in ISO 8601, booleans ``true``/``false``, missing values (None, NaN, NaT, NA) empty,
nested values as JSON. Entirely blank rows of CSV, TSV, XLSX, HTML and Markdown are skipped
(counted in ``blank_rows_skipped``); records and DataFrame rows are kept one for one, so row ``i``
is record ``i``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from universalrag.errors import IngestError
from universalrag.ingest.detect import sniff

__all__ = [
    "TABLE_FORMATS",
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
    ".csv": "csv", ".tsv": "tsv", ".xlsx": "xlsx", ".json": "json",
    ".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
}

RowSource = Callable[[], Iterable[list[str]]]


@dataclass(frozen=True, slots=True)
class ParsedTable:
    """One table: ``title``, ``header`` (non-empty, unique names) and JSON-ready ``metadata``.

    ``metadata`` always has ``format``, ``source`` (the file or given name), ``index_in_file``
    (0-based), ``row_count`` and ``column_count``, plus per-format details. Rows come from
    ``row_source``, a callable returning a fresh iterator of rows each as wide as the header
    (by default, no rows); build tables with the functions of this module rather than by hand.
    """

    title: str
    header: list[str]
    metadata: dict[str, Any]
    row_source: RowSource = field(default=lambda: iter(()), repr=False, compare=False, kw_only=True)

    def rows(self) -> Iterator[list[str]]:
        """Every row, in order (a new pass over the source each call)."""
        return iter(self.row_source())

    def batches(self, size: int = 2048) -> Iterator[list[list[str]]]:
        """Rows in lists of at most ``size``; each call streams the table again from its source.

        File-backed tables re-open the file (and raise :class:`IngestError` if it changed since it
        was parsed); the last batch may be shorter; no batch is empty.
        """
        if size < 1:
            raise ValueError(f"Batch size must be at least 1, got {size}.")
        return _batched(self.row_source(), size)


def _batched(rows: Iterable[list[str]], size: int) -> Iterator[list[list[str]]]:
    batch: list[list[str]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# --------------------------------------------------------------------------- cells and headers

_DATA_CELL = re.compile(
    r"[+-]?[$€£]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?|\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?"
)


def _is_missing(value: Any) -> bool:
    try:
        return bool(value != value)  # noqa: PLR0124 - true for NaN and NaT
    except TypeError:  # pandas.NA refuses a truth value
        return True
    except ValueError:  # an array compares element-wise: a value, not a missing one
        return False


def _format_value(value: Any) -> str:
    """A cell as text: see the module docstring for the rules."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "true" if value else "false"
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str)
    if _is_missing(value):
        return ""
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, Decimal):
        return str(int(value)) if value.is_finite() and value == value.to_integral_value() else str(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and number.is_integer() and abs(number) < 1e15:
            return str(int(number))
        return str(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None and value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").strip()
    if hasattr(value, "tolist") and not isinstance(value, numbers.Number):  # numpy arrays
        return _format_value(value.tolist())
    return str(value).strip()


def _looks_like_data(cells: Sequence[str]) -> bool:
    """True when every filled cell is a number or an ISO date (a first row that is not a header)."""
    filled = [c for c in (cell.strip() for cell in cells) if c]
    return bool(filled) and all(_DATA_CELL.fullmatch(c) for c in filled)


def _make_header(cells: Sequence[Any]) -> list[str]:
    """Trimmed names; blanks become ``column_<n>``; repeats get the first free ``_<k>`` suffix."""
    names = [" ".join(_format_value(c).split()) or f"column_{i}" for i, c in enumerate(cells, 1)]
    reserved, used, out = set(names), set(), []
    for name in names:
        candidate, k = name, 2
        while candidate in used or (candidate != name and candidate in reserved):
            candidate, k = f"{name}_{k}", k + 1
        used.add(candidate)
        out.append(candidate)
    return out


def _synthetic_header(width: int) -> list[str]:
    return [f"column_{i}" for i in range(1, width + 1)]


def _fit(cells: list[str], width: int) -> list[str]:
    """Pad with empty cells or cut to ``width``."""
    return cells[:width] if len(cells) >= width else cells + [""] * (width - len(cells))


def _unique_titles(titles: list[str]) -> list[str]:
    """The second "X" of a file becomes "X (2)", the third "X (3)"."""
    seen: dict[str, int] = {}
    out = []
    for title in titles:
        seen[title] = seen.get(title, 0) + 1
        out.append(title if seen[title] == 1 else f"{title} ({seen[title]})")
    return out


def _stem(name: str) -> str:
    return Path(name).stem or "table"


def _source(name: str) -> str:
    return Path(name).name or name


# --------------------------------------------------------------------------- row text and rendering


def serialize_row(header: Sequence[str], row: Sequence[Any]) -> str:
    """The text a row is embedded as: ``"Team: Lakers | Wins: 57"``; empty cells are left out.

    Whitespace inside cells collapses to single spaces. A row shorter than the header counts its
    missing cells as empty; a longer one raises ``ValueError``.
    """
    if len(row) > len(header):
        raise ValueError(f"Row has {len(row)} cells but the header has {len(header)} columns.")
    parts = []
    for name, cell in zip(header, row):
        text = " ".join(_format_value(cell).split())
        if text:
            parts.append(f"{name}: {text}")
    return " | ".join(parts)


def _md_line(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(" ".join(_format_value(c).split()).replace("|", "\\|") for c in cells) + " |"


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
        raise ValueError("A table needs at least one column to render.")
    if (max_rows is not None and max_rows < 0) or (max_chars is not None and max_chars < 0):
        raise ValueError("max_rows and max_chars must not be negative.")
    width = len(header)
    head = (f"{title.strip()}\n\n" if title.strip() else "") + _md_line(header) + "\n" + _md_line(["---"] * width)
    lines: list[str] = []
    used, more = len(head), 0
    iterator = iter(rows)
    for row in iterator:
        if len(row) > width:
            raise ValueError(f"Row has {len(row)} cells but the header has {width} columns.")
        line = _md_line(_fit(list(row), width))
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


def _records_table(
    keys: list[Any], count: int, rows: RowSource, *, title: str, name: str | Path, source: str, fmt: str
) -> ParsedTable:
    if count == 0:
        raise IngestError(name, "has no records; a table needs at least one, like [{\"team\": \"Lakers\"}].")
    if not keys:
        raise IngestError(name, "its records have no fields; give each record at least one key.")
    header = _make_header(keys)
    metadata = {"format": fmt, "source": source, "index_in_file": 0, "row_count": count,
                "column_count": len(header)}
    return ParsedTable(title, header, metadata, row_source=rows)


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
            yield [_format_value(record.get(k)) for k in order]

    return _records_table(order, len(records), rows, title=title, name=title, source=title, fmt="records")


def _label(column: Any) -> str:
    if isinstance(column, tuple):  # MultiIndex columns
        return " ".join(p for p in (_format_value(c) for c in column) if p)
    return _format_value(column)


def table_from_dataframe(df: Any, *, title: str) -> ParsedTable:
    """A table from a pandas-like DataFrame (anything with ``columns``, ``index``, ``itertuples``).

    Nothing is imported: the frame is duck-typed and read lazily on each pass over the rows, so
    later changes to it show. A named index (``df.set_index("team")``) becomes leading columns;
    a default index is left out. MultiIndex column labels are joined with spaces.
    """
    if not hasattr(df, "columns") or not hasattr(df, "itertuples"):
        raise TypeError(f"Expected a DataFrame with .columns and .itertuples(), got {type(df).__name__}.")
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
                yield [_format_value(v) for v in row]
            return
        for key, row in zip(df.index, values):
            lead = key if isinstance(key, tuple) else (key,)
            yield [_format_value(v) for v in (*lead, *row)]

    header = _make_header(labels)
    metadata = {"format": "dataframe", "source": title, "index_in_file": 0, "row_count": len(df),
                "column_count": len(header)}
    return ParsedTable(title, header, metadata, row_source=rows)


# --------------------------------------------------------------------------- HTML and Markdown


def tables_from_html(html: str, *, name: str) -> list[ParsedTable]:
    """Every ``<table>`` of ``html`` with at least one data row, in document order (``[]`` if none).

    The header comes from ``<thead>`` rows, else leading rows of ``<th>`` cells, else the first row
    (several header rows join per column: "2024 Q1"). ``colspan`` and ``rowspan`` are expanded
    (a colspan repeats its text in header rows and fills only its first column in data rows).
    A table nested in a cell is a table of its own and its text is left out of the outer cell.
    Title: the ``<caption>``, else the nearest preceding heading, else "<stem of name> table N".
    """
    from universalrag.ingest.table_formats import html_tables

    return html_tables(html, name=name, fmt="html")


_FRONT_MATTER = re.compile(r"\A---\r?\n.*?\r?\n(?:---|\.\.\.)\r?\n", re.DOTALL)


def tables_from_markdown(text: str, *, name: str) -> list[ParsedTable]:
    """Every pipe table of Markdown ``text`` (GitHub syntax: a header row, then a ``| --- |``
    separator line, then rows), plus raw HTML tables in it, in order (``[]`` if none).

    Parsed with markdown-it, so escaped pipes, inline code and emphasis come out as plain text and
    tables in code blocks are ignored. Title: the nearest preceding heading, else "<stem> table N".
    """
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(_FRONT_MATTER.sub("", text, count=1))
    from universalrag.ingest.table_formats import html_tables

    return html_tables(html, name=name, fmt="markdown")


# --------------------------------------------------------------------------- files

_BOM_CODECS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"),
)


def _text_codec(head: bytes, name: str | Path) -> str:
    """The codec for a text file from its first bytes; rejects binary files with a reason."""
    sniffed = sniff(head[:64])
    if sniffed is not None:
        raise IngestError(name, f"this is a {sniffed.label}, not a text table (it was probably renamed); "
                                "give it its real extension.")
    codec = next((c for bom, c in _BOM_CODECS if head.startswith(bom)), None)
    if codec is None and b"\x00" in head:
        raise IngestError(name, "looks like a binary file (it contains NUL bytes); if it is UTF-16 text, "
                                "save it as UTF-8 (or UTF-16 with a byte-order mark).")
    return codec or "utf-8"


def _decode_error(name: str | Path, codec: str, where: str) -> IngestError:
    label = "UTF-8" if codec.startswith("utf-8") else codec.upper()
    file = Path(name).name
    return IngestError(
        name,
        f"is not valid {label} text ({where}); it is probably in a legacy encoding such as Windows-1252. "
        f"Convert it to UTF-8, for example with `iconv -f WINDOWS-1252 -t UTF-8 {file} > utf8-{file}`.",
    )


def _read_markup(path: Path, parse: Callable[..., list[ParsedTable]], hint: str) -> list[ParsedTable]:
    data = path.read_bytes()
    codec = _text_codec(data[:65536], path)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as e:
        raise _decode_error(path, codec, f"byte offset {e.start}") from e
    tables = parse(text, name=str(path))
    if not tables:
        raise IngestError(path, f"no table found; {hint}")
    return tables


def _check_file(p: Path) -> None:
    if not p.exists():
        raise IngestError(p, "no such file; check the path (relative paths start at the current folder).")
    if not p.is_file():
        raise IngestError(p, "is not a regular file; pass a .csv, .tsv, .xlsx, .json, .md or .html file.")
    try:
        size = p.stat().st_size
    except OSError as e:
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e
    if size == 0:
        raise IngestError(p, "the file is empty (0 bytes); add a table to it or leave it out.")


def read_tables(path: str | Path) -> list[ParsedTable]:
    """Parse every table in a ``.csv``, ``.tsv``, ``.xlsx``, ``.json`` (array of objects),
    ``.md``/``.markdown`` (pipe tables) or ``.html``/``.htm`` (``<table>`` elements) file.

    CSV/TSV/XLSX/JSON files are validated by one streaming pass here and streamed again by
    :meth:`ParsedTable.batches`. Titles: caption, heading or sheet name, else the file stem; a
    repeated title gets " (2)". Raises :class:`IngestError` naming the path and what to do when the
    file is missing, empty, of an unsupported type, undecodable, corrupt, or holds no table.
    """
    from universalrag.ingest import table_formats

    p = Path(path)
    _check_file(p)
    readers: dict[str, Callable[[Path], list[ParsedTable]]] = {
        "csv": table_formats.read_csv,
        "tsv": table_formats.read_csv,
        "xlsx": table_formats.read_xlsx,
        "json": table_formats.read_json,
        "markdown": lambda q: _read_markup(q, tables_from_markdown, "a Markdown table needs a header row, "
                                           "a separator line such as | --- | --- |, and at least one row."),
        "html": lambda q: _read_markup(q, tables_from_html, "an HTML table needs a <table> element with "
                                       "at least one data row besides its header."),
    }
    fmt = TABLE_FORMATS.get(p.suffix.lower())
    if fmt is None:
        advice = " Re-save .xls workbooks as .xlsx." if p.suffix.lower() in (".xls", ".ods") else ""
        raise IngestError(p, f"unsupported extension {p.suffix or '(none)'!r} for tables; supported: "
                             f"{', '.join(sorted(TABLE_FORMATS))}.{advice}")
    try:
        return readers[fmt](p)
    except OSError as e:
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e


def _with_titles(tables: list[ParsedTable]) -> list[ParsedTable]:
    """Tables with repeated titles made unique ("X", "X (2)")."""
    titles = _unique_titles([t.title for t in tables])
    return [t if t.title == title else replace(t, title=title) for t, title in zip(tables, titles)]
