"""What kind of input a file is (text, table, image, video) and which files a set of paths names.

Detection looks at the extension *and* the first bytes: a known binary signature wins over the
extension, so a PNG renamed ``.txt`` is an image, and a PDF renamed ``.txt`` is unsupported.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..media import Sniffed, sniff

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "IMAGE_EXTENSIONS",
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

_EXTENSION_KIND: dict[str, str] = {
    **{ext: "text" for ext in TEXT_EXTENSIONS},
    **{ext: "table" for ext in TABLE_EXTENSIONS},
    **{ext: "image" for ext in IMAGE_EXTENSIONS},
    **{ext: "video" for ext in VIDEO_EXTENSIONS},
    **{ext: "document" for ext in DOCUMENT_EXTENSIONS},
}

#: How many leading bytes :func:`detect_kind` reads (enough to skip whitespace before a JSON array).
_HEAD_BYTES = 4096


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
