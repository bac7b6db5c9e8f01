"""Tables (CSV, TSV, Excel, JSON records, Markdown and HTML tables, DataFrames) → header + rows of strings.

See :mod:`universalrag.ingest.tables.read` for the rules every reader follows.
"""

from __future__ import annotations

from .model import ParsedTable
from .read import (
    TABLE_FORMATS,
    read_tables,
    render_markdown,
    serialize_row,
    table_from_dataframe,
    table_from_records,
    tables_from_html,
    tables_from_markdown,
)

__all__ = [
    "TABLE_FORMATS",
    "ParsedTable",
    "read_tables",
    "render_markdown",
    "serialize_row",
    "table_from_dataframe",
    "table_from_records",
    "tables_from_html",
    "tables_from_markdown",
]
