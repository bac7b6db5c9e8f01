"""HTML ``<table>`` elements and Markdown pipe tables (rendered to HTML first) → in-memory tables.

The functions here back :func:`universalrag.ingest.tables.tables_from_html` and
:func:`~universalrag.ingest.tables.tables_from_markdown` (use those). Each ``<table>`` is parsed into a
grid with ``colspan`` and ``rowspan`` expanded, and its header rows, title and data rows are taken from
that grid. Tables that lay out the page (menus, link indexes, nested layout grids) are not data and are left
out (:func:`universalrag.ingest.html_clean.is_layout_table`). BeautifulSoup and markdown-it are imported on
first use.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..html_clean import HEADINGS, SITE_MARKS, heading_text
from .model import (
    ParsedTable,
    fit_row,
    is_label_column,
    lead_in,
    looks_like_data,
    make_header,
    serialize_row,
    source_name,
    synthetic_header,
    title_stem,
    titled,
    unique_titles,
)

__all__ = ["html_tables", "markdown_tables"]

_OWNERS = ["td", "th", "table", "caption", "script", "style", "template", "noscript"]
_BREAKS = frozenset({"br", "p", "div", "li", "tr", "ul", "ol"})
_MAX_COLSPAN = 1000


def _own_text(node: Any) -> str:
    """Text of ``node`` without the text of cells or tables nested in it (they are parsed on their own)."""
    from bs4.element import NavigableString, PreformattedString, Tag

    parts: list[str] = []
    for child in node.descendants:
        if isinstance(child, Tag):
            if child.name in _BREAKS:
                parts.append(" ")
        elif (
            isinstance(child, NavigableString)
            and not isinstance(child, PreformattedString)
            and child.find_parent(_OWNERS) is node
        ):
            parts.append(str(child))
    return " ".join("".join(parts).split())


def _span(cell: Any, attribute: str, limit: int) -> int:
    try:
        return max(1, min(int(str(cell.get(attribute, "1")).strip()), limit))
    except ValueError:
        return 1


def _grid(table: Any) -> tuple[list[list[str]], list[list[bool]], int]:
    """Rows of ``table`` with colspan/rowspan expanded, which cells are colspan copies, header rows."""
    trs = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    grid: list[list[str]] = []
    copies: list[list[bool]] = []
    pending: dict[int, tuple[int, str]] = {}  # column → (rows still covered, text) of a rowspan
    kinds: list[tuple[bool, bool]] = []  # (row is in <thead>, row has only <th> cells)

    def take(row: list[str], copy: list[bool], col: int) -> None:
        left, text = pending.pop(col)
        row.append(text)
        copy.append(False)
        if left > 1:
            pending[col] = (left - 1, text)

    for i, tr in enumerate(trs):
        cells = [c for c in tr.find_all(["td", "th"]) if c.find_parent("tr") is tr]
        section = tr.find_parent(["thead", "tbody", "tfoot", "table"])
        kinds.append(
            (section is not None and section.name == "thead", bool(cells) and all(c.name == "th" for c in cells))
        )
        row: list[str] = []
        copy: list[bool] = []
        for cell in cells:
            while len(row) in pending:
                take(row, copy, len(row))
            text = _own_text(cell)
            rowspan = _span(cell, "rowspan", len(trs) - i)
            for k in range(_span(cell, "colspan", _MAX_COLSPAN)):
                if rowspan > 1:
                    pending[len(row)] = (rowspan - 1, text)
                row.append(text)
                copy.append(k > 0)
        for col in sorted(c for c in pending if c >= len(row)):
            while len(row) < col:
                row.append("")
                copy.append(False)
            take(row, copy, col)
        grid.append(row)
        copies.append(copy)
    header_rows = next((n for n, (in_head, _) in enumerate(kinds) if not in_head), len(kinds))
    if header_rows == 0:
        header_rows = next((n for n, (_, all_th) in enumerate(kinds) if not all_th), len(kinds))
    return grid, copies, header_rows


def _is_label(cell: Any) -> bool:
    """A ``<th>``, or a ``<td>`` whose text is all bold (``<td><b>Date</b></td>``, as older infoboxes write labels)."""
    if cell.name == "th":
        return True
    bold = " ".join(b.get_text(" ") for b in cell.find_all(["b", "strong"]))
    return bool(bold.strip()) and " ".join(bold.split()) == _own_text(cell)


def _label_cells(table: Any) -> list[bool | None]:
    """Per row of ``table``: whether it is a field's label (:func:`_is_label`) followed by its value in ``<td>``
    cells (an infobox's row); ``None`` for a row of one cell or of labels only (a section's heading, a picture)."""
    out: list[bool | None] = []
    for tr in (tr for tr in table.find_all("tr") if tr.find_parent("table") is table):
        cells = [c for c in tr.find_all(["td", "th"]) if c.find_parent("tr") is tr and _own_text(c)]
        labels = [_is_label(c) for c in cells]
        if len(cells) < 2 or all(labels):
            out.append(None)
        else:
            out.append(labels[0] and not any(labels[1:]))
    return out


def _distinct(row: list[str]) -> list[str]:
    """The filled cells of a grid row, a cell repeated by a span once."""
    return [v for i, v in enumerate(row) if v and (i == 0 or v != row[i - 1])]


#: Class words that declare a table one record, from the known page generators (:data:`~..html_clean.SITE_MARKS`).
_RECORD_CLASSES = frozenset(w for marks in SITE_MARKS for w in marks.records)


def _record(table: Any, grid: list[list[str]], header_rows: int) -> list[list[str]] | None:
    """The rows of a table laid out as one record — each row a field's label beside its value, as in a Wikipedia
    infobox — as one cell each, ``"Dates: 22 June–14 July 1964"``; ``None`` for a table of other rows.

    Read as columns, such a table has no header but its title row ("Race details" spanning every column), and each row
    read "Race details: Dates | Race details_3: 22 June–14 July 1964". A record: at least two rows of a label and a
    value, and 80 % of the rows holding more than one cell are such rows. A table whose class says it is a record
    (:data:`_RECORD_CLASSES`: MediaWiki's ``infobox``) needs no more; another must have one title row at most above
    them, and one value in each (a table whose rows are labelled and hold several values, as a transposed table of
    isotopes, keeps its columns). A heading or picture row is kept as its text alone, and the rows above the fields
    become the first rows."""
    infobox = not _RECORD_CLASSES.isdisjoint(table.get("class") or [])
    if not infobox and len({c for row in grid[:header_rows] for c in row if c}) > 1:
        return None  # a header of several names: a table of columns (most tables end here, their cells unread)
    kinds = _label_cells(table)[: len(grid)]
    start = 0 if infobox else header_rows
    fields = [(k, len(_distinct(row))) for row, k in zip(grid[start:], kinds[start:], strict=False) if k is not None]
    labelled = [n for k, n in fields if k]
    if len(labelled) < 2 or len(labelled) < 0.8 * len(fields) or not infobox and any(n > 2 for n in labelled):
        return None
    out: list[list[str]] = []
    for row, kind in zip(grid, kinds, strict=False):
        values = _distinct(row)
        if values and kind:  # written as a row's cell under its name is, a date followed by its ISO spelling
            out.append([serialize_row([values[0].removesuffix(":")], [" ".join(values[1:])])])
        elif values:
            out.append([" ".join(dict.fromkeys(values))])
    return out


def _lead_in(table: Any) -> str:
    """The paragraph right before ``table`` when it leads into it (:func:`~.model.lead_in`), else ``""``."""
    previous = table.find_previous_sibling()
    return lead_in(previous.get_text(" ")) if previous is not None and previous.name == "p" else ""


def _html_title(table: Any) -> tuple[str, str]:
    """The table's caption; else its nearest preceding heading, followed by the paragraph that leads into the table
    when there is one ("Kddcup 99 dataset — SA structure": the heading alone would title every table of the
    section alike); else that paragraph alone; and where the title came from."""
    caption = next((c for c in table.find_all("caption") if c.find_parent("table") is table), None)
    if caption is not None and _own_text(caption):
        return _own_text(caption), "caption"
    lead = _lead_in(table)
    heading = table.find_previous(HEADINGS)  # one at a time: find_all_previous walks back to the page's top
    for _ in range(20):
        if heading is None:
            break
        text = heading_text(heading)
        if text:
            return titled(text, lead), "heading and lead-in" if lead else "heading"
        heading = heading.find_previous(HEADINGS)
    return (lead, "lead-in") if lead else ("", "name")


def html_tables(html: str, *, name: str, fmt: str) -> list[ParsedTable]:
    """Tables of ``html`` as :func:`~universalrag.ingest.tables.tables_from_html` describes."""
    from bs4 import BeautifulSoup

    from ..html_clean import unwrap_layout_tables

    soup = BeautifulSoup(html, "html.parser")
    unwrap_layout_tables(soup)  # page layout, menus and indexes are not data tables
    found: list[tuple[str, list[str], dict[str, Any], list[list[str]]]] = []
    for number, table in enumerate(soup.find_all("table"), 1):
        grid, copies, header_rows = _grid(table)
        width = max((len(r) for r in grid), default=0)
        if width == 0:
            continue
        record = _record(table, grid, header_rows)
        if record is not None:  # an infobox: one column of "label: value" under a blank name, written alone
            grid, copies, header_rows = [[""], *record], [[False]] * (len(record) + 1), 1
            width = 1
        synthesized = header_rows == 0 and looks_like_data(grid[0])
        if header_rows == 0 and not synthesized:
            header_rows = 1
        names = []
        for col in range(width):
            parts: list[str] = []
            for row in grid[:header_rows]:
                text = row[col] if col < len(row) else ""
                if text and (not parts or parts[-1] != text):
                    parts.append(text)
            names.append(" ".join(parts))
        rows = [
            fit_row(["" if copy else text for text, copy in zip(row, flags, strict=False)], width)
            for row, flags in zip(grid[header_rows:], copies[header_rows:], strict=True)
        ]
        data = [row for row in rows if any(row)]
        if not data:
            continue
        title, title_from = _html_title(table)
        # a blank first header cell over words heads the rows' labels (a table of statistics: "", "Min", "Max")
        stub = is_label_column(row[0] for row in data)
        header = synthetic_header(width) if synthesized else make_header(names, stub=stub)
        metadata = {
            "format": fmt,
            "source": source_name(name),
            "index_in_file": len(found),
            "row_count": len(data),
            "column_count": width,
            "title_from": title_from,
            "header_rows": header_rows,
            "header_synthesized": synthesized or not any(names),
            "blank_rows_skipped": len(rows) - len(data),
        }
        if record is not None:
            metadata["layout"] = "record"
        if table.get("id"):
            metadata["html_id"] = str(table["id"])
        found.append((title or f"{title_stem(name)} table {number}", header, metadata, data))
    titles = unique_titles([f[0] for f in found])
    return [
        ParsedTable(title, header, metadata, row_source=partial(iter, data))
        for title, (_, header, metadata, data) in zip(titles, found, strict=True)
    ]


def markdown_tables(text: str, *, name: str) -> list[ParsedTable]:
    """Tables of Markdown ``text`` as :func:`~universalrag.ingest.tables.tables_from_markdown` describes."""
    from ..markup import markdown_to_html, split_front_matter

    return html_tables(markdown_to_html(split_front_matter(text)[1]), name=name, fmt="markdown")
