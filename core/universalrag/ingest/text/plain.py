"""Plain-text formats → (title, clean text, metadata): ``.txt``, reStructuredText, source code, JSON documents.

Pure functions over decoded text. Titles written with an underline (``Title`` then ``=====``, as in
reStructuredText and Setext Markdown, optionally with an overline too) are recognised: the first one is the
document's title and the underline never reaches the text. reStructuredText markup (directives, roles, link
targets, comments, emphasis) is reduced to its words by a few rules, which is enough for search. docutils is
not used: real ``.rst`` files are mostly Sphinx sources, whose roles and directives plain docutils reports as
errors (into the text) instead of reading them. JSON that is not a table is flattened to ``key: value`` lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["extract_code", "extract_json", "extract_rst", "extract_txt"]

_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
#: A line made of one repeated punctuation character, three or more times (a title's under/overline).
_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_:.])\1{2,}\s*$")
#: Titles longer than this are prose followed by a rule, not a title.
_MAX_TITLE_WORDS = 20


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _underlined_titles(raw: str) -> tuple[list[str], list[str]]:
    """Lines with under/overlined titles reduced to the title alone (as its own paragraph), and the titles."""
    lines = raw.split("\n")
    out: list[str] = []
    titles: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        after = lines[i + 2] if i + 2 < len(lines) else ""
        # overline, title, underline
        if _ADORNMENT.match(line) and nxt.strip() and _ADORNMENT.match(after) and not _ADORNMENT.match(nxt):
            titles.append(_collapse(nxt))
            out += ["", nxt.strip(), ""]
            i += 3
            continue
        words = len(line.split())
        if (line.strip() and not _ADORNMENT.match(line) and _ADORNMENT.match(nxt)
                and 0 < words <= _MAX_TITLE_WORDS and len(nxt.strip()) >= min(3, len(line.strip()))):
            titles.append(_collapse(line))
            out += ["", line.strip(), ""]
            i += 2
            continue
        if _ADORNMENT.match(line) and len(line.strip()) >= 4 and not line.strip().startswith(("..", "::")):
            out.append("")  # a horizontal rule (---- or ====) separates paragraphs and is not text
        else:
            out.append(line)
        i += 1
    return out, titles


def extract_txt(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Paragraphs are separated by blank lines; hard-wrapped lines inside one are joined. The title is the
    first underlined title, else a short first line without closing punctuation ("Kestrel Point Lighthouse")."""
    lines, titles = _underlined_titles(raw)
    paragraphs = [_collapse(p) for p in _BLANK_LINE.split("\n".join(lines))]
    text = "\n\n".join(p for p in paragraphs if p)
    first = text.split("\n\n", 1)[0] if text else ""
    title = titles[0] if titles else ""
    if not title and first and len(first.split()) <= 14 and first[-1] not in ".!?:;,":
        title = first
    return title, text, {"headings": titles}


# --------------------------------------------------------------------------- reStructuredText

_RST_DIRECTIVE = re.compile(r"^(\s*)\.\. ([\w-]+)::\s*(.*)$")
_RST_OPTION = re.compile(r"^\s+:[\w -]+:.*$")
_RST_ROLE = re.compile(r":[\w-]+(?::[\w-]+)?:`([^`<]*?)(?:\s*<[^>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*<[^>]+>`__?")
_RST_REF = re.compile(r"`([^`]+)`__?")
_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_STRONG = re.compile(r"(?<![\w*])\*{1,2}(\S(?:.*?\S)?)\*{1,2}(?![\w*])")
#: Directives whose body is not prose worth indexing.
_RST_SKIPPED = frozenset({"image", "figure", "raw", "include", "toctree", "contents", "meta", "highlight",
                          "automodule", "autoclass", "autofunction", "index", "only", "sectnum"})


def _rst_inline(line: str) -> str:
    line = _RST_ROLE.sub(r"\1", line)
    line = _RST_LINK.sub(r"\1", line)
    line = _RST_LITERAL.sub(r"\1", line)
    line = _RST_STRONG.sub(r"\1", line)
    return _RST_REF.sub(r"\1", line).replace("\\*", "*")


def extract_rst(raw: str) -> tuple[str, str, dict[str, Any]]:
    """reStructuredText: titles, paragraphs and code blocks as plain text; directives that hold no prose
    (images, tables of contents, includes), comments and link targets are left out, roles and links keep
    their words."""
    out: list[str] = []
    skip_indent: int | None = None
    for line in raw.split("\n"):
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if not line.strip() or indent > skip_indent:
                continue
            skip_indent = None
        directive = _RST_DIRECTIVE.match(line)
        if directive:
            name, argument = directive.group(2).lower(), directive.group(3)
            if name in _RST_SKIPPED:
                skip_indent = len(directive.group(1))
            elif argument and name not in ("code-block", "code", "sourcecode", "literalinclude"):
                out.append(argument)  # ".. note:: Text" keeps its text; a code block's language is dropped
            out.append("")
            continue
        if line.strip() == ".." or line.lstrip().startswith(".. "):
            skip_indent = indent  # a comment, link target or substitution, with its indented continuation
            continue
        if _RST_OPTION.match(line) and out and not out[-1].strip():
            continue  # ":linenos:" under a directive
        out.append(_rst_inline(line.rstrip()[:-1] if line.rstrip().endswith("::") else line))
    return extract_txt("\n".join(out))


# --------------------------------------------------------------------------- source code and JSON


def extract_code(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Source code as text: blocks between blank lines keep their lines and indentation. No title (the
    file name is used)."""
    blocks = []
    for block in _BLANK_LINE.split(raw):
        lines = [line.rstrip() for line in block.split("\n")]
        kept = "\n".join(line for line in lines if line.strip())
        if kept:
            blocks.append(kept)
    return "", "\n\n".join(blocks), {}


_TITLE_KEYS = ("title", "name", "label", "id")


def _flatten(value: Any, prefix: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list) and value and all(not isinstance(v, (dict, list)) for v in value):
        out.append(f"{prefix}: {', '.join(_scalar(v) for v in value)}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}[{i}]", out)
    else:
        out.append(f"{prefix}: {_scalar(value)}" if prefix else _scalar(value))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _collapse(str(value))


def extract_json(raw: str) -> tuple[str, str, dict[str, Any]]:
    """A JSON document that is not a table: one paragraph per top-level key (or item), each leaf a readable
    ``path.to.key: value`` line. The title is a top-level ``title``/``name``/``label``/``id`` string.

    Raises ValueError when ``raw`` is not JSON (the caller words it)."""
    data = json.loads(raw)
    paragraphs: list[str] = []
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else [("", data)]
    for key, value in items:
        lines: list[str] = []
        _flatten(value, str(key) if not isinstance(key, int) else f"[{key}]", lines)
        if lines:
            paragraphs.append("\n".join(lines))
    title = ""
    if isinstance(data, dict):
        title = next((_collapse(data[k]) for k in _TITLE_KEYS if isinstance(data.get(k), str) and data[k].strip()), "")
    return title, "\n\n".join(paragraphs), {}
