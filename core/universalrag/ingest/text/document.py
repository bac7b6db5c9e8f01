"""Text inputs (.txt, Markdown, HTML) → clean plain text → ~100-word passages and embedding windows.

Pure functions: no database, no embedding. The clean text keeps paragraphs separated by one blank
line and collapses other whitespace (code blocks keep their line breaks), so passage offsets and
word counts mean the same thing for every format.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import IngestError
from ..files import HEAD_BYTES, check_file, decode_error, read_error, text_encoding

__all__ = ["TEXT_FORMATS", "TextDocument", "parse_text", "read_text_file"]

#: File extension → format name understood by :func:`parse_text`.
TEXT_FORMATS: dict[str, str] = {
    ".txt": "txt", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html",
}
_FORMAT_ALIASES = {"txt": "txt", "text": "txt", "md": "md", "markdown": "md", "html": "html", "htm": "html"}

#: Share of control characters (other than tab, newline, carriage return, form feed) above which
#: decoded "text" is judged binary.
_MAX_CONTROL_SHARE = 0.05
_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")


@dataclass(frozen=True, slots=True)
class TextDocument:
    """A text file reduced to clean plain text.

    ``text`` holds paragraphs separated by one blank line; ``metadata`` is JSON-ready (``headings``,
    ``images`` with ``src``/``alt``, ``char_count``, ``word_count``, ``encoding``).
    """

    title: str
    text: str
    format: str
    metadata: dict[str, Any]


# --------------------------------------------------------------------------- reading and decoding


def read_text_file(path: str | Path) -> TextDocument:
    """Read a ``.txt``, ``.md``/``.markdown`` or ``.html``/``.htm`` file into a :class:`TextDocument`.

    Raises :class:`IngestError` naming the path and what to do when the path is missing, is a
    folder, has an unsupported extension, is empty, is binary, or is not UTF-8/UTF-16 text.
    """
    p = Path(path)
    check_file(p)
    fmt = TEXT_FORMATS.get(p.suffix.lower())
    if fmt is None:
        supported = ", ".join(sorted(TEXT_FORMATS))
        raise IngestError(
            p,
            f"unsupported extension {p.suffix or '(none)'!r} for a text document; supported: {supported}. "
            "Convert the file to one of these, or rename it if it already is plain text, Markdown or HTML.",
        )
    try:
        data = p.read_bytes()
    except OSError as e:
        raise read_error(p, e) from e
    return parse_text(data, format=fmt, name=str(p))


def parse_text(data: bytes, *, format: str, name: str) -> TextDocument:
    """Decode and clean ``data`` given as ``format`` (``"txt"``, ``"md"`` or ``"html"``).

    ``name`` is used in error messages and, through its stem, as the fallback title.
    """
    fmt = _FORMAT_ALIASES.get(format.lower().lstrip("."))
    if fmt is None:
        raise IngestError(name, f"unknown text format {format!r}; use 'txt', 'md' or 'html'.")
    if not data:
        raise IngestError(name, "the file is empty (0 bytes); add text to it or leave it out.")
    raw, encoding = _decode(data, name)
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    if not raw.strip():
        raise IngestError(name, "the file contains only whitespace; add text to it or leave it out.")
    title, text, extra = _EXTRACTORS[fmt](raw)
    if not text:
        raise IngestError(name, f"no readable text is left after removing the {fmt.upper()} markup.")
    metadata: dict[str, Any] = {
        "headings": [],
        "images": [],
        **extra,
        "encoding": encoding,
        "char_count": len(text),
        "word_count": len(text.split()),
    }
    return TextDocument(
        title=title or Path(name).stem,
        text=text,
        format=fmt,
        metadata=metadata,
    )


def _decode(data: bytes, name: str) -> tuple[str, str]:
    """Decode UTF-8 (BOM optional) or UTF-16/32 with a BOM; reject binary data with a clear reason."""
    encoding = text_encoding(data[:HEAD_BYTES], name)
    try:
        text = data[len(encoding.bom):].decode(encoding.name)
    except UnicodeDecodeError as e:
        offset = len(encoding.bom) + e.start
        raise decode_error(name, encoding, f"byte 0x{data[offset:offset + 1].hex().upper()} at byte offset "
                                           f"{offset}") from e
    text = text.lstrip("\ufeff")
    control = sum(1 for ch in text[:65536] if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v")
    if control and control > _MAX_CONTROL_SHARE * min(len(text), 65536):
        raise IngestError(
            name,
            f"looks like a binary file, not text ({control} control characters); leave it out or "
            "export its text to a .txt file.",
        )
    return text, encoding.name


# --------------------------------------------------------------------------- format extractors


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _join_paragraphs(paragraphs: list[str]) -> str:
    return "\n\n".join(p for p in paragraphs if p)


def _extract_txt(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Paragraphs are separated by blank lines; hard-wrapped lines inside one are joined."""
    paragraphs = [_collapse(p) for p in _BLANK_LINE.split(raw)]
    text = _join_paragraphs(paragraphs)
    first = text.split("\n\n", 1)[0] if text else ""
    # A short first line without closing punctuation reads as a title ("Kestrel Point Lighthouse").
    title = first if first and len(first.split()) <= 14 and first[-1] not in ".!?:;," else ""
    return title, text, {}


_DROP_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "head", "title", "iframe", "object", "canvas",
})
_BLOCK_TAGS = frozenset({
    "p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "br", "hr", "section", "article",
    "blockquote", "pre", "ul", "ol", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "caption",
    "header", "footer", "nav", "main", "aside", "figure", "figcaption", "address", "form", "fieldset",
    "details", "summary", "body", "html",
})
_CELL_TAGS = frozenset({"td", "th"})
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def _extract_html(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Visible text of an HTML page; block elements become paragraph breaks."""
    from bs4 import BeautifulSoup
    from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

    soup = BeautifulSoup(raw, "html.parser")
    title_tag = next((t for t in soup.find_all("title") if not t.find_parent("svg")), None)
    page_title = _collapse(title_tag.get_text()) if title_tag else ""
    images = [
        {"src": str(img.get("src") or ""), "alt": _collapse(str(img.get("alt") or ""))}
        for img in soup.find_all("img")
        if img.get("src") or img.get("alt")
    ]
    headings: list[str] = []
    paragraphs: list[str] = []
    current: list[str] = []

    def flush() -> None:
        paragraphs.append(_collapse("".join(current)))
        current.clear()

    skip = (Comment, Declaration, Doctype, ProcessingInstruction)
    # Iterative walk (deeply nested pages would exhaust recursion): ("open", node) or ("close", tag).
    stack: list[tuple[str, Any]] = [("open", soup)]
    while stack:
        action, node = stack.pop()
        if action == "close":
            if node.name in _BLOCK_TAGS:
                flush()
            else:
                current.append(" ")
            continue
        if isinstance(node, NavigableString):
            if not isinstance(node, skip):
                current.append(str(node))
            continue
        if not isinstance(node, Tag) or node.name in _DROP_TAGS:
            continue
        if node.name == "pre":
            flush()
            paragraphs.append(_pre_text(node.get_text()))
            continue
        if node.name in _HEADING_TAGS:
            heading = _collapse(node.get_text())
            if heading:
                headings.append(heading)
        if node.name in _BLOCK_TAGS:
            flush()
            stack.append(("close", node))
        elif node.name in _CELL_TAGS:
            stack.append(("close", node))  # a space after each cell keeps cells apart
        stack.extend(("open", child) for child in reversed(list(node.children)))
    flush()
    first_h1 = next((_collapse(h.get_text()) for h in soup.find_all("h1")), "")
    extra = {"headings": headings, "images": images}
    return page_title or first_h1, _join_paragraphs(paragraphs), extra


def _pre_text(code: str) -> str:
    """Code keeps its line breaks and indentation, minus blank lines (they would split the paragraph)."""
    lines = [line.rstrip() for line in code.split("\n")]
    return "\n".join(line for line in lines if line.strip())


_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n(?:---|\.\.\.)\n", re.DOTALL)


def _extract_markdown(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Render Markdown with markdown-it (CommonMark + tables) and keep the visible text."""
    from markdown_it import MarkdownIt

    front_title = ""
    match = _FRONT_MATTER.match(raw)
    if match:
        raw = raw[match.end():]
        found = re.search(r"^title:\s*(.+?)\s*$", match.group(1), re.MULTILINE)
        front_title = found.group(1).strip("\"'") if found else ""
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(raw)
    _, text, extra = _extract_html(html)
    headings = extra["headings"]
    return front_title or (headings[0] if headings else ""), text, extra


_EXTRACTORS: dict[str, Callable[[str], tuple[str, str, dict[str, Any]]]] = {
    "txt": _extract_txt,
    "md": _extract_markdown,
    "html": _extract_html,
}
