"""Timed transcript lines: :class:`Cue`, the markup cleaning every source shares, and a clip's slice.

Shared by the subtitle readers and the speech recognisers (neither imports the other).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Cue", "clean_cue_text", "slice_transcript"]

_TAG = re.compile(r"<[^>\n]*>")
_ASS_OVERRIDE = re.compile(r"\{\\[^}]*\}")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Cue:
    """One timed piece of a transcript: shown from ``start_s`` to ``end_s`` seconds."""

    start_s: float
    end_s: float
    text: str


def clean_cue_text(text: str) -> str:
    """Plain text of one cue: tags, ASS override blocks and entities removed, lines joined by spaces."""
    text = _ASS_OVERRIDE.sub("", text)
    text = text.replace("\\N", " ").replace("\\n", " ").replace("\\h", " ")
    text = html.unescape(_TAG.sub("", text))
    text = text.replace("\u200e", "").replace("\u200f", "")
    return _SPACE.sub(" ", text).strip()


def slice_transcript(cues: Sequence[Cue], start_s: float, end_s: float) -> str:
    """Text of the cues that overlap ``[start_s, end_s)``, in order, joined by spaces.

    A cue spanning a boundary belongs to both sides; a zero-length cue belongs where it starts.
    """
    return " ".join(
        c.text
        for c in cues
        if (c.start_s < end_s and c.end_s > start_s) or (c.start_s == c.end_s and start_s <= c.start_s < end_s)
    )
