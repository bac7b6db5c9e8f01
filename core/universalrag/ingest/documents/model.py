"""The format-neutral document model every reader produces: pages (or slides) of blocks in reading order.

A PDF page, a Word section between page breaks and a slide all become a :class:`Page` whose blocks are
headings, paragraphs, tables and figures, in the order a person reads them, each with the heading path it
sits under, its page (or slide) number and its bounding box where the format has one. Plain data: no
parsing, no I/O.

Coordinates are PDF points (1/72 inch) with the origin at the page's top-left corner:
``(x0, top, x1, bottom)``. Slides use the same unit (python-pptx's EMU / 12700).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "BBox",
    "Block",
    "BlockKind",
    "DocumentInfo",
    "DocumentOptions",
    "Figure",
    "Page",
    "TableData",
    "box_union",
]

#: ``(x0, top, x1, bottom)`` in points, origin at the top-left corner of the page.
BBox = tuple[float, float, float, float]


def box_union(boxes: Iterable[BBox]) -> BBox:
    """The smallest box holding every one of ``boxes`` (at least one)."""
    boxes = list(boxes)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


class BlockKind(StrEnum):
    """What a block is."""

    HEADING = "heading"
    PARAGRAPH = "paragraph"
    TABLE = "table"
    FIGURE = "figure"
    NOTES = "notes"  # a slide's speaker notes
    NAVIGATION = "navigation"  # a table of contents or an index: kept in the page, left out of the text corpora


@dataclass(frozen=True, slots=True)
class TableData:
    """The cells of one table, row by row (every row as wide as the widest), and how many rows are header.

    ``caption`` is the "Table 3: …" line next to it (empty when there is none); ``label`` is its number
    as written ("3"), when the caption has one; ``title`` is the caption, else the nearest heading;
    ``cited_by`` holds the sentences that mention it ("Table 3 lists …").
    """

    rows: tuple[tuple[str, ...], ...]
    header_rows: int = 1
    caption: str = ""
    label: str = ""
    title: str = ""
    cited_by: tuple[str, ...] = ()

    @property
    def header(self) -> tuple[str, ...]:
        """The header cells (several header rows joined per column), or empty when there is no header."""
        if not self.header_rows or not self.rows:
            return ()
        columns = zip(*self.rows[: self.header_rows], strict=True)
        return tuple(" ".join(c for c in col if c) for col in columns)

    @property
    def body(self) -> tuple[tuple[str, ...], ...]:
        """The data rows (everything below the header)."""
        return self.rows[self.header_rows :]


@dataclass(frozen=True, slots=True)
class Figure:
    """A picture: its bytes (PNG or JPEG, embedded or rendered from the page), caption and citing sentences.

    ``label`` is the figure's number as written in its caption ("3" for "Figure 3: …"); ``cited_by`` holds
    the sentences elsewhere in the document that mention it ("Figure 3 shows …"), filled in once the whole
    document has been read. ``origin`` says where the picture came from: ``embedded``, ``rendered``
    (a region or page drawn by the renderer) or ``scanned`` (a page without a text layer).
    """

    image: bytes
    mime_type: str
    width: int
    height: int
    caption: str = ""
    label: str = ""
    origin: str = "embedded"
    cited_by: tuple[str, ...] = ()
    alt_text: str = ""


@dataclass(frozen=True, slots=True)
class Block:
    """One block in reading order.

    ``text`` is the block's text (a table's Markdown-free summary is left to the caller: see ``table``);
    ``heading_path`` lists the headings it sits under, outermost first (a heading's own path includes
    itself); ``level`` is a heading's depth (1 = top); ``bbox`` is None where the format has no geometry.
    """

    kind: BlockKind
    text: str
    page: int | None
    heading_path: tuple[str, ...] = ()
    bbox: BBox | None = None
    level: int = 0
    table: TableData | None = None
    figure: Figure | None = None

    def provenance(self) -> dict[str, Any]:
        """JSON-ready location of the block: ``page``, ``heading_path`` and ``bbox`` (rounded)."""
        out: dict[str, Any] = {"heading_path": list(self.heading_path)}
        if self.page is not None:
            out["page"] = self.page
        if self.bbox is not None:
            out["bbox"] = [round(v, 1) for v in self.bbox]
        return out


@dataclass(frozen=True, slots=True)
class Page:
    """One page (or slide) of a document: its blocks in reading order and what the reader noticed.

    ``number`` is 1-based. ``kind`` is ``"page"`` or ``"slide"``. ``warnings`` are sentences for the user
    (a scanned page without OCR, an unreadable picture). ``ocr`` is true when the text came from OCR.
    ``label`` is the page number as printed when the file says so ("iv", "A-3"), else empty.
    """

    number: int
    blocks: tuple[Block, ...]
    kind: str = "page"
    width: float | None = None
    height: float | None = None
    warnings: tuple[str, ...] = ()
    ocr: bool = False
    label: str = ""


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What a reader knows before reading the pages: format, title, page count and file metadata."""

    format: str  # "pdf", "docx" or "pptx"
    title: str
    page_count: int | None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentOptions:
    """How documents are read.

    ``ocr``: read scanned PDF pages with Tesseract — None (default) when it is installed, False never, True
    always (a warning per page when it is missing). ``ocr_language`` is Tesseract's language code,
    ``ocr_dpi`` the resolution pages are rendered at for OCR and ``render_dpi`` for pictures drawn from the
    page; ``max_picture_side`` bounds stored pictures in pixels.
    """

    ocr: bool | None = None
    ocr_language: str = "eng"
    ocr_dpi: int = 300
    render_dpi: int = 144
    max_picture_side: int = 1024
