"""PDF files → pages of blocks, one page at a time: PDFium for text, pictures and rendering; pdfplumber for tables.

Each page is opened, read and closed before the next (a 500-page file keeps only a few pages' lines in
memory, for the running header and footer check). Per page: the text layer's lines (:mod:`.pdf_text`),
the embedded pictures, the tables (:mod:`.pdf_tables`: ruled ones on pages that draw lines, and those set with
white space alone that :mod:`.aligned` finds in the text lines), and — for a
"Figure N" caption with no picture above it but vector drawing — the region above the caption rendered to
a picture. A page without a text layer is read by Tesseract when it is installed, otherwise it is kept as a
rendered picture with a warning (a scanned page says Tesseract would read it; a page of vector drawing alone
says what it is). Corrupt, truncated and password-protected files raise
:class:`~universalrag.errors.IngestError`.

A gzip-compressed PDF (``manual.pdf.gz``: Debian compresses the manuals under ``/usr/share/doc``) is read like the
PDF: it is unpacked to a temporary file, which PDFium and pdfplumber both need, and removed on :meth:`close`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import IngestError, MissingDependencyError
from ..files import GZIP_ERRORS, gzip_error, is_gzip, open_bytes, read_error
from .aligned import aligned_regions
from .assemble import FigureItem, Item, PageAssembler, TextItem
from .base import BaseReader, file_stem
from .layout import HeadingStyle, Line, group_lines, is_navigation_page, is_prose, reading_order, strip_running_lines
from .model import BBox, DocumentInfo, DocumentOptions, Figure, Page
from .ocr import ocr_available, ocr_lines
from .pdf_tables import RuledTables, rule_groups, uncaptured
from .pdf_text import page_lines, underscore_rules
from .pictures import picture_bytes

__all__ = ["PdfReader"]

_FIGURE_LINE = re.compile(r"^\s*(?:Figure|Fig\.?)\s*\d+[a-z]?\b", re.IGNORECASE)
#: The heading of a table of contents or an index.
_CONTENTS_TITLE = re.compile(r"^\s*(?:table of contents|contents|index)\s*$", re.IGNORECASE)
#: Its heading level: below every level :class:`~.layout.HeadingStyle` gives, so the next real heading ends it.
_CONTENTS_LEVEL = 5
#: A page with fewer visible characters than this and some drawing is treated as scanned.
_SCANNED_MAX_CHARS = 10
#: Pictures smaller than this (pixels per side) or this share of the page are decoration and skipped.
_MIN_PICTURE_PX = 32
_MIN_PICTURE_SHARE = 0.01
#: A page needs this many path objects (lines, rectangles) before it is searched for ruled tables.
_MIN_TABLE_PATHS = 4
#: Largest decompressed size of a gzip-compressed PDF (a bound on the temporary file it is unpacked to).
MAX_GUNZIPPED_PDF = 2 << 30
#: The folder a gzip-compressed PDF is unpacked into, under the temporary directory: this prefix, the process id,
#: a random part. Folders of processes that are gone (killed while unpacking) are removed by the next unpack.
UNPACK_PREFIX = "universalrag-unpack-"
_UNPACK_NAME = re.compile(re.escape(UNPACK_PREFIX) + r"(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_stale_unpacked(root: Path) -> int:
    """Remove the unpack folders under ``root`` whose process is gone; returns how many."""
    removed = 0
    for entry in root.glob(UNPACK_PREFIX + "*"):
        match = _UNPACK_NAME.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        if entry.is_dir() and not entry.is_symlink() and entry.stat().st_uid == os.geteuid():
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


@dataclass(slots=True)
class _RawPage:
    number: int
    width: float
    height: float
    others: list[tuple[BBox, Item]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ocr: bool = False


def _to_top_left(bounds: tuple[float, float, float, float], height: float) -> BBox:
    left, bottom, right, top = bounds
    return (left, height - top, right, height - bottom)


class PdfReader(BaseReader):
    """Reads one PDF file page by page; use as a context manager (``with PdfReader(path) as r: r.pages()``)."""

    format = "pdf"

    def __init__(self, path: str | Path, *, options: DocumentOptions | None = None) -> None:
        super().__init__(path, options=options)
        self._doc: Any = None
        self._unpacked: Path | None = None  # the temporary copy of a gzip-compressed PDF

    def _source(self) -> Path:
        """The file PDFium and pdfplumber read: the PDF itself, or the unpacked copy of a gzip-compressed one."""
        if self._unpacked is not None or not is_gzip(self.path):
            return self._unpacked or self.path
        root = Path(tempfile.gettempdir())
        remove_stale_unpacked(root)
        folder = Path(tempfile.mkdtemp(prefix=f"{UNPACK_PREFIX}{os.getpid()}-", dir=root))
        self._unpacked = folder / "document.pdf"
        with self._unpacked.open("wb") as dst:
            try:
                with open_bytes(self.path) as src:
                    while block := src.read(1 << 20):
                        dst.write(block)
                        if dst.tell() > MAX_GUNZIPPED_PDF:
                            raise IngestError(
                                self.path,
                                f"decompresses to more than {MAX_GUNZIPPED_PDF >> 30} GB; "
                                "unpack it (`gunzip -k FILE`) where there is room and "
                                "ingest the .pdf.",
                            )
            except GZIP_ERRORS as e:
                raise gzip_error(self.path, e) from e
            except OSError as e:
                raise read_error(self.path, e) from e
        return self._unpacked

    def _remove_unpacked(self) -> None:
        if self._unpacked is not None:
            shutil.rmtree(self._unpacked.parent, ignore_errors=True)
            self._unpacked = None

    # ------------------------------------------------------------------ opening and validation

    def open(self) -> DocumentInfo:
        """Open and check the file; raises :class:`IngestError` when it is not a readable PDF."""
        try:
            import pypdfium2 as pdfium
        except ImportError as e:
            raise MissingDependencyError("pypdfium2", "documents", feature="PDF files") from e
        try:
            return self._open(pdfium, self._source())
        except BaseException:
            self.close()  # nothing stays open, and no unpacked copy is left behind
            raise

    def _open(self, pdfium: Any, source: Path) -> DocumentInfo:
        try:
            size = source.stat().st_size
            with source.open("rb") as f:
                head = f.read(1024)
                f.seek(max(0, size - 2048))
                tail = f.read()
        except OSError as e:
            raise IngestError(self.path, f"could not be read ({e.strerror or e}); check its permissions.") from e
        if b"%PDF-" not in head:
            raise IngestError(self.path, "is not a PDF file (no %PDF- header); give it its real extension.")
        if b"%%EOF" not in tail:
            raise IngestError(
                self.path,
                "is truncated (the PDF end marker %%EOF is missing); the download or copy "
                "was probably cut short — get the complete file again.",
            )
        try:
            self._doc = pdfium.PdfDocument(str(source))
        except pdfium.PdfiumError as e:
            message = str(e)
            if "password" in message.lower():
                raise IngestError(
                    self.path,
                    "is password-protected; save an unprotected copy (for example "
                    "`qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) and ingest "
                    "that.",
                ) from e
            raise IngestError(
                self.path,
                f"is damaged and cannot be opened ({message}); re-export or repair "
                "it (for example with `qpdf in.pdf out.pdf`).",
            ) from e
        count = len(self._doc)
        if count == 0:
            self.close()
            raise IngestError(self.path, "has no pages.")
        meta = {k: v for k, v in self._doc.get_metadata_dict(skip_empty=True).items() if isinstance(v, str)}
        title = meta.get("Title", "").strip() or file_stem(self.path)
        self._info = DocumentInfo("pdf", title, count, {k.lower(): v for k, v in meta.items()})
        return self._info

    def close(self) -> None:
        """Release the PDF (and remove the unpacked copy of a gzip-compressed one)."""
        if self._doc is not None:
            self._doc.close()
            self._doc = None
        self._remove_unpacked()

    # ------------------------------------------------------------------ pages

    def pages(self) -> Iterator[Page]:
        """The pages in order, each read, laid out and released before the next is opened."""
        if self._doc is None:
            self.open()
        tables = RuledTables(self._source())
        style = HeadingStyle()
        assembler = PageAssembler()
        try:
            for raw, lines in strip_running_lines(self._raw_pages(tables)):
                style.learn(lines)
                items = self._items(raw, lines, style)
                blocks = assembler.blocks(items, page=raw.number)
                label = self._doc.get_page_label(raw.number - 1)
                yield Page(
                    raw.number,
                    tuple(blocks),
                    width=raw.width,
                    height=raw.height,
                    warnings=tuple(raw.warnings),
                    ocr=raw.ocr,
                    label=label,
                )
        finally:
            tables.close()

    def _items(self, raw: _RawPage, lines: list[Line], style: HeadingStyle) -> list[Item]:
        pieces: list[tuple[BBox, Line | Item]] = [(ln.bbox, ln) for ln in lines]
        ordered = reading_order([*pieces, *raw.others], width=raw.width)
        items: list[Item] = []
        pending: list[Line] = []
        contents = is_navigation_page(lines)  # a contents or index page: its letters and wrapped entries too

        def flush() -> None:
            runs = group_lines(pending, style)
            listing = False  # under a "Contents" heading: its entries, also those set without dot leaders
            for i, run in enumerate(runs):
                if (
                    run.level
                    and _CONTENTS_TITLE.match(run.text)
                    and (contents or any(r.kind == "navigation" for r in runs[i + 1 :]))
                ):
                    # a chapter's own "Table of Contents" nests under the chapter's heading instead of replacing it
                    # in the heading path of the chapter's opening text
                    items.append(TextItem(run.text, run.bbox, _CONTENTS_LEVEL))
                    listing = True
                    continue
                listing = listing and not run.level
                navigation = run.kind == "navigation" or (
                    (contents or listing) and not run.level and not is_prose(run.text)
                )
                items.append(TextItem(run.text, run.bbox, run.level, navigation=navigation))
            pending.clear()

        for entry in ordered:
            if isinstance(entry, Line):
                pending.append(entry)
            else:
                flush()
                items.append(entry)
        flush()
        return items

    def _raw_pages(self, tables: RuledTables) -> Iterator[tuple[_RawPage, list[Line], float]]:
        for index in range(len(self._doc)):
            page = self._doc[index]
            try:
                yield self._read_page(index, page, tables)
            finally:
                page.close()

    def _read_page(self, index: int, page: Any, tables: RuledTables) -> tuple[_RawPage, list[Line], float]:
        import pypdfium2.raw as pdfium_c

        width, height = page.get_size()
        raw = _RawPage(index + 1, width, height)
        paths = [
            _to_top_left(o.get_bounds(), height)
            for o in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_PATH,), max_depth=2)
        ]
        textpage = page.get_textpage()
        try:
            lines = page_lines(textpage, height=height, rules=underscore_rules(paths))
        finally:
            textpage.close()
        visible = sum(len(ln.text) for ln in lines)
        images = list(page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=2))
        if visible < _SCANNED_MAX_CHARS and (images or paths):
            return raw, self._scanned(raw, page, drawing=not images), height
        grids = len(paths) >= _MIN_TABLE_PATHS
        ruled = rule_groups(paths, width=width)
        regions = [*ruled, *aligned_regions(lines, width=width)]  # a region a table found before covers is skipped
        for table in tables.find(index, grids=grids, regions=regions) if grids or regions else []:
            if _CONTENTS_TITLE.match(table.rows[0][0]):
                continue  # a table of contents set without dot leaders: its lines stay, as navigation
            if table.bbox is None:  # a table found on a PDF page always has its box
                continue
            raw.others.append((table.bbox, table))
            lines = uncaptured(lines, table)  # a line the table's cells do not hold stays text
        for obj in images:
            self._picture(raw, obj, has_text=bool(lines))
        self._vector_figures(raw, page, lines, paths)
        return raw, lines, height

    def _picture(self, raw: _RawPage, obj: Any, *, has_text: bool) -> None:
        box = _to_top_left(obj.get_bounds(), raw.height)
        share = (box[2] - box[0]) * (box[3] - box[1]) / (raw.width * raw.height)
        px_w, px_h = obj.get_px_size()
        if px_w < _MIN_PICTURE_PX or px_h < _MIN_PICTURE_PX or share < _MIN_PICTURE_SHARE:
            return
        if has_text and share > 0.85:
            return  # the scan behind an OCR text layer
        try:
            image = obj.get_bitmap(render=True).to_pil()
        except Exception as e:  # noqa: BLE001 - PDFium raises bare errors for undecodable image streams
            raw.warnings.append(f"page {raw.number}: a picture could not be decoded ({e}); it was skipped.")
            return
        data, w, h = picture_bytes(image, max_side=self.options.max_picture_side)
        raw.others.append((box, FigureItem(Figure(data, "image/jpeg", w, h, origin="embedded"), box)))

    def _vector_figures(self, raw: _RawPage, page: Any, lines: list[Line], paths: list[BBox]) -> None:
        """Render the drawing above a "Figure N" caption that has no picture of its own."""
        pictures = [box for box, item in raw.others if isinstance(item, FigureItem)]
        for caption in (ln for ln in lines if _FIGURE_LINE.match(ln.text)):
            x0, x1 = caption.bbox[0], caption.bbox[2]
            above = [
                ln.bbox[3]
                for ln in lines
                if ln.bbox[3] <= caption.bbox[1] - 1 and ln.bbox[2] > x0 and ln.bbox[0] < max(x1, x0 + 200)
            ]
            top = max(above, default=raw.height * 0.05)
            bottom = caption.bbox[1] - 2
            region = (0.0, top, raw.width, bottom)
            drawn = [p for p in paths if p[1] >= top - 2 and p[3] <= bottom + 2]
            if bottom - top < 40 or len(drawn) < 2 or any(p[3] > top and p[1] < bottom + 24 for p in pictures):
                continue
            left = max(0.0, min(p[0] for p in drawn) - 4)
            right = min(raw.width, max(p[2] for p in drawn) + 4)
            region = (left, top, right, bottom)
            scale = self.options.render_dpi / 72
            crop = (left, raw.height - bottom, raw.width - right, top)
            image = page.render(scale=scale, crop=crop).to_pil()
            data, w, h = picture_bytes(image, max_side=self.options.max_picture_side)
            raw.others.append((region, FigureItem(Figure(data, "image/jpeg", w, h, origin="rendered"), region)))

    def _scanned(self, raw: _RawPage, page: Any, *, drawing: bool) -> list[Line]:
        """OCR a page without a text layer, or keep it as a rendered picture with a warning.

        A ``drawing`` (vector paths and no picture: a diagram, a logo, a chart, or text turned into outlines) is
        read by Tesseract when it is there, but its absence is not blamed: most such pages hold no text to read.
        """
        wants_ocr = self.options.ocr
        available = ocr_available()
        what = "drawings only, no text layer" if drawing else "no text layer"
        if wants_ocr is not False and available:
            scale = self.options.ocr_dpi / 72
            image = page.render(scale=scale, grayscale=True).to_pil()
            raw.ocr = True
            lines = ocr_lines(image, scale=scale, language=self.options.ocr_language, name=str(self.path))
            if lines:
                return lines
            raw.warnings.append(f"page {raw.number}: {what} and OCR found no text; kept as a picture.")
        elif drawing:
            raw.warnings.append(f"page {raw.number}: {what}; kept as a picture of the drawing.")
        elif wants_ocr is True:
            raw.warnings.append(
                f"page {raw.number}: no text layer and OCR is unavailable (install the tesseract "
                "program and the pytesseract package); kept as a picture only."
            )
        else:
            raw.warnings.append(
                f"page {raw.number}: no text layer; kept as a picture only"
                + (
                    ""
                    if wants_ocr is False
                    else " — install Tesseract (e.g. `apt-get install tesseract-ocr`) to read its text"
                )
                + "."
            )
        image = page.render(scale=self.options.render_dpi / 72).to_pil()
        data, w, h = picture_bytes(image, max_side=self.options.max_picture_side * 2)
        box = (0.0, 0.0, raw.width, raw.height)
        figure = (
            Figure(data, "image/jpeg", w, h, origin="rendered", alt_text=f"Drawing on page {raw.number}")
            if drawing
            else Figure(data, "image/jpeg", w, h, origin="scanned", alt_text=f"Scanned page {raw.number}")
        )
        raw.others.append((box, FigureItem(figure, box)))
        return []
