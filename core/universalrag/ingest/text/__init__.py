"""Text inputs (.txt, Markdown, HTML) → clean plain text → ~100-word passages and embedding windows."""

from __future__ import annotations

from .document import TEXT_FORMATS, TextDocument, parse_text, read_text_file
from .passages import Passage, chunk_for_embedding, split_paragraphs

__all__ = [
    "TEXT_FORMATS",
    "Passage",
    "TextDocument",
    "chunk_for_embedding",
    "parse_text",
    "read_text_file",
    "split_paragraphs",
]
