"""Where an image's text description comes from: caller text, sidecar files, EXIF text and file-name words.

:func:`describe` takes the first of these sources that has a description (the values of
:data:`DESCRIPTION_SOURCES`, in order):

1. ``caption`` passed by the caller;
2. a text sidecar next to the image: ``photo.jpg.txt``, then ``photo.txt``;
3. a JSON sidecar holding an object: ``photo.jpg.json``, then ``photo.json`` (keys ``caption``,
   ``description``, ``title``, ``alt``, in that order);
4. embedded EXIF text: ImageDescription, XPTitle, XPComment, UserComment (camera boilerplate such as
   "OLYMPUS DIGITAL CAMERA" is ignored);
5. ``alt`` text (from the ``<img>`` of an HTML page);
6. the words of the file name ("IMG_2031_golden-gate.jpg" → "golden gate").

:func:`universalrag.ingest.images.read_image` validates the image and calls :func:`describe` (use it).
This module never imports Pillow: EXIF is read from an image the caller has already opened.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import IngestError
from ..files import inside

__all__ = ["DESCRIPTION_SOURCES", "Description", "describe", "filename_words", "read_exif", "sidecar_paths"]

#: Every value of :attr:`~universalrag.ingest.images.ImageInfo.description_source`, highest priority first.
DESCRIPTION_SOURCES: tuple[str, ...] = ("caption", "sidecar", "json", "exif", "alt", "filename")

_JSON_KEYS: tuple[str, ...] = ("caption", "description", "title", "alt")
#: Sidecars larger than this are refused: a caption is a sentence or a paragraph, not a file dump.
_MAX_SIDECAR_BYTES = 1 << 20

# EXIF tags (IFD0 unless noted).
_TAG_DESCRIPTION, _TAG_MAKE, _TAG_MODEL, _TAG_ORIENTATION, _TAG_DATETIME = 270, 271, 272, 274, 306
_TAG_XP_TITLE, _TAG_XP_COMMENT = 0x9C9B, 0x9C9C
_IFD_EXIF, _TAG_DATETIME_ORIGINAL, _TAG_USER_COMMENT = 0x8769, 36867, 37510

#: Texts cameras and editors write into description fields by default; they describe nothing.
_BOILERPLATE = frozenset(
    {
        "",
        "default",
        "image",
        "picture",
        "photo",
        "untitled",
        "digital camera",
        "olympus digital camera",
        "sony dsc",
        "kodak digital still camera",
        "minolta digital camera",
        "samsung digital camera",
        "exif_jpeg_picture",
        "created with gimp",
        "screenshot",
    }
)
#: File-name tokens that name a camera or app rather than the content ("IMG_2031", "DSC0042", "PXL").
_CAMERA_TOKEN = re.compile(
    r"^(?:img|dsc|dscn|dscf|dcim|pxl|mvimg|pano|gopr|gp|dji|sam|wp|vid|pict|p)?"
    r"\d*$|^\d+x\d+$|^[0-9a-f]{12,}$",
    re.IGNORECASE,
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class Description:
    """An image's text channel, as :func:`describe` found it.

    ``text`` is never empty and ``source`` says where it came from (one of :data:`DESCRIPTION_SOURCES`);
    ``sidecar_json`` is the JSON sidecar's object (None without one) and ``sidecars`` the sidecar files found.
    """

    text: str
    source: str
    sidecar_json: dict[str, Any] | None
    sidecars: list[Path]


def _collapse(text: str) -> str:
    return " ".join(text.replace("\x00", " ").split())


# --------------------------------------------------------------------------- sidecars


def _is_json_object(path: Path) -> bool:
    """True when the file starts (after a BOM and whitespace) with ``{``: a JSON array is a table."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{")


def sidecar_paths(path: str | Path) -> list[Path]:
    """The sidecar files of the image at ``path`` that exist, in priority order.

    Text sidecars are ``photo.jpg.txt`` and ``photo.txt``; JSON sidecars are ``photo.jpg.json`` and
    ``photo.json`` when they hold an object (a JSON array is a table, not a sidecar). A folder walker
    skips these so that a caption is not also ingested as a text document. A sidecar that is a symbolic link
    leading out of the image's folder is ignored: it is never read.
    """
    p = Path(path)
    names = [p.with_name(p.name + ".txt"), p.with_suffix(".txt"), p.with_name(p.name + ".json"), p.with_suffix(".json")]
    return [s for s in names if s != p and inside(s, p.parent) and (s.suffix == ".txt" or _is_json_object(s))]


def _read_sidecar(image: Path, sidecar: Path) -> str:
    """The sidecar's text (UTF-8, BOM optional), or IngestError naming the image and the sidecar."""
    try:
        size = sidecar.stat().st_size
        if size > _MAX_SIDECAR_BYTES:
            raise IngestError(
                image,
                f"its sidecar {sidecar.name!r} is {size} bytes, too large for a "
                "caption (limit 1 MiB); shorten it or rename it so it is not a sidecar.",
            )
        data = sidecar.read_bytes()
    except OSError as e:
        raise IngestError(
            image, f"its sidecar {sidecar.name!r} could not be read ({e.strerror or e}); check its permissions."
        ) from e
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise IngestError(
            image, f"its sidecar {sidecar.name!r} is not UTF-8 text (byte offset {e.start}); re-save it as UTF-8."
        ) from e


def _json_sidecar(image: Path, sidecar: Path) -> dict[str, Any]:
    raw = _read_sidecar(image, sidecar)
    try:
        value = json.loads(raw)
    except ValueError as e:
        raise IngestError(
            image, f"its JSON sidecar {sidecar.name!r} is not valid JSON ({e}); fix it or remove it."
        ) from e
    if not isinstance(value, dict):
        raise IngestError(
            image,
            f"its JSON sidecar {sidecar.name!r} must hold an object with a "
            "'caption', 'description', 'title' or 'alt' key.",
        )
    return value


# --------------------------------------------------------------------------- EXIF


def _exif_text(value: Any, *, endian: str = "<", user_comment: bool = False) -> str:
    """Text of an EXIF string, UTF-16 XP tag or UserComment (8-byte charset prefix)."""
    if isinstance(value, str):
        return _collapse(value)
    if isinstance(value, tuple):  # some writers store XP tags as a tuple of byte values
        value = bytes(v & 0xFF for v in value if isinstance(v, int))
    if not isinstance(value, bytes):
        return ""
    if not user_comment:
        return _collapse(value.decode("utf-16-le", errors="ignore"))
    prefix, body = value[:8], value[8:]
    codec = "ascii" if prefix.startswith(b"ASCII") else "utf-8"
    if prefix.startswith(b"UNICODE"):
        codec = "utf-16-be" if endian == ">" else "utf-16-le"
    return _collapse(body.decode(codec, errors="ignore"))


def read_exif(img: Any) -> tuple[str, dict[str, Any]]:
    """(best EXIF description or "", JSON-ready EXIF subset)."""
    try:
        exif = img.getexif()
        sub = exif.get_ifd(_IFD_EXIF)
    except (OSError, ValueError, TypeError, KeyError, SyntaxError, struct.error):  # malformed EXIF must not
        # reject a picture that decodes
        return "", {}
    endian = getattr(exif, "endian", None) or "<"
    candidates = [
        _exif_text(exif.get(_TAG_DESCRIPTION)),
        _exif_text(exif.get(_TAG_XP_TITLE)),
        _exif_text(exif.get(_TAG_XP_COMMENT)),
        _exif_text(sub.get(_TAG_USER_COMMENT), endian=endian, user_comment=True),
    ]
    description = next((c for c in candidates if c.lower() not in _BOILERPLATE), "")
    subset: dict[str, Any] = {}
    make, model = _exif_text(exif.get(_TAG_MAKE)), _exif_text(exif.get(_TAG_MODEL))
    if make or model:
        subset["camera"] = model if make and model.lower().startswith(make.lower()) else _collapse(f"{make} {model}")
    if taken := _exif_text(sub.get(_TAG_DATETIME_ORIGINAL)) or _exif_text(exif.get(_TAG_DATETIME)):
        subset["datetime"] = taken
    if isinstance(orientation := exif.get(_TAG_ORIENTATION), int) and orientation != 1:
        subset["orientation"] = orientation
    if description:
        subset["description"] = description
    return description, subset


# --------------------------------------------------------------------------- file names


def filename_words(path: str | Path) -> str:
    """Words of a file name without camera prefixes, numbers and hashes, lower-cased.

    ``"IMG_2031_golden-gate.jpg"`` → ``"golden gate"``; ``"SunsetOverLake.png"`` → ``"sunset over
    lake"``. When nothing is left (``"IMG_2031.jpg"``) the stem's tokens are returned as they are.
    """
    stem = Path(path).stem
    tokens = [t for t in re.split(r"[\W_]+", _CAMEL.sub(" ", stem)) if t]
    words = [t.lower() for t in tokens if not _CAMERA_TOKEN.match(t) and any(c.isalpha() for c in t)]
    return " ".join(words) or " ".join(tokens) or stem or "image"


# --------------------------------------------------------------------------- choosing the description


def describe(image: Path, *, caption: str | None, alt: str | None, exif_description: str) -> Description:
    """The description of ``image`` from the first source that has one (see the module docstring).

    ``exif_description`` is the EXIF text already read from the opened image (``""`` when none). A blank
    ``caption`` or ``alt`` counts as absent. An unreadable or malformed sidecar raises :class:`IngestError`
    naming the image and the sidecar.
    """
    found = sidecar_paths(image)
    json_path = next((s for s in found if s.suffix == ".json"), None)
    sidecar_json = _json_sidecar(image, json_path) if json_path is not None else None

    def from_text_sidecar() -> str:  # the first text sidecar that is not blank
        texts = (_collapse(_read_sidecar(image, s)) for s in found if s.suffix == ".txt")
        return next((t for t in texts if t), "")

    def from_json() -> str:
        if sidecar_json is None:
            return ""
        return next(
            (_collapse(v) for k in _JSON_KEYS if isinstance(v := sidecar_json.get(k), str) and _collapse(v)), ""
        )

    sources = (
        ("caption", lambda: _collapse(caption or "")),
        ("sidecar", from_text_sidecar),
        ("json", from_json),
        ("exif", lambda: exif_description),
        ("alt", lambda: _collapse(alt or "")),
        ("filename", lambda: filename_words(image)),
    )
    source, text = next((name, text) for name, get in sources if (text := get()))
    return Description(text, source, sidecar_json, found)
