"""The table model every table reader shares: :class:`ParsedTable` and the cell, header and title rules.

Readers (:mod:`~universalrag.ingest.tables.text_formats`, :mod:`~universalrag.ingest.tables.html`,
:mod:`~universalrag.ingest.tables.xlsx`) and the public API in :mod:`universalrag.ingest.tables.read`
build their tables from these pieces; the rules themselves are described in that module's docstring.
This module imports no other table module, so the readers and the API never import each other in a circle.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from ...dates import iso_date
from ...errors import ConfigError, IngestError

__all__ = ["ParsedTable", "RowSource", "serialize_row"]

RowSource = Callable[[], Iterable[list[str]]]


@dataclass(frozen=True, slots=True)
class ParsedTable:
    """One table: ``title``, ``header`` (unique names, non-empty but for a blank first one over the rows' labels)
    and JSON-ready ``metadata``.

    ``metadata`` always has ``format``, ``source`` (the file or given name), ``index_in_file``
    (0-based), ``row_count`` and ``column_count``, plus per-format details. Rows come from
    ``row_source``, a callable returning a fresh iterator of rows each as wide as the header
    (by default, no rows); build tables with the functions of :mod:`universalrag.ingest.tables`
    rather than by hand.
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
            raise ConfigError(f"Batch size must be at least 1, got {size}.")
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


def format_value(value: Any) -> str:
    """A cell as text: see :mod:`universalrag.ingest.tables` for the rules."""
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
        return format_value(value.tolist())
    return str(value).strip()


def looks_like_data(cells: Sequence[str]) -> bool:
    """True when every filled cell is a number or an ISO date (a first row that is not a header)."""
    filled = [c for c in (cell.strip() for cell in cells) if c]
    return bool(filled) and all(_DATA_CELL.fullmatch(c) for c in filled)


def is_label_column(values: Iterable[str]) -> bool:
    """True when ``values`` (a column's cells) hold words and no number or date: the labels of the rows, as in the
    first column of a table of statistics ("Alcohol:", "Proline:") whose header cell is blank."""
    filled = [v for v in (value.strip() for value in values) if _is_value(v)]
    return bool(filled) and not any(_DATA_CELL.fullmatch(v) for v in filled)


def make_header(cells: Sequence[Any], *, stub: bool = False) -> list[str]:
    """Trimmed names; blanks become ``column_<n>``; repeats get the first free ``_<k>`` suffix.

    With ``stub`` (the first column holds the rows' labels: :func:`is_label_column`), a blank first name stays
    blank: a row then reads "Proline: | Min: 278", its label needing no name, rather than "column_1: Proline: | ...".
    """
    names = [" ".join(format_value(c).split()) or f"column_{i}" for i, c in enumerate(cells, 1)]
    if stub and names and not format_value(cells[0]):
        names[0] = ""
    reserved, used, out = set(names), set(), []
    for name in names:
        candidate, k = name, 2
        while candidate in used or (candidate != name and candidate in reserved):
            candidate, k = f"{name}_{k}", k + 1
        used.add(candidate)
        out.append(candidate)
    return out


def synthetic_header(width: int) -> list[str]:
    return [f"column_{i}" for i in range(1, width + 1)]


def fit_row(cells: list[str], width: int) -> list[str]:
    """Pad with empty cells or cut to ``width``."""
    return cells[:width] if len(cells) >= width else cells + [""] * (width - len(cells))


# --------------------------------------------------------------------------- where a table starts

#: Cells that stand for a missing value: they say nothing of a column's type.
_MISSING = frozenset({"na", "n/a", "nan", "null", "none", "-", "--", "—", "?", "."})
#: A comment's first cell: hashes, then a space ("# Data source: https://finance.yahoo.com").
_COMMENT = re.compile(r"#+\s")


def _is_value(cell: str) -> bool:
    return bool(cell) and cell.casefold() not in _MISSING


def filled_width(cells: Sequence[str]) -> int:
    """How many cells there are up to the last non-blank one (0 when all are blank)."""
    return next((len(cells) - i for i, cell in enumerate(reversed(cells)) if cell.strip()), 0)


def _numeric_columns(rows: Sequence[Sequence[str]]) -> set[int]:
    """The columns of ``rows`` whose values are all numbers or dates (and there is at least one)."""
    numeric: dict[int, bool] = {}
    for row in rows:
        for i, cell in enumerate(row):
            if _is_value(cell):
                numeric[i] = numeric.get(i, True) and bool(_DATA_CELL.fullmatch(cell))
    return {i for i, is_numeric in numeric.items() if is_numeric}


def _first_value(cells: Sequence[str]) -> int | None:
    return next((i for i, cell in enumerate(cells) if _is_value(cell)), None)


def _number_over_numbers(cells: Sequence[str], numeric: set[int]) -> bool:
    """True when the first value of ``cells`` is a number over a column of numbers. A header names its first
    column with a word ("Country,1990,2000" is one); a row that starts with a number is data, or counts."""
    first = _first_value(cells)
    return first is not None and first in numeric and bool(_DATA_CELL.fullmatch(cells[first]))


def _leads(cells: Sequence[str], below: Sequence[Sequence[str]]) -> bool:
    """True when ``cells``, above the records ``below``, is neither their header nor one of them but a line that
    leads into the table: a comment (its first cell starts with "#" and it is narrower than the rows below, or with
    "# "); a line half as wide as the rows below or narrower (a title; scikit-learn's counts and class names,
    "569,30,malignant,benign" over 31 columns); or a line that starts with a number over a column of numbers and
    has words over numbers too (iris.csv's "150,4,setosa,versicolor,virginica" over "5.1,3.5,1.4,0.2,0"), which a
    header does not, nor a row."""
    typical = Counter(filled_width(row) for row in below).most_common(1)[0][0]
    first = cells[0] if cells else ""
    if first.startswith("#") and (len(cells) < typical or _COMMENT.match(first)):
        return True
    if looks_like_data(cells):
        return False
    if 2 * len(cells) <= typical:
        return True
    numeric = _numeric_columns(below)
    words_over_numbers = any(i in numeric and _is_value(c) and not _DATA_CELL.fullmatch(c) for i, c in enumerate(cells))
    return words_over_numbers and _number_over_numbers(cells, numeric)


def table_start(records: Sequence[Sequence[str]]) -> tuple[int, bool]:
    """Where a table starts among its first ``records`` (non-blank, trimmed cells, in file order): how many records
    lead into it without being its header or its rows (comments, a title, a line of counts: see :func:`_leads`),
    and whether the record after those is the header. It is not when all its cells are numbers or dates, nor when
    it starts with a number over a column of numbers ("1,Alice,30" over "2,Bob,25"): then it is the first row."""
    lead = 0
    while lead < len(records) - 1 and _leads(records[lead], records[lead + 1 :]):
        lead += 1
    first = records[lead]
    below = records[lead + 1 :]
    return lead, not looks_like_data(first) and not (below and _number_over_numbers(first, _numeric_columns(below)))


def leading_text(records: Sequence[Sequence[str]]) -> str:
    """The lines that lead into a table (:func:`table_start`) as text, one a line, comments without their hashes:
    kept in the table's ``description`` so that nothing of the file is lost."""
    lines = (", ".join(cells[: filled_width(cells)]) for cells in records)
    return "\n".join(re.sub(r"^#+\s*", "", line) for line in lines).strip()


#: A lead-in line ("SA structure:", "Transfers in:") is at most this many words and ends with a colon.
_LEAD_IN_WORDS = 12


def lead_in(text: str) -> str:
    """``text`` without its colon when it is a short line that leads into a table ("SA structure:"), else ``""``."""
    flat = " ".join(text.split())
    return flat[:-1].rstrip() if flat.endswith(":") and 0 < len(flat.split()) <= _LEAD_IN_WORDS else ""


def titled(heading: str, lead: str) -> str:
    """A table's title from the heading it sits under and the line that leads into it: "Kddcup 99 dataset — SA
    structure" (the heading alone titles every table of the section alike), or whichever of the two there is."""
    return f"{heading} — {lead}" if heading and lead else heading or lead


def unique_titles(titles: list[str]) -> list[str]:
    """The second "X" of a file becomes "X (2)", the third "X (3)"."""
    seen: dict[str, int] = {}
    out = []
    for title in titles:
        seen[title] = seen.get(title, 0) + 1
        out.append(title if seen[title] == 1 else f"{title} ({seen[title]})")
    return out


def title_stem(name: str) -> str:
    return Path(name).stem or "table"


def source_name(name: str) -> str:
    return Path(name).name or name


# --------------------------------------------------------------------------- building tables


def records_table(
    keys: list[Any], count: int, rows: RowSource, *, title: str, name: str | Path, source: str, fmt: str
) -> ParsedTable:
    if count == 0:
        raise IngestError(name, 'has no records; a table needs at least one, like [{"team": "Lakers"}].')
    if not keys:
        raise IngestError(name, "its records have no fields; give each record at least one key.")
    header = make_header(keys)
    metadata = {"format": fmt, "source": source, "index_in_file": 0, "row_count": count, "column_count": len(header)}
    return ParsedTable(title, header, metadata, row_source=rows)


def with_unique_titles(tables: list[ParsedTable]) -> list[ParsedTable]:
    """Tables with repeated titles made unique ("X", "X (2)")."""
    titles = unique_titles([t.title for t in tables])
    return [t if t.title == title else replace(t, title=title) for t, title in zip(tables, titles, strict=True)]


def serialize_row(header: Sequence[str], row: Sequence[Any]) -> str:
    """The text a row is embedded as: ``"Team: Lakers | Wins: 57"``; empty cells are left out, and a cell under a
    blank name (the rows' labels: see :func:`~universalrag.ingest.tables.model.make_header`) is written alone
    (``"Proline: | Min: 278"``). A date spelled otherwise than in ISO 8601 is followed by its ISO spelling
    (``"Date: 19-Sep-03 (2003-09-19)"``, :func:`universalrag.dates.iso_date`), so that a question giving the date
    either way finds the row by its characters (:mod:`universalrag.exact_terms`).

    Whitespace inside cells collapses to single spaces. A row shorter than the header counts its
    missing cells as empty; a longer one raises :class:`ConfigError`.
    """
    if len(row) > len(header):
        raise ConfigError(f"Row has {len(row)} cells but the header has {len(header)} columns.")
    parts = []
    for name, cell in zip(header, row, strict=False):
        text = " ".join(format_value(cell).split())
        if text:
            iso = iso_date(text)
            value = f"{text} ({iso})" if iso else text
            parts.append(f"{name}: {value}" if name else value)
    return " | ".join(parts)
