"""Jupyter notebooks (``.ipynb``) → one HTML page, read like any other page: the Markdown cells as Markdown, the
code cells as code, and what the cells printed or displayed after them.

Outputs are kept where they are text a reader would search: streams (``print``), and of a displayed or returned
value its HTML (a pandas ``DataFrame`` is an HTML table, which goes to the table corpus like any page's table), else
its Markdown, else its plain text unless the value is a picture. Images (and their repr, "<Figure size ...>"),
widgets and error tracebacks are left out (pixels the text encoder cannot read, widget state, ANSI-coloured stack
frames). nbformat 4 and the older nbformat 3 (``worksheets``, code in ``input``) are read; the file is plain JSON,
so the standard library reads it — ``nbformat`` would add jsonschema and traitlets for a format this small.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from ..markup import markdown_to_html

__all__ = ["notebook_to_html"]

#: Output kinds whose plain-text form is only a repr: pictures and Jupyter widgets.
_NOT_TEXT = ("image/", "application/vnd.jupyter.widget")


def notebook_to_html(raw: str) -> str:
    """The HTML page of the notebook whose JSON is ``raw``; :class:`ValueError` when it is not JSON or not a
    notebook (no list of cells)."""
    try:
        notebook = json.loads(raw)
    except RecursionError as e:
        raise ValueError("it nests arrays or objects deeper than the reader follows") from e
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if cells is None and isinstance(notebook, dict):  # nbformat 3
        worksheets = notebook.get("worksheets")
        first = worksheets[0] if isinstance(worksheets, list) and worksheets else None
        cells = first.get("cells") if isinstance(first, dict) else None
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")  # noqa: TRY004 - bad content, reported as json.loads does
    parts = [_cell_html(cell) for cell in cells if isinstance(cell, dict)]
    return "<html><body>\n" + "\n".join(p for p in parts if p) + "\n</body></html>"


def _text(value: Any) -> str:
    """A notebook string: one string, or a list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>" if text.strip() else ""


def _cell_html(cell: dict[str, Any]) -> str:
    kind = cell.get("cell_type")
    source = _text(cell.get("source", cell.get("input", "")))
    if kind in ("markdown", "heading"):
        level = cell.get("level")  # nbformat 3 heading cells
        return markdown_to_html(f"{'#' * level} {source}" if isinstance(level, int) and 0 < level < 7 else source)
    if kind not in ("code", "raw"):
        return ""
    outputs = [_output_html(o) for o in cell.get("outputs", []) if isinstance(o, dict)]
    return "\n".join(s for s in [_pre(source), *outputs] if s)


def _output_html(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return _pre(_text(output.get("text")))
    if kind not in ("execute_result", "display_data", "pyout"):
        return ""  # an error: a traceback is not the notebook's content
    data = output.get("data")
    if not isinstance(data, dict):  # nbformat 3 keeps a value's forms at the top level
        data = {"text/html": output.get("html"), "text/plain": output.get("text")}
    if data.get("text/html"):
        return _text(data["text/html"])
    if data.get("text/markdown"):
        return markdown_to_html(_text(data["text/markdown"]))
    if any(str(kind).startswith(_NOT_TEXT) for kind in data) or "png" in data or "jpeg" in data:
        return ""  # the plain text of a picture or a widget is its object's repr ("<Figure size 640x480 ...>")
    return _pre(_text(data.get("text/plain")))
