"""Input files before any reader parses them: existence and size, the content hash, text decoding, changes.

One home for these rules, shared by every reader (text, tables, images, videos) and the pipeline:

- :func:`check_file` refuses a missing path, a folder, a device or pipe, and (when asked) an empty file;
- :func:`hash_file` is the one SHA-256 of a file's bytes; the pipeline computes it once per file and run;
- :func:`text_encoding` finds a text file's encoding from its byte-order mark and refuses binary data,
  and :func:`decode_error` words a decoding failure;
- :func:`file_signature` and :func:`check_unchanged` notice a file that changed after it was parsed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import IngestError
from ..media import sniff

__all__ = [
    "TextEncoding",
    "bom_encoding",
    "check_file",
    "check_unchanged",
    "hash_file",
    "decode_error",
    "file_signature",
    "read_error",
    "text_encoding",
]

_BLOCK = 1 << 20


def read_error(path: str | Path, error: OSError) -> IngestError:
    """The IngestError for a file the operating system refused to read."""
    return IngestError(path, f"could not be read ({error.strerror or error}); check its permissions.")


def check_file(path: Path, *, empty: str | None = None) -> None:
    """IngestError unless ``path`` is an existing regular file; with ``empty`` (advice such as "add text to it
    or leave it out."), also unless it holds at least one byte."""
    if not path.exists():
        raise IngestError(path, "no such file; check the path (relative paths start at the current folder).")
    if path.is_dir():
        raise IngestError(path, "is a folder, not a regular file; pass the files inside it, or ingest the whole "
                                "folder.")
    if not path.is_file():
        raise IngestError(path, "is not a regular file (a device, socket or pipe); save its content to a file.")
    if empty is not None:
        try:
            size = path.stat().st_size
        except OSError as e:
            raise read_error(path, e) from e
        if size == 0:
            raise IngestError(path, f"the file is empty (0 bytes); {empty}")


def hash_file(path: Path) -> str:
    """SHA-256 hex digest of the file's bytes, read in blocks: a source's identity for idempotent ingestion."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(_BLOCK), b""):
                digest.update(block)
    except OSError as e:
        raise read_error(path, e) from e
    return digest.hexdigest()


# --------------------------------------------------------------------------- text encoding

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: How many leading bytes :func:`text_encoding` is meant to see.
HEAD_BYTES = 65536


@dataclass(frozen=True, slots=True)
class TextEncoding:
    """A text file's encoding: ``name`` (``utf-8``, ``utf-16-le``...) and the byte-order mark it starts with."""

    name: str
    bom: bytes = b""

    @property
    def stream_codec(self) -> str:
        """The codec that reads the whole file, BOM included (``utf-8-sig``, ``utf-16``, ``utf-32``)."""
        if not self.bom:
            return self.name
        return {"utf-8": "utf-8-sig"}.get(self.name, self.name[:6])

    @property
    def label(self) -> str:
        """``UTF-8``, ``UTF-16-LE``... for messages."""
        return self.name.upper()


def bom_encoding(head: bytes) -> TextEncoding | None:
    """The encoding a byte-order mark at the start of ``head`` announces, or None without one."""
    return next((TextEncoding(name, bom) for bom, name in _BOMS if head.startswith(bom)), None)


def text_encoding(head: bytes, name: str | Path, *, what: str = "text") -> TextEncoding:
    """The encoding of a text file from its first bytes (UTF-8 unless a byte-order mark says otherwise).

    Refuses with :class:`IngestError` a file whose first bytes are a known binary format (``what`` names
    what was expected, such as "a text table") or that holds NUL bytes without a byte-order mark.
    """
    sniffed = sniff(head[:64])
    if sniffed is not None:
        raise IngestError(name, f"this is a {sniffed.label}, not {what} (its first bytes say so; it was probably "
                                "renamed). Give it its real extension, or ingest it as what it is.")
    encoding = bom_encoding(head)
    if encoding is None and b"\x00" in head[:HEAD_BYTES]:
        raise IngestError(name, "looks like a binary file, not text (it contains NUL bytes). If it is UTF-16 text, "
                                "save it as UTF-8 (or UTF-16 with a byte-order mark); otherwise leave it out.")
    return encoding or TextEncoding("utf-8")


def decode_error(name: str | Path, encoding: TextEncoding, where: str) -> IngestError:
    """The IngestError for text that is not valid in ``encoding``; ``where`` says where ("byte offset 12")."""
    if encoding.name != "utf-8":
        return IngestError(name, f"starts with a {encoding.label} byte-order mark but is not valid {encoding.label} "
                                 f"({where}); re-save it as UTF-8.")
    file = Path(name).name
    return IngestError(
        name,
        f"is not valid UTF-8 text ({where}); it is probably in a legacy encoding such as Latin-1 or Windows-1252. "
        f"Convert it to UTF-8, for example with `iconv -f WINDOWS-1252 -t UTF-8 {file} > utf8-{file}`, and "
        "ingest that.",
    )


# --------------------------------------------------------------------------- changes after parsing


def file_signature(path: Path) -> tuple[int, int]:
    """(size, modification time in ns) of a file, to notice later changes."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def check_unchanged(path: Path, signature: tuple[int, int]) -> None:
    """IngestError when the file changed (or vanished) since ``signature`` was taken."""
    try:
        same = file_signature(path) == signature
    except OSError:
        same = False
    if not same:
        raise IngestError(path, "changed or disappeared after it was parsed; call read_tables on it again.")
