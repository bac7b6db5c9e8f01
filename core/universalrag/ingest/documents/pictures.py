"""Pictures found in documents → JPEG bytes of a bounded size (what figure units store and models are shown)."""

from __future__ import annotations

import io
from typing import Any

from ...media import import_pil

__all__ = ["picture_bytes"]


def picture_bytes(image: Any, *, max_side: int) -> tuple[bytes, int, int]:
    """A PIL image as JPEG bytes (RGB, at most ``max_side`` pixels per side) with its final width and height."""
    if image.mode in ("RGBA", "LA", "P"):
        imaging = import_pil("pictures in documents")
        rgba = image.convert("RGBA")
        flat = imaging.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        image = flat
    else:
        image = image.convert("RGB")
    image.thumbnail((max_side, max_side))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=85)
    return out.getvalue(), image.width, image.height
