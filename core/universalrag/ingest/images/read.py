"""Image inputs (JPEG, PNG, WebP, GIF, BMP, TIFF) → validated :class:`ImageInfo` with a text channel.

Pure functions: no database, no embedding. Pillow is imported on first use (the ``images`` extra);
without it every function raises :class:`MissingDependencyError`.

This module validates images (format from the content, a full decode); their pixels are loaded by
:func:`universalrag.media.load_rgb`. Every image also gets a text description, taken from the first source
that has one: the caller's caption, a text or JSON sidecar, EXIF text, the caller's alt text, or the words of
the file name; :mod:`~universalrag.ingest.images.descriptions` gathers them and documents the order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...media import open_image
from ..files import check_file, read_error
from .descriptions import describe, read_exif

__all__ = ["ImageInfo", "read_image"]

_MIME = {
    "JPEG": "image/jpeg",
    "PNG": "image/png",
    "WEBP": "image/webp",
    "GIF": "image/gif",
    "BMP": "image/bmp",
    "TIFF": "image/tiff",
}


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """A validated image and its text channel.

    ``format`` is the decoded format in lowercase (``"jpeg"``, ``"png"``, ``"webp"``, ``"gif"``,
    ``"bmp"``, ``"tiff"``), whatever the extension says; ``width``/``height``/``mode`` describe the
    first frame as stored; ``frames`` counts the frames of an animation (1 for a still). ``description`` is never empty
    and ``description_source`` says where it came from (one of :data:`DESCRIPTION_SOURCES`).
    ``metadata`` is JSON-ready: ``size_bytes``, ``format``, ``mime_type``, ``width``, ``height``,
    ``mode``, ``frames``, ``description_source``, and where present ``exif`` (``camera``,
    ``datetime``, ``orientation``), ``sidecar`` (the JSON sidecar's object) and ``sidecars`` (file names).
    """

    path: Path
    format: str
    width: int
    height: int
    mode: str
    frames: int
    description: str
    description_source: str
    metadata: dict[str, Any]


def read_image(path: str | Path, *, caption: str | None = None, alt: str | None = None) -> ImageInfo:
    """Validate the image at ``path`` by decoding it fully and gather its description and metadata.

    The first frame of an animated GIF or WebP is decoded; the format comes from the content, not the
    extension. A missing, truncated, damaged or fake image (another file renamed ``.jpg``), and an
    unreadable or malformed sidecar, raise :class:`IngestError` naming the path and what to do.
    A blank ``caption`` or ``alt`` counts as absent. See :mod:`~universalrag.ingest.images.descriptions`
    for the priority order.
    """
    p = Path(path)
    check_file(p, empty="replace it with the original image or leave it out.")
    try:
        size = p.stat().st_size
    except OSError as e:
        raise read_error(p, e) from e
    with open_image(p) as img:
        fmt, (width, height), mode = str(img.format), img.size, str(img.mode)
        frames = int(getattr(img, "n_frames", 1) or 1)
        exif_description, exif_subset = read_exif(img)

    described = describe(p, caption=caption, alt=alt, exif_description=exif_description)

    metadata: dict[str, Any] = {
        "size_bytes": size,
        "format": fmt.lower(),
        "mime_type": _MIME.get(fmt, "application/octet-stream"),
        "width": width,
        "height": height,
        "mode": mode,
        "frames": frames,
        "description_source": described.source,
    }
    if exif_subset:
        metadata["exif"] = exif_subset
    if described.sidecar_json is not None:
        metadata["sidecar"] = described.sidecar_json
    if described.sidecars:
        metadata["sidecars"] = [s.name for s in described.sidecars]
    return ImageInfo(p, fmt.lower(), width, height, mode, frames, described.text, described.source, metadata)
