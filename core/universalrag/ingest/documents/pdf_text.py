"""A PDF page's text layer → lines with boxes, font sizes and weight, read through PDFium (pypdfium2).

PDFium gives characters in content-stream order with their boxes; a line ends where PDFium puts a line
break or where the next character jumps more than one and a half em to the right (a column gutter or a
table cell, which PDFium would otherwise glue into one line). Boxes are converted to points with the
origin at the top-left corner.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .layout import Line
from .model import BBox

__all__ = ["page_lines"]

_SOFT_HYPHENS = ("\u00ad", "\x02")
#: Typographic ligatures (as TeX and many fonts emit them) → their letters, so that "ﬁnal" is found as "final".
_LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
              "\ufb06": "st"}


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


def page_lines(textpage: Any, *, height: float) -> list[Line]:
    """The lines of one page's text layer (``textpage`` is a ``pypdfium2.PdfTextPage``)."""
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
        cur.add(_LIGATURES.get(ch, ch), i, box, size)
    if cur.chars:
        close()
    return lines
