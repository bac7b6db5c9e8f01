"""Ruled tables on a PDF page → cells, found with pdfplumber (pdfminer.six) on the pages that need it.

pdfplumber reads a page about fifty times slower than PDFium, so the PDF reader asks for tables only on
pages whose drawing holds enough straight lines or rectangles to rule one; the pdfplumber document is opened
on first use and each page's parse is released as soon as its tables are read.

Three kinds are found: grids (pdfplumber's line strategy: cells bounded by drawn lines), "booktabs" tables
ruled only by horizontal lines above, below and under the header (:func:`rule_groups` finds three or more
rules of the same width stacked close together; the words between the outer rules are split into rows by
their baselines and into columns by the vertical gaps no word crosses, below the first row, which may be a title
over several columns), and tables set with white space alone, whose regions :mod:`.aligned` finds in the text lines
and which are split the same way. A region takes the words whose characters' centres lie in it: pdfminer's glyph
boxes and PDFium's differ by a point or two. :func:`uncaptured` tells the reader which text lines a table holds;
the others stay text. A grid row whose cells each stack the same number of short lines is that many rows
(:func:`.cells.split_stacked`), and a "table" whose cells are mostly unmapped glyphs ("(cid:0)", TeX's big
delimiters) is a display formula, left as text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import MissingDependencyError
from .assemble import TableItem
from .cells import clean_rows, header_rows, split_stacked
from .layout import Line
from .model import BBox, box_union

__all__ = ["RuledTables", "rule_groups", "uncaptured"]

#: A table needs at least this many rows and columns, and this share of filled cells.
_MIN_ROWS = 2
_MIN_COLUMNS = 2
_MIN_FILLED = 0.4
#: A horizontal rule is at most this thick (points) and at least this share of the page wide.
_RULE_THICKNESS = 2.0
_RULE_MIN_SHARE = 0.15
#: Rules of one booktabs table: left and right ends within this distance, consecutive rules this close.
_RULE_ALIGN = 6.0
_RULE_MAX_GAP = 300.0


def rule_groups(paths: Sequence[BBox], *, width: float) -> list[BBox]:
    """Regions bounded by three or more aligned horizontal rules (top rule, header rule, bottom rule)."""
    rules = sorted(
        (p for p in paths if p[3] - p[1] <= _RULE_THICKNESS and p[2] - p[0] >= _RULE_MIN_SHARE * width),
        key=lambda p: (p[1], p[0]),
    )
    groups: list[list[BBox]] = []
    for rule in rules:
        for group in groups:
            last = group[-1]
            if (
                abs(rule[0] - last[0]) <= _RULE_ALIGN
                and abs(rule[2] - last[2]) <= _RULE_ALIGN
                and rule[1] - last[3] <= _RULE_MAX_GAP
            ):
                group.append(rule)
                break
        else:
            groups.append([rule])
    return [(g[0][0], g[0][1], g[0][2], g[-1][3]) for g in groups if len(g) >= 3]


def _inside(box: BBox, area: BBox, slack: float = 2.0) -> bool:
    return (
        box[0] >= area[0] - slack
        and box[1] >= area[1] - slack
        and box[2] <= area[2] + slack
        and box[3] <= area[3] + slack
    )


def _key(text: str) -> str:
    """``text`` as both parsers spell it: compatibility forms (ligatures) folded, case, spaces and hyphenation marks
    dropped — PDFium and pdfminer split words and mark hyphens differently."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and ch not in "\u00ad\x02\ufffe")


def uncaptured(lines: Sequence[Line], table: TableItem) -> list[Line]:
    """The ``lines`` that stay text beside ``table``: those outside its box, and those inside whose text its cells
    do not hold (a row the cutting missed, a note set inside the table's area) — a line is dropped only when its
    text is found in the cells, each stretch of cell text accounting for one line."""
    if table.bbox is None:
        return list(lines)
    cells = "\n".join("".join(_key(c) for c in row) for row in table.rows)  # a line may run over a row's cells
    kept = []
    for line in lines:
        key = _key(line.text)
        at = cells.find(key) if key and _inside(line.bbox, table.bbox) else -1
        if at < 0:
            kept.append(line)
        else:
            cells = f"{cells[:at]}\n{cells[at + len(key) :]}"
    return kept


def _overlaps(a: BBox, b: BBox) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class RuledTables:
    """Finds the ruled tables of one PDF's pages; ``close`` releases the parser."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._pdf: Any = None

    def find(self, index: int, *, grids: bool = True, regions: Sequence[BBox] = ()) -> list[TableItem]:
        """The tables of the 0-based page ``index``, each with its box and cells: grids (when ``grids``), then
        the tables in ``regions`` that no table found before covers — booktabs tables (:func:`rule_groups`) and
        tables set without rules (:func:`.aligned.aligned_regions`), cut into rows and columns alike."""
        if self._pdf is None:
            try:
                import pdfplumber
            except ImportError as e:
                raise MissingDependencyError("pdfplumber", "documents", feature="tables in PDF files") from e
            self._pdf = pdfplumber.open(self._path)
        page = self._pdf.pages[index]
        try:
            items = [t for t in (_item(table) for table in page.find_tables()) if t is not None] if grids else []
            for region in regions:
                if any(item.bbox is not None and _overlaps(item.bbox, region) for item in items):
                    continue
                table = _booktabs(page, region)
                if table is not None:
                    items.append(table)
            return [item for item in items if not _unmapped(item)]
        finally:
            page.close()

    def close(self) -> None:
        """Close the pdfplumber document, if one was opened."""
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None


#: A table with at least this share of its filled cells holding unmapped glyphs ("(cid:0)") is a typeset formula.
_MAX_UNMAPPED_SHARE = 0.25


def _unmapped(item: TableItem) -> bool:
    """Whether ``item`` is a display formula rather than a table: TeX's big delimiters have no Unicode mapping, and
    pdfplumber writes them "(cid:0)"; its lines stay text."""
    filled = [c for row in item.rows for c in row if c]
    return sum(1 for c in filled if "(cid:" in c) >= _MAX_UNMAPPED_SHARE * max(len(filled), 1)


def _item(table: Any) -> TableItem | None:
    """A pdfplumber table as a :class:`TableItem`, or None when it is too small or too empty to be one."""
    rows = clean_rows(split_stacked(table.extract()))
    if len(rows) < _MIN_ROWS or len(rows[0]) < _MIN_COLUMNS:
        return None
    filled = sum(1 for row in rows for c in row if c) / (len(rows) * len(rows[0]))
    if filled < _MIN_FILLED:
        return None
    x0, top, x1, bottom = (float(v) for v in table.bbox)
    return TableItem(rows=rows, bbox=(x0, top, x1, bottom), header_rows=header_rows(rows))


#: Words closer than this (points) belong to one cell; a wider gap crossed by no word separates columns.
_CELL_GAP = 6.0


def _spans(words: Sequence[dict[str, Any]]) -> list[list[float]]:
    """The x extents of the columns of ``words``: runs of words whose gaps are narrower than :data:`_CELL_GAP`."""
    spans: list[list[float]] = []
    for word in sorted(words, key=lambda w: w["x0"]):
        if spans and word["x0"] - spans[-1][1] < _CELL_GAP:
            spans[-1][1] = max(spans[-1][1], word["x1"])
        else:
            spans.append([word["x0"], word["x1"]])
    return spans


def _overlap(a: Sequence[float], b: Sequence[float]) -> float:
    return min(a[1], b[1]) - max(a[0], b[0])


def _booktabs(page: Any, region: BBox) -> TableItem | None:
    """The table between the outer rules of ``region``: rows by baseline, columns by the gaps between words."""
    left, top = max(0.0, region[0] - 2), max(0.0, region[1] - 1)
    right, bottom = min(float(page.width), region[2] + 2), min(float(page.height), region[3] + 1)

    def centred(obj: dict[str, Any]) -> bool:
        # Characters count by their centre: pdfminer's glyph boxes reach higher than PDFium's, so a box cropped to
        # the region's lines (PDFium's) cut its first row away when words had to lie wholly inside it.
        return (
            obj.get("object_type") == "char"
            and left <= (obj["x0"] + obj["x1"]) / 2 <= right
            and top <= (obj["top"] + obj["bottom"]) / 2 <= bottom
        )

    words = page.filter(centred).extract_words()
    if not words:
        return None
    rows: list[list[dict[str, Any]]] = []
    for word in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if rows and abs(word["top"] - rows[-1][0]["top"]) <= 2:
            rows[-1].append(word)
        else:
            rows.append([word])
    # Columns come from the rows below the first: a title or header reaching over several columns ("LiteralEntry:"
    # above "4  CARD32  LITERAL_OFFSET") would bridge their gaps. Each phrase of the first row goes to the column
    # where it starts, else to the one it covers most, else (over no column) it opens its own.
    spans = _spans([w for row in rows[1:] for w in row]) if len(rows) > 1 else []
    phrases = _spans(rows[0])
    spans = sorted([*spans, *(p for p in phrases if not any(_overlap(s, p) > 0 for s in spans))])
    columns = [
        next(
            (i for i, s in enumerate(spans) if s[0] <= p[0] <= s[1]),
            max(range(len(spans)), key=lambda i: _overlap(spans[i], p)),
        )
        for p in phrases
    ]
    cells = [["" for _ in spans] for _ in rows]
    for r, row in enumerate(rows):
        for word in sorted(row, key=lambda w: w["x0"]):
            if r == 0:
                c = columns[next(i for i, p in enumerate(phrases) if p[0] <= word["x0"] <= p[1])]
            else:
                c = next(i for i, (x0, x1) in enumerate(spans) if x0 <= word["x0"] <= x1)
            cells[r][c] = f"{cells[r][c]} {word['text']}".strip()
    table = clean_rows(cells)
    if len(table) < _MIN_ROWS or len(table[0]) < _MIN_COLUMNS:
        return None
    box = box_union([(left, top, right, bottom), *((w["x0"], w["top"], w["x1"], w["bottom"]) for w in words)])
    return TableItem(rows=table, bbox=box, header_rows=header_rows(table))
