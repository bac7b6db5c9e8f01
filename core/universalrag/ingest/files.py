"""Checks on table files before and while they are read: the path, the text encoding, later changes.

Shared by the file readers behind :func:`universalrag.ingest.tables.read_tables`: every file is checked
to exist and be non-empty; text formats (CSV, TSV, JSON, Markdown, HTML) get their codec from a
byte-order mark and are refused when they are binary or not valid in it; file-backed tables record
the file's size and modification time when parsed and refuse to stream a file that changed since.
"""

from __future__ import annotations

from pathlib import Path

from universalrag.errors import IngestError
from universalrag.ingest.detect import sniff

__all__: list[str] = []  # helpers of the table readers only; the public API is in universalrag.ingest.tables

_HEAD_BYTES = 65536


def _check_file(p: Path) -> None:
    if not p.exists():
        raise IngestError(p, "no such file; check the path (relative paths start at the current folder).")
    if not p.is_file():
        raise IngestError(p, "is not a regular file; pass a .csv, .tsv, .xlsx, .json, .md or .html file.")
    try:
        size = p.stat().st_size
    except OSError as e:
        raise IngestError(p, f"could not be read ({e.strerror or e}); check its permissions.") from e
    if size == 0:
        raise IngestError(p, "the file is empty (0 bytes); add a table to it or leave it out.")


# --------------------------------------------------------------------------- text encoding

_BOM_CODECS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"),
)


def _text_codec(head: bytes, name: str | Path) -> str:
    """The codec for a text file from its first bytes; rejects binary files with a reason."""
    sniffed = sniff(head[:64])
    if sniffed is not None:
        raise IngestError(name, f"this is a {sniffed.label}, not a text table (it was probably renamed); "
                                "give it its real extension.")
    codec = next((c for bom, c in _BOM_CODECS if head.startswith(bom)), None)
    if codec is None and b"\x00" in head:
        raise IngestError(name, "looks like a binary file (it contains NUL bytes); if it is UTF-16 text, "
                                "save it as UTF-8 (or UTF-16 with a byte-order mark).")
    return codec or "utf-8"


def _decode_error(name: str | Path, codec: str, where: str) -> IngestError:
    label = "UTF-8" if codec.startswith("utf-8") else codec.upper()
    file = Path(name).name
    return IngestError(
        name,
        f"is not valid {label} text ({where}); it is probably in a legacy encoding such as Windows-1252. "
        f"Convert it to UTF-8, for example with `iconv -f WINDOWS-1252 -t UTF-8 {file} > utf8-{file}`.",
    )


def _codec(path: Path) -> str:
    with path.open("rb") as fh:
        return _text_codec(fh.read(_HEAD_BYTES), path)


# --------------------------------------------------------------------------- changes after parsing


def _signature(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def _check_unchanged(path: Path, signature: tuple[int, int]) -> None:
    try:
        same = _signature(path) == signature
    except OSError:
        same = False
    if not same:
        raise IngestError(path, "changed or disappeared after it was parsed; call read_tables on it again.")
