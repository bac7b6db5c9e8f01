"""Markdown → HTML, one way for every reader: pages, notebooks' Markdown cells and the tables of Markdown files; and
the YAML front matter that static-site generators put before the Markdown (Jekyll, Hugo, Docusaurus, MkDocs).

Markdown written for Sphinx's MyST parser (pip's and many Python projects' docs) is read as Sphinx shows it, with
mdit-py-plugins' MyST syntax, but only in a page that shows it unambiguously: a directive fence (```` ```{note} ````,
``:::{tab}``) or a role (``{ref}`title <target>```). There, as in :mod:`~universalrag.ingest.text.rst`:

- a role shows its text (:func:`~universalrag.ingest.text.rst.role_text`); a target ``(label)=``, a ``%`` comment
  and a block break ``+++`` show nothing; a field list reads one field a paragraph, "Name: value";
- an admonition reads "Note: ...", a version note "New in version 6.0: ..."; a tab, a dropdown or a card keeps its
  label as a line before its body, read as MyST; code (``code-block``, ``code-cell``, ...) is kept as written;
  ``eval-rst``'s body is read as reStructuredText; a directive whose body is not prose (``toctree``,
  ``include``, ...) shows nothing; the body of another directive (``pip-cli``) is kept as written, without its
  options (``:maxdepth: 2`` lines or a YAML block).

A plain Markdown page is read as CommonMark with pipe tables and strikethrough, as before.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import StateCore
    from markdown_it.token import Token

__all__ = ["MAX_NESTING", "markdown_to_html", "split_front_matter"]

_log = logging.getLogger(__name__)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
#: What only MyST writes: a fence opened with a directive's name in braces, or a role before a backquote (not a
#: shell's or a template's ``${name}``).
_MYST = re.compile(
    r"^[ \t]*(?:`{3,}|~{3,}|:{3,})[ \t]*\{[A-Za-z][\w:.+-]*\}|(?<![\w$])\{[A-Za-z][\w:.+-]*\}`", re.MULTILINE
)
_DIRECTIVE = re.compile(r"^\{(?P<name>[A-Za-z][\w:.+-]*)\}[ \t]*(?P<argument>.*)$", re.DOTALL)
_OPTION = re.compile(r"^[ \t]*:[\w-]+:(?:[ \t].*)?$")
_YAML_OPTIONS = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)
#: Directives whose body is code or a grammar, kept as written.
_CODE = frozenset({"code-block", "code", "sourcecode", "code-cell", "math"})
#: Directives whose body is MyST prose, shown after their argument (a tab's or a dropdown's label, a caption).
_PROSE = frozenset(
    {
        "tab",
        "tab-item",
        "tab-set",
        "dropdown",
        "card",
        "grid",
        "grid-item",
        "grid-item-card",
        "topic",
        "sidebar",
        "margin",
        "div",
        "container",
        "epigraph",
        "pull-quote",
        "highlights",
        "table",
        "list-table",
        "figure",
    }
)
#: Directives whose argument is all they show (with :data:`~universalrag.ingest.text.rst.SIGNATURES`).
_HEADINGS = frozenset({"rubric"})
#: Directives that show nothing of their own here: a table of contents, another file, an image's path.
_HIDDEN = frozenset({"contents", "tableofcontents", "include", "image", "meta"})
#: Directives whose argument is not shown: a build condition, a figure's image path.
_NO_ARGUMENT = frozenset({"only", "ifconfig", "figure", "tab-set", "grid", "list-table"})
#: Nested directives deeper than this are kept as written: each level is read by a call of its own.
_MAX_DEPTH = 20


#: The deepest nesting of blocks (quotes, list items) read as Markdown; a page nested deeper is read as plain text
#: (markdown-it would drop the deeper text).
MAX_NESTING = 100


def markdown_to_html(text: str) -> str:
    """Markdown rendered with markdown-it: CommonMark plus pipe tables and strikethrough, and MyST's syntax read as
    Sphinx shows it when the page uses it (the module docstring says how). A page whose blocks nest past
    :data:`MAX_NESTING` levels (quotes, lists), where markdown-it would drop the deeper text without a word, is
    read as plain text: every word kept, its markup as written."""
    md = _parser(myst=_MYST.search(text) is not None)
    env: dict[str, Any] = {"depth": 0}
    tokens = md.parse(text, env)
    if max((t.level for t in tokens), default=0) >= MAX_NESTING - 1:
        from markdown_it.common.utils import escapeHtml

        paragraphs = (p for p in re.split(r"\n\s*\n", text) if p.strip())
        return "".join(f"<p>{escapeHtml(p)}</p>\n" for p in paragraphs)
    return str(md.renderer.render(tokens, md.options, env))


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """(the front matter's fields that hold one line of text, the Markdown after it). A block that is not valid
    YAML is still left out of the text (it was meant as front matter), with no fields; no block: ``({}, text)``."""
    import yaml

    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        data = None
    fields = (
        {
            str(key): " ".join(str(value).split())
            for key, value in data.items()
            if isinstance(value, str | int | float) and not isinstance(value, bool)
        }
        if isinstance(data, dict)
        else {}
    )
    return fields, text[match.end() :]


def _any_link(url: str) -> bool:
    """Every link target is accepted as a link (its target is dropped later)."""
    return True


def _parser(*, myst: bool) -> MarkdownIt:
    """A CommonMark parser with pipe tables and strikethrough; with ``myst``, MyST's syntax read as Sphinx shows it."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.options["maxNesting"] = MAX_NESTING
    # Every link is parsed as a link, so that its text is read and its target dropped: markdown-it leaves a link to
    # javascript:, vbscript:, file: or data: in the text as written, target included, and the page's links are
    # kept without those (text.document._links).
    md.validateLink = _any_link  # type: ignore[method-assign]  # markdown-it's way to judge links: on the instance
    if not myst:
        return md
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.deflist import deflist_plugin
    from mdit_py_plugins.field_list import fieldlist_plugin
    from mdit_py_plugins.myst_blocks import myst_block_plugin
    from mdit_py_plugins.myst_role import myst_role_plugin

    for plugin in (myst_role_plugin, myst_block_plugin, colon_fence_plugin, fieldlist_plugin, deflist_plugin):
        md.use(plugin)
    md.core.ruler.after("inline", "field_lines", _field_lines)
    from markdown_it.renderer import RendererHTML

    assert isinstance(md.renderer, RendererHTML)  # MarkdownIt's default renderer
    fence = md.renderer.rules["fence"]

    def directive(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        found = _DIRECTIVE.match(tokens[idx].info.strip())
        if found is None or env.get("depth", 0) >= _MAX_DEPTH:
            return str(fence(tokens, idx, options, env))
        name, argument = found.group("name").lower(), " ".join(found.group("argument").split())
        return _directive(md, name, argument, tokens[idx].content, depth=env.get("depth", 0) + 1)

    def role(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
        from markdown_it.common.utils import escapeHtml

        from .text.rst import role_text

        return str(escapeHtml(role_text(tokens[idx].meta.get("name", ""), tokens[idx].content)))

    md.add_render_rule("fence", directive)
    md.add_render_rule("colon_fence", directive)
    md.add_render_rule("myst_role", role)
    for hidden in ("myst_target", "myst_line_comment", "myst_block_break"):
        md.add_render_rule(hidden, lambda *_: "")
    return md


def _directive(md: MarkdownIt, name: str, argument: str, body: str, *, depth: int) -> str:
    """The HTML of MyST directive ``name`` with its ``argument`` and ``body``, as Sphinx shows it."""
    from markdown_it.common.utils import escapeHtml

    from .text.rst import ADMONITIONS, LITERAL, NOT_PROSE, SIGNATURES, VERSION_NOTES, rst_to_html

    if name == "eval-rst":  # no options: a field list that opens it is reStructuredText
        return rst_to_html(body, fragment=True) or _code(body)
    body = _without_options(body)
    if name in NOT_PROSE or name in _HIDDEN:
        if name == "include":
            _log.warning(
                "a MyST page includes a file that is not read, as a page never reads another file; its "
                "text lacks what it holds: %s",
                argument,
            )
        return ""
    if name in _CODE or name in LITERAL:
        return _code(body)

    def prose(text: str) -> str:
        return str(md.render(text, {"depth": depth})) if text.strip() else ""

    if name in VERSION_NOTES and argument:
        version, _, inline = argument.partition(" ")
        return _led(f"{VERSION_NOTES[name]} {version}", prose(f"{inline}\n{body}"))
    if name in ADMONITIONS or name == "admonition":
        label = argument if name == "admonition" else ADMONITIONS[name]
        return _led(label or "Note", prose(body if name == "admonition" else f"{argument}\n{body}"))
    shown = "" if not argument or name in _NO_ARGUMENT else f"<p>{escapeHtml(argument)}</p>\n"
    if name in _PROSE or name in SIGNATURES or name in _HEADINGS or ":" in name:
        html = prose(body)
        return shown + html if html or name not in _PROSE else ""
    # another extension's directive: its body as written (pip-cli's commands), nothing when it has none
    return shown + _code(body) if body.strip() else ""


def _without_options(body: str) -> str:
    """A directive's ``body`` without the options that open it: ``:key: value`` lines or a YAML block."""
    yaml_block = _YAML_OPTIONS.match(body)
    if yaml_block:
        return body[yaml_block.end() :]
    lines = body.split("\n")
    start = 0
    while start < len(lines) and _OPTION.match(lines[start]):
        start += 1
    return "\n".join(lines[start:])


def _code(text: str) -> str:
    """``text`` as a code block, as it is written; nothing when it is blank."""
    from markdown_it.common.utils import escapeHtml

    text = text.strip("\n")
    return f"<pre><code>{escapeHtml(text)}\n</code></pre>\n" if text.strip() else ""


def _led(label: str, html: str) -> str:
    """``html`` led by ``label``, as Sphinx writes an admonition or a version note: "Note: " before its first
    paragraph's text, "Note:" as a paragraph of its own before what is not a paragraph, "Note." alone when
    ``html`` is empty."""
    from markdown_it.common.utils import escapeHtml

    if html.startswith("<p>"):
        return f"<p>{escapeHtml(label)}: {html[3:]}"
    return f"<p>{escapeHtml(label)}{':' if html.strip() else '.'}</p>\n{html}"


def _field_lines(state: StateCore) -> None:
    """A field list's name leads its value, "Name: value" in one paragraph, as in a reStructuredText page: the name
    goes into the first paragraph of its body (or is a paragraph of its own, "Name:", before a body that is not
    one), and the list's ``<dl>`` becomes a ``<div>``."""
    from markdown_it.token import Token

    tokens = state.tokens
    for i, token in enumerate(tokens):
        if token.type in ("field_list_open", "field_list_close"):
            token.tag = "div"
        elif token.type == "fieldlist_name_open":
            name, first = tokens[i + 1], tokens[i + 4] if i + 5 < len(tokens) else None
            if first is not None and first.type == "paragraph_open" and tokens[i + 5].type == "inline":
                lead = [*(name.children or []), Token("text", "", 0, content=": ")]
                tokens[i + 5].children = lead + list(tokens[i + 5].children or [])
                name.children = []
                token.hidden = tokens[i + 2].hidden = True
            else:
                name.children = [*(name.children or []), Token("text", "", 0, content=":")]
                token.tag = tokens[i + 2].tag = "p"
        elif token.type in ("fieldlist_body_open", "fieldlist_body_close"):
            token.tag = "div"
