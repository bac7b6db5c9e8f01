"""Real media files for tests, written from scikit-image's bundled photographs (no download needed).

The photographs (``astronaut``, ``coffee``, ``chelsea``, ``rocket``, ``camera``) ship inside the
scikit-image wheel; other ``skimage.data`` images need ``pooch`` and a download, so they are not used.
Every helper writes a file and returns its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMAT_EXTENSIONS",
    "PHOTOS",
    "photo",
    "write_animated",
    "write_every_format",
    "write_fake_image",
    "write_photo",
    "write_truncated_jpeg",
]

#: Bundled scikit-image photographs that load offline.
PHOTOS: tuple[str, ...] = ("astronaut", "coffee", "chelsea", "rocket", "camera")

#: File extension → Pillow format name.
FORMAT_EXTENSIONS: dict[str, str] = {
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".png": "PNG",
    ".webp": "WEBP",
    ".gif": "GIF",
    ".bmp": "BMP",
    ".tif": "TIFF",
    ".tiff": "TIFF",
}


def photo(name: str = "coffee", *, size: tuple[int, int] | None = None) -> Any:
    """A bundled photograph as an RGB Pillow image, optionally resized to ``size`` (width, height)."""
    from PIL import Image
    from skimage import data

    if name not in PHOTOS:
        raise ValueError(f"unknown photo {name!r}; use one of {PHOTOS}")
    pixels = np.asarray(getattr(data, name)())
    img = Image.fromarray(pixels).convert("RGB")
    return img.resize(size, Image.Resampling.LANCZOS) if size else img


def write_photo(
    path: Path, *, name: str = "coffee", size: tuple[int, int] | None = (240, 160), **save_options: Any
) -> Path:
    """Save a bundled photograph at ``path`` in the format its extension names (GIF is palettised)."""
    fmt = FORMAT_EXTENSIONS[path.suffix.lower()]
    img = photo(name, size=size)
    if fmt == "GIF":
        img = img.quantize(colors=256)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, fmt, **save_options)
    return path


def write_animated(
    path: Path, *, names: tuple[str, ...] = ("coffee", "chelsea", "rocket"), size: tuple[int, int] = (120, 80)
) -> Path:
    """An animated GIF or WebP whose frames are the given photographs, in order (100 ms each)."""
    fmt = FORMAT_EXTENSIONS[path.suffix.lower()]
    frames = [photo(n, size=size) for n in names]
    if fmt == "GIF":
        frames = [f.quantize(colors=256) for f in frames]
    path.parent.mkdir(parents=True, exist_ok=True)
    frames[0].save(path, fmt, save_all=True, append_images=frames[1:], duration=100, loop=0)
    return path


def write_truncated_jpeg(path: Path, *, keep: float = 0.5, name: str = "astronaut") -> Path:
    """A real JPEG cut after ``keep`` of its bytes, as a download interrupted half-way leaves it."""
    full = write_photo(path.with_name(path.stem + ".full.jpg"), name=name)
    data = full.read_bytes()
    full.unlink()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def write_fake_image(path: Path, text: str = "This is a shopping list, not a picture.\nmilk\neggs\n") -> Path:
    """A text file with an image's name (``holiday.jpg``), as a mistaken rename makes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_every_format(folder: Path, *, name: str = "coffee", size: tuple[int, int] = (240, 160)) -> dict[str, Path]:
    """One file per supported extension (``.jpg`` ... ``.tiff``), all of the same photograph."""
    return {ext: write_photo(folder / f"{name}{ext}", name=name, size=size) for ext in FORMAT_EXTENSIONS}
