"""reStructuredText → HTML with docutils, so that an ``.rst`` page is read like an HTML page: its headings, its
prose, and its tables (simple, grid, ``list-table``, ``csv-table``) as tables of their own.

Real ``.rst`` files are mostly Sphinx sources, whose roles and directives docutils alone does not know. Rather
than letting its error reports reach the text, the parsed tree is mended before it is written:

- an unknown role keeps the words Sphinx would show (``:func:`~pkg.mod.load``` → ``load``,
  ``:ref:`the guide <guide>``` → ``the guide``); an undefined substitution (``|details-start|``) is dropped;
- an unknown directive keeps its argument and its body, read as reStructuredText (the prose of
  ``versionadded``, ``deprecated``, ``dropdown``, ``tab-item``, ``py:function``, ...), except the directives in
  :data:`NOT_PROSE`, whose body is not prose (``toctree``, ``autosummary``, ``literalinclude``, ...);
- text docutils could not parse (a table whose columns do not line up) is kept as it is written; a directive it
  refused (a disabled ``include``) and every other message are dropped, and a table of contents
  (``.. contents::``) is left out.

A page never reads another file: ``include``, ``raw`` and ``csv-table``'s ``:file:``/``:url:`` are disabled.
"""

from __future__ import annotations

import logging
import re
import textwrap
from typing import Any

__all__ = ["NOT_PROSE", "rst_to_html"]

_log = logging.getLogger(__name__)

#: Directives whose body is not prose worth indexing (their argument is a name or a path, their body a list).
NOT_PROSE = frozenset({
    "toctree", "autosummary", "literalinclude", "automodule", "autoclass", "autofunction", "automethod",
    "autoattribute", "autodata", "autoexception", "currentmodule", "module", "highlight", "index", "sectionauthor",
    "moduleauthor", "codeauthor", "plot", "graphviz", "inheritance-diagram", "mermaid", "tabularcolumns",
})

_SETTINGS = {
    "report_level": 5, "halt_level": 5, "warning_stream": False, "traceback": True,
    "file_insertion_enabled": False, "raw_enabled": False, "syntax_highlight": "none",
    "embed_stylesheet": False, "stylesheet_path": "", "output_encoding": "unicode",
}
#: ``:role:`text``` or ``:domain:role:`text <target>```, as docutils leaves an unknown role in the text.
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`(?P<text>.*?)`", re.DOTALL)
_TARGET = re.compile(r"^(?P<title>.*?)\s*<[^<>]*>$", re.DOTALL)
_UNKNOWN_DIRECTIVE = re.compile(r"^\.\. (?P<name>[\w:.+-]+)::[ \t]*(?P<argument>.*)$")
_OPTION = re.compile(r"^:[\w -]+:(?:\s|$)")
_HEAD_TITLE = re.compile(r"<title>.*?</title>\n?", re.DOTALL)


def rst_to_html(raw: str) -> str | None:
    """An HTML page of the reStructuredText ``raw`` (docutils' ``html5`` writer) with the Sphinx markup docutils
    does not know read as the module docstring says; ``None`` when docutils fails on it (logged), so that the
    caller can read the page as plain text instead."""
    from docutils.core import publish_from_doctree

    try:
        tree = _tree(raw, title=True)
        tree["title"] = tree.get("title") or _title_field(tree)
        html = str(publish_from_doctree(tree, writer="html5", settings_overrides=_SETTINGS))
        # untitled, docutils would name the page after its source ("<string>"): the reader's fallback is better
        return html if tree["title"] else _HEAD_TITLE.sub("", html, count=1)
    except Exception as e:  # noqa: BLE001 - docutils' failures on odd input are many and undocumented
        _log.warning("docutils could not parse a reStructuredText page (%s: %s); it is read as plain text.",
                     type(e).__name__, e)
        return None


def _tree(raw: str, *, title: bool) -> Any:
    from docutils import nodes
    from docutils.core import publish_doctree

    tree = publish_doctree(raw, settings_overrides={**_SETTINGS, "doctitle_xform": title})
    for node in list(tree.findall(nodes.problematic)):
        node.parent.replace(node, nodes.Text(_shown(node.astext())))
    for node in list(tree.findall(nodes.system_message)):
        kept = _kept(node)
        if kept:
            node.parent.replace(node, kept)
        else:
            node.parent.remove(node)
    for node in list(tree.findall(nodes.topic)):
        if "contents" in node["classes"]:
            node.parent.remove(node)
    return tree


def _title_field(tree: Any) -> str:
    """The value of a ``:title:`` field in the page's first field list (AWS CLI and other generated docs put
    their title there), or ``""``."""
    from docutils import nodes

    fields = next(iter(tree.findall(lambda n: isinstance(n, (nodes.docinfo, nodes.field_list)))), None)
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
    text = role.group("text")
    target = _TARGET.match(text)
    if target and target.group("title"):
        return target.group("title")
    text = text.lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


def _kept(message: Any) -> list[Any]:
    """What of the source a docutils ``message`` quotes is the author's text, as nodes: of an unknown directive, its
    argument and its body (not for :data:`NOT_PROSE` directives); of another directive docutils refused or could not
    run (a disabled ``include``), nothing; of other text it could not parse (a malformed table), that text as it is
    written. ``[]`` when the message quotes nothing."""
    from docutils import nodes

    blocks = [c for c in message.children if isinstance(c, nodes.literal_block)]
    if not blocks:
        return []
    first, _, body = blocks[0].astext().partition("\n")
    directive = _UNKNOWN_DIRECTIVE.match(first)
    if directive is None:
        return [] if first.startswith(".. ") else [nodes.literal_block(text=blocks[0].astext())]
    if directive.group("name").lower() in NOT_PROSE or not message.children[0].astext().startswith("Unknown"):
        return []
    lines = textwrap.dedent(body).split("\n")
    while lines and _OPTION.match(lines[0]):
        lines.pop(0)  # ":maxdepth: 2" under the directive
    out: list[Any] = []
    argument = directive.group("argument").strip()
    if argument:
        out.append(nodes.paragraph(text=argument))
    text = "\n".join(lines).strip("\n")
    if text.strip():
        out.extend(_tree(text, title=False).children)
    return out
