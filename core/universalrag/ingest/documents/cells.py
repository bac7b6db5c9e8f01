"""Table cells as readers find them → clean rectangular rows and a detected header.

Shared by the PDF, Word and PowerPoint readers: cells are trimmed and their inner whitespace collapsed,
merged cells (None) become empty, rows are padded to the widest, and rows or columns with no text at all
are dropped. The first row is the header unless every filled cell in it is a number or a date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["clean_rows", "header_rows", "is_data_cell"]

_DATA_CELL = re.compile(
    r"[+-]?[$€£]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*%?|\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?"
)


def is_data_cell(text: str) -> bool:
    """True for a number (with optional sign, currency, thousands separators, percent) or an ISO date."""
    return bool(_DATA_CELL.fullmatch(text.strip()))


def clean_rows(rows: Iterable[Sequence[str | None]]) -> tuple[tuple[str, ...], ...]:
    """Trimmed, rectangular rows without blank rows or blank columns (see the module docstring)."""
    cleaned = [[" ".join((cell or "").split()) for cell in row] for row in rows]
    cleaned = [row for row in cleaned if any(row)]
    if not cleaned:
        return ()
    width = max(len(row) for row in cleaned)
    cleaned = [row + [""] * (width - len(row)) for row in cleaned]
    keep = [j for j in range(width) if any(row[j] for row in cleaned)]
    return tuple(tuple(row[j] for j in keep) for row in cleaned)


def header_rows(rows: Sequence[Sequence[str]]) -> int:
    """1 when the first row reads as a header, 0 when it is data (every filled cell a number or date)."""
    if len(rows) < 2:
        return 0
    filled = [c for c in rows[0] if c.strip()]
    if not filled or all(is_data_cell(c) for c in filled):
        return 0
    return 1
