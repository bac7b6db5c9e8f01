"""Text inputs (plain text, Markdown, HTML, reStructuredText, Jupyter notebooks, code, JSON documents) → clean
plain text.

Pure functions: no database, no embedding. The clean text keeps paragraphs separated by one blank
line and collapses other whitespace (code blocks and HTML ``<br>`` line breaks keep their lines), so passage
offsets and word counts mean the same thing for every format.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import IngestError, NoTextError
from ..files import HEAD_BYTES, check_file, declared_encoding, decode_text, read_content
from ..html_clean import HEADINGS
from .plain import extract_code, extract_json, extract_txt

__all__ = ["TEXT_FORMATS", "TextDocument", "parse_text", "read_text_file"]

#: File extension → format name understood by :func:`parse_text`.
TEXT_FORMATS: dict[str, str] = {
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".rst": "rst",
    ".ipynb": "ipynb",
}
_FORMAT_ALIASES = {
    "txt": "txt",
    "text": "txt",
    "md": "md",
    "markdown": "md",
    "html": "html",
    "htm": "html",
    "rst": "rst",
    "ipynb": "ipynb",
    "code": "code",
    "json": "json",
}

#: Share of control characters (other than tab, newline, carriage return, form feed) above which
#: decoded "text" is judged binary.
_MAX_CONTROL_SHARE = 0.05


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
    #: HTML, Markdown and reStructuredText pages and notebooks: ``text`` with each data table replaced by a one-line
    #: reference to it (its caption, size and columns); the page's passages are cut from it when its tables are
    #: ingested as tables of their own (``None``: the page has no data table).
    prose: str | None = None


# --------------------------------------------------------------------------- reading and decoding


def read_text_file(path: str | Path, *, format: str | None = None) -> TextDocument:
    """Read a text document (plain text, Markdown, HTML, reStructuredText, a Jupyter notebook, source code, a JSON
    document; gzip-compressed or not) into a :class:`TextDocument`.

    ``format`` (one of :data:`TEXT_FORMATS`' values, ``"code"`` or ``"json"``) skips detection; without it the
    content decides, then the extension (:func:`universalrag.ingest.detect.detect`). Raises
    :class:`IngestError` naming the path and what to do when the path is missing, is a folder, is not a text
    document, is empty, is binary, or is text in no encoding that can be detected.
    """
    from ..detect import detect, unsupported_error

    p = Path(path)
    check_file(p)
    if format is None:
        found = detect(p)
        format = found.format if found.kind == "text" else TEXT_FORMATS.get(p.suffix.lower())
        if format is None and found.kind is None:
            raise unsupported_error(p, found)
        if format is None:
            raise IngestError(
                p,
                f"is {'an' if found.kind == 'image' else 'a'} {found.kind} file, not a text "
                "document; ingest it with the pipeline (universalrag ingest), which sends each "
                "kind to its corpora.",
            )
    return parse_text(read_content(p), format=format, name=str(p))


def parse_text(data: bytes, *, format: str, name: str) -> TextDocument:
    """Decode and clean ``data`` given as ``format`` (``"txt"``, ``"md"``, ``"html"``, ``"rst"``, ``"ipynb"``,
    ``"code"`` or ``"json"``).

    ``name`` is used in error messages and, through its stem, as the fallback title. HTML is decoded in
    the encoding it declares (``<meta charset>``, XML declaration) when its bytes fit it; other text is
    UTF-8, UTF-16/32 with a byte-order mark, or the encoding charset-normalizer detects.
    """
    fmt = _FORMAT_ALIASES.get(format.lower().lstrip("."))
    if fmt is None:
        raise IngestError(
            name, f"unknown text format {format!r}; use 'txt', 'md', 'html', 'rst', 'ipynb', 'code' or 'json'."
        )
    if not data:
        raise IngestError(name, "the file is empty (0 bytes); add text to it or leave it out.")
    raw, encoding = _decode(data, name, html=fmt == "html")
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    if not raw.strip():
        raise IngestError(name, "the file contains only whitespace; add text to it or leave it out.")
    try:
        title, text, extra = _EXTRACTORS[fmt](raw)
    except ValueError as e:  # a JSON document or a notebook that does not parse
        if fmt == "ipynb":
            raise IngestError(
                name,
                f"is not a Jupyter notebook that can be read ({e}); open it in Jupyter and "
                "save it again, or export it with `jupyter nbconvert --to markdown`.",
            ) from e
        raise IngestError(
            name, f"is not valid JSON ({e}); fix it, for example by checking it with `python -m json.tool`."
        ) from e
    redirect = extra.pop("redirect", None)
    if redirect is not None:
        raise NoTextError(
            name, f"is a page that only sends its reader on to {redirect or 'another page'}; ingest that page instead."
        )
    if not text:
        raise NoTextError(name, f"no readable text is left after removing the {fmt.upper()} markup.")
    prose = extra.pop("prose", None)
    metadata: dict[str, Any] = {
        "headings": [],
        "images": [],
        **extra,
        "encoding": encoding,
        "char_count": len(text),
        "word_count": len(text.split()),
    }
    stem = Path(name).name.removesuffix(".gz") if fmt in ("code", "json") else Path(name.removesuffix(".gz")).stem
    return TextDocument(
        title=title or stem,
        text=text,
        format=fmt,
        metadata=metadata,
        prose=prose if prose and prose != text else None,
    )


def _decode(data: bytes, name: str, *, html: bool) -> tuple[str, str]:
    """Decode with :func:`~universalrag.ingest.files.decode_text`; reject binary data with a clear reason."""
    declared = declared_encoding(data[:HEAD_BYTES], html=True) if html else None
    text, encoding = decode_text(data, name, declared=declared)
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


_DROP_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "head",
        "title",
        "iframe",
        "object",
        "canvas",
    }
)
_BLOCK_TAGS = frozenset(
    {
        "p",
        "div",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "tr",
        "hr",
        "section",
        "article",
        "blockquote",
        "pre",
        "ul",
        "ol",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "caption",
        "header",
        "footer",
        "nav",
        "main",
        "aside",
        "figure",
        "figcaption",
        "address",
        "form",
        "fieldset",
        "details",
        "summary",
        "body",
        "html",
    }
)
_CELL_TAGS = frozenset({"td", "th"})
_HEADING_TAGS = frozenset(HEADINGS)


def _extract_html(raw: str, *, drop_navigation: bool = True) -> tuple[str, str, dict[str, Any]]:
    """Visible main text of an HTML page: block elements become paragraph breaks and ``<br>`` a line break within
    the paragraph (:func:`_visible_text`); layout tables read as blocks and navigation is left out
    (:mod:`~universalrag.ingest.html_clean`), unless nothing else is left.
    ``drop_navigation=False``: the page has none to remove (a page made from reStructuredText, whose admonitions
    are ``<aside>``, or from a notebook)."""
    from bs4 import BeautifulSoup

    from ..html_clean import heading_text, remove_navigation, unwrap_layout_tables

    soup = BeautifulSoup(raw, "html.parser")
    title_tag = next((t for t in soup.find_all("title") if not t.find_parent("svg")), None)
    page_title = _collapse(title_tag.get_text()) if title_tag else ""
    images = [
        {"src": str(img.get("src") or ""), "alt": _collapse(str(img.get("alt") or ""))}
        for img in soup.find_all("img")
        if img.get("src") or img.get("alt")
    ]
    first_h1 = next((heading_text(h) for h in soup.find_all("h1")), "")
    layout = unwrap_layout_tables(soup)
    navigation = remove_navigation(soup) if drop_navigation else 0
    links = _links(soup)  # the page's own links, navigation left out
    headings, text, prose = _visible_text(soup)
    if not text:
        headings, text, prose = _visible_text(BeautifulSoup(raw, "html.parser"))
        navigation = 0
    extra = {
        "headings": headings,
        "images": images,
        "links": links,
        "layout_tables": layout,
        "navigation_removed": navigation,
        "prose": prose,
    }
    redirect = _redirect(soup)
    if redirect is not None and len(text.split()) <= _REDIRECT_WORDS:
        extra["redirect"] = redirect
    return page_title or first_h1, text, extra


#: Links kept per page (in the document unit's metadata, for the knowledge graph's links between pages).
_MAX_LINKS = 500


def _links(soup: Any) -> list[dict[str, str]]:
    """The page's links as ``{"href", "text"}``, in order, without repeats, at most :data:`_MAX_LINKS`: those
    that lead somewhere (not ``#fragment``-only, ``javascript:`` or ``mailto:``)."""
    out: dict[tuple[str, str], None] = {}
    for a in soup.find_all("a", href=True):
        href = str(a.get("href") or "").strip()
        if not href or href.startswith("#") or href.lower().startswith(("javascript:", "mailto:")):
            continue
        out.setdefault((href[:2000], _collapse(a.get_text())[:200]), None)
        if len(out) >= _MAX_LINKS:
            break
    return [{"href": h, "text": t} for h, t in out]


#: A page that refreshes to another address and says no more than this many words is a redirect ("This page has
#: moved. You should be redirected automatically in 3 seconds..."): its words are not content, the target's are.
_REDIRECT_WORDS = 50
_REFRESH_URL = re.compile(r"^\s*\d*(?:\.\d*)?\s*[;,]\s*url\s*=\s*['\"]?(?P<url>[^'\"]*)", re.IGNORECASE)


def _redirect(soup: Any) -> str | None:
    """Where a page's ``<meta http-equiv="refresh" content="3; url=...">`` sends its reader (``""`` when it does not
    say), or ``None`` when it has no such meta, or one that only reloads the page."""
    for meta in soup.find_all("meta"):
        if str(meta.get("http-equiv") or "").strip().lower() == "refresh":
            url = _REFRESH_URL.match(str(meta.get("content") or ""))
            if url is not None:
                return url.group("url").strip()
    return None


def _visible_text(soup: Any) -> tuple[list[str], str, str]:
    """(headings, paragraphs joined by blank lines, the same with each data table replaced by
    :func:`_table_reference`) of a parsed page. Layout tables were unwrapped before, so a ``<table>`` left with a
    data cell is a data table: the one :func:`~universalrag.ingest.tables.tables_from_html` reads.

    A ``<br>`` ends a line, not a paragraph: hard-wrapped text (DocBook ``literallayout`` NEWS, READMEs and
    licences, address blocks, verse) is one ``<br>`` per line, and a paragraph break there cut its sentences
    into one-line "paragraphs" that passages then split apart. Two ``<br>`` with nothing between (an empty
    line) still end the paragraph, as they do in such text. Inside a data table a ``<br>`` is a space, as in the
    table reader, so a row stays one line."""
    from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

    headings: list[str] = []
    paragraphs: list[str] = []
    prose: list[str] = []
    lines: list[str] = []  # finished lines (ended by <br>) of the paragraph being read
    current: list[str] = []
    inside = 0  # how many data tables the walk is in

    def add(paragraph: str) -> None:  # a paragraph inside a data table is left out of the prose
        paragraphs.append(paragraph)
        if not inside:
            prose.append(paragraph)

    def flush() -> None:
        end_line()
        add("\n".join(lines))
        lines.clear()

    def end_line() -> None:
        line = _collapse("".join(current))
        current.clear()
        if line:
            lines.append(line)

    def line_break() -> None:  # <br>: a new line; an empty line (<br><br>) ends the paragraph
        if inside:
            current.append(" ")
        elif _collapse("".join(current)) or not lines:
            end_line()
        else:
            flush()

    skip = (Comment, Declaration, Doctype, ProcessingInstruction)
    # Iterative walk (deeply nested pages would exhaust recursion): ("open", node), ("close", tag) or
    # ("leave", data table).
    stack: list[tuple[str, Any]] = [("open", soup)]
    while stack:
        action, node = stack.pop()
        if action == "leave":
            inside -= 1
            continue
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
        if node.name == "br":
            line_break()
            continue
        if node.name == "pre":
            flush()
            add(_pre_text(node.get_text()))
            continue
        if node.name in _HEADING_TAGS:
            heading = _collapse(node.get_text())
            if heading:
                headings.append(heading)
        if node.name == "table" and not inside and node.find("td") is not None:
            flush()
            prose.append(_table_reference(node))
            inside += 1
            stack.append(("leave", node))
        if node.name in _BLOCK_TAGS:
            flush()
            stack.append(("close", node))
        elif node.name in _CELL_TAGS:
            stack.append(("close", node))  # a space after each cell keeps cells apart
        stack.extend(("open", child) for child in reversed(list(node.children)))
    flush()
    return headings, _join_paragraphs(paragraphs), _join_paragraphs(prose)


def _table_reference(table: Any) -> str:
    """One line standing for a data table in the page's prose: its caption, how many rows, its columns."""
    caption = next((_collapse(c.get_text(" ")) for c in table.find_all("caption")), "")
    rows = table.find_all("tr")
    first = next((r for r in rows if r.find(["th", "td"]) is not None), None)
    columns = [_collapse(c.get_text(" ")) for c in first.find_all(["th", "td"])] if first is not None else []
    listed = ", ".join(c for c in columns if c)
    if len(listed) > 200:
        listed = listed[:200].rsplit(", ", 1)[0] + ", …"
    return (
        f"[Table{': ' + caption if caption else ''} — {max(len(rows) - 1, 0)} rows"
        f"{'; columns: ' + listed if listed else ''}]"
    )


def _pre_text(code: str) -> str:
    """Code keeps its line breaks and indentation, minus blank lines (they would split the paragraph)."""
    lines = [line.rstrip() for line in code.split("\n")]
    return "\n".join(line for line in lines if line.strip())


#: Front-matter fields that say in a sentence what the page is (the first one present leads the page's text).
_SUMMARY_FIELDS = ("description", "summary", "subtitle", "excerpt")


def _extract_markdown(raw: str) -> tuple[str, str, dict[str, Any]]:
    """Render Markdown with markdown-it (CommonMark + tables) and keep the visible text. YAML front matter gives the
    title and, from its ``description`` (or ``summary``, ``subtitle``, ``excerpt``), the page's first paragraph, as
    the sites built from such pages show it ("npm-explain" / "Explain installed packages")."""
    from ..markup import markdown_to_html, split_front_matter

    fields, body = split_front_matter(raw)
    _, text, extra = _extract_html(markdown_to_html(body))
    summary = next((fields[k] for k in _SUMMARY_FIELDS if fields.get(k)), "")
    if summary:
        text = _join_paragraphs([summary, text])
        extra["prose"] = _join_paragraphs([summary, extra["prose"]])
    headings = extra["headings"]
    return fields.get("title") or (headings[0] if headings else ""), text, extra


def _extract_rst(raw: str) -> tuple[str, str, dict[str, Any]]:
    """reStructuredText read as the HTML page docutils makes of it (:mod:`~universalrag.ingest.text.rst`), or as
    plain text when docutils fails on it."""
    from .rst import rst_to_html

    html = rst_to_html(raw)
    return extract_txt(raw) if html is None else _extract_html(html, drop_navigation=False)


def _extract_notebook(raw: str) -> tuple[str, str, dict[str, Any]]:
    """A Jupyter notebook read as the page :mod:`~universalrag.ingest.text.notebook` makes of it."""
    from .notebook import notebook_to_html

    return _extract_html(notebook_to_html(raw), drop_navigation=False)


_EXTRACTORS: dict[str, Callable[[str], tuple[str, str, dict[str, Any]]]] = {
    "txt": extract_txt,
    "md": _extract_markdown,
    "html": _extract_html,
    "rst": _extract_rst,
    "ipynb": _extract_notebook,
    "code": extract_code,
    "json": extract_json,
}
