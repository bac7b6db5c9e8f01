"""A PDF page's text layer → lines with boxes, font sizes and weight, read through PDFium (pypdfium2).

PDFium gives characters in content-stream order with their boxes; a line ends where PDFium puts a line
break or where the next character jumps more than one and a half em to the right (a column gutter or a
table cell, which PDFium would otherwise glue into one line). Boxes are converted to points with the
origin at the top-left corner. A glyph without a Unicode mapping, which PDFium gives as a control character
(TeX's big delimiters: "\x01", "\x10"), is left out.

TeX draws an underscore outside a typewriter font as a short rule, not a character, and PDFium puts a space
there ("size t", "struct sha256 ctx"); a space whose gap holds such a rule at the baseline is read as "_".

A category tag set flush right on the line of a definition — Texinfo's "[Function]", "[Macro]", "[Constant]" in
every GNU manual — is put in front of that line ("[Function] void sha256_init (...)") instead of standing alone:
alone, the tags of a page read as a column of their own, which pulled them away from their definitions and made
a run of definitions look like a table.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from .layout import DEFINITION_TAG, Line
from .model import BBox

__all__ = ["page_lines", "underscore_rules"]

_SOFT_HYPHENS = ("\u00ad", "\x02")
#: Typographic ligatures (as TeX and many fonts emit them) → their letters, so that "ﬁnal" is found as "final".
_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}


def _bold(raw: Any, textpage: Any, index: int) -> bool:
    weight = raw.FPDFText_GetFontWeight(textpage, index)
    if weight >= 600:
        return True
    buf = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    raw.FPDFText_GetFontInfo(textpage, index, buf, 128, ctypes.byref(flags))
    name = buf.value.decode("latin-1", "replace").lower()
    return "bold" in name or "black" in name or "heavy" in name


class _LineBuilder:
    """Accumulates characters into one line."""

    __slots__ = ("bottom", "chars", "first", "last", "size", "space", "top", "x0", "x1")

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.first = self.last = -1
        self.x0 = self.top = float("inf")
        self.x1 = self.bottom = float("-inf")
        self.size = 0.0
        self.space = False

    def add(self, ch: str, index: int, box: BBox, size: float) -> None:
        if self.space and self.chars:
            self.chars.append(" ")
        self.space = False
        if self.first < 0:
            self.first = index
        self.last = index
        self.chars.append(ch)
        self.x0, self.top = min(self.x0, box[0]), min(self.top, box[1])
        self.x1, self.bottom = max(self.x1, box[2]), max(self.bottom, box[3])
        self.size = max(self.size, size)


#: A rule drawn for an underscore: at most this thick and between these lengths (points).
_UNDERSCORE_THICKNESS = 1.5
_UNDERSCORE_LENGTH = (1.5, 12.0)


def underscore_rules(paths: Sequence[BBox]) -> list[BBox]:
    """The boxes among a page's drawn ``paths`` (top-left points) that may be underscores: short, thin and flat."""
    low, high = _UNDERSCORE_LENGTH
    return [p for p in paths if p[3] - p[1] <= _UNDERSCORE_THICKNESS and low <= p[2] - p[0] <= high]


def _underscore_between(rules: Sequence[BBox], cur: _LineBuilder, box: BBox) -> bool:
    """Whether a rule fills the gap between the line so far and the next character, at the line's baseline."""
    low = cur.top + 0.6 * (cur.bottom - cur.top)  # at the baseline, below the math axis where fraction bars sit
    return any(
        r[0] >= cur.x1 - 1.5 and r[2] <= box[0] + 1.5 and low <= (r[1] + r[3]) / 2 <= cur.bottom + 1 for r in rules
    )


def page_lines(textpage: Any, *, height: float, rules: Sequence[BBox] = ()) -> list[Line]:
    """The lines of one page's text layer (``textpage`` is a ``pypdfium2.PdfTextPage``); ``rules`` are the page's
    :func:`underscore_rules`."""
    from pypdfium2 import raw

    tp = textpage.raw
    count = raw.FPDFText_CountChars(tp)
    rect = raw.FS_RECTF()
    lines: list[Line] = []
    cur = _LineBuilder()

    def close() -> None:
        nonlocal cur
        text = "".join(cur.chars).strip()
        if text:
            box = (cur.x0, cur.top, cur.x1, cur.bottom)
            bold = _bold(raw, tp, cur.first) and (cur.last == cur.first or _bold(raw, tp, cur.last))
            lines.append(Line(text, box, cur.size or (cur.bottom - cur.top), bold))
        cur = _LineBuilder()

    high = 0
    for i in range(count):
        code = raw.FPDFText_GetUnicode(tp, i)
        if code in (10, 13):
            if cur.chars:
                close()
            continue
        if 0xD800 <= code < 0xDC00:
            high = code
            continue
        if 0xDC00 <= code < 0xE000:
            code = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00) if high else 0xFFFD
            high = 0
        ch = chr(code)
        if ch.isspace() or code == 0:
            cur.space = True
            continue
        if (code < 0x20 or code == 0x7F) and ch not in _SOFT_HYPHENS:
            continue  # a glyph without a Unicode mapping (TeX's big delimiters come out as \x01, \x10, \x11)
        if raw.FPDFText_IsGenerated(tp, i) == 1 and ch not in _SOFT_HYPHENS:
            continue
        raw.FPDFText_GetLooseCharBox(tp, i, ctypes.byref(rect))
        size = raw.FPDFText_GetFontSize(tp, i)
        box = (rect.left, height - rect.top, rect.right, height - rect.bottom)
        if cur.chars:
            em = max(size, cur.size, 1.0)
            jump = box[0] - cur.x1
            if jump > 1.5 * em or jump < -2 * em or box[1] > cur.bottom or box[3] < cur.top:
                close()
            elif cur.space and rules and _underscore_between(rules, cur, box):
                cur.space = False
                cur.chars.append("_")
        cur.add(_LIGATURES.get(ch, ch), i, box, size)
    if cur.chars:
        close()
    return _attach_tags(lines)


def _is_tag(text: str) -> bool:
    """Whether a piece of a line is a category tag alone (:data:`~.layout.DEFINITION_TAG`)."""
    found = DEFINITION_TAG.match(text)
    return found is not None and found.end() == len(text)


def _attach_tags(lines: list[Line]) -> list[Line]:
    """Put each category tag (:func:`_is_tag`) in front of the piece of text to its left on the same line."""
    tags = [i for i, ln in enumerate(lines) if _is_tag(ln.text)]
    if not tags:
        return lines
    out: dict[int, Line] = dict(enumerate(lines))
    for i in tags:
        tag = lines[i]
        left = [
            j
            for j in out
            if j != i
            and out[j].bbox[2] < tag.bbox[0]
            and _same_line(out[j].bbox, tag.bbox)
            and not _is_tag(out[j].text)
        ]
        if not left:
            continue
        j = max(left, key=lambda k: out[k].bbox[2])
        line = out[j]
        box = (line.bbox[0], min(line.bbox[1], tag.bbox[1]), tag.bbox[2], max(line.bbox[3], tag.bbox[3]))
        out[j] = Line(f"{tag.text} {line.text}", box, line.size, line.bold)
        del out[i]
    return [out[k] for k in sorted(out)]


def _same_line(a: BBox, b: BBox) -> bool:
    """Whether two boxes share a baseline (their bottoms within a third of the shorter height)."""
    return abs(a[3] - b[3]) <= 0.34 * min(a[3] - a[1], b[3] - b[1])
