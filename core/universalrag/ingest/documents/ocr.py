"""Optical character recognition of a rendered page with Tesseract (pytesseract), as lines with boxes.

Used for scanned pages (no text layer). :func:`ocr_available` says whether both the ``pytesseract``
package and the ``tesseract`` program are installed; the reader falls back to keeping the page as a
picture, with a warning, when they are not.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from typing import Any

from ...errors import IngestError
from .layout import Line

__all__ = ["ocr_available", "ocr_lines"]


def ocr_available() -> bool:
    """True when pytesseract is importable and the ``tesseract`` program is on the PATH."""
    if shutil.which("tesseract") is None:
        return False
    try:
        import pytesseract  # noqa: F401
    except ImportError:
        return False
    return True


def ocr_lines(image: Any, *, scale: float, language: str = "eng", name: str = "") -> list[Line]:
    """The text lines Tesseract reads in ``image`` (a PIL image of a page rendered at ``scale`` pixels per
    point), with boxes in points. Words below 30 % confidence are dropped."""
    import pytesseract

    try:
        data = pytesseract.image_to_data(image, lang=language, output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractError as e:
        raise IngestError(
            name,
            f"Tesseract could not read a scanned page ({e.message.strip()}); check that the "
            f"language data for {language!r} is installed (tesseract --list-langs).",
        ) from e
    words: dict[tuple[int, int, int], list[tuple[str, float, float, float, float]]] = defaultdict(list)
    for i, text in enumerate(data["text"]):
        text = (text or "").strip()
        if not text or float(data["conf"][i]) < 30:
            continue
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        x, y, w, h = (data[k][i] / scale for k in ("left", "top", "width", "height"))
        words[key].append((text, x, y, x + w, y + h))
    lines = []
    for entries in words.values():
        x0 = min(e[1] for e in entries)
        top = min(e[2] for e in entries)
        x1 = max(e[3] for e in entries)
        bottom = max(e[4] for e in entries)
        lines.append(Line(" ".join(e[0] for e in entries), (x0, top, x1, bottom), size=bottom - top))
    return lines
