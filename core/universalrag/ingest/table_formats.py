"""The format readers behind :mod:`universalrag.ingest.tables` (use that module's functions).

CSV/TSV, XLSX and JSON readers make one validating pass over the whole file (counting rows, finding
the header, rejecting bad input with :class:`IngestError`) and return tables whose rows re-open the
file and stream it again, so neither pass holds more than one row (or one JSON item) at a time.
HTML tables (and Markdown, rendered to HTML) are parsed in memory into a grid with spans expanded.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from universalrag.errors import IngestError, MissingDependencyError
from universalrag.ingest.tables import (
    ParsedTable,
    _decode_error,
    _fit,
    _format_value,
    _looks_like_data,
    _make_header,
    _records_table,
    _source,
    _stem,
    _synthetic_header,
    _text_codec,
    _unique_titles,
    _with_titles,
)

__all__ = ["html_tables", "read_csv", "read_json", "read_xlsx"]

_HEAD_BYTES = 65536
_SAMPLE_CHARS = 65536
_SAMPLE_ROWS = 200
_DELIMITERS = (",", ";", "\t", "|")


def _signature(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _check_unchanged(path: Path, signature: tuple[int, int]) -> None:
    try:
        same = _signature(path) == signature
    except OSError:
        same = False
    if not same:
        raise IngestError(path, "changed or disappeared after it was parsed; call read_tables on it again.")


def _codec(path: Path) -> str:
    with path.open("rb") as fh:
        return _text_codec(fh.read(_HEAD_BYTES), path)


# --------------------------------------------------------------------------- CSV and TSV


def _sniff_delimiter(sample: str, default: str) -> str:
    """The delimiter (of , ; tab |) that splits the sample's records into the most consistent number
    of fields (at least two), then the most fields; ``default`` when none splits anything."""
    best, best_score = default, (0.0, 1)
    for delimiter in sorted(_DELIMITERS, key=lambda d: d != default):
        try:
            reader = csv.reader(io.StringIO(sample), delimiter=delimiter, skipinitialspace=True)
            counts = [len(r) for _, r in zip(range(_SAMPLE_ROWS), reader) if any(c.strip() for c in r)]
        except csv.Error:
            continue
        if not counts:
            continue
        fields, frequency = Counter(counts).most_common(1)[0]
        score = (frequency / len(counts), fields)
        if fields >= 2 and score > best_score:
            best, best_score = delimiter, score
    return best


def _csv_records(path: Path, codec: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, trimmed cells) of every record, blank ones included; errors as IngestError."""
    line = 0
    try:
        with path.open(encoding=codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
            for row in reader:
                line = reader.line_num
                yield line, [cell.strip() for cell in row]
    except UnicodeDecodeError as e:
        raise _decode_error(path, codec, f"after line {line}") from e
    except csv.Error as e:
        raise IngestError(path, f"is not well-formed CSV after line {line} ({e}); check its quoting.") from e


def read_csv(path: Path) -> list[ParsedTable]:
    """One table from a CSV or TSV file (delimiter sniffed; UTF-8 with or without BOM, UTF-16/32 with BOM).

    Rows wider or narrower than the header are cut or padded (``ragged_rows`` counts those that
    lost a filled cell or were padded); columns with a blank header and no value are dropped.
    """
    codec = _codec(path)
    try:
        with path.open(encoding=codec, newline="") as fh:
            sample = fh.read(_SAMPLE_CHARS)
    except UnicodeDecodeError as e:
        raise _decode_error(path, codec, "in its first 64 KB") from e
    if len(sample) == _SAMPLE_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # drop a record cut in the middle
    delimiter = _sniff_delimiter(sample, "\t" if path.suffix.lower() == ".tsv" else ",")
    signature = _signature(path)

    first: list[str] | None = None
    synthesized = False
    rows = ragged = blank = 0
    blank_names: list[int] = []
    filled: set[int] = set()
    for _, cells in _csv_records(path, codec, delimiter):
        if not any(cells):
            blank += first is not None
            continue
        if first is None:
            first, synthesized = cells, _looks_like_data(cells)
            blank_names = [] if synthesized else [i for i, c in enumerate(cells) if not c]
            if not synthesized:
                continue
        rows += 1
        if len(cells) < len(first) or any(cells[len(first):]):
            ragged += 1
        filled.update(i for i in blank_names if i < len(cells) and cells[i])
    if first is None:
        raise IngestError(path, "contains only blank lines; add a header row and data rows.")
    if rows == 0:
        raise IngestError(path, "has a header but no rows; add data rows below the header, or leave it out.")
    width = len(first)
    keep = [i for i in range(width) if i not in blank_names or i in filled]
    header = _synthetic_header(width) if synthesized else _make_header([first[i] for i in keep])

    def row_source() -> Iterator[list[str]]:
        _check_unchanged(path, signature)
        skip_header = not synthesized
        for _, cells in _csv_records(path, codec, delimiter):
            if not any(cells):
                continue
            if skip_header:
                skip_header = False
                continue
            cells = _fit(cells, width)
            yield cells if len(keep) == width else [cells[i] for i in keep]

    metadata = {
        "format": "tsv" if path.suffix.lower() == ".tsv" else "csv", "source": path.name,
        "index_in_file": 0, "row_count": rows, "column_count": len(header), "delimiter": delimiter,
        "encoding": codec, "header_synthesized": synthesized, "ragged_rows": ragged,
        "blank_rows_skipped": blank, "empty_columns_dropped": width - len(keep),
    }
    return [ParsedTable(path.stem, header, metadata, row_source=row_source)]


# --------------------------------------------------------------------------- JSON records

_WHITESPACE = re.compile(r"[ \t\r\n]*")
_CHUNK = 1 << 16
_MAX_CHUNK = 1 << 22
#: Characters one array item may span before undecodable JSON is reported as such.
_MAX_ITEM = 1 << 24


class _JsonArray:
    """Items of a top-level JSON array, decoded one at a time from a text stream."""

    def __init__(self, fh: Any, name: Path) -> None:
        self.fh, self.name = fh, name
        self.decoder = json.JSONDecoder()
        self.buf, self.pos, self.offset, self.eof, self.chunk = "", 0, 0, False, _CHUNK

    def _fill(self) -> bool:
        if self.eof:
            return False
        data = self.fh.read(self.chunk)
        self.eof = not data
        self.offset += self.pos
        self.buf, self.pos = self.buf[self.pos:] + data, 0
        return bool(data)

    def _peek(self) -> str:
        while True:
            self.pos = _WHITESPACE.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._fill():
                return ""

    def _invalid(self, at: int, what: str) -> IngestError:
        return IngestError(self.name, f"is not valid JSON near character {at} ({what}); "
                                      "fix it, for example by checking it with `python -m json.tool`.")

    def _value(self) -> Any:
        first_error: tuple[int, str] | None = None
        self._peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                # Either the item goes on past the buffer or it is invalid: read on, up to a bound.
                first_error = first_error or (self.offset + e.pos, e.msg)
                self.chunk = min(self.chunk * 2, _MAX_CHUNK)
                if len(self.buf) - self.pos < _MAX_ITEM and self._fill():
                    continue
                raise self._invalid(*first_error) from e
            if end == len(self.buf) and self._fill():
                continue  # a number at the end of the buffer may go on in the next chunk
            self.pos, self.chunk = end, _CHUNK
            return value

    def __iter__(self) -> Iterator[Any]:
        first = self._peek()
        if first != "[":
            what = {"": "nothing", "{": "an object"}.get(first, "a single value")
            raise IngestError(self.name, f"holds {what} at the top level, not an array of records; a JSON "
                                         "table must look like [{\"team\": \"Lakers\", \"wins\": 57}, ...]. "
                                         "If the records sit under a key, save that array on its own.")
        self.pos += 1
        if self._peek() == "]":
            self.pos += 1
        else:
            while True:
                yield self._value()
                sep = self._peek()
                self.pos += 1
                if sep == "]":
                    break
                if sep != ",":
                    raise self._invalid(self.offset + self.pos - 1, "expected ',' or ']' after an array item")
        if self._peek():
            raise self._invalid(self.offset + self.pos, "extra data after the closing ']'")


def _json_items(path: Path, codec: str) -> Iterator[Any]:
    try:
        with path.open(encoding=codec) as fh:
            yield from _JsonArray(fh, path)
    except UnicodeDecodeError as e:
        raise _decode_error(path, codec, "somewhere in the file") from e


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def read_json(path: Path) -> list[ParsedTable]:
    """One table from a JSON array of objects, streamed (the file is never loaded whole).

    The header is the union of the objects' keys in first-seen order; missing keys give empty
    cells and nested values are JSON-encoded.
    """
    codec = _codec(path)
    signature = _signature(path)
    keys: dict[str, None] = {}
    count = 0
    for i, item in enumerate(_json_items(path, codec)):
        if not isinstance(item, dict):
            kind = _JSON_TYPES.get(type(item), "a number")
            raise IngestError(path, f"item {i} of the array is {kind}, not an object; a JSON table must be an "
                                    "array of objects such as [{\"team\": \"Lakers\", \"wins\": 57}].")
        keys.update(dict.fromkeys(item))
        count += 1
    order = list(keys)

    def row_source() -> Iterator[list[str]]:
        _check_unchanged(path, signature)
        for item in _json_items(path, codec):
            yield [_format_value(item.get(k)) for k in order]

    table = _records_table(order, count, row_source, title=path.stem, name=path, source=path.name,
                           fmt="json")
    table.metadata["encoding"] = codec
    return [table]


# --------------------------------------------------------------------------- HTML (and Markdown rendered to HTML)

_HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"]
_OWNERS = ["td", "th", "table", "caption", "script", "style", "template", "noscript"]
_BREAKS = frozenset({"br", "p", "div", "li", "tr", "ul", "ol"})
_MAX_COLSPAN = 1000


def _own_text(node: Any) -> str:
    """Text of ``node`` without the text of cells or tables nested in it (they are parsed on their own)."""
    from bs4.element import NavigableString, PreformattedString, Tag

    parts: list[str] = []
    for child in node.descendants:
        if isinstance(child, Tag):
            if child.name in _BREAKS:
                parts.append(" ")
        elif (isinstance(child, NavigableString) and not isinstance(child, PreformattedString)
              and child.find_parent(_OWNERS) is node):
            parts.append(str(child))
    return " ".join("".join(parts).split())


def _span(cell: Any, attribute: str, limit: int) -> int:
    try:
        return max(1, min(int(str(cell.get(attribute, "1")).strip()), limit))
    except ValueError:
        return 1


def _grid(table: Any) -> tuple[list[list[str]], list[list[bool]], int]:
    """Rows of ``table`` with colspan/rowspan expanded, which cells are colspan copies, header rows."""
    trs = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    grid: list[list[str]] = []
    copies: list[list[bool]] = []
    pending: dict[int, tuple[int, str]] = {}  # column → (rows still covered, text) of a rowspan
    kinds: list[tuple[bool, bool]] = []  # (row is in <thead>, row has only <th> cells)

    def take(row: list[str], copy: list[bool], col: int) -> None:
        left, text = pending.pop(col)
        row.append(text)
        copy.append(False)
        if left > 1:
            pending[col] = (left - 1, text)

    for i, tr in enumerate(trs):
        cells = [c for c in tr.find_all(["td", "th"]) if c.find_parent("tr") is tr]
        section = tr.find_parent(["thead", "tbody", "tfoot", "table"])
        kinds.append((section is not None and section.name == "thead",
                      bool(cells) and all(c.name == "th" for c in cells)))
        row: list[str] = []
        copy: list[bool] = []
        for cell in cells:
            while len(row) in pending:
                take(row, copy, len(row))
            text = _own_text(cell)
            rowspan = _span(cell, "rowspan", len(trs) - i)
            for k in range(_span(cell, "colspan", _MAX_COLSPAN)):
                if rowspan > 1:
                    pending[len(row)] = (rowspan - 1, text)
                row.append(text)
                copy.append(k > 0)
        for col in sorted(c for c in pending if c >= len(row)):
            while len(row) < col:
                row.append("")
                copy.append(False)
            take(row, copy, col)
        grid.append(row)
        copies.append(copy)
    header_rows = next((n for n, (in_head, _) in enumerate(kinds) if not in_head), len(kinds))
    if header_rows == 0:
        header_rows = next((n for n, (_, all_th) in enumerate(kinds) if not all_th), len(kinds))
    return grid, copies, header_rows


def _html_title(table: Any) -> tuple[str, str]:
    caption = next((c for c in table.find_all("caption") if c.find_parent("table") is table), None)
    if caption is not None and _own_text(caption):
        return _own_text(caption), "caption"
    for heading in table.find_all_previous(_HEADINGS, limit=20):
        text = " ".join(heading.get_text(" ").split())
        if text:
            return text, "heading"
    return "", "name"


def html_tables(html: str, *, name: str, fmt: str) -> list[ParsedTable]:
    """Tables of ``html`` as :func:`~universalrag.ingest.tables.tables_from_html` describes."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    found: list[tuple[str, list[str], dict[str, Any], list[list[str]]]] = []
    for number, table in enumerate(soup.find_all("table"), 1):
        grid, copies, header_rows = _grid(table)
        width = max((len(r) for r in grid), default=0)
        if width == 0:
            continue
        synthesized = header_rows == 0 and _looks_like_data(grid[0])
        if header_rows == 0 and not synthesized:
            header_rows = 1
        names = []
        for col in range(width):
            parts: list[str] = []
            for row in grid[:header_rows]:
                text = row[col] if col < len(row) else ""
                if text and (not parts or parts[-1] != text):
                    parts.append(text)
            names.append(" ".join(parts))
        rows = [
            _fit(["" if copy else text for text, copy in zip(row, flags)], width)
            for row, flags in zip(grid[header_rows:], copies[header_rows:])
        ]
        data = [row for row in rows if any(row)]
        if not data:
            continue
        title, title_from = _html_title(table)
        header = _synthetic_header(width) if synthesized else _make_header(names)
        metadata = {
            "format": fmt, "source": _source(name), "index_in_file": len(found), "row_count": len(data),
            "column_count": width, "title_from": title_from, "header_rows": header_rows,
            "header_synthesized": synthesized, "blank_rows_skipped": len(rows) - len(data),
        }
        if table.get("id"):
            metadata["html_id"] = str(table["id"])
        found.append((title or f"{_stem(name)} table {number}", header, metadata, data))
    titles = _unique_titles([f[0] for f in found])
    return [
        ParsedTable(title, header, metadata, row_source=partial(iter, data))
        for title, (_, header, metadata, data) in zip(titles, found)
    ]


# --------------------------------------------------------------------------- Excel

_DEFAULT_SHEET = re.compile(r"(?i)(sheet|feuil|tabelle|hoja|blad|foglio|planilha|лист)\s*\d*")
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _open_workbook(path: Path) -> Any:
    try:
        import openpyxl  # type: ignore[import-untyped]
    except ImportError as e:
        raise MissingDependencyError("openpyxl", "tables", feature="reading .xlsx workbooks") from e
    with path.open("rb") as fh:
        head = fh.read(8)
    if head.startswith(_OLE2):
        raise IngestError(path, "is an Excel 97-2003 (.xls) workbook, not .xlsx; open it in Excel or "
                                "LibreOffice and save it as .xlsx.")
    if not head.startswith(b"PK"):
        raise IngestError(path, "is not an Excel .xlsx workbook (an .xlsx file is a ZIP archive and this is "
                                "not one); if it is CSV text, rename it to .csv, else re-save it as .xlsx.")
    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # damaged archives raise zipfile, KeyError, XML and ValueError errors alike
        raise IngestError(path, f"is not a readable Excel workbook ({type(e).__name__}: {e}); open it in "
                                "Excel or LibreOffice and save it again as .xlsx.") from e


def _sheet_rows(ws: Any) -> Iterator[tuple[int, list[str]]]:
    """(1-based row number, cells as text without trailing blanks) of every row, blank ones included."""
    ws.reset_dimensions()  # trust the cells, not the (often wrong) recorded sheet size
    for number, values in enumerate(ws.iter_rows(values_only=True), 1):
        cells = [_format_value(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        yield number, cells


def _scan_sheet(ws: Any) -> dict[str, Any] | None:
    """Header row, width and counts of a worksheet; None when it has no data row."""
    header: list[str] | None = None
    header_row = width = rows = blank = 0
    synthesized = False
    for number, cells in _sheet_rows(ws):
        if not cells:
            blank += header is not None
            continue
        width = max(width, len(cells))
        if header is None:
            header, header_row, synthesized = cells, number, _looks_like_data(cells)
            if not synthesized:
                continue
        rows += 1
    if header is None:
        return None
    return {"header": header, "header_row": header_row, "width": width, "rows": rows, "blank": blank,
            "synthesized": synthesized}


def read_xlsx(path: Path) -> list[ParsedTable]:
    """One table per worksheet with data, read with openpyxl in read-only mode (cached formula values).

    The first non-blank row is the header (see the numeric rule in ``tables``); trailing blank
    columns are ignored. Merged cells give their value to the top-left cell only (read-only mode
    does not expose merges). Titled by sheet name, or by the file stem for default names ("Sheet1").
    """
    signature = _signature(path)
    workbook = _open_workbook(path)
    scans: list[tuple[int, str, str, dict[str, Any]]] = []
    try:
        for index, ws in enumerate(workbook.worksheets):
            scan = _scan_sheet(ws)
            if scan is not None:
                scans.append((index, ws.title, str(getattr(ws, "sheet_state", "visible")), scan))
    except Exception as e:  # a damaged sheet part surfaces while streaming its rows
        raise IngestError(path, f"has a damaged worksheet ({type(e).__name__}: {e}); open it in Excel or "
                                "LibreOffice and save it again as .xlsx.") from e
    finally:
        workbook.close()
    data = [s for s in scans if s[3]["rows"]]
    if not data:
        reason = "has a header but no rows" if scans else "has no filled cells in any worksheet"
        raise IngestError(path, f"{reason}; add data rows below a header row, or leave it out.")
    tables = []
    for position, (index, sheet, state, scan) in enumerate(data):
        width, synthesized = scan["width"], scan["synthesized"]
        header = _synthetic_header(width) if synthesized else _make_header(_fit(scan["header"], width))

        def row_source(index: int = index, first: int = scan["header_row"] + (not synthesized),
                       width: int = width) -> Iterator[list[str]]:
            _check_unchanged(path, signature)
            book = _open_workbook(path)
            try:
                for number, cells in _sheet_rows(book.worksheets[index]):
                    if number >= first and cells:
                        yield _fit(cells, width)
            finally:
                book.close()

        metadata = {
            "format": "xlsx", "source": path.name, "index_in_file": position, "sheet": sheet,
            "sheet_index": index, "sheet_state": state, "row_count": scan["rows"], "column_count": width,
            "header_row": scan["header_row"], "header_synthesized": synthesized,
            "blank_rows_skipped": scan["blank"],
        }
        title = path.stem if _DEFAULT_SHEET.fullmatch(sheet.strip()) else sheet
        tables.append(ParsedTable(title, header, metadata, row_source=row_source))
    return _with_titles(tables)
