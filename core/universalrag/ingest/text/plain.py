"""Plain-text formats → (title, clean text, metadata): ``.txt``, source code, JSON documents.

Pure functions over decoded text. Titles written with an underline (``Title`` then ``=====``, as in
reStructuredText and Setext Markdown, optionally with an overline too) are recognised: the first one is the
document's title and the underline never reaches the text. An Org-mode file (``-*- org -*-``, ``#+TITLE:``) is read
with its headings of stars and its blocks. JSON that is not a table is flattened to
``key: value`` lines. reStructuredText is parsed with docutils (:mod:`~universalrag.ingest.text.rst`).
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
from typing import Any

__all__ = ["extract_code", "extract_json", "extract_txt"]

_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")
#: A line made of one repeated punctuation character, three or more times (a title's under/overline).
_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_:.])\1{2,}\s*$")
#: Titles longer than this are prose followed by a rule, not a title.
_MAX_TITLE_WORDS = 20
#: The page's title is an underlined title among its first paragraphs; one further down heads a section (in Vim's
#: help, a table's header over a rule of dashes titled pattern.txt "Capability in Vimspeak in Perlspeak ~").
_TITLE_PARAGRAPHS = 4


def _collapse(text: str) -> str:
    return " ".join(text.split())


#: A line that starts an item of a list: a bullet, a number or a letter ("* ", "- ", "2. ", "(b) ").
_ITEM = re.compile(r"^\s*(?:[*\-+\u2022]|\d{1,3}[.)]|\(?[A-Za-z0-9]\))\s+\S")
#: Two words set apart by a tab or by two spaces or more that do not follow a sentence's end: columns, a diagram.
_ALIGNED = re.compile(r"[^\s.!?:;,'\"\u2019\u201d)\]](?: {2,}|\t)[ \t]*\S")


#: A line whose next word would have fitted within this share of the text's width was broken by hand, not wrapped.
_BROKEN_BY_HAND = 0.6
#: The text's width: this share of its lines are at most so long (a few long lines, URLs or code, do not count).
_WIDTH_QUANTILE = 0.9


def _width(raw: str) -> int:
    """How wide the text's lines are wrapped: the length most of its lines stay within."""
    lengths = sorted(len(line.rstrip()) for line in raw.split("\n") if line.strip())
    return lengths[int(_WIDTH_QUANTILE * (len(lengths) - 1))] if lengths else 0


def _broken_by_hand(lines: list[str], width: int) -> bool:
    """Whether every line of ``lines`` but the last ends well before the text's ``width`` although the next line's
    first word would have fitted: commands one a line ("make distclean", "./configure", "make"), a code table
    ("A: 0", "B: 10"), verse. Hard-wrapped prose fills its lines."""
    return len(lines) > 1 and all(
        len(line.strip()) + 1 + len(nxt.split()[0]) <= _BROKEN_BY_HAND * width
        for line, nxt in itertools.pairwise(lines)
    )


def _paragraph(block: str, width: int = 0) -> str:
    """One paragraph of plain text: hard-wrapped prose joined into one line, but a list keeps one line an item (the
    lines after one ending in ":", at the indentation of the first, are items too), and lines laid out in columns (a
    table, a diagram, a list of commands and what they do) keep their lines and relative indentation — joined, "f  use
    (3 of 5)" and "i  use [noeol]" ran into one sentence. Lines broken by hand well within the text's ``width``
    (zlib's FAQ: "make distclean", "./configure", "make") keep their lines too, rather than read as one command."""
    lines = [line.rstrip() for line in block.split("\n") if line.strip()]
    if len(lines) > 1 and any(_ALIGNED.search(line.strip()) for line in lines):
        return textwrap.dedent("\n".join(lines))
    by_hand = _broken_by_hand(lines, width)
    out: list[str] = []
    listed: int | None = None  # the indentation of the lines listed after a line ending in ":"
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if out and out[-1].endswith(":"):
            listed = indent
        elif listed is not None and indent < listed:
            listed = None
        if out and not by_hand and not _ITEM.match(line) and indent != listed:
            out[-1] += " " + _collapse(line)
        else:
            out.append(_collapse(line))
    return "\n".join(out)


def _wordy(line: str) -> bool:
    """Whether ``line`` could be a title: two letters or digits at least (Vim's help closes an example with a line
    holding only "<", and a rule of "=" follows it)."""
    return sum(c.isalnum() for c in line) >= 2


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
        if (
            _ADORNMENT.match(line)
            and nxt.strip()
            and _ADORNMENT.match(after)
            and not _ADORNMENT.match(nxt)
            and _wordy(nxt)
        ):
            titles.append(_collapse(nxt))
            out += ["", nxt.strip(), ""]
            i += 3
            continue
        words = len(line.split())
        if (
            line.strip()
            and not _ADORNMENT.match(line)
            and _ADORNMENT.match(nxt)
            and _wordy(line)
            and 0 < words <= _MAX_TITLE_WORDS
            and len(nxt.strip()) >= min(3, len(line.strip()))
        ):
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


#: An Org-mode file (GnuPG's DETAILS, Emacs packages' notes) says so: a mode line ``-*- org -*-`` on its first line
#: or an in-buffer setting such as ``#+TITLE:``.
_ORG = re.compile(
    r"\A[^\n]*-\*-[^\n]*\borg\b[^\n]*-\*-|^#\+(?:TITLE|STARTUP|OPTIONS|AUTHOR):", re.IGNORECASE | re.MULTILINE
)
#: Org's heading: stars at the start of the line, then the heading's words ("*** Field 12 - Key capabilities").
_ORG_HEADING = re.compile(r"^\*+[ \t]+(\S.*)$")
#: Org's in-buffer setting ("#+TITLE: GnuPG Details", "#+OPTIONS: ^:{}").
_ORG_SETTING = re.compile(r"^[ \t]*#\+(\w+):(.*)$")
#: Org's comment line: a "#" then a space, or alone; the comment is read without it.
_ORG_COMMENT = re.compile(r"^#(?:[ \t]|$)")
#: Org's block delimiters ("#+begin_example", "#+END_SRC").
_ORG_BLOCK = re.compile(r"^[ \t]*#\+(begin|end)_\w+.*$", re.IGNORECASE)


def _extract_org(raw: str) -> tuple[str, str, dict[str, Any]]:
    """An Org-mode file as plain text: each heading is a paragraph of its own, without its stars (in GnuPG's DETAILS,
    "*** BEGIN_DECRYPTION" and its description ran into the next entries, as nothing but a heading line parts
    them); a block (``#+begin_example`` … ``#+end_example``) keeps its lines, as code does; the ``#+TITLE:`` setting
    is the title and the first paragraph, other settings (``#+OPTIONS:``) are not text, and a comment line ("# Note:
    This file uses org-mode; …") reads as prose, without its "#"."""
    paragraphs: list[str] = []
    headings: list[str] = []
    title = ""
    prose: list[str] = []
    block: list[str] | None = None
    width = _width(raw)

    def flush() -> None:
        paragraphs.extend(_paragraph(p, width) for p in _BLANK_LINE.split("\n".join(prose)))
        prose.clear()

    for line in raw.split("\n"):
        if block is not None:
            if _ORG_BLOCK.match(line) and line.strip().lower().startswith("#+end_"):
                paragraphs.append(textwrap.dedent("\n".join(x.rstrip() for x in block if x.strip())))
                block = None
            else:
                block.append(line)
            continue
        heading, setting = _ORG_HEADING.match(line), _ORG_SETTING.match(line)
        if heading is not None:
            flush()
            headings.append(_collapse(heading.group(1)))
            paragraphs.append(headings[-1])
        elif _ORG_BLOCK.match(line) and line.strip().lower().startswith("#+begin_"):
            flush()
            block = []
        elif setting is not None:
            if setting.group(1).lower() == "title" and not title and setting.group(2).strip():
                flush()
                title = _collapse(setting.group(2))
                paragraphs.append(title)
        else:
            prose.append(_ORG_COMMENT.sub("", line, count=1))
    flush()
    if block:  # a block never closed is kept as it is
        paragraphs.append(textwrap.dedent("\n".join(x.rstrip() for x in block if x.strip())))
    return title or (headings[0] if headings else ""), "\n\n".join(p for p in paragraphs if p), {"headings": headings}


def extract_txt(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Paragraphs are separated by blank lines; hard-wrapped lines inside one are joined, a list's items and lines
    laid out in columns kept (:func:`_paragraph`). The title is an underlined title among the first paragraphs,
    else a short first line without closing punctuation ("Kestrel Point Lighthouse"). An Org-mode file is read
    with its headings and blocks (:func:`_extract_org`)."""
    if _ORG.search(raw):
        return _extract_org(raw)
    lines, titles = _underlined_titles(raw)
    width = _width(raw)
    paragraphs = [_paragraph(p, width) for p in _BLANK_LINE.split("\n".join(lines))]
    text = "\n\n".join(p for p in paragraphs if p)
    first = text.split("\n\n", 1)[0] if text else ""
    top = " ".join(text.split("\n\n")[:_TITLE_PARAGRAPHS])
    title = next((t for t in titles[:1] if t in top), "")  # a title far down the page heads a section, not the page
    if not title and first and "\n" not in first and len(first.split()) <= 14 and first[-1] not in ".!?:;,":
        title = first
    return title, text, {"headings": titles}


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

    Raises ValueError when ``raw`` is not JSON, or nests deeper than it can be followed (the caller words it)."""
    try:
        return _extract_json(raw)
    except RecursionError as e:
        raise ValueError("it nests arrays or objects deeper than the reader follows; flatten it") from e


def _extract_json(raw: str) -> tuple[str, str, dict[str, Any]]:
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
