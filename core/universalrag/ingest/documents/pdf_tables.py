"""Ruled tables on a PDF page → cells, found with pdfplumber (pdfminer.six) on the pages that need it.

pdfplumber reads a page about fifty times slower than PDFium, so the PDF reader asks for tables only on
pages whose drawing holds enough straight lines or rectangles to rule one; the pdfplumber document is opened
on first use and each page's parse is released as soon as its tables are read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import MissingDependencyError
from .assemble import TableItem
from .cells import clean_rows, header_rows

__all__ = ["RuledTables"]

#: A table needs at least this many rows and columns, and this share of filled cells.
_MIN_ROWS = 2
_MIN_COLUMNS = 2
_MIN_FILLED = 0.4


class RuledTables:
    """Finds the ruled tables of one PDF's pages; ``close`` releases the parser."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._pdf: Any = None

    def find(self, index: int) -> list[TableItem]:
        """The tables of the 0-based page ``index``, each with its box and cells."""
        if self._pdf is None:
            try:
                import pdfplumber
            except ImportError as e:
                raise MissingDependencyError("pdfplumber", "documents", feature="tables in PDF files") from e
            self._pdf = pdfplumber.open(self._path)
        page = self._pdf.pages[index]
        try:
            found = page.find_tables()
            items = []
            for table in found:
                rows = clean_rows(table.extract())
                if len(rows) < _MIN_ROWS or len(rows[0]) < _MIN_COLUMNS:
                    continue
                filled = sum(1 for row in rows for c in row if c) / (len(rows) * len(rows[0]))
                if filled < _MIN_FILLED:
                    continue
                x0, top, x1, bottom = (float(v) for v in table.bbox)
                items.append(TableItem(rows=rows, bbox=(x0, top, x1, bottom), header_rows=header_rows(rows)))
            return items
        finally:
            page.close()

    def close(self) -> None:
        """Close the pdfplumber document, if one was opened."""
        if self._pdf is not None:
            self._pdf.close()
            self._pdf = None
