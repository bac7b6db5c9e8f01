"""PowerPoint files (.pptx) → one page per slide, with python-pptx: title, body text, tables, pictures, notes.

Shapes are read top to bottom, then left to right (groups opened), with their boxes in points. The slide's
title is a level-1 heading (every block of the slide sits under it), text frames become paragraphs (one per
shape, bullet lines joined; formulas kept as LaTeX), tables keep their cells, pictures their bytes and alt
text, and the speaker notes become a ``notes`` block at the end of the slide.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import MissingDependencyError
from ...media import import_pil
from .assemble import FigureItem, Item, PageAssembler, TableItem, TextItem
from .base import BaseReader, open_office_package
from .cells import clean_rows, header_rows
from .model import BBox, Block, BlockKind, DocumentInfo, DocumentOptions, Figure, Page
from .ooxml_text import paragraph_text
from .pictures import picture_bytes

__all__ = ["SlidesReader"]

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_EMU_PER_POINT = 12700


def _bbox(shape: Any) -> BBox | None:
    if shape.left is None or shape.top is None or shape.width is None or shape.height is None:
        return None
    x0, top = shape.left / _EMU_PER_POINT, shape.top / _EMU_PER_POINT
    return (x0, top, x0 + shape.width / _EMU_PER_POINT, top + shape.height / _EMU_PER_POINT)


def _cell_text(cell: Any) -> str:
    """A table cell's text, paragraph by paragraph, as :func:`paragraph_text` reads it (python-pptx's
    ``cell.text`` drops what follows an entity reference)."""
    return "\n".join(paragraph_text(p) for p in cell._tc.iter(f"{_A}p")).strip()


def _frame_text(shape: Any) -> str:
    """A text frame's paragraphs (bullets) joined by line breaks."""
    lines = [paragraph_text(p) for p in shape.element.iter(f"{_A}p")]
    return "\n".join(line for line in lines if line)


class SlidesReader(BaseReader):
    """Reads one .pptx file; use as a context manager (``with SlidesReader(path) as r: r.pages()``)."""

    format = "pptx"

    def __init__(self, path: str | Path, *, options: DocumentOptions | None = None) -> None:
        super().__init__(path, options=options)
        self._prs: Any = None

    def open(self) -> DocumentInfo:
        """Open and check the file; raises :class:`IngestError` when it is not a readable .pptx."""
        try:
            import pptx
            from pptx.exc import PackageNotFoundError
        except ImportError as e:
            raise MissingDependencyError("python-pptx", "documents", feature="PowerPoint files") from e
        self._prs = open_office_package(
            self.path, pptx.Presentation, not_a_package=PackageNotFoundError, kind="PowerPoint (.pptx)"
        )
        props = self._prs.core_properties
        meta = {k: v for k, v in (("author", props.author), ("subject", props.subject)) if v}
        self._info = DocumentInfo("pptx", (props.title or "").strip() or self.path.stem, len(self._prs.slides), meta)
        return self._info

    def close(self) -> None:
        """Drop the parsed presentation."""
        self._prs = None

    def pages(self) -> Iterator[Page]:
        """One page per slide, in order."""
        if self._prs is None:
            self.open()
        width = self._prs.slide_width / _EMU_PER_POINT if self._prs.slide_width else None
        height = self._prs.slide_height / _EMU_PER_POINT if self._prs.slide_height else None
        for number, slide in enumerate(self._prs.slides, 1):
            assembler = PageAssembler()  # a slide's blocks sit under its own title only
            warnings: list[str] = []
            items = self._items(slide, warnings)
            blocks = assembler.blocks(items, page=number)
            if slide.has_notes_slide:
                notes = slide.notes_slide.notes_text_frame
                text = "\n".join(paragraph_text(p) for p in notes._txBody.iter(f"{_A}p")).strip() if notes else ""
                if text:
                    blocks.append(Block(BlockKind.NOTES, text, number, assembler.heading_path()))
            yield Page(number, tuple(blocks), kind="slide", width=width, height=height, warnings=tuple(warnings))

    def _items(self, slide: Any, warnings: list[str]) -> list[Item]:
        title_shape = slide.shapes.title
        title_id = title_shape.shape_id if title_shape is not None else None
        items: list[tuple[tuple[float, float], Item]] = []
        if title_shape is not None and title_shape.has_text_frame:
            text = " ".join(_frame_text(title_shape).split())
            if text:
                items.append(((-1.0, -1.0), TextItem(text, _bbox(title_shape), 1)))
        for shape in self._shapes(slide.shapes):
            if shape.shape_id == title_id:
                continue
            box = _bbox(shape)
            key = (box[1], box[0]) if box else (float("inf"), 0.0)
            item = self._item(shape, box, warnings)
            if item is not None:
                items.append((key, item))
        items.sort(key=lambda kv: kv[0])
        return [item for _, item in items]

    def _shapes(self, shapes: Any) -> Iterator[Any]:
        from pptx.enum.shapes import MSO_SHAPE_TYPE

        for shape in shapes:
            try:
                kind = shape.shape_type
            except NotImplementedError:  # a shape of no preset nor custom geometry: python-pptx cannot name it
                kind = None
            if kind == MSO_SHAPE_TYPE.GROUP:
                yield from self._shapes(shape.shapes)
            else:
                yield shape

    def _item(self, shape: Any, box: BBox | None, warnings: list[str]) -> Item | None:
        if shape.has_table:
            rows = clean_rows([[_cell_text(cell) for cell in row.cells] for row in shape.table.rows])
            if rows:
                first_row = shape.table.first_row
                return TableItem(rows=rows, bbox=box, header_rows=1 if first_row else header_rows(rows))
            return None
        if shape.has_chart:
            return self._chart(shape.chart, box)
        image = getattr(shape, "image", None) if hasattr(type(shape), "image") else None
        if image is not None:
            return self._picture(shape, image, box, warnings)
        if shape.has_text_frame:
            text = _frame_text(shape)
            return TextItem(text, box) if text else None
        return None

    def _chart(self, chart: Any, box: BBox | None) -> Item | None:
        """A chart's data as a table: one row per category, one column per series."""
        plots = list(chart.plots)
        if not plots:
            return None
        categories = [str(c) for c in plots[0].categories]
        series = [s for plot in plots for s in plot.series]
        if not categories or not series:
            return None
        header = ["Category", *(s.name or f"Series {i}" for i, s in enumerate(series, 1))]
        values = [list(s.values) for s in series]
        rows = [header] + [
            [cat, *("" if i >= len(v) or v[i] is None else f"{v[i]:g}" for v in values)]
            for i, cat in enumerate(categories)
        ]
        title = chart.chart_title.text_frame.text.strip() if chart.has_title else ""
        return TableItem(rows=clean_rows(rows), bbox=box, header_rows=1, caption=title)

    def _picture(self, shape: Any, image: Any, box: BBox | None, warnings: list[str]) -> Item | None:
        imaging = import_pil("pictures in PowerPoint files")

        try:
            blob = image.blob
            pil = imaging.open(io.BytesIO(blob))
            pil.load()
        except (OSError, ValueError, KeyError) as e:
            warnings.append(f"picture {shape.name!r} could not be decoded ({e}); it was skipped.")
            return None
        c_nv_pr = next(shape.element.iter("{http://schemas.openxmlformats.org/presentationml/2006/main}cNvPr"), None)
        alt = (c_nv_pr.get("descr") or "").strip() if c_nv_pr is not None else ""
        data, w, h = picture_bytes(pil, max_side=self.options.max_picture_side)
        return FigureItem(Figure(data, "image/jpeg", w, h, alt_text=alt, origin="embedded"), box)
