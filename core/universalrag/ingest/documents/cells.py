"""Table cells as readers find them → clean rectangular rows and a detected header.

Shared by the PDF, Word and PowerPoint readers: cells are trimmed and their inner whitespace collapsed,
merged cells (None) become empty, rows are padded to the widest, and rows or columns with no text at all
are dropped. The first row is the header unless every filled cell in it is a number or a date; the rows below it
that hold no number or date either, over a body whose every row holds one, are header lines too ("Compress" over
"usage"). A row whose cells each stack the same number of short lines — a ruled table with no rules between its
body rows, which pdfplumber reads as one row ("CRC-32\nCRC-64" beside "2.083\n2.093") — is that many rows
(:func:`split_stacked`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["clean_rows", "header_rows", "is_data_cell", "split_stacked"]

#: At most this many rows are read as header lines.
_MAX_HEADER_ROWS = 3
#: A stacked row is split only when it has this many filled cells, each line of at most this many words.
_STACKED_CELLS = 3
_STACKED_WORDS = 4

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


def _holds_data(row: Sequence[str]) -> bool:
    return any(is_data_cell(c) for c in row if c.strip())


def header_rows(rows: Sequence[Sequence[str]]) -> int:
    """How many rows head the table: 0 when the first row is data (every filled cell a number or date), else the
    first row and the rows below it without a number or date, while every row under them holds one."""
    if len(rows) < 2:
        return 0
    filled = [c for c in rows[0] if c.strip()]
    if not filled or all(is_data_cell(c) for c in filled):
        return 0
    count = 1
    while (
        count < _MAX_HEADER_ROWS
        and count + 1 < len(rows)
        and not _holds_data(rows[count])
        and all(_holds_data(row) for row in rows[count + 1 :])
    ):
        count += 1
    return count


def split_stacked(rows: Iterable[Sequence[str | None]]) -> list[list[str | None]]:
    """Each row whose filled cells (at least :data:`_STACKED_CELLS`) all hold the same number of short lines,
    split into that many rows; other rows as they are."""
    out: list[list[str | None]] = []
    for row in rows:
        stacks = [(cell or "").split("\n") for cell in row]
        filled = [lines for lines in stacks if any(line.strip() for line in lines)]
        depth = len(filled[0]) if filled else 0
        if (
            len(filled) < _STACKED_CELLS
            or depth < 2
            or any(len(lines) != depth for lines in filled)
            or any(len(line.split()) > _STACKED_WORDS for lines in filled for line in lines)
        ):
            out.append(list(row))
            continue
        out.extend([lines[i] if len(lines) == depth else "" for lines in stacks] for i in range(depth))
    return out
