"""Text inputs (.txt, Markdown, HTML) → clean plain text → ~100-word passages and embedding windows.

Pure functions: no database, no embedding. The clean text keeps paragraphs separated by one blank
line and collapses other whitespace (code blocks keep their line breaks), so passage offsets and
word counts mean the same thing for every format.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from universalrag.errors import IngestError
from universalrag.ingest.detect import sniff
from universalrag.ingest.passages import Passage, chunk_for_embedding, split_paragraphs

__all__ = [
    "TEXT_FORMATS",
    "Passage",
    "TextDocument",
    "chunk_for_embedding",
    "parse_text",
    "read_text_file",
    "split_paragraphs",
]

#: File extension → format name understood by :func:`parse_text`.
TEXT_FORMATS: dict[str, str] = {
    ".txt": "txt", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html",
}
_FORMAT_ALIASES = {"txt": "txt", "text": "txt", "md": "md", "markdown": "md", "html": "html", "htm": "html"}

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: Share of control characters (other than tab, newline, carriage return, form feed) above which
#: decoded "text" is judged binary.
_MAX_CONTROL_SHARE = 0.05
_BLANK_LINE = re.compile(r"\n[ \t\f\v]*\n")


@dataclass(frozen=True, slots=True)
class TextDocument:
    """A text file reduced to clean plain text.

    ``text`` holds paragraphs separated by one blank line; ``metadata`` is JSON-ready (``headings``,
    ``images`` with ``src``/``alt``, ``char_count``, ``word_count``, ``encoding``); ``content_hash``
    is the SHA-256 hex digest of the raw bytes.
    """

    title: str
    text: str
    format: str
    metadata: dict[str, Any]
    content_hash: str


# --------------------------------------------------------------------------- reading and decoding


def read_text_file(path: str | Path) -> TextDocument:
    """Read a ``.txt``, ``.md``/``.markdown`` or ``.html``/``.htm`` file into a :class:`TextDocument`.

    Raises :class:`IngestError` naming the path and what to do when the path is missing, is a
    folder, has an unsupported extension, is empty, is binary, or is not UTF-8/UTF-16 text.
    """
    p = Path(path)
    if not p.exists():
        raise IngestError(p, "no such file; check the path (relative paths start at the current folder).")
    if p.is_dir():
        raise IngestError(p, "is a folder, not a file; pass the files inside it, or ingest the whole folder.")
    if not p.is_file():
        raise IngestError(p, "is not a regular file (a device, socket or pipe); save its content to a file.")
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
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e
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
        content_hash=hashlib.sha256(data).hexdigest(),
    )


def _decode(data: bytes, name: str) -> tuple[str, str]:
    """Decode UTF-8 (BOM optional) or UTF-16/32 with a BOM; reject binary data with a clear reason."""
    sniffed = sniff(data[:64])
    if sniffed is not None:
        raise IngestError(
            name,
            f"this is a {sniffed.label}, not text (its first bytes say so; it was probably renamed). "
            "Give it its real extension, or ingest it as what it is.",
        )
    bom, encoding = next(((b, enc) for b, enc in _BOMS if data.startswith(b)), (b"", "utf-8"))
    if not bom and b"\x00" in data[:65536]:
        raise IngestError(
            name,
            "looks like a binary file, not text (it contains NUL bytes). If it is UTF-16 text, save it "
            "as UTF-8 (or UTF-16 with a byte-order mark); otherwise leave it out.",
        )
    try:
        text = data[len(bom):].decode(encoding)
    except UnicodeDecodeError as e:
        offset = len(bom) + e.start
        bad = data[offset:offset + 1].hex().upper()
        if encoding != "utf-8":
            raise IngestError(
                name,
                f"starts with a {encoding.upper()} byte-order mark but is not valid {encoding.upper()} "
                f"(byte offset {offset}); re-save it as UTF-8.",
            ) from e
        raise IngestError(
            name,
            f"is not valid UTF-8 (byte 0x{bad} at byte offset {offset}); it is probably in a legacy "
            "encoding such as Latin-1 or Windows-1252. Convert it to UTF-8, for example with "
            f"`iconv -f WINDOWS-1252 -t UTF-8 {Path(name).name} > utf8{Path(name).suffix}`, and ingest that.",
        ) from e
    text = text.lstrip("\ufeff")
    control = sum(1 for ch in text[:65536] if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v")
    if control and control > _MAX_CONTROL_SHARE * min(len(text), 65536):
        raise IngestError(
            name,
            f"looks like a binary file, not text ({control} control characters); leave it out or "
            "export its text to a .txt file.",
        )
    return text, encoding


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
