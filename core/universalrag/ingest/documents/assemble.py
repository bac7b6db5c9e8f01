"""Items of a page in reading order → blocks with heading paths; captions attached; citing sentences linked.

Every reader ends here: it hands over its page's headings, paragraphs, tables and figures in reading order,
and :class:`PageAssembler` keeps the heading path across pages, moves "Figure 3: …" and "Table 2: …" captions
onto the nearest figure or table of the page, and titles each table by its caption or else the nearest
heading. Once the whole document is read, :func:`link_citations` gives every numbered figure (and table)
the sentences of the text that cite it ("as Figure 3 shows, …").
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..tables.model import lead_in, titled
from .model import BBox, Block, BlockKind, Figure, TableData

__all__ = [
    "FigureItem",
    "PageAssembler",
    "TableItem",
    "TextItem",
    "caption_label",
    "link_citations",
    "split_sentences",
]

_FIGURE_CAPTION = re.compile(r"^\s*(?:Figure|Fig\.?|Abbildung|Abb\.)\s*(\d+[a-z]?)\s*[.:\-–—]?", re.IGNORECASE)
_TABLE_CAPTION = re.compile(r"^\s*(?:Table|Tab\.|Tabelle)\s*(\d+[a-z]?)\s*[.:\-–—]?", re.IGNORECASE)
_FIGURE_REF = re.compile(r"\b(?:Figure|Fig\.?|Figs\.?|Figures)\s*(\d+[a-z]?)\b", re.IGNORECASE)
_TABLE_REF = re.compile(r"\b(?:Table|Tab\.|Tables)\s*(\d+[a-z]?)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
#: How far (points) a caption may sit from its figure or table on the page.
_CAPTION_REACH = 72.0
#: At most this many citing sentences are kept per figure or table.
_MAX_CITATIONS = 5


@dataclass(frozen=True, slots=True)
class TextItem:
    """A heading (``level`` > 0) or a paragraph, as laid out on the page; ``navigation`` marks a paragraph of a
    table of contents or an index."""

    text: str
    bbox: BBox | None = None
    level: int = 0
    navigation: bool = False


@dataclass(frozen=True, slots=True)
class TableItem:
    """A table found on the page: its cells and how many rows are header."""

    rows: tuple[tuple[str, ...], ...]
    bbox: BBox | None = None
    header_rows: int = 1
    caption: str = ""


@dataclass(frozen=True, slots=True)
class FigureItem:
    """A picture found on the page."""

    figure: Figure
    bbox: BBox | None = None


Item = TextItem | TableItem | FigureItem


def caption_label(text: str, *, kind: str) -> str | None:
    """The number a caption gives (``"3"`` for "Figure 3: …"), or None when ``text`` is no such caption.

    ``kind`` is ``"figure"`` or ``"table"``.
    """
    match = (_FIGURE_CAPTION if kind == "figure" else _TABLE_CAPTION).match(text)
    return match.group(1).lower() if match else None


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (a light rule: a stop followed by a capital or a digit)."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _distance(a: BBox | None, b: BBox | None) -> float:
    if a is None or b is None:
        return 0.0  # formats without geometry: neighbours in reading order are close by definition
    vertical = max(b[1] - a[3], a[1] - b[3], 0.0)
    horizontal = max(b[0] - a[2], a[0] - b[2], 0.0)
    return vertical + horizontal


def _nearest(caption: int, items: list[Item], kind: type, taken: set[int]) -> int | None:
    """Index of the figure or table nearest to the caption at ``caption`` (reading-order neighbours first)."""
    best: tuple[float, int] | None = None
    for i, item in enumerate(items):
        if not isinstance(item, kind) or i in taken:
            continue
        distance = _distance(items[caption].bbox, item.bbox) + abs(i - caption) * 1e-3
        if items[caption].bbox is None and item.bbox is None and abs(i - caption) > 2:
            continue
        if distance <= _CAPTION_REACH and (best is None or distance < best[0]):
            best = (distance, i)
    return best[1] if best else None


@dataclass(slots=True)
class PageAssembler:
    """Turns the items of each page, in order, into blocks; keeps the heading path from page to page."""

    path: list[tuple[int, str]]

    def __init__(self) -> None:
        self.path = []

    def heading_path(self) -> tuple[str, ...]:
        """The headings the next block sits under, outermost first."""
        return tuple(text for _, text in self.path)

    def blocks(self, items: Sequence[Item], *, page: int | None) -> list[Block]:
        """The blocks of one page; ``items`` must be in reading order."""
        items = list(items)
        captions: dict[int, int] = {}  # figure/table index → caption index
        for i, item in enumerate(items):
            if not isinstance(item, TextItem) or item.level:
                continue
            for kind, target in (("figure", FigureItem), ("table", TableItem)):
                if caption_label(item.text, kind=kind) is not None:
                    j = _nearest(i, items, target, set(captions))
                    if j is not None:
                        captions[j] = i
                    break
        used = set(captions.values())
        out: list[Block] = []
        for i, item in enumerate(items):
            if i in used:
                continue
            found = items[captions[i]] if i in captions else None
            caption = found.text if isinstance(found, TextItem) else ""  # a caption is always a text item
            if isinstance(item, TextItem):
                out.append(self._text(item, page))
            elif isinstance(item, TableItem):
                before = items[i - 1] if i and i - 1 not in used else None
                lead = lead_in(before.text) if isinstance(before, TextItem) and not before.level else ""
                out.append(self._table(item, caption or item.caption, page, lead=lead))
            else:
                label = caption_label(caption, kind="figure") or ""
                figure = replace(item.figure, caption=caption or item.figure.caption, label=label or item.figure.label)
                out.append(
                    Block(
                        BlockKind.FIGURE,
                        figure.caption or figure.alt_text,
                        page,
                        self.heading_path(),
                        item.bbox,
                        figure=figure,
                    )
                )
        return out

    def _text(self, item: TextItem, page: int | None) -> Block:
        if item.level:
            while self.path and self.path[-1][0] >= item.level:
                self.path.pop()
            self.path.append((item.level, item.text))
            return Block(BlockKind.HEADING, item.text, page, self.heading_path(), item.bbox, level=item.level)
        kind = BlockKind.NAVIGATION if item.navigation else BlockKind.PARAGRAPH
        return Block(kind, item.text, page, self.heading_path(), item.bbox)

    def _table(self, item: TableItem, caption: str, page: int | None, *, lead: str = "") -> Block:
        """A table block titled by its caption, else by the heading it sits under and the line leading into it
        ("Fees — Mooring fees" for a table introduced by "Mooring fees:" under "Fees"), else by where it is."""
        path = self.heading_path()
        where = f"page {page}" if page is not None else "the document"
        title = caption or titled(path[-1] if path else "", lead) or f"Table on {where}"
        table = TableData(
            rows=item.rows,
            header_rows=item.header_rows,
            caption=caption,
            label=caption_label(caption, kind="table") or "",
            title=title,
        )
        text = "\n".join(" | ".join(row) for row in item.rows)
        return Block(BlockKind.TABLE, f"{title}\n{text}" if title else text, page, path, item.bbox, table=table)


def _citations(blocks: Sequence[Block], pattern: re.Pattern[str]) -> dict[str, list[str]]:
    cites: dict[str, list[str]] = defaultdict(list)
    for block in blocks:
        if block.kind not in (BlockKind.PARAGRAPH, BlockKind.NOTES):
            continue
        for sentence in split_sentences(block.text):
            for label in {m.group(1).lower() for m in pattern.finditer(sentence)}:
                if len(cites[label]) < _MAX_CITATIONS and sentence not in cites[label]:
                    cites[label].append(sentence)
    return cites


def link_citations(blocks: Sequence[Block]) -> list[Block]:
    """``blocks`` with each numbered figure's and table's ``cited_by`` set to the sentences that mention it
    ("Figure 3 shows …", "as Table 2 lists …").

    Sentences come from paragraphs and speaker notes; each keeps at most five, in document order.
    """
    figures = _citations(blocks, _FIGURE_REF)
    tables = _citations(blocks, _TABLE_REF)
    out = []
    for block in blocks:
        if block.figure is not None and block.figure.label and figures.get(block.figure.label):
            block = replace(block, figure=replace(block.figure, cited_by=tuple(figures[block.figure.label])))
        elif block.table is not None and block.table.label and tables.get(block.table.label):
            block = replace(block, table=replace(block.table, cited_by=tuple(tables[block.table.label])))
        out.append(block)
    return out
