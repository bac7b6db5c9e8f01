"""Markdown → HTML, one way for every reader: pages, notebooks' Markdown cells and the tables of Markdown files; and
the YAML front matter that static-site generators put before the Markdown (Jekyll, Hugo, Docusaurus, MkDocs)."""

from __future__ import annotations

import re

__all__ = ["markdown_to_html", "split_front_matter"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def markdown_to_html(text: str) -> str:
    """Markdown rendered with markdown-it: CommonMark plus pipe tables and strikethrough."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text))


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
    fields = {str(key): " ".join(str(value).split()) for key, value in data.items()
              if isinstance(value, str | int | float) and not isinstance(value, bool)} if isinstance(data, dict) else {}
    return fields, text[match.end():]
