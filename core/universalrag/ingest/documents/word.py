"""Word files (.docx) → pages of blocks, with python-docx: headings by style, paragraphs, tables, pictures.

The body is read in order: paragraphs (headings recognised by their "Title"/"Heading N" style or outline
level; formulas kept as LaTeX), tables (a first row marked "repeat as header row", else the usual header
rule) and pictures (the embedded image, its alt text, the "Figure N" caption next to it). Headers and footers
live outside the body and are left out. Word files record pages only where Word rendered or the author
forced a page break; blocks carry a ``page`` number when the file records any, and none otherwise.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import MissingDependencyError
from ...media import import_pil
from .assemble import FigureItem, Item, PageAssembler, TableItem, TextItem
from .base import BaseReader, open_office_package
from .cells import clean_rows, header_rows
from .model import DocumentInfo, DocumentOptions, Figure, Page
from .ooxml_text import paragraph_text
from .pictures import picture_bytes

__all__ = ["WordReader"]

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _level(p: Any, style_name: str) -> int:
    """Heading level of a paragraph from its style name or outline level, 0 for body text."""
    name = style_name.strip()
    if name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name)
    if match:
        return int(match.group(1))
    outline = p.find(f"{_W}pPr/{_W}outlineLvl")
    if outline is not None:
        value = int(outline.get(f"{_W}val", "9"))
        return value + 1 if value < 9 else 0
    return 0


class WordReader(BaseReader):
    """Reads one .docx file; use as a context manager (``with WordReader(path) as r: r.pages()``)."""

    format = "docx"

    def __init__(self, path: str | Path, *, options: DocumentOptions | None = None) -> None:
        super().__init__(path, options=options)
        self._doc: Any = None
        self._rendered_breaks = False

    def open(self) -> DocumentInfo:
        """Open and check the file; raises :class:`IngestError` when it is not a readable .docx."""
        try:
            import docx
            from docx.opc.exceptions import PackageNotFoundError
        except ImportError as e:
            raise MissingDependencyError("python-docx", "documents", feature="Word files") from e
        self._doc = open_office_package(
            self.path, docx.Document, not_a_package=PackageNotFoundError, kind="Word (.docx)"
        )
        body = self._doc.element.body
        self._rendered_breaks = next(body.iter(f"{_W}lastRenderedPageBreak"), None) is not None
        props = self._doc.core_properties
        title = (props.title or "").strip()
        meta = {k: v for k, v in (("author", props.author), ("subject", props.subject)) if v}
        self._info = DocumentInfo("docx", title or self.path.stem, None, meta)
        return self._info

    def close(self) -> None:
        """Drop the parsed document."""
        self._doc = None

    def _has_pages(self) -> bool:
        body = self._doc.element.body
        return self._rendered_breaks or any(br.get(f"{_W}type") == "page" for br in body.iter(f"{_W}br"))

    def pages(self) -> Iterator[Page]:
        """The document as pages (split where the file records page breaks; one page when it records none)."""
        if self._doc is None:
            self.open()
        assembler = PageAssembler()
        numbered = self._has_pages()
        number = 1
        items: list[Item] = []
        warnings: list[str] = []
        for element in self._body_elements(self._doc.element.body):
            if element.tag == f"{_W}tbl":
                table = self._table(element)
                if table is not None:
                    items.append(table)
                continue
            breaks = self._page_breaks(element)
            if breaks and items:
                yield self._page(assembler, items, number if numbered else None, warnings)
                items, warnings = [], []
            number += breaks
            items.extend(self._paragraph(element, warnings))
        yield self._page(assembler, items, number if numbered else None, warnings)

    def _page(self, assembler: PageAssembler, items: list[Item], number: int | None, warnings: list[str]) -> Page:
        blocks = assembler.blocks(items, page=number)
        return Page(number or 1, tuple(blocks), warnings=tuple(warnings))

    def _body_elements(self, body: Any) -> Iterator[Any]:
        for child in body.iterchildren():
            if child.tag == f"{_W}sdt":  # content controls wrap ordinary paragraphs and tables
                content = child.find(f"{_W}sdtContent")
                if content is not None:
                    yield from self._body_elements(content)
            elif child.tag in (f"{_W}p", f"{_W}tbl"):
                yield child

    def _page_breaks(self, p: Any) -> int:
        if self._rendered_breaks:
            return sum(1 for _ in p.iter(f"{_W}lastRenderedPageBreak"))
        explicit = sum(1 for br in p.iter(f"{_W}br") if br.get(f"{_W}type") == "page")
        before = p.find(f"{_W}pPr/{_W}pageBreakBefore")
        return explicit + (1 if before is not None and before.get(f"{_W}val", "true") not in ("0", "false") else 0)

    def _paragraph(self, p: Any, warnings: list[str]) -> list[Item]:
        from docx.text.paragraph import Paragraph

        paragraph = Paragraph(p, self._doc)
        style = paragraph.style.name if paragraph.style is not None else ""
        items: list[Item] = []
        text = paragraph_text(p)
        if text:
            items.append(TextItem(text, None, _level(p, style or "")))
        for drawing in p.iter(f"{_W}drawing"):
            figure = self._picture(drawing, warnings)
            if figure is not None:
                items.append(FigureItem(figure, None))
        return items

    def _picture(self, drawing: Any, warnings: list[str]) -> Figure | None:
        imaging = import_pil("pictures in Word files")

        blip = next(drawing.iter(f"{_A}blip"), None)
        rel = blip.get(f"{_R}embed") if blip is not None else None
        if not rel:
            return None
        part = self._doc.part.related_parts.get(rel)
        if part is None:
            return None
        doc_pr = next(drawing.iter(f"{_WP}docPr"), None)
        alt = (doc_pr.get("descr") or doc_pr.get("title") or "").strip() if doc_pr is not None else ""
        try:
            image = imaging.open(io.BytesIO(part.blob))
            image.load()
        except OSError as e:
            warnings.append(f"a picture ({part.partname}) could not be decoded ({e}); it was skipped.")
            return None
        data, w, h = picture_bytes(image, max_side=self.options.max_picture_side)
        return Figure(data, "image/jpeg", w, h, alt_text=alt, origin="embedded")

    def _table(self, tbl: Any) -> TableItem | None:
        raw_rows: list[list[str]] = []
        for tr in tbl.iterchildren(f"{_W}tr"):
            row: list[str] = []
            for tc in tr.iterchildren(f"{_W}tc"):
                text = " ".join(paragraph_text(p) for p in tc.iter(f"{_W}p"))
                span = tc.find(f"{_W}tcPr/{_W}gridSpan")
                merged_down = tc.find(f"{_W}tcPr/{_W}vMerge")
                if merged_down is not None and merged_down.get(f"{_W}val", "continue") == "continue" and raw_rows:
                    above = raw_rows[-1]
                    text = above[len(row)] if len(row) < len(above) else ""
                row.extend([text] * (int(span.get(f"{_W}val", "1")) if span is not None else 1))
            raw_rows.append(row)
        rows = clean_rows(raw_rows)
        if not rows:
            return None
        first = tbl.find(f"{_W}tr/{_W}trPr/{_W}tblHeader")
        return TableItem(rows=rows, bbox=None, header_rows=1 if first is not None else header_rows(rows))
