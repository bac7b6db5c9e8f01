"""Input files before any reader parses them: existence and size, the content hash, text decoding, changes.

One home for these rules, shared by every reader (text, tables, images, videos) and the pipeline:

- :func:`check_file` refuses a missing path, a folder, a device or pipe, and (when asked) an empty file;
  :func:`is_empty` tells a folder walk which files to skip as empty (:data:`EMPTY_REASON`), :func:`empty_error`
  words the failure of one the user named;
- :func:`hash_file` is the one SHA-256 of a file's bytes; the pipeline computes it once per file and run;
- :func:`open_bytes`, :func:`read_head` and :func:`read_content` read a file gunzipped on the fly when it is
  gzip-compressed (``.csv.gz``, ``.txt.gz``: the signature decides, not the extension);
- :func:`text_encoding`, :func:`file_encoding` and :func:`decode_text` find a text file's encoding (byte-order
  mark, then a declared charset, then UTF-8, then charset-normalizer's detection) and refuse binary data;
  :func:`decode_error` words a decoding failure;
- :func:`file_signature` and :func:`check_unchanged` notice a file that changed after it was parsed;
- :func:`inside` tells whether a companion file (a sidecar, a referenced image) stays inside a folder once its
  symbolic links are followed, so that no file outside what the user named is ever read.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from ..errors import IngestError
from ..media import sniff

__all__ = [
    "EMPTY_REASON",
    "GZIP_ERRORS",
    "HEAD_BYTES",
    "MAX_GUNZIPPED_TEXT",
    "NO_TEXT_REASON",
    "TextEncoding",
    "bom_encoding",
    "check_file",
    "check_unchanged",
    "declared_encoding",
    "decode_error",
    "decode_text",
    "empty_error",
    "file_encoding",
    "file_signature",
    "gzip_error",
    "hash_file",
    "inside",
    "is_empty",
    "is_gzip",
    "open_bytes",
    "open_text",
    "read_content",
    "read_error",
    "read_head",
    "text_encoding",
]

_BLOCK = 1 << 20


def read_error(path: str | Path, error: OSError) -> IngestError:
    """The IngestError for a file the operating system refused to read."""
    return IngestError(path, f"could not be read ({error.strerror or error}); check its permissions.")


#: Why a folder walk skips an empty file (the summary counts it as "empty"): a placeholder such as an empty
#: ``__init__.py`` or a note not yet written is no input error, and failing it would fail every run of the folder.
EMPTY_REASON = "is empty (0 bytes)"
#: Why a folder walk skips a text file that is empty once its markup is read (a page whose only line is an
#: ``.. include::``, a redirect page): as common in a docs folder as an empty file, and no more an input error.
NO_TEXT_REASON = "is empty of text (only markup, or a redirect)"


def is_empty(path: Path) -> bool:
    """True when the regular file ``path`` holds no bytes; IngestError when it cannot be looked at."""
    try:
        return path.stat().st_size == 0
    except OSError as e:
        raise read_error(path, e) from e


def empty_error(path: str | Path, advice: str = "add content to it or leave it out.") -> IngestError:
    """The IngestError for an empty file that must not be skipped (named explicitly, or a walk under --strict)."""
    return IngestError(path, f"the file is empty (0 bytes); {advice}")


def check_file(path: Path, *, empty: str | None = None) -> None:
    """IngestError unless ``path`` is an existing regular file; with ``empty`` (advice such as "add text to it
    or leave it out."), also unless it holds at least one byte."""
    if not path.exists():
        raise IngestError(path, "no such file; check the path (relative paths start at the current folder).")
    if path.is_dir():
        raise IngestError(
            path, "is a folder, not a regular file; pass the files inside it, or ingest the whole folder."
        )
    if not path.is_file():
        raise IngestError(path, "is not a regular file (a device, socket or pipe); save its content to a file.")
    if empty is not None and is_empty(path):
        raise empty_error(path, empty)


def inside(path: Path, folder: Path) -> bool:
    """True when ``path``, with every symbolic link followed, is a file inside ``folder`` (also followed).

    A link that leaves the folder (``photo.jpg.txt -> /etc/passwd``), a ``..`` that climbs out of it, a
    symlink loop and a dangling link are all False: companions of a file are read only from where the file is.
    """
    try:
        target = path.resolve(strict=True)
        root = folder.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, dangling or a loop
        return False
    return target.is_relative_to(root) and target.is_file()


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


# --------------------------------------------------------------------------- gzip

_GZIP_MAGIC = b"\x1f\x8b"
#: Largest decompressed size of a gzip-compressed text document (tables are streamed, so unbounded).
MAX_GUNZIPPED_TEXT = 256 << 20


def is_gzip(path: Path) -> bool:
    """True when the file starts with the gzip signature (whatever its extension)."""
    try:
        with path.open("rb") as fh:
            return fh.read(2) == _GZIP_MAGIC
    except OSError:
        return False


def open_bytes(path: Path) -> BinaryIO:
    """The file's bytes as a stream, gunzipped on the fly when it is gzip-compressed."""
    if is_gzip(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def open_text(path: Path, encoding: TextEncoding, *, newline: str | None = None) -> TextIO:
    """The file as text in ``encoding`` (gunzipped on the fly when compressed)."""
    return io.TextIOWrapper(open_bytes(path), encoding=encoding.stream_codec, newline=newline)


def read_head(path: Path, size: int = 65536) -> bytes:
    """The first ``size`` bytes of the file's content (after gunzipping); IngestError when unreadable."""
    try:
        with open_bytes(path) as fh:
            return fh.read(size)
    except (OSError, EOFError, zlib.error) as e:
        raise _gzip_or_read_error(path, e) from e


def read_content(path: Path) -> bytes:
    """The whole content of a (possibly gzip-compressed) text file; compressed ones are capped at
    :data:`MAX_GUNZIPPED_TEXT` bytes."""
    try:
        with open_bytes(path) as fh:
            data = fh.read(MAX_GUNZIPPED_TEXT + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise _gzip_or_read_error(path, e) from e
    if len(data) > MAX_GUNZIPPED_TEXT:
        raise IngestError(
            path, f"decompresses to more than {MAX_GUNZIPPED_TEXT >> 20} MB of text; split it or leave it out."
        )
    return data


#: What a damaged gzip stream raises while it is read.
GZIP_ERRORS: tuple[type[Exception], ...] = (EOFError, zlib.error, gzip.BadGzipFile)


def gzip_error(path: Path, error: Exception) -> IngestError:
    """The IngestError for a gzip stream that broke off while being read."""
    return _gzip_or_read_error(path, error)


def _gzip_or_read_error(path: Path, error: Exception) -> IngestError:
    if isinstance(error, OSError) and not isinstance(error, gzip.BadGzipFile) and error.strerror:
        return read_error(path, error)
    return IngestError(path, f"is a damaged or truncated gzip file ({error}); re-download or re-compress it.")


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
#: Declared labels that browsers read as Windows-1252 (the WHATWG Encoding Standard does the same).
_WINDOWS_1252_LABELS = frozenset(
    {"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "us-ascii", "ascii", "cp1252", "windows-1252", "x-cp1252"}
)
#: Legacy encodings preferred when charset-normalizer finds several equally good ones (Western text first).
_PREFERRED = ("utf_8", "cp1252", "latin_1", "iso8859_15")
_CHAOS_MARGIN = 0.1
_COHERENCE_MARGIN = 0.02


@dataclass(frozen=True, slots=True)
class TextEncoding:
    """A text file's encoding: ``name`` (``utf-8``, ``utf-16-le``, ``cp1252``...), the byte-order mark it
    starts with, and how it was found (``bom``, ``declared``, ``utf-8`` or ``detected``)."""

    name: str
    bom: bytes = b""
    source: str = "utf-8"

    @property
    def stream_codec(self) -> str:
        """The codec that reads the whole file, BOM included (``utf-8-sig``, ``utf-16``, ``utf-32``)."""
        if not self.bom:
            return self.name
        return {"utf-8": "utf-8-sig"}.get(self.name, self.name[:6])

    @property
    def label(self) -> str:
        """``UTF-8``, ``UTF-16-LE``, ``CP1252``... for messages."""
        return self.name.upper()


def bom_encoding(head: bytes) -> TextEncoding | None:
    """The encoding a byte-order mark at the start of ``head`` announces, or None without one."""
    return next((TextEncoding(name, bom, "bom") for bom, name in _BOMS if head.startswith(bom)), None)


def _decodes(data: bytes, codec: str, *, final: bool) -> bool:
    """True when ``data`` is valid in ``codec`` (a multi-byte character cut at the end is fine unless final)."""
    try:
        codecs.getincrementaldecoder(codec)().decode(data, final=final)
    except (UnicodeDecodeError, LookupError):
        return False
    return True


def _declared(label: str | None, data: bytes, *, final: bool) -> TextEncoding | None:
    if not label:
        return None
    label = label.strip().lower()
    if label in _WINDOWS_1252_LABELS:
        for codec in ("cp1252", "latin-1"):
            if _decodes(data, codec, final=final):
                return TextEncoding(codec, source="declared")
        return None
    try:
        codec = codecs.lookup(label).name
    except LookupError:
        return None  # an unknown label is ignored, as browsers do
    if codec.startswith(("utf-16", "utf-32")):
        return None  # a BOM-less page cannot really be UTF-16; the declaration is a copy-paste
    return TextEncoding(codec, source="declared") if _decodes(data, codec, final=final) else None


def _detected(data: bytes) -> TextEncoding | None:
    """charset-normalizer's best guess. Its guesses for short Western text often differ only in letters the
    text may not even use (cp1257 vs cp1252), so a preferred encoding (Windows-1252 first) whose result is
    about as clean (chaos within :data:`_CHAOS_MARGIN`, same coherence) wins."""
    from charset_normalizer import from_bytes

    results = list(from_bytes(data))
    if not results:
        return None
    best = results[0]
    close = {
        m.encoding
        for m in results
        if m.chaos <= best.chaos + _CHAOS_MARGIN and m.coherence >= best.coherence - _COHERENCE_MARGIN
    }
    name = next((p for p in _PREFERRED if p in close), best.encoding)
    return TextEncoding(codecs.lookup(name).name, source="detected")


def declared_encoding(head: bytes, *, html: bool) -> str | None:
    """The encoding an HTML ``<meta charset>``/``http-equiv`` or an XML declaration names, or None."""
    from bs4.dammit import EncodingDetector

    found = EncodingDetector.find_declared_encoding(head, is_html=html)
    return str(found) if found else None


def text_encoding(
    head: bytes, name: str | Path, *, what: str = "text", declared: str | None = None, final: bool = False
) -> TextEncoding:
    """The encoding of a text file from its first bytes (``final``: ``head`` is the whole file).

    In order: a byte-order mark; the ``declared`` encoding (an HTML meta charset, an XML declaration) when
    the bytes are valid in it (ISO-8859-1 and ASCII are read as Windows-1252, as browsers do); UTF-8 when the
    bytes are valid UTF-8; else the best guess of charset-normalizer. Refuses with :class:`IngestError` a
    file whose first bytes are a known binary format (``what`` names what was expected, such as "a text
    table"), that holds NUL bytes without a byte-order mark, or that is text in no encoding.
    """
    sniffed = sniff(head[:64])
    if sniffed is not None:
        raise IngestError(
            name,
            f"this is a {sniffed.label}, not {what} (its first bytes say so; it was probably "
            "renamed). Give it its real extension, or ingest it as what it is.",
        )
    encoding = bom_encoding(head)
    if encoding is not None:
        return encoding
    if b"\x00" in head[:HEAD_BYTES]:
        raise IngestError(
            name,
            "looks like a binary file, not text (it contains NUL bytes). If it is UTF-16 text, "
            "save it as UTF-8 (or UTF-16 with a byte-order mark); otherwise leave it out.",
        )
    found = _declared(declared, head, final=final)
    if found is not None:
        return found
    if _decodes(head, "utf-8", final=final):
        return TextEncoding("utf-8")
    found = _detected(head)
    if found is None:
        raise IngestError(
            name,
            f"looks like a binary file, not {what}: its bytes are text in no encoding that "
            "could be detected. Leave it out, or save it as UTF-8 text.",
        )
    return found


def file_encoding(path: Path, *, what: str = "text") -> TextEncoding:
    """:func:`text_encoding` of a (possibly gzip-compressed) file streamed later: when its first bytes are
    valid UTF-8 the rest is checked too, and a legacy-encoded tail (a Windows-1252 CSV whose first 64 KB are
    ASCII) is detected from the block where UTF-8 fails."""
    head = read_head(path, HEAD_BYTES + 1)
    final = len(head) <= HEAD_BYTES
    encoding = text_encoding(head[:HEAD_BYTES], path, what=what, final=final)
    if final or encoding.source != "utf-8":
        return encoding
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open_bytes(path) as fh:
            for block in iter(lambda: fh.read(_BLOCK), b""):
                try:
                    decoder.decode(block)
                except UnicodeDecodeError:
                    return _detected(block) or encoding
    except (OSError, EOFError, zlib.error) as e:
        raise _gzip_or_read_error(path, e) from e
    return encoding


def decode_error(name: str | Path, encoding: TextEncoding, where: str) -> IngestError:
    """The IngestError for text that is not valid in ``encoding``; ``where`` says where ("byte offset 12")."""
    if encoding.bom:
        return IngestError(
            name,
            f"starts with a {encoding.label} byte-order mark but is not valid {encoding.label} "
            f"({where}); re-save it as UTF-8.",
        )
    file = Path(name).name
    how = {"declared": "its declared encoding", "detected": "the encoding detected from its first bytes"}.get(
        encoding.source, "UTF-8"
    )
    return IngestError(
        name,
        f"is not valid {encoding.label} text ({where}), which is {how}; it mixes encodings or is damaged. "
        f"Convert it to UTF-8, for example with `iconv -f WINDOWS-1252 -t UTF-8 {file} > utf8-{file}`, and "
        "ingest that.",
    )


def decode_text(data: bytes, name: str | Path, *, declared: str | None = None) -> tuple[str, TextEncoding]:
    """The whole of ``data`` decoded with :func:`text_encoding` (the BOM removed), and the encoding used."""
    encoding = text_encoding(data[: HEAD_BYTES * 16], name, declared=declared, final=len(data) <= HEAD_BYTES * 16)
    if encoding.source == "utf-8" and not _decodes(data, "utf-8", final=True):
        encoding = _detected(data) or encoding
    try:
        text = data[len(encoding.bom) :].decode(encoding.name)
    except UnicodeDecodeError as e:
        offset = len(encoding.bom) + e.start
        raise decode_error(
            name, encoding, f"byte 0x{data[offset : offset + 1].hex().upper()} at byte offset {offset}"
        ) from e
    return text.lstrip("\ufeff"), encoding


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
