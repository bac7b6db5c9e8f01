"""reStructuredText → HTML with docutils, so that an ``.rst`` page is read like an HTML page: its headings, its
prose, and its tables (simple, grid, ``list-table``, ``csv-table``) as tables of their own.

Real ``.rst`` files are mostly Sphinx sources, whose roles and directives docutils alone does not know. Rather
than letting its error reports reach the text, the parsed tree is mended before it is written:

- an unknown role keeps the words Sphinx would show (:func:`role_text`: ``:func:`~pkg.mod.load``` → ``load``,
  ``:ref:`the guide <guide>``` → ``the guide``, but ``:variable:`CMAKE_<LANG>_FLAGS``` as it is); an undefined
  substitution (``|details-start|``) is dropped;
- an unknown directive keeps its argument and its body, read as reStructuredText (the prose of ``dropdown``,
  ``tab-item``, ``py:function``, ...), except the directives in :data:`NOT_PROSE`, whose body is not prose or which
  show nothing (``toctree``, ``literalinclude``, ``program``, ...); one with nothing in its body shows nothing
  either, unless it is one of :data:`SIGNATURES` (``option``, ``py:function``, ...): an extension's directive makes
  its content from its argument (``pip-command-usage:: install``, ``pip-news-include:: ../../NEWS.rst``); a build
  condition (``only``, ``ifconfig``) keeps its body without its argument; a version note (``versionadded``,
  ``deprecated``, ...) reads as Sphinx writes it ("New in version 3.19: ..."), and so does an admonition ("Note:
  ...", "See also: ...", :data:`ADMONITIONS`); the body of a directive in :data:`LITERAL`, a grammar or code
  (``productionlist``, ``doctest``, ...), is kept as it is written, as a literal block;
- as in Sphinx, the page's title is its first section's title, wherever that section starts (after a ``.. note::``
  or an ``:orphan:``), and a field list that opens the file (``:orphan:``, ``:title:``) is the page's metadata, not
  its text; any other field list reads one field a paragraph, "Name: value";
- text docutils could not parse (a table whose columns do not line up) is kept as it is written; a directive it
  refused (a disabled ``include``) and every other message are dropped, and a table of contents
  (``.. contents::``) is left out.

A page never reads another file: ``include``, ``raw`` and ``csv-table``'s ``:file:``/``:url:`` are disabled; the
files a page's ``include`` names are logged, once a page, so that a user knows what its text lacks.
"""

from __future__ import annotations

import logging
import re
import textwrap
from typing import Any

__all__ = ["ADMONITIONS", "LITERAL", "NOT_PROSE", "SIGNATURES", "VERSION_NOTES", "role_text", "rst_to_html"]

_log = logging.getLogger(__name__)

#: Directives whose body is not prose worth indexing (their argument is a name or a path, their body a list), and
#: those that only set the context of the markup after them and show nothing (``program``, ``default-role``, ...)
#: or code Sphinx does not show (``testsetup``).
NOT_PROSE = frozenset(
    {
        "toctree",
        "autosummary",
        "literalinclude",
        "automodule",
        "autoclass",
        "autofunction",
        "automethod",
        "autoattribute",
        "autodata",
        "autoexception",
        "currentmodule",
        "module",
        "highlight",
        "index",
        "sectionauthor",
        "moduleauthor",
        "codeauthor",
        "plot",
        "graphviz",
        "inheritance-diagram",
        "mermaid",
        "tabularcolumns",
        "program",
        "std:program",
        "default-role",
        "default-domain",
        "role",
        "py:currentmodule",
        "py:module",
        "js:module",
        "namespace",
        "namespace-push",
        "namespace-pop",
        "cpp:namespace",
        "cpp:namespace-push",
        "cpp:namespace-pop",
        "c:namespace",
        "c:namespace-push",
        "c:namespace-pop",
        "testsetup",
        "testcleanup",
    }
)
#: Directives whose body is a grammar or code, not reStructuredText: read as markup, ``[ \t]+`` would lose its
#: backslash and ``[A-Za-z_]`` its underscore. Sphinx shows them as they are written.
LITERAL = frozenset(
    {
        "productionlist",
        "doctest",
        "testcode",
        "testoutput",
        "code-tab",
        "code-cell",
        "ipython",
        "jupyter-execute",
        "prompt",
    }
)
#: Sphinx's directives whose argument is what they show, with a body or without: an object's signature, a term.
SIGNATURES = frozenset(
    {
        "option",
        "cmdoption",
        "envvar",
        "describe",
        "object",
        "function",
        "class",
        "method",
        "attribute",
        "data",
        "exception",
        "decorator",
        "confval",
        "centered",
        "glossary",
        "hlist",
    }
)
#: Directives whose argument is a build condition (``html``, ``not man``) that a reader never sees.
_CONDITIONS = frozenset({"only", "ifconfig"})
#: What Sphinx writes before a version note's text.
VERSION_NOTES = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}
#: What Sphinx writes before an admonition's text (docutils' own labels are "Attention!" and "!DANGER!").
ADMONITIONS = {
    "note": "Note",
    "warning": "Warning",
    "attention": "Attention",
    "caution": "Caution",
    "danger": "Danger",
    "error": "Error",
    "hint": "Hint",
    "important": "Important",
    "tip": "Tip",
    "seealso": "See also",
    "todo": "Todo",
}

_SETTINGS = {
    "report_level": 5,
    "halt_level": 5,
    "warning_stream": False,
    "traceback": True,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "syntax_highlight": "none",
    "embed_stylesheet": False,
    "stylesheet_path": "",
    "output_encoding": "unicode",
    # Sphinx's title is the first section's, found below: docutils' would be lost to a leading note or field list
    "doctitle_xform": False,
    "initial_header_level": 1,
}
#: ``:role:`text``` or ``:domain:role:`text <target>```, as docutils leaves an unknown role in the text.
_ROLE = re.compile(r":(?P<name>[\w.+-]+(?::[\w.+-]+)*):`(?P<text>.*?)`", re.DOTALL)
#: The title of ``title <target>``. The ``<`` must follow a space, as CMake's Sphinx extension has it: a target may
#: hold ``<...>`` itself (``CMAKE_CXX_FLAGS <CMAKE_<LANG>_FLAGS>``), and so may a name that has no title
#: (``MAP_IMPORTED_CONFIG_<CONFIG>``, ``$<TARGET_FILE:tgt>``).
_TARGET = re.compile(r"^(?P<title>\S.*?)\s+<.*>$", re.DOTALL)
#: Sphinx's own cross-references, whose ``title<target>`` needs no space (``pip install Examples<pip install
#: Examples>``), as Sphinx reads them: their target is a label or a path, never a name with a placeholder.
_REFERENCES = frozenset(
    {"ref", "doc", "term", "numref", "any", "keyword", "download", "std:ref", "std:doc", "std:term", "std:numref"}
)
_REFERENCE_TARGET = re.compile(r"^(?P<title>\S.*?)\s*<[^<>]*>$", re.DOTALL)
#: A ``token`` of a ``productionlist``, which Sphinx shows without its backquotes (``~group:name`` as ``name``).
_TOKEN = re.compile(r"`(?P<token>(?:~?\w*:)?\w+)`")
_UNKNOWN_DIRECTIVE = re.compile(r"^\.\. (?P<name>[\w:.+-]+)::[ \t]*(?P<argument>.*)$")
_OPTION = re.compile(r"^:[\w -]+:(?:\s|$)")
_HEAD_TITLE = re.compile(r"<title>.*?</title>\n?", re.DOTALL)


def rst_to_html(raw: str, *, fragment: bool = False) -> str | None:
    """An HTML page of the reStructuredText ``raw`` (docutils' ``html5`` writer) with the Sphinx markup docutils
    does not know read as the module docstring says; ``None`` when docutils fails on it (logged), so that the
    caller can read the page as plain text instead. ``fragment``: only the HTML of its body, markup read inside
    another page (MyST's ``eval-rst``), where a leading field list is text, not the page's metadata."""
    from docutils import nodes
    from docutils.core import publish_from_doctree
    from docutils.writers.html5_polyglot import Writer

    try:
        skipped: list[str] = []
        tree = _tree(raw, skipped=skipped, page=not fragment)
        if skipped:
            _log.warning(
                "a reStructuredText page includes files that are not read, as a page never reads another "
                "file; its text lacks what they hold: %s",
                ", ".join(dict.fromkeys(skipped)),
            )
        tree["title"] = _first_section_title(tree) or _title_field(tree)
        for docinfo in list(tree.findall(nodes.docinfo)):
            docinfo.parent.remove(docinfo)  # Sphinx keeps a file's leading field list as metadata, never shown
        writer = Writer()
        html = str(publish_from_doctree(tree, writer=writer, settings_overrides=_SETTINGS))
        if fragment:
            return str(writer.parts["body"])
        # untitled, docutils would name the page after its source ("<string>"): the reader's fallback is better
        return html if tree["title"] else _HEAD_TITLE.sub("", html, count=1)
    except Exception as e:  # noqa: BLE001 - docutils' failures on odd input are many and undocumented
        _log.warning(
            "docutils could not parse a reStructuredText page (%s: %s); it is read as plain text.", type(e).__name__, e
        )
        return None


def role_text(name: str, text: str) -> str:
    """What Sphinx shows of the text of role ``name`` (``ref``, ``py:func``; a MyST role's too): the title of
    ``title <target>`` (of ``title<target>`` too, for a cross-reference), ``load`` of ``~pkg.mod.load``, else the
    text without a leading ``!``."""
    titled = (_REFERENCE_TARGET if name.lower() in _REFERENCES else _TARGET).match(text)
    if titled:
        return titled.group("title")
    text = text.lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


def _tree(raw: str, *, skipped: list[str], page: bool = False) -> Any:
    """The mended docutils tree of ``raw`` (of a whole ``page``: a leading field list is its metadata, a
    ``docinfo`` node); the files its ``include`` directives name are added to ``skipped``."""
    from docutils import nodes
    from docutils.core import publish_doctree

    tree = publish_doctree(raw, settings_overrides={**_SETTINGS, "docinfo_xform": page})
    for node in list(tree.findall(nodes.problematic)):
        node.parent.replace(node, nodes.Text(_shown(node.astext())))
    for message in list(tree.findall(nodes.system_message)):
        kept = _kept(message, skipped)
        if kept:
            message.parent.replace(message, kept)
        else:
            message.parent.remove(message)
    for topic in list(tree.findall(nodes.topic)):
        if "contents" in topic["classes"]:
            topic.parent.remove(topic)
    for box in [n for n in tree.findall(nodes.Element) if isinstance(n, nodes.Admonition)]:
        title = box.children[0] if box.children and isinstance(box.children[0], nodes.title) else None
        label = " ".join(title.astext().split()) if title else ADMONITIONS.get(box.tagname, box.tagname.title())
        box.parent.replace(box, _led(label, [c for c in box.children if c is not title]))
    for fields in list(tree.findall(nodes.field_list)):
        fields.parent.replace(fields, [p for field in fields.children for p in _field_paragraphs(field)])
    _name_blank_headers(tree, raw)
    return tree


#: A column's cell text on a simple table's line: words apart by single spaces ("Class Correlation").
_CELL_TEXT = re.compile(r"\S+(?: \S+)*")


def _name_blank_headers(tree: Any, raw: str) -> None:
    """Put back the column names docutils drops from a simple table whose header row has a blank first cell
    ("            Min  Max   Mean    SD", scikit-learn's tables of statistics): docutils reads a line whose first
    column is blank as the rest of the row above it, and the first row has none, so the header comes out empty
    and every row read ``column_2: 278 | column_3: 1680``. The names are read from the line under the table's top
    border, each given to the column it starts in (docutils itself would refuse a name that overhangs its
    column's border, as wine_data.rst's do)."""
    from docutils import nodes

    lines = raw.expandtabs(8).splitlines()
    after = 0  # tables come in the order of their lines
    for table in tree.findall(nodes.table):
        line = table.line or _border_line(table, lines, after)
        if not line or line >= len(lines):
            continue
        after = line
        head = next(iter(table.findall(nodes.thead)), None)
        if head is None or head.astext().strip():
            continue
        rows = list(head.findall(nodes.row))
        border, names = lines[line - 1], lines[line]
        starts = [m.start() for m in re.finditer(r"=+", border)]
        if len(rows) != 1 or len(starts) != len(rows[0].children) or not set(border.strip()) <= {"=", " "}:
            continue
        texts = [""] * len(starts)
        for cell in _CELL_TEXT.finditer(names):
            column = max((i for i, start in enumerate(starts) if start <= cell.start()), default=0)
            texts[column] = f"{texts[column]} {cell.group()}".strip()
        for entry, text in zip(rows[0].children, texts, strict=True):
            if text:
                entry += nodes.paragraph(text, text)


def _border_line(table: Any, lines: list[str], after: int) -> int | None:
    """The 1-based number of the top border line of a simple ``table``, found from its column widths, for the docutils
    releases that leave a table's ``line`` unset (0.22 does; 0.23 sets it)."""
    from docutils import nodes

    widths = [int(spec["colwidth"]) for spec in table.findall(nodes.colspec)]
    for number in range(after, len(lines)):
        text = lines[number]
        if set(text.strip()) <= {"=", " "} and [len(m.group()) for m in re.finditer(r"=+", text)] == widths:
            return number + 1
    return None


def _field_paragraphs(field: Any) -> list[Any]:
    """A field of a field list as Sphinx lays it out, "Name: value" on one line: the name leads the first paragraph
    of its body (a label and its value were two paragraphs, which passages could cut apart)."""
    name, body = field.children[0], field.children[1]
    return _led(" ".join(name.astext().split()), list(body.children), alone=":")


def _led(label: str, body: list[Any], *, alone: str = ".") -> list[Any]:
    """``body`` (nodes) led by ``label``: "Note: " before its first paragraph's text, or "Note:" as a paragraph of
    its own before what is not a paragraph, or the label and ``alone`` ("Note.") when ``body`` is empty."""
    from docutils import nodes

    if body and isinstance(body[0], nodes.paragraph):
        body[0].insert(0, nodes.Text(f"{label}: "))
        return body
    return [nodes.paragraph(text=f"{label}{':' if body else alone}"), *body]


def _first_section_title(tree: Any) -> str:
    """The title of the page's first section, as Sphinx titles a page, or ``""``."""
    from docutils import nodes

    section = next(iter(tree.findall(nodes.section)), None)
    title = section.children[0] if section is not None and section.children else None
    return " ".join(title.astext().split()) if isinstance(title, nodes.title) else ""


def _title_field(tree: Any) -> str:
    """The value of a ``:title:`` field in the page's metadata (AWS CLI and other generated docs put their title
    there), or ``""``."""
    from docutils import nodes

    fields = next(iter(tree.findall(nodes.docinfo)), None)
    for field in fields.findall(nodes.field) if fields is not None else ():
        name, body = field.children[0].astext().strip().lower(), field.children[1].astext().strip()
        if name == "title" and body:
            return " ".join(body.split())
    return ""


def _shown(markup: str) -> str:
    """What Sphinx shows for an unknown role or reference docutils could not resolve."""
    if markup.startswith("|") and markup.endswith("|"):
        return ""  # an undefined substitution
    role = _ROLE.fullmatch(markup)
    if role is None:
        return markup.strip("`").removesuffix("__").removesuffix("_").strip("`")
    return role_text(role.group("name"), role.group("text"))


def _kept(message: Any, skipped: list[str]) -> list[Any]:
    """What of the source a docutils ``message`` quotes is the author's text, as nodes: of an unknown directive, what
    Sphinx would show of it (the module docstring says what); of another directive docutils refused or could not
    run (a disabled ``include``, whose file is added to ``skipped``), nothing; of other text it could not parse (a
    malformed table), that text as it is written. ``[]`` when the message quotes nothing."""
    from docutils import nodes

    blocks = [c for c in message.children if isinstance(c, nodes.literal_block)]
    if not blocks:
        return []
    first, _, body = blocks[0].astext().partition("\n")
    directive = _UNKNOWN_DIRECTIVE.match(first)
    if directive is None:
        return [] if first.startswith(".. ") else [nodes.literal_block(text=blocks[0].astext())]
    name, argument = directive.group("name").lower(), directive.group("argument").strip()
    if name == "include":
        skipped.append(argument)
    if name in NOT_PROSE or not message.children[0].astext().startswith("Unknown"):
        return []
    lines = textwrap.dedent(body).split("\n")
    if name == "productionlist":  # no options; its first production may be on the directive's line
        return _literal(([argument] if ":" in argument else []) + lines, grammar=True)
    options = _options(lines)
    if name in LITERAL:
        return [] if "hide" in options else _literal(lines)
    if name in VERSION_NOTES and argument:
        version, *inline = argument.split(None, 1)
        return _led(f"{VERSION_NOTES[name]} {version}", _body([*inline, *lines], skipped))
    if name in ADMONITIONS:
        return _led(ADMONITIONS[name], _body([argument, *lines], skipped))
    out = _body(lines, skipped)
    if not out and name not in SIGNATURES and ":" not in name:
        return []  # an extension's directive, whose content Sphinx makes from its argument (a path, a name)
    if argument and name not in _CONDITIONS:
        out.insert(0, nodes.paragraph(text=argument))
    return out


def _body(lines: list[str], skipped: list[str]) -> list[Any]:
    """The nodes of a directive's body ``lines``, read as reStructuredText; ``[]`` when it holds no text."""
    text = "\n".join(lines).strip("\n")
    return list(_tree(text, skipped=skipped).children) if text.strip() else []


def _options(lines: list[str]) -> set[str]:
    """The names of the options (``:maxdepth: 2``, ``:hide:``) that open a directive's body ``lines``, which are
    taken out of it."""
    names: set[str] = set()
    while lines and _OPTION.match(lines[0]):
        names.add(lines.pop(0).split(":")[1].strip().lower())
    return names


def _literal(lines: list[str], *, grammar: bool = False) -> list[Any]:
    """The body of a :data:`LITERAL` directive as it is written, as a literal block, nothing when it is empty; of a
    ``grammar`` (a ``productionlist``), with its tokens' backquotes dropped, as Sphinx shows it."""
    from docutils import nodes

    text = "\n".join(line.rstrip() for line in lines).strip("\n")
    text = _TOKEN.sub(_token_shown, text) if grammar else text
    return [nodes.literal_block(text=text)] if text.strip() else []


def _token_shown(token: re.Match[str]) -> str:
    """What Sphinx shows of a ``productionlist`` token: ``name`` of ``~group:name``, else the token as written."""
    name = token.group("token")
    return name.split(":", 1)[1] if name.startswith("~") else name.removeprefix(":")
