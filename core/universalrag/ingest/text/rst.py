"""reStructuredText → HTML with docutils, so that an ``.rst`` page is read like an HTML page: its headings, its
prose, and its tables (simple, grid, ``list-table``, ``csv-table``) as tables of their own.

Real ``.rst`` files are mostly Sphinx sources, whose roles and directives docutils alone does not know. Rather
than letting its error reports reach the text, the parsed tree is mended before it is written:

- an unknown role keeps the words Sphinx would show (``:func:`~pkg.mod.load``` → ``load``,
  ``:ref:`the guide <guide>``` → ``the guide``, but ``:variable:`CMAKE_<LANG>_FLAGS``` as it is); an undefined
  substitution (``|details-start|``) is dropped;
- an unknown directive keeps its argument and its body, read as reStructuredText (the prose of ``dropdown``,
  ``tab-item``, ``py:function``, ...), except the directives in :data:`NOT_PROSE`, whose body is not prose or which
  show nothing (``toctree``, ``literalinclude``, ``program``, ...); a build condition (``only``, ``ifconfig``)
  keeps its body without its argument; a version note (``versionadded``, ``deprecated``, ...) reads as Sphinx
  writes it ("New in version 3.19: ..."); the body of a directive in :data:`LITERAL`, a grammar or code
  (``productionlist``, ``doctest``, ...), is kept as it is written, as a literal block;
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

__all__ = ["LITERAL", "NOT_PROSE", "rst_to_html"]

_log = logging.getLogger(__name__)

#: Directives whose body is not prose worth indexing (their argument is a name or a path, their body a list), and
#: those that only set the context of the markup after them and show nothing (``program``, ``default-role``, ...)
#: or code Sphinx does not show (``testsetup``).
NOT_PROSE = frozenset({
    "toctree", "autosummary", "literalinclude", "automodule", "autoclass", "autofunction", "automethod",
    "autoattribute", "autodata", "autoexception", "currentmodule", "module", "highlight", "index", "sectionauthor",
    "moduleauthor", "codeauthor", "plot", "graphviz", "inheritance-diagram", "mermaid", "tabularcolumns",
    "program", "std:program", "default-role", "default-domain", "role", "py:currentmodule", "py:module",
    "js:module", "namespace", "namespace-push", "namespace-pop", "cpp:namespace", "cpp:namespace-push",
    "cpp:namespace-pop", "c:namespace", "c:namespace-push", "c:namespace-pop", "testsetup", "testcleanup",
})
#: Directives whose body is a grammar or code, not reStructuredText: read as markup, ``[ \t]+`` would lose its
#: backslash and ``[A-Za-z_]`` its underscore. Sphinx shows them as they are written.
LITERAL = frozenset({"productionlist", "doctest", "testcode", "testoutput", "code-tab", "code-cell", "ipython",
                     "jupyter-execute", "prompt"})
#: Directives whose argument is a build condition (``html``, ``not man``) that a reader never sees.
_CONDITIONS = frozenset({"only", "ifconfig"})
#: What Sphinx writes before a version note's text.
_VERSION_NOTES = {"versionadded": "New in version", "versionchanged": "Changed in version",
                  "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}

_SETTINGS = {
    "report_level": 5, "halt_level": 5, "warning_stream": False, "traceback": True,
    "file_insertion_enabled": False, "raw_enabled": False, "syntax_highlight": "none",
    "embed_stylesheet": False, "stylesheet_path": "", "output_encoding": "unicode",
}
#: ``:role:`text``` or ``:domain:role:`text <target>```, as docutils leaves an unknown role in the text.
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`(?P<text>.*?)`", re.DOTALL)
#: The title of ``title <target>``. The ``<`` must follow a space, as CMake's Sphinx extension has it: a target may
#: hold ``<...>`` itself (``CMAKE_CXX_FLAGS <CMAKE_<LANG>_FLAGS>``), and so may a name that has no title
#: (``MAP_IMPORTED_CONFIG_<CONFIG>``, ``$<TARGET_FILE:tgt>``).
_TARGET = re.compile(r"^(?P<title>\S.*?)\s+<.*>$", re.DOTALL)
#: A ``token`` of a ``productionlist``, which Sphinx shows without its backquotes (``~group:name`` as ``name``).
_TOKEN = re.compile(r"`(?P<token>(?:~?\w*:)?\w+)`")
_UNKNOWN_DIRECTIVE = re.compile(r"^\.\. (?P<name>[\w:.+-]+)::[ \t]*(?P<argument>.*)$")
_OPTION = re.compile(r"^:[\w -]+:(?:\s|$)")
_HEAD_TITLE = re.compile(r"<title>.*?</title>\n?", re.DOTALL)


def rst_to_html(raw: str) -> str | None:
    """An HTML page of the reStructuredText ``raw`` (docutils' ``html5`` writer) with the Sphinx markup docutils
    does not know read as the module docstring says; ``None`` when docutils fails on it (logged), so that the
    caller can read the page as plain text instead."""
    from docutils.core import publish_from_doctree

    try:
        skipped: list[str] = []
        tree = _tree(raw, title=True, skipped=skipped)
        if skipped:
            _log.warning("a reStructuredText page includes files that are not read, as a page never reads another "
                         "file; its text lacks what they hold: %s", ", ".join(dict.fromkeys(skipped)))
        tree["title"] = tree.get("title") or _title_field(tree)
        html = str(publish_from_doctree(tree, writer="html5", settings_overrides=_SETTINGS))
        # untitled, docutils would name the page after its source ("<string>"): the reader's fallback is better
        return html if tree["title"] else _HEAD_TITLE.sub("", html, count=1)
    except Exception as e:  # noqa: BLE001 - docutils' failures on odd input are many and undocumented
        _log.warning("docutils could not parse a reStructuredText page (%s: %s); it is read as plain text.",
                     type(e).__name__, e)
        return None


def _tree(raw: str, *, title: bool, skipped: list[str]) -> Any:
    """The mended docutils tree of ``raw``; the files its ``include`` directives name are added to ``skipped``."""
    from docutils import nodes
    from docutils.core import publish_doctree

    tree = publish_doctree(raw, settings_overrides={**_SETTINGS, "doctitle_xform": title})
    for node in list(tree.findall(nodes.problematic)):
        node.parent.replace(node, nodes.Text(_shown(node.astext())))
    for node in list(tree.findall(nodes.system_message)):
        kept = _kept(node, skipped)
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
    if target:
        return target.group("title")
    text = text.lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


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
    if name in _VERSION_NOTES and argument:
        return _version_note(_VERSION_NOTES[name], argument, lines, skipped)
    out: list[Any] = []
    if argument and name not in _CONDITIONS:
        out.append(nodes.paragraph(text=argument))
    text = "\n".join(lines).strip("\n")
    if text.strip():
        out.extend(_tree(text, title=False, skipped=skipped).children)
    return out


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


def _version_note(label: str, argument: str, lines: list[str], skipped: list[str]) -> list[Any]:
    """A ``versionadded``, ``versionchanged``, ``deprecated`` or ``versionremoved`` note as Sphinx writes it: "New
    in version 3.19: " before its first paragraph, or "New in version 3.19." alone when it has no text, so that
    a question "since which version" finds the version in words. Text after the version on the directive's line
    begins the first paragraph."""
    from docutils import nodes

    version, *inline = argument.split(None, 1)
    text = "\n".join([*inline, *lines]).strip("\n")
    out = list(_tree(text, title=False, skipped=skipped).children) if text.strip() else []
    if out and isinstance(out[0], nodes.paragraph):
        out[0].insert(0, nodes.Text(f"{label} {version}: "))
        return out
    return [nodes.paragraph(text=f"{label} {version}{':' if out else '.'}"), *out]
