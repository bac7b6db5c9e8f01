"""Markdown → HTML, one way for every reader: pages, notebooks' Markdown cells and the tables of Markdown files."""

from __future__ import annotations

__all__ = ["markdown_to_html"]


def markdown_to_html(text: str) -> str:
    """Markdown rendered with markdown-it: CommonMark plus pipe tables and strikethrough."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text))
