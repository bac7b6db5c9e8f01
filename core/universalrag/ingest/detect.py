"""What kind of input a file is (text, table, image, video) and which files a set of paths names.

Detection looks at the extension *and* the first bytes: a known binary signature wins over the
extension, so a PNG renamed ``.txt`` is an image, and a PDF renamed ``.txt`` is unsupported.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "IMAGE_EXTENSIONS",
    "KINDS",
    "TABLE_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "VIDEO_EXTENSIONS",
    "Sniffed",
    "detect_kind",
    "iter_files",
    "sniff",
]

TEXT_EXTENSIONS: frozenset[str] = frozenset({".txt", ".md", ".markdown", ".html", ".htm"})
TABLE_EXTENSIONS: frozenset[str] = frozenset({".csv", ".tsv", ".xlsx", ".json"})
IMAGE_EXTENSIONS: frozenset[str] = frozenset(
    {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}
)
VIDEO_EXTENSIONS: frozenset[str] = frozenset({".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi"})
#: PDF, Word and PowerPoint; OpenDocument and legacy Office files are recognised so that the reader can say
#: what to convert them with.
DOCUMENT_EXTENSIONS: frozenset[str] = frozenset({".pdf", ".docx", ".pptx", ".odt", ".odp", ".doc", ".ppt"})

#: Every kind :func:`detect_kind` can return.
KINDS: tuple[str, ...] = ("text", "table", "image", "video", "document")

_EXTENSION_KIND: dict[str, str] = {
    **{ext: "text" for ext in TEXT_EXTENSIONS},
    **{ext: "table" for ext in TABLE_EXTENSIONS},
    **{ext: "image" for ext in IMAGE_EXTENSIONS},
    **{ext: "video" for ext in VIDEO_EXTENSIONS},
    **{ext: "document" for ext in DOCUMENT_EXTENSIONS},
}

#: How many leading bytes :func:`detect_kind` reads (enough to skip whitespace before a JSON array).
_HEAD_BYTES = 4096

#: ISO base media brands (bytes 8-12 after ``ftyp``) that are still images or audio, not video.
_FTYP_IMAGE_BRANDS = frozenset({b"heic", b"heix", b"hevc", b"mif1", b"msf1", b"avif", b"avis"})
_FTYP_AUDIO_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P "})

#: Header sizes of the BMP DIB variants; checked so that a text starting with "BM" is not an image.
_BMP_DIB_SIZES = frozenset({12, 40, 52, 56, 64, 108, 124})


class Sniffed(NamedTuple):
    """A recognised file signature: the kind it maps to (None when unsupported) and a readable label."""

    kind: str | None
    label: str


def sniff(head: bytes) -> Sniffed | None:
    """Recognise a binary file format from its first bytes; None when no known signature matches.

    Images and videos map to their kind; ZIP (the container of ``.xlsx``), PDF, audio and
    compressed archives are recognised with kind None so callers can name them in a message.
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return Sniffed("image", "PNG image")
    if head.startswith(b"\xff\xd8\xff"):
        return Sniffed("image", "JPEG image")
    if head.startswith((b"GIF87a", b"GIF89a")):
        return Sniffed("image", "GIF image")
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return Sniffed("image", "TIFF image")
    if len(head) >= 18 and head.startswith(b"BM") and struct.unpack_from("<I", head, 14)[0] in _BMP_DIB_SIZES:
        return Sniffed("image", "BMP image")
    if len(head) >= 12 and head.startswith(b"RIFF"):
        form = head[8:12]
        if form == b"WEBP":
            return Sniffed("image", "WebP image")
        if form == b"AVI ":
            return Sniffed("video", "AVI video")
        if form == b"WAVE":
            return Sniffed(None, "WAV audio")
    if len(head) >= 12 and head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in _FTYP_IMAGE_BRANDS:
            return Sniffed("image", "HEIF/AVIF image")
        if brand in _FTYP_AUDIO_BRANDS:
            return Sniffed(None, "MPEG-4 audio")
        if brand == b"qt  ":
            return Sniffed("video", "QuickTime video")
        return Sniffed("video", "MP4 video")
    if len(head) >= 8 and head[4:8] == b"moov":
        return Sniffed("video", "QuickTime video")
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return Sniffed("video", "Matroska/WebM video")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return Sniffed(None, "ZIP archive")
    if head.startswith(b"%PDF-"):
        return Sniffed(None, "PDF document")
    if head.startswith(b"\x1f\x8b"):
        return Sniffed(None, "gzip archive")
    if head.startswith(b"7z\xbc\xaf\x27\x1c"):
        return Sniffed(None, "7-Zip archive")
    if head.startswith(b"\x7fELF"):
        return Sniffed(None, "executable program")
    # Audio signatures are checked with their version byte so that prose starting "ID3 tags" stays text.
    if (head.startswith(b"ID3") and head[3:4] in (b"\x02", b"\x03", b"\x04") and head[4:5] == b"\x00") or (
        head.startswith((b"OggS\x00", b"fLaC\x00", b"fLaC\x80"))
    ):
        return Sniffed(None, "audio file")
    return None


def _read_head(path: Path) -> bytes | None:
    try:
        with path.open("rb") as fh:
            return fh.read(_HEAD_BYTES)
    except OSError:
        return None


def _looks_like_json_records(head: bytes) -> bool:
    stripped = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return stripped.startswith(b"[")


def detect_kind(path: Path) -> str | None:
    """Return ``"text"``, ``"table"``, ``"image"``, ``"video"`` or ``"document"`` for ``path``, or None when
    unsupported.

    A recognised binary signature decides (a PNG named ``notes.txt`` is ``"image"``; a PDF, or a ZIP holding
    a Word, PowerPoint or OpenDocument file, is ``"document"`` whatever its name; another ZIP that is not
    ``.xlsx`` is None). Otherwise the extension decides; a ``.json`` file counts as a
    table only when it holds an array (records). A path that cannot be read is judged by its
    extension alone, so the reader can report the real problem; a directory is None.
    """
    path = Path(path)
    ext_kind = _EXTENSION_KIND.get(path.suffix.lower())
    if path.is_dir():
        return None
    head = _read_head(path)
    if head is None:
        return ext_kind
    sniffed = sniff(head)
    if sniffed is None and head.startswith(b"\xd0\xcf\x11\xe0") and ext_kind == "document":
        return "document"  # legacy or password-protected Office file: its reader names the conversion
    if sniffed is not None and sniffed.label in ("PDF document", "ZIP archive"):
        from .documents.reader import document_format

        if document_format(path) is not None:
            return "document"
    if sniffed is not None:
        if sniffed.kind is not None:
            return sniffed.kind
        if sniffed.label == "ZIP archive" and path.suffix.lower() == ".xlsx":
            return "table"
        return None
    if path.suffix.lower() == ".json" and head.strip() and not _looks_like_json_records(head):
        return None
    return ext_kind


def _walk(folder: Path, root: Path, *, recursive: bool) -> Iterator[Path]:
    """Yield regular files under ``folder`` in name order; hidden names and escaping symlinks are skipped."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        # Unreadable folder: hand it to the caller, whose reader reports why it cannot be ingested.
        yield folder
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        child = folder / entry.name
        if entry.is_symlink():
            try:
                target = child.resolve()
            except (OSError, RuntimeError):
                continue  # a symlink loop
            if not target.is_relative_to(root):
                continue  # points outside the folder the user gave
            if target.is_dir():
                continue  # its files are reached through their real path; following links risks cycles
            yield child  # a file inside the folder, or a dangling link (reported as missing by the reader)
            continue
        if entry.is_dir(follow_symlinks=False):
            if recursive:
                yield from _walk(child, root, recursive=recursive)
        elif entry.is_file(follow_symlinks=False):
            yield child
        # sockets, FIFOs and devices are skipped: reading a FIFO would block


def iter_files(paths: Sequence[Path], *, recursive: bool = True) -> Iterator[Path]:
    """Expand ``paths`` into the files to ingest, in a stable order.

    A folder is walked in sorted name order (into subfolders when ``recursive``), skipping hidden
    names (starting with ``.``), symbolic links that resolve outside that folder, links to folders
    and special files. A path given explicitly is yielded as given, even when it is missing, hidden
    or not a regular file, so the caller reports it as an error rather than silently skipping it.
    A file reached twice (overlapping arguments) is yielded once.
    """
    seen: set[Path] = set()
    for raw in paths:
        given = Path(raw)
        if given.is_dir():
            root = given.resolve()
            found: Iterator[Path] = _walk(given, root, recursive=recursive)
        else:
            found = iter((given,))
        for path in found:
            try:
                key = path.resolve()
            except (OSError, RuntimeError):
                key = path.absolute()
            if key in seen:
                continue
            seen.add(key)
            yield path
