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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from ...errors import ConfigError, IngestError

__all__ = ["ParsedTable", "RowSource"]

RowSource = Callable[[], Iterable[list[str]]]


@dataclass(frozen=True, slots=True)
class ParsedTable:
    """One table: ``title``, ``header`` (non-empty, unique names) and JSON-ready ``metadata``.

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


def make_header(cells: Sequence[Any]) -> list[str]:
    """Trimmed names; blanks become ``column_<n>``; repeats get the first free ``_<k>`` suffix."""
    names = [" ".join(format_value(c).split()) or f"column_{i}" for i, c in enumerate(cells, 1)]
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
        raise IngestError(name, "has no records; a table needs at least one, like [{\"team\": \"Lakers\"}].")
    if not keys:
        raise IngestError(name, "its records have no fields; give each record at least one key.")
    header = make_header(keys)
    metadata = {"format": fmt, "source": source, "index_in_file": 0, "row_count": count,
                "column_count": len(header)}
    return ParsedTable(title, header, metadata, row_source=rows)


def with_unique_titles(tables: list[ParsedTable]) -> list[ParsedTable]:
    """Tables with repeated titles made unique ("X", "X (2)")."""
    titles = unique_titles([t.title for t in tables])
    return [t if t.title == title else replace(t, title=title) for t, title in zip(tables, titles)]
