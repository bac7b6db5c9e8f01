"""Which document format a file is (by content), the reader for it, and a whole document read into blocks.

:func:`document_format` recognises PDF by its ``%PDF-`` header and Word and PowerPoint by the parts inside
their ZIP container, whatever the extension says (a gzip-compressed PDF, as Debian ships its manuals —
``manual.pdf.gz`` — is a PDF too: :class:`~.pdf.PdfReader` unpacks it); OpenDocument files and legacy Office (OLE)
files are recognised too, so that :func:`open_document` can say what to convert them with. :func:`read_document`
reads every page (one at a time), links the sentences that cite each figure, and returns a :class:`ParsedDocument`.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from ...errors import IngestError
from ..files import is_gzip
from ..limits import check_text_chars
from .assemble import link_citations
from .base import file_stem
from .model import Block, BlockKind, DocumentInfo, DocumentOptions, Page

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "DocumentReader",
    "ParsedDocument",
    "document_format",
    "open_document",
    "read_document",
]

#: Extensions of the formats that can be read (detection itself looks at the content).
DOCUMENT_EXTENSIONS: frozenset[str] = frozenset({".pdf", ".docx", ".pptx"})

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ODF_MIMETYPES = {
    b"application/vnd.oasis.opendocument.text": "odt",
    b"application/vnd.oasis.opendocument.presentation": "odp",
    b"application/vnd.oasis.opendocument.spreadsheet": "ods",
}
_CONVERT = {
    "odt": ("an OpenDocument text (.odt)", "docx"),
    "odp": ("an OpenDocument presentation (.odp)", "pptx"),
    "ole": ("a legacy Office file (.doc/.ppt) or a password-protected Office file", "docx"),
}
_JUNK_TITLES = frozenset({"", "(anonymous)", "untitled", "title", "document", "presentation", "(unspecified)"})


class DocumentReader(Protocol):
    """What every format's reader offers."""

    format: str

    def open(self) -> DocumentInfo:
        """Open and check the file."""
        ...

    def close(self) -> None:
        """Release the file."""
        ...

    def pages(self) -> Iterator[Page]:
        """The pages (or slides) in order."""
        ...


def document_format(path: str | Path) -> str | None:
    """``"pdf"``, ``"docx"``, ``"pptx"``, ``"odt"``, ``"odp"``, ``"ole"`` (legacy Office) or None.

    Decided by content: the ``%PDF-`` header (in the first kilobyte, as readers allow), the OLE signature, or
    the parts inside a ZIP container (``word/document.xml``, ``ppt/presentation.xml``, an OpenDocument
    ``mimetype``). A gzip-compressed file is a PDF when its content is one. An unreadable file is None.
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    if is_gzip(path):
        return "pdf" if b"%PDF-" in _gunzipped_head(path, 1024) else None
    if head.startswith(b"%PDF-") or (b"%PDF-" in head and not head.startswith(b"PK")):
        return "pdf"
    if head.startswith(_OLE):
        return "ole"
    if not head.startswith(b"PK\x03\x04"):
        return None
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "mimetype" in names:
                kind = _ODF_MIMETYPES.get(z.read("mimetype").strip())
                if kind:
                    return kind
    except (zipfile.BadZipFile, OSError, KeyError):
        return None
    if "word/document.xml" in names:
        return "docx"
    if "ppt/presentation.xml" in names:
        return "pptx"
    return None


def _gunzipped_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes inside a gzip file, as far as they can be unpacked: a file cut short still shows
    what it is, and its reader then says it is truncated."""
    try:
        with path.open("rb") as f:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(f.read(16384), size)
    except (OSError, zlib.error):
        return b""


def open_document(path: str | Path, *, options: DocumentOptions | None = None) -> DocumentReader:
    """The reader for ``path`` (not yet opened); :class:`IngestError` when the format cannot be read, naming what
    to convert it with."""
    from .pdf import PdfReader
    from .slides import SlidesReader
    from .word import WordReader

    path = Path(path)
    kind = document_format(path)
    if kind == "pdf":
        return PdfReader(path, options=options)
    if kind == "docx":
        return WordReader(path, options=options)
    if kind == "pptx":
        return SlidesReader(path, options=options)
    if kind in _CONVERT:
        what, target = _CONVERT[kind]
        raise IngestError(
            path,
            f"is {what}, which cannot be read directly; convert it, for example with "
            f"LibreOffice: `soffice --headless --convert-to {target} {path.name}` (and remove "
            "any password), then ingest the converted file.",
        )
    raise IngestError(
        path,
        "is not a PDF, Word (.docx) or PowerPoint (.pptx) file (its content says otherwise); "
        "check that it is complete and has its real extension.",
    )


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A whole document: what the file says about itself, its title, its pages and the readers' warnings."""

    info: DocumentInfo
    title: str
    pages: tuple[Page, ...]
    warnings: tuple[str, ...] = ()

    def blocks(self) -> Iterator[Block]:
        """Every block, in reading order."""
        for page in self.pages:
            yield from page.blocks

    @property
    def text(self) -> str:
        """The whole text: headings, paragraphs, table rows, figure captions and notes, one block per paragraph —
        without tables of contents and indexes (:attr:`BlockKind.NAVIGATION`), which only point at the text."""
        return "\n\n".join(b.text for b in self.blocks() if b.text and b.kind is not BlockKind.NAVIGATION)

    @property
    def navigation(self) -> int:
        """How many blocks are tables of contents or indexes (kept in the pages, left out of :attr:`text`)."""
        return sum(1 for b in self.blocks() if b.kind is BlockKind.NAVIGATION)


def _title(info: DocumentInfo, blocks: list[Block], fallback: str) -> str:
    if info.title.strip().lower() not in _JUNK_TITLES and info.title != fallback:
        return info.title.strip()
    headings = [b for b in blocks if b.kind is BlockKind.HEADING]
    if headings:
        top = min(b.level for b in headings)
        return next(b.text for b in headings if b.level == top)
    return fallback


def read_document(path: str | Path, *, options: DocumentOptions | None = None) -> ParsedDocument:
    """Read a PDF, .docx or .pptx file into a :class:`ParsedDocument` (pages read one at a time).

    Raises :class:`IngestError` for files that are corrupt, truncated, password-protected, of another
    format, or hold no text, table or picture at all.
    """
    path = Path(path)
    reader = open_document(path, options=options)
    info = reader.open()
    pages: list[Page] = []
    chars = 0
    try:
        for page in reader.pages():  # refused as soon as its text passes the cap, not after reading it all
            chars += sum(len(b.text or "") for b in page.blocks)
            check_text_chars(path, chars)
            pages.append(page)
    finally:
        reader.close()
    blocks = link_citations([b for p in pages for b in p.blocks])
    it = iter(blocks)
    linked = tuple(replace(p, blocks=tuple(next(it) for _ in p.blocks)) for p in pages)
    if not blocks:
        raise IngestError(path, "contains no text, table or picture that could be read.")
    warnings = tuple(w for p in pages for w in p.warnings)
    return ParsedDocument(info, _title(info, blocks, file_stem(path)), linked, warnings)
