"""Image inputs (JPEG, PNG, WebP, GIF, BMP, TIFF) → validated :class:`ImageInfo` with a text channel.

Pure functions: no database, no embedding. Pillow is imported on first use (the ``images`` extra);
without it every function raises :class:`MissingDependencyError`.

This module validates and reads images (format from the content, a full decode, a content hash) and
loads their pixels for visual encoders and vision-language models. Every image also gets a text
description, taken from the first source that has one: the caller's caption, a text or JSON sidecar,
EXIF text, the caller's alt text, or the words of the file name; :mod:`~universalrag.ingest.image_descriptions`
gathers them and documents the order.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from universalrag.errors import IngestError, MissingDependencyError
from universalrag.ingest.detect import IMAGE_EXTENSIONS, sniff
from universalrag.ingest.image_descriptions import (
    DESCRIPTION_SOURCES,
    _exif,
    describe,
    filename_words,
    sidecar_paths,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from PIL import Image as PILImage

__all__ = [
    "DESCRIPTION_SOURCES",
    "IMAGE_EXTENSIONS",
    "ImageInfo",
    "filename_words",
    "image_data_url",
    "load_rgb",
    "read_image",
    "sidecar_paths",
]

#: Pillow format names accepted (anything else Pillow could open, such as ICO or PPM, is refused).
_PIL_FORMATS: tuple[str, ...] = ("JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF")
_MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif",
         "BMP": "image/bmp", "TIFF": "image/tiff"}
#: First word of the :func:`~universalrag.ingest.detect.sniff` labels of the supported formats.
_SUPPORTED_LABELS = frozenset({"JPEG", "PNG", "WebP", "GIF", "BMP", "TIFF"})
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """A validated image and its text channel.

    ``format`` is the decoded format in lowercase (``"jpeg"``, ``"png"``, ``"webp"``, ``"gif"``,
    ``"bmp"``, ``"tiff"``), whatever the extension says; ``width``/``height``/``mode`` describe the
    first frame as stored; ``frames`` counts the frames of an animation (1 for a still);
    ``content_hash`` is the SHA-256 hex digest of the file's bytes. ``description`` is never empty
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
    content_hash: str
    description: str
    description_source: str
    metadata: dict[str, Any]


def _pil() -> Any:
    """The ``PIL.Image`` module, or MissingDependencyError naming the extra."""
    try:
        from PIL import Image
    except ImportError as e:
        raise MissingDependencyError("pillow", "images", feature="image ingestion") from e
    return Image


# --------------------------------------------------------------------------- reading


def _check_file(p: Path) -> None:
    if not p.exists():
        raise IngestError(p, "no such file; check the path (relative paths start at the current folder).")
    if p.is_dir():
        raise IngestError(p, "is a folder, not a file; pass the images inside it, or ingest the whole folder.")
    if not p.is_file():
        raise IngestError(p, "is not a regular file (a device, socket or pipe); save the image to a file.")


def _hash_file(p: Path) -> tuple[str, int]:
    """(SHA-256 hex digest, size in bytes) of the file, read in chunks."""
    digest, size = hashlib.sha256(), 0
    try:
        with p.open("rb") as fh:
            while chunk := fh.read(_HASH_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except OSError as e:
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e
    return digest.hexdigest(), size


def _open(p: Path, *, draft: int | None = None) -> Any:
    """Open and fully decode the first frame; every Pillow failure becomes an actionable IngestError.

    ``draft`` lets the JPEG decoder scale down while decoding (to no less than ``draft`` pixels a side).
    """
    Image = _pil()
    too_large = "is too large to decode safely ({}); downscale it before ingesting."
    try:
        img = Image.open(p, formats=_PIL_FORMATS)
    except Image.DecompressionBombError as e:
        raise IngestError(p, too_large.format(e)) from e
    except Image.UnidentifiedImageError as e:
        with p.open("rb") as fh:
            sniffed = sniff(fh.read(64))
        if sniffed is not None and sniffed.label.split()[0] in _SUPPORTED_LABELS:
            what = (f"starts like a {sniffed.label} but its header is damaged ({e}); replace it with the "
                    "original image.")
        elif sniffed is not None and sniffed.kind == "image":
            what = f"is a {sniffed.label}, which is not supported; convert it to JPEG, PNG or WebP."
        elif sniffed is not None:
            what = f"is a {sniffed.label}, not an image (it was probably renamed); give it its real extension."
        else:
            what = ("is not a valid image: its content is not JPEG, PNG, WebP, GIF, BMP or TIFF (it may be "
                    "another kind of file renamed, or damaged); replace it with the original image.")
        raise IngestError(p, what) from e
    except Exception as e:
        raise IngestError(p, f"could not be opened as an image ({e}); replace it with the original.") from e
    try:
        if draft is not None and img.format == "JPEG":
            img.draft("RGB", (draft, draft))
        img.load()
    except Exception as e:
        img.close()
        if isinstance(e, Image.DecompressionBombError):
            raise IngestError(p, too_large.format(e)) from e
        if "truncated" in str(e) or isinstance(e, EOFError):
            reason = (f"the image data is incomplete ({e}); the file was probably cut short while being "
                      "copied or downloaded. Copy it again from the original.")
        else:
            reason = f"the image data is damaged and cannot be decoded ({e}); replace it with the original."
        raise IngestError(p, reason) from e
    return img


def read_image(path: str | Path, *, caption: str | None = None, alt: str | None = None) -> ImageInfo:
    """Validate the image at ``path`` by decoding it fully and gather its description and metadata.

    The first frame of an animated GIF or WebP is decoded; the format comes from the content, not the
    extension. A missing, truncated, damaged or fake image (another file renamed ``.jpg``), and an
    unreadable or malformed sidecar, raise :class:`IngestError` naming the path and what to do.
    A blank ``caption`` or ``alt`` counts as absent. See :mod:`~universalrag.ingest.image_descriptions`
    for the priority order.
    """
    p = Path(path)
    _check_file(p)
    content_hash, size = _hash_file(p)
    if size == 0:
        raise IngestError(p, "the file is empty (0 bytes); replace it with the original image or leave it out.")
    with _open(p) as img:
        fmt, (width, height), mode = str(img.format), img.size, str(img.mode)
        frames = int(getattr(img, "n_frames", 1) or 1)
        exif_description, exif_subset = _exif(img)

    described = describe(p, caption=caption, alt=alt, exif_description=exif_description)

    metadata: dict[str, Any] = {
        "size_bytes": size, "format": fmt.lower(), "mime_type": _MIME.get(fmt, "application/octet-stream"),
        "width": width, "height": height, "mode": mode, "frames": frames, "description_source": described.source,
    }
    if exif_subset:
        metadata["exif"] = exif_subset
    if described.sidecar_json is not None:
        metadata["sidecar"] = described.sidecar_json
    if described.sidecars:
        metadata["sidecars"] = [s.name for s in described.sidecars]
    return ImageInfo(p, fmt.lower(), width, height, mode, frames, content_hash, described.text, described.source,
                     metadata)


# --------------------------------------------------------------------------- pixels


def _to_rgb(img: Any) -> Any:
    """An RGB copy of ``img``: transparency composited on white, 16-bit and float images rescaled."""
    Image = _pil()
    mode = img.mode
    if mode == "RGB":
        return img.copy()
    if mode in ("I", "F") or mode.startswith("I;16"):
        import numpy as np

        arr = np.asarray(img, dtype=np.float64)
        top = float(arr.max()) if arr.size else 0.0
        if mode == "F" and top <= 1.0:
            arr = arr * 255.0
        elif top > 255.0:
            arr = arr / 257.0 if top <= 65535.0 else arr * (255.0 / top)
        return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "L").convert("RGB")
    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or (mode == "P" and "transparency" in img.info)
    if has_alpha:
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def _fit(img: Any, max_side: int | None) -> Any:
    if max_side is not None and max(img.size) > max_side:
        img.thumbnail((max_side, max_side), _pil().Resampling.LANCZOS)
    return img


def _check_max_side(max_side: int | None) -> None:
    if max_side is not None and (not isinstance(max_side, int) or max_side < 1):
        raise ValueError(f"max_side must be a positive number of pixels or None, got {max_side!r}.")


def load_rgb(path: str | Path, *, max_side: int | None = None) -> PILImage.Image:
    """The first frame of the image at ``path`` as an upright RGB image.

    EXIF orientation is applied, transparency is composited on white, and when ``max_side`` is set the
    image is shrunk (never enlarged) so that its longer side is at most ``max_side``, keeping the
    aspect ratio. Failures raise :class:`IngestError` as :func:`read_image` does.
    """
    _check_max_side(max_side)
    p = Path(path)
    _check_file(p)
    img = _open(p, draft=max_side)
    from PIL import ImageOps

    try:
        try:
            upright = ImageOps.exif_transpose(img) or img
        except Exception:  # noqa: BLE001 - a malformed orientation tag: keep the pixels as stored
            upright = img
        return _fit(_to_rgb(upright), max_side)
    finally:
        img.close()


def image_data_url(path_or_image: str | Path | PILImage.Image, *, max_side: int = 768,
                   format: str = "JPEG") -> str:
    """A ``data:`` URL of the image (RGB, longer side at most ``max_side``), for vision-language models.

    ``path_or_image`` is a file path or a Pillow image; ``format`` is ``"JPEG"`` (default), ``"PNG"``
    or ``"WEBP"``. Returns ``"data:image/jpeg;base64,..."``.
    """
    fmt = format.upper().replace("JPG", "JPEG")
    if fmt not in ("JPEG", "PNG", "WEBP"):
        raise ValueError(f"format must be 'JPEG', 'PNG' or 'WEBP', got {format!r}.")
    _check_max_side(max_side)
    if isinstance(path_or_image, (str, Path)):
        img = load_rgb(path_or_image, max_side=max_side)
    else:
        Image = _pil()
        if not isinstance(path_or_image, Image.Image):
            raise TypeError(f"image_data_url() takes a path or a PIL image, got {type(path_or_image).__name__}.")
        img = _fit(_to_rgb(path_or_image), max_side)
    buffer = io.BytesIO()
    options: dict[str, Any] = {"quality": 90} if fmt in ("JPEG", "WEBP") else {}
    img.save(buffer, fmt, **options)
    return f"data:{_MIME[fmt]};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"
