"""Excel ``.xlsx`` workbooks → one table per worksheet with data.

The reader backs :func:`universalrag.ingest.tables.read_tables` (use that). openpyxl (the ``tables``
extra) is imported on first use and reads in read-only mode: one validating pass over every sheet, then
each table's rows re-open the workbook and stream its sheet again.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import IngestError, MissingDependencyError
from ..files import check_unchanged, file_signature
from ..limits import check_archive
from .model import (
    ParsedTable,
    fit_row,
    format_value,
    looks_like_data,
    make_header,
    synthetic_header,
    with_unique_titles,
)

__all__ = ["read_xlsx"]

_DEFAULT_SHEET = re.compile(r"(?i)(sheet|feuil|tabelle|hoja|blad|foglio|planilha|лист)\s*\d*")
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: What openpyxl lets through from a damaged workbook: zip, zlib, XML (a SyntaxError) and lookup errors.
_DAMAGED = (zipfile.BadZipFile, zlib.error, KeyError, ValueError, SyntaxError, EOFError, OSError)


def _open_workbook(path: Path) -> Any:
    try:
        import openpyxl  # type: ignore[import-untyped]
        from openpyxl.utils.exceptions import InvalidFileException  # type: ignore[import-untyped]
    except ImportError as e:
        raise MissingDependencyError("openpyxl", "tables", feature="reading .xlsx workbooks") from e
    with path.open("rb") as fh:
        head = fh.read(8)
    if head.startswith(_OLE2):
        raise IngestError(
            path,
            "is an Excel 97-2003 (.xls) workbook, not .xlsx; open it in Excel or LibreOffice and save it as .xlsx.",
        )
    if not head.startswith(b"PK"):
        raise IngestError(
            path,
            "is not an Excel .xlsx workbook (an .xlsx file is a ZIP archive and this is "
            "not one); if it is CSV text, rename it to .csv, else re-save it as .xlsx.",
        )
    check_archive(path, kind="Excel")
    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (*_DAMAGED, InvalidFileException) as e:
        raise IngestError(
            path,
            f"is not a readable Excel workbook ({type(e).__name__}: {e}); open it in "
            "Excel or LibreOffice and save it again as .xlsx.",
        ) from e


def _sheet_rows(ws: Any) -> Iterator[tuple[int, list[str]]]:
    """(1-based row number, cells as text without trailing blanks) of every row, blank ones included."""
    ws.reset_dimensions()  # trust the cells, not the (often wrong) recorded sheet size
    for number, values in enumerate(ws.iter_rows(values_only=True), 1):
        cells = [format_value(v) for v in values]
        while cells and not cells[-1]:
            cells.pop()
        yield number, cells


def _scan_sheet(ws: Any) -> dict[str, Any] | None:
    """Header row, width and counts of a worksheet; None when it has no data row."""
    header: list[str] | None = None
    header_row = width = rows = blank = 0
    synthesized = False
    for number, cells in _sheet_rows(ws):
        if not cells:
            blank += header is not None
            continue
        width = max(width, len(cells))
        if header is None:
            header, header_row, synthesized = cells, number, looks_like_data(cells)
            if not synthesized:
                continue
        rows += 1
    if header is None:
        return None
    return {
        "header": header,
        "header_row": header_row,
        "width": width,
        "rows": rows,
        "blank": blank,
        "synthesized": synthesized,
    }


def read_xlsx(path: Path) -> list[ParsedTable]:
    """One table per worksheet with data, read with openpyxl in read-only mode (cached formula values).

    The first non-blank row is the header (see the numeric rule in ``tables``); trailing blank
    columns are ignored. Merged cells give their value to the top-left cell only (read-only mode
    does not expose merges). Titled by sheet name, or by the file stem for default names ("Sheet1").
    """
    signature = file_signature(path)
    workbook = _open_workbook(path)
    scans: list[tuple[int, str, str, dict[str, Any]]] = []
    try:
        for index, ws in enumerate(workbook.worksheets):
            scan = _scan_sheet(ws)
            if scan is not None:
                scans.append((index, ws.title, str(getattr(ws, "sheet_state", "visible")), scan))
    except _DAMAGED as e:  # a damaged sheet part surfaces while streaming its rows
        raise IngestError(
            path,
            f"has a damaged worksheet ({type(e).__name__}: {e}); open it in Excel or "
            "LibreOffice and save it again as .xlsx.",
        ) from e
    finally:
        workbook.close()
    data = [s for s in scans if s[3]["rows"]]
    if not data:
        reason = "has a header but no rows" if scans else "has no filled cells in any worksheet"
        raise IngestError(path, f"{reason}; add data rows below a header row, or leave it out.")
    tables = []
    for position, (index, sheet, state, scan) in enumerate(data):
        width, synthesized = scan["width"], scan["synthesized"]
        header = synthetic_header(width) if synthesized else make_header(fit_row(scan["header"], width))

        def row_source(
            index: int = index, first: int = scan["header_row"] + (not synthesized), width: int = width
        ) -> Iterator[list[str]]:
            check_unchanged(path, signature)
            book = _open_workbook(path)
            try:
                for number, cells in _sheet_rows(book.worksheets[index]):
                    if number >= first and cells:
                        yield fit_row(cells, width)
            finally:
                book.close()

        metadata = {
            "format": "xlsx",
            "source": path.name,
            "index_in_file": position,
            "sheet": sheet,
            "sheet_index": index,
            "sheet_state": state,
            "row_count": scan["rows"],
            "column_count": width,
            "header_row": scan["header_row"],
            "header_synthesized": synthesized,
            "blank_rows_skipped": scan["blank"],
        }
        title = path.stem if _DEFAULT_SHEET.fullmatch(sheet.strip()) else sheet
        tables.append(ParsedTable(title, header, metadata, row_source=row_source))
    return with_unique_titles(tables)
