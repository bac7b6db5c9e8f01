"""What kind of input a file is (text, table, image, video, document) and which files a set of paths names.

Content first, extension second: a known binary signature wins over the extension (a PNG renamed ``.txt``
is an image, a PDF renamed ``.txt`` is a document, a NumPy array is not ingested); gzip-compressed text (``.csv.gz``,
``.json.gz``, ``.txt.gz``) is looked at inside, and a gzip-compressed PDF (``manual.pdf.gz``) is a document; text
is recognised by its bytes (no NUL, an encoding that decodes it), so ``README``, ``LICENSE``, ``.rst`` and source
code are text documents whatever their extension; a binary file of no known signature is tried with PyAV (a
``.ts``/``.ogv`` video FFmpeg opens is a video). A ``.json`` file is a table when it holds an array of records, at
the top or under its first key (``{"3166-1": [{...}, ...]}``), else a text document.
:func:`detect` says which reader format to use, or why the file is not ingested.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import IngestError, MissingDependencyError
from ..media import Sniffed, sniff
from .files import is_gzip, read_head, text_encoding
from .tables.json_records import records_in_object

__all__ = [
    "CODE_EXTENSIONS",
    "DOCUMENT_EXTENSIONS",
    "IMAGE_EXTENSIONS",
    "SUPPORTED",
    "TABLE_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "VIDEO_EXTENSIONS",
    "Detection",
    "is_folder",
    "Sniffed",
    "detect",
    "detect_kind",
    "iter_files",
    "sniff",
    "unsupported_error",
]

TEXT_EXTENSIONS: frozenset[str] = frozenset({".txt", ".md", ".markdown", ".html", ".htm", ".xhtml", ".rst", ".ipynb"})
#: Source code and configuration, ingested as plain text documents.
CODE_EXTENSIONS: frozenset[str] = frozenset(
    {
        ".py",
        ".pyi",
        ".js",
        ".mjs",
        ".cjs",
        ".jsx",
        ".ts",
        ".tsx",
        ".java",
        ".kt",
        ".scala",
        ".go",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".hpp",
        ".hh",
        ".cs",
        ".swift",
        ".rb",
        ".php",
        ".pl",
        ".pm",
        ".lua",
        ".r",
        ".jl",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".ps1",
        ".sql",
        ".css",
        ".scss",
        ".toml",
        ".yaml",
        ".yml",
        ".ini",
        ".cfg",
        ".conf",
        ".tex",
        ".el",
        ".clj",
        ".hs",
        ".ml",
        ".ex",
        ".exs",
        ".erl",
        ".dart",
        ".m",
        ".mk",
    }
)
TABLE_EXTENSIONS: frozenset[str] = frozenset({".csv", ".tsv", ".xlsx", ".json"})
IMAGE_EXTENSIONS: frozenset[str] = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"})
VIDEO_EXTENSIONS: frozenset[str] = frozenset(
    {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ts", ".m2ts", ".mts", ".ogv"}
)
#: PDF, Word and PowerPoint; OpenDocument and legacy Office files are recognised so that the reader can say
#: what to convert them with.
DOCUMENT_EXTENSIONS: frozenset[str] = frozenset({".pdf", ".docx", ".pptx", ".odt", ".odp", ".doc", ".ppt"})
#: Text formats that are something else than prose: refused rather than ingested as text.
_NOT_PROSE: dict[str, str] = {
    **dict.fromkeys((".css", ".scss", ".sass", ".less"), "a style sheet (how pages look, not what they say)"),
    ".map": "a source map",
    ".svg": "an SVG drawing",
    ".rtf": "an RTF document",
    ".ps": "a PostScript file",
    ".eps": "a PostScript file",
    **dict.fromkeys(
        (".srt", ".vtt", ".ass", ".ssa"),
        "a subtitle file without its video (put it next to the "
        "video with the same name and it becomes the video's text)",
    ),
}
_TEXT_FORMATS: dict[str, str] = {
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".rst": "rst",
    ".ipynb": "ipynb",
    ".json": "json",
}
_TABLE_FORMATS: dict[str, str] = {".csv": "csv", ".tsv": "tsv", ".json": "json", ".xlsx": "xlsx"}
_GZIP_SUFFIXES = (".gz", ".gzip")
#: How many leading bytes :func:`detect` reads (enough to skip whitespace before a JSON array).
_HEAD_BYTES = 4096
_MAX_CONTROL_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class Detection:
    """What a file is. ``kind`` is ``"text"``, ``"table"``, ``"image"``, ``"video"``, ``"document"`` or None (not
    ingested, and ``reason`` says why); ``format`` names the reader's format for text (``txt``, ``md``,
    ``html``, ``rst``, ``ipynb``, ``code``, ``json``), tables (``csv``, ``tsv``, ``json``, ``xlsx``) and documents
    (``pdf``, ``docx``, ``pptx``...); ``compressed`` is True for gzip."""

    kind: str | None
    format: str | None = None
    reason: str = ""
    compressed: bool = False


def _inner_suffix(path: Path) -> tuple[str, bool]:
    """(extension that names the content, the name ends in .gz): ``data.csv.gz`` → (".csv", True)."""
    suffix = path.suffix.lower()
    if suffix in _GZIP_SUFFIXES:
        return Path(path.stem).suffix.lower(), True
    return suffix, False


def _by_extension(suffix: str) -> Detection:
    if suffix in DOCUMENT_EXTENSIONS:
        return Detection("document")
    if suffix in IMAGE_EXTENSIONS:
        return Detection("image")
    if suffix in VIDEO_EXTENSIONS and suffix != ".ts":
        return Detection("video")
    if suffix in _TABLE_FORMATS:
        return Detection("table", _TABLE_FORMATS[suffix])
    if suffix in _TEXT_FORMATS:
        return Detection("text", _TEXT_FORMATS[suffix])
    return Detection("text", "code" if suffix in CODE_EXTENSIONS else "txt")


def _is_text(head: bytes, path: Path) -> bool:
    try:
        encoding = text_encoding(head, path, final=len(head) < _HEAD_BYTES)
    except IngestError:
        return False
    text = head[len(encoding.bom) :].decode(encoding.name, errors="ignore")
    control = sum(1 for ch in text if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v\x1b")
    return control <= _MAX_CONTROL_SHARE * max(len(text), 1)


def _text_kind(suffix: str, head: bytes) -> Detection:
    """Kind and format of a file whose content is text."""
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if suffix in _NOT_PROSE:
        return Detection(None, reason=f"is {_NOT_PROSE[suffix]}, which is not ingested")
    if (
        suffix in IMAGE_EXTENSIONS
        or suffix in DOCUMENT_EXTENSIONS
        or suffix == ".xlsx"
        or (suffix in VIDEO_EXTENSIONS and suffix != ".ts")
    ):
        return _by_extension(suffix)  # text named as a picture, video, document or workbook: its reader says why
    if suffix == ".json":
        # An array of records is a table, and so is an object holding one under its first key ({"data": [{...}]}).
        table = body.startswith(b"[") or records_in_object(body)
        return Detection("table", "json") if table else Detection("text", "json")
    if suffix in (".csv", ".tsv"):
        return Detection("table", suffix[1:])
    if suffix in _TEXT_FORMATS and suffix != ".txt":
        return Detection("text", _TEXT_FORMATS[suffix])
    if suffix in CODE_EXTENSIONS:
        return Detection("text", "code")
    lowered = body[:512].lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or (lowered.startswith(b"<?xml") and b"<html" in lowered):
        return Detection("text", "html")
    delimiter = _delimited(body)
    if delimiter is not None:  # zone1970.tab, a .txt export: a table whatever its name
        return Detection("table", "tsv" if delimiter == "\t" else "csv")
    return Detection("text", "txt")


#: A text is a table when at least this many of the lines at its head that are not comments ("#") ...
_MIN_TABLE_LINES = 5


def _delimited(head: bytes) -> str | None:
    """The delimiter of a text whose head reads as a table, else ``None``: every line but comments and blank
    ones holds a tab (``\t``), or the same number, three or more, of semicolons (``;``, as UnicodeData.txt); no
    line is prose-long; at least :data:`_MIN_TABLE_LINES` such lines."""
    text = head.decode("utf-8", errors="ignore")
    lines = [line for line in text.splitlines()[:-1] if line.strip() and not line.startswith("#")]
    if len(lines) < _MIN_TABLE_LINES or any(len(line) > 400 for line in lines):
        return None
    if all("\t" in line.strip() for line in lines):  # between cells, not an indent
        return "\t"
    counts = {line.count(";") for line in lines}
    if len(counts) == 1 and min(counts) >= 3:
        return ";"
    return None


_OLE = b"\xd0\xcf\x11\xe0"


def _document(path: Path, head: bytes, sniffed: Sniffed | None, suffix: str) -> Detection | None:
    """A PDF, or a ZIP holding a Word, PowerPoint or OpenDocument file, whatever its name; a legacy Office
    (OLE) file named as a document (its reader names the conversion)."""
    if sniffed is None and head.startswith(_OLE):
        return Detection("document", "ole") if suffix in DOCUMENT_EXTENSIONS else None
    if (sniffed is not None and sniffed.label in ("PDF document", "ZIP archive")) or b"%PDF-" in head[:1024]:
        from .documents.reader import document_format

        fmt = document_format(path)
        return Detection("document", fmt) if fmt is not None else None
    return None


def _pyav_video(path: Path) -> bool:
    """True when FFmpeg opens the file as a video of more than one picture (not an image demuxer)."""
    from ..media import import_av

    try:
        av = import_av()
    except MissingDependencyError:
        return False
    try:
        with av.open(str(path)) as container:
            if "image" in container.format.name or container.format.name.endswith("_pipe"):
                return False
            streams = [s for s in container.streams.video if s.codec_context.width]
            return bool(streams) and (bool(streams[0].frames > 1) or bool(container.duration))
    except (av.error.FFmpegError, OSError, ValueError):
        return False


def detect(path: Path) -> Detection:
    """What ``path`` is, from its content first and its extension second (see the module docstring).

    A path that cannot be read is judged by its extension alone, so the reader can report the real problem;
    a folder is not ingested.
    """
    path = Path(path)
    if path.is_dir():
        return Detection(None, reason="is a folder")
    suffix, gz_name = _inner_suffix(path)
    compressed = is_gzip(path)
    try:
        head = read_head(path, _HEAD_BYTES)
    except IngestError as e:
        if compressed:
            return Detection(None, reason=e.reason, compressed=True)
        return _by_extension(suffix)
    if not compressed and gz_name:
        suffix = path.suffix.lower()  # named .gz but not compressed: judge the name as it is
    sniffed = sniff(head)
    if not compressed:
        found = _document(path, head, sniffed, suffix)
        if found is not None:
            return found
    if sniffed is not None:
        if compressed and sniffed.label == "PDF document":
            return Detection("document", "pdf", compressed=True)  # the PDF reader unpacks it
        if compressed:
            return Detection(None, reason=f"is a gzip-compressed {sniffed.label}; decompress it first", compressed=True)
        if sniffed.kind is not None:
            return Detection(sniffed.kind)
        if sniffed.label == "ZIP archive" and suffix == ".xlsx":
            return Detection("table", "xlsx")
        return Detection(None, reason=f"is {_article(sniffed.label)} {sniffed.label}, which is not ingested")
    if not head:
        return _by_extension(suffix)  # empty: the reader says so
    if _is_text(head, path):
        found = _text_kind(suffix, head)
        return Detection(found.kind, found.format, found.reason, compressed)
    if compressed:
        return Detection(
            None, reason="is a gzip-compressed binary file (an archive?), which is not ingested", compressed=True
        )
    if _pyav_video(path):
        return Detection("video")
    return Detection(None, reason="is a binary file of a type that is not ingested")


def _article(label: str) -> str:
    return "an" if label[0] in "AEIOUaeiou" else "a"


#: What can be ingested, for messages about a file that cannot.
SUPPORTED = (
    "text (plain text, Markdown, HTML, reStructuredText, Jupyter notebooks, source code, JSON documents), "
    "documents (PDF, Word .docx, PowerPoint .pptx), tables (CSV, TSV, XLSX, JSON records), images (JPEG, "
    "PNG, WebP, GIF, BMP, TIFF) and videos (MP4, MKV, WebM, MOV, AVI, MPEG-TS, Ogg and anything else FFmpeg "
    "plays); text, tables and PDFs may be gzip-compressed"
)


def unsupported_error(path: Path, found: Detection) -> IngestError:
    """The IngestError for a file named explicitly that is not ingested: why, and what is."""
    return IngestError(path, f"{found.reason or 'is not a supported file type'}. Supported: {SUPPORTED}.")


def detect_kind(path: Path) -> str | None:
    """Return ``"text"``, ``"table"``, ``"image"``, ``"video"`` or ``"document"`` for ``path``, or None when
    not ingested (see :func:`detect`)."""
    return detect(path).kind


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


def is_folder(path: Path) -> bool:
    """``path.is_dir()``, False for a path the system refuses to look at (too long...): such a path is then
    handled as a file and fails alone, with the reason."""
    try:
        return path.is_dir()
    except OSError:
        return False


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
        if is_folder(given):
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
