"""Documents (PDF, Word, PowerPoint) → pages of headings, paragraphs, tables and figures in reading order.

Pure parsing: no database, no embedding. The ``documents`` extra provides the libraries (pypdfium2,
pdfplumber, python-docx, python-pptx; pytesseract for scanned pages when the ``tesseract`` program is
installed).
"""

from __future__ import annotations

from .model import BBox, Block, BlockKind, DocumentInfo, DocumentOptions, Figure, Page, TableData
from .reader import DOCUMENT_EXTENSIONS, DocumentReader, ParsedDocument, document_format, open_document, read_document

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "BBox",
    "Block",
    "BlockKind",
    "DocumentInfo",
    "DocumentOptions",
    "DocumentReader",
    "Figure",
    "Page",
    "ParsedDocument",
    "TableData",
    "document_format",
    "open_document",
    "read_document",
]
