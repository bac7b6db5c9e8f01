"""Tables drawn without lines: runs of text rows whose short cells line up in columns.

Price lists, invoices and statements often set their tables with white space alone. Without rules there is
nothing for pdfplumber's line strategy to find, and the page's reading order cut such a table into "columns"
(a price list read its part numbers and descriptions first and every stock figure after them), so no passage
held a row. :func:`aligned_regions` finds them from the page's text lines (:mod:`.pdf_text` gives one line per
run of characters, a wide gap ending a run): a row of two or more short segments, three or more such rows in a
stack whose segments start or end at the same x, and the one or two rows above them that lie within their width
(the header). Each region is then split into cells like a booktabs table (:func:`.pdf_tables.RuledTables.find`).

What keeps prose out: every segment of a row is narrower than :data:`MAX_CELL_SHARE` of the page and holds at
most :data:`MAX_CELL_WORDS` words (the lines of a two- or three-column article are wide and wordy), and a row
belongs to a stack only when its segments line up with the stack's. A row that lines up with a stack already
begun may have one wider cell, up to :data:`MAX_CONTINUED_SHARE` ("-v, --version  output version information and
exit" ended libtasn1's option tables a row early, and a long field name cut the mime.cache header in two). Rows
of which half end as lines of code do (``,`` ``;`` ``{`` ``}``) are a listing, not a table: libtasn1's ASN.1
example "Dss-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER, ... }" was cut out of its passage as a table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .layout import Line
from .model import BBox, box_union

__all__ = ["MAX_CELL_SHARE", "MAX_CELL_WORDS", "MAX_CONTINUED_SHARE", "MIN_ROWS", "aligned_regions"]

#: A cell is narrower than this share of the page width ...
MAX_CELL_SHARE = 0.3
#: ... or, in a row continuing a stack of such rows, this share.
MAX_CONTINUED_SHARE = 0.45
#: ... and holds at most this many words.
MAX_CELL_WORDS = 6
#: A table without rules needs at least this many aligned rows below its header.
MIN_ROWS = 3
#: Segments whose left or right edges lie this close (points) share a column; lines this close in top share a row.
_ALIGN = 4.0
_SAME_ROW = 2.0
#: Consecutive rows of one table are at most this many line heights apart (top to top).
_MAX_PITCH = 2.6
_CAPTION = re.compile(r"^(?:table|tab\.|figure|fig\.)\s*\d", re.IGNORECASE)
#: How a line of code ends that a table's cell does not (:func:`_code`).
_CODE_ENDS = (",", ";", "{", "}")
#: The header's last line may stand this many line heights above the first row (top to top) ...
_HEADER_PITCH = 3.2
#: ... and the header has at most this many lines ("Compress / usage" over a column).
_HEADER_ROWS = 2
#: The row above a stack is its header when this share of its width lies within the stack's (a header may reach
#: past a column of right-aligned numbers).
_HEADER_INSIDE = 0.8


def _rows(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines grouped into rows by their top edge, top to bottom, each row left to right."""
    rows: list[list[Line]] = []
    for line in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
        if rows and abs(line.bbox[1] - rows[-1][0].bbox[1]) <= _SAME_ROW:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [sorted(row, key=lambda ln: ln.bbox[0]) for row in rows]


def _cells(row: Sequence[Line], width: float, share: float = MAX_CELL_SHARE) -> bool:
    """Whether ``row`` looks like table cells: two or more short segments, each narrower than ``share`` of the
    page."""
    return len(row) >= 2 and all(
        ln.bbox[2] - ln.bbox[0] <= share * width and len(ln.text.split()) <= MAX_CELL_WORDS for ln in row
    )


def _fits(row: Sequence[Line], columns: list[tuple[float, float]]) -> bool:
    """Whether ``row`` continues a stack with these column edges: at least two of its segments (all of them, if it
    has two) start where a column starts or end where one ends — a row may merge two cells whose gap was too
    narrow to end a run of characters. The row's other segments add their edges as columns."""
    known = [any(abs(ln.bbox[0] - x0) <= _ALIGN or abs(ln.bbox[2] - x1) <= _ALIGN for x0, x1 in columns) for ln in row]
    if sum(known) < 2:
        return False
    columns.extend((ln.bbox[0], ln.bbox[2]) for ln, k in zip(row, known, strict=True) if not k)
    return True


def _heads(row: Sequence[Line], below: Sequence[Line], box: BBox, *, first: bool) -> bool:
    """Whether ``row`` is a header line of the table in ``box`` whose next row down is ``below``: it lies within the
    table's width and close above — the row next to the body up to :data:`_HEADER_PITCH` line heights (a rule or
    a blank line often sets the header apart), a line above it within :data:`_MAX_PITCH`."""
    top = _box([row])
    inside = min(top[2], box[2]) - max(top[0], box[0])
    pitch = below[0].bbox[1] - row[0].bbox[1]
    text = " ".join(ln.text for ln in row).strip()
    if not first and (text.endswith((".", ":", ";")) or _CAPTION.match(text)):
        return False  # a caption or the sentence leading into the table, not a second header line
    return inside >= _HEADER_INSIDE * (top[2] - top[0]) and pitch <= (_HEADER_PITCH if first else _MAX_PITCH) * max(
        ln.height for ln in row
    )


def _code(rows: Sequence[Sequence[Line]]) -> bool:
    """Whether aligned rows are a program's text rather than a table: half of them end with a separator of code
    (``,`` ``;`` ``{`` ``}``), as the fields of an ASN.1 or C structure do, one to a line and indented alike
    ("r  INTEGER," / "s  INTEGER,"); a cell of a table rarely ends so."""
    ends = sum(1 for row in rows if row[-1].text.rstrip().endswith(_CODE_ENDS))
    return ends * 2 >= len(rows)


def _box(rows: Sequence[Sequence[Line]]) -> BBox:
    return box_union(ln.bbox for row in rows for ln in row)


def aligned_regions(lines: Sequence[Line], *, width: float) -> list[BBox]:
    """The boxes of the tables set without rules among ``lines`` (see the module docstring), top to bottom."""
    rows = _rows(lines)
    regions: list[BBox] = []
    i = 0
    while i < len(rows):
        if not _cells(rows[i], width):
            i += 1
            continue
        stack = [rows[i]]
        columns = [(ln.bbox[0], ln.bbox[2]) for ln in rows[i]]
        j = i + 1
        while j < len(rows) and _cells(rows[j], width, MAX_CONTINUED_SHARE):
            last = stack[-1]
            pitch = rows[j][0].bbox[1] - last[0].bbox[1]
            if pitch > _MAX_PITCH * max(ln.height for ln in last) or not _fits(rows[j], columns):
                break
            stack.append(rows[j])
            j += 1
        if len(stack) < MIN_ROWS:
            i += 1
            continue
        if _code(stack):
            i = j
            continue
        box = _box(stack)
        below, k = stack[0], i - 1
        while k >= 0 and i - k <= _HEADER_ROWS and _heads(rows[k], below, box, first=k == i - 1):
            below, k = rows[k], k - 1
        if below is not stack[0]:
            box = _box([*rows[k + 1 : i], *stack])
        regions.append(box)
        i = j
    return regions
