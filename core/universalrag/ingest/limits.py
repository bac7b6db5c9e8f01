"""Caps on what one input file may expand to while it is read: Office packages (Word, PowerPoint and Excel files
are ZIP archives), the text extracted from one document, the columns of one table.

A few megabytes on disk can unpack to gigabytes (a slide whose XML compresses a thousandfold, a workbook's shared
strings); the readers behind these formats (python-docx, python-pptx, openpyxl) parse a part whole, using several
times its size in memory. So every Office package is checked before a reader opens it: the sizes its directory
declares, then each member streamed through a counter that stops at the cap (a directory can lie). Each cap is a
field of :class:`InputLimits`; ingestion applies ``IngestOptions.limits`` (docs/reliability.md lists the defaults).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError, IngestError

__all__ = ["InputLimits", "check_archive", "check_columns", "check_text_chars", "input_limits", "use_limits"]

_CHUNK = 1 << 20
#: Each cap's environment variable (read into :class:`~universalrag.config.Settings`).
_VARIABLES = {
    "member_bytes": "UNIVERSALRAG_MAX_PART_BYTES",
    "archive_bytes": "UNIVERSALRAG_MAX_ARCHIVE_BYTES",
    "text_chars": "UNIVERSALRAG_MAX_TEXT_CHARS",
    "columns": "UNIVERSALRAG_MAX_COLUMNS",
}


@dataclass(frozen=True, slots=True)
class InputLimits:
    """What one input file may expand to.

    ``member_bytes``: the uncompressed size of one member of an Office package (128 MiB: python-pptx and
    python-docx parse a part whole, at several times its size); ``archive_bytes``: all members together (1 GiB);
    ``text_chars``: the text extracted from one document (20 million characters); ``columns``: the columns of one
    table (4,096).
    """

    member_bytes: int = 128 << 20
    archive_bytes: int = 1 << 30
    text_chars: int = 20_000_000
    columns: int = 4096

    def __post_init__(self) -> None:
        for name, variable in _VARIABLES.items():
            if getattr(self, name) < 1:
                raise ConfigError(f"InputLimits.{name} ({variable}) must be at least 1, got {getattr(self, name)}.")

    @classmethod
    def from_settings(cls, settings: Settings) -> InputLimits:
        """The caps the settings give (``UNIVERSALRAG_MAX_PART_BYTES``, ``_ARCHIVE_BYTES``, ``_TEXT_CHARS``,
        ``_COLUMNS``)."""
        return cls(
            member_bytes=settings.max_part_bytes,
            archive_bytes=settings.max_archive_bytes,
            text_chars=settings.max_text_chars,
            columns=settings.max_columns,
        )


_DEFAULT = InputLimits()
_current: ContextVar[InputLimits | None] = ContextVar("universalrag_input_limits", default=None)


def input_limits() -> InputLimits:
    """The limits in force (the defaults unless :func:`use_limits` set others)."""
    return _current.get() or _DEFAULT


@contextmanager
def use_limits(limits: InputLimits | None) -> Iterator[InputLimits]:
    """Apply ``limits`` (``None``: the defaults) to the files read inside the block."""
    token = _current.set(limits or _DEFAULT)
    try:
        yield input_limits()
    finally:
        _current.reset(token)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def _over(path: Path, what: str, size: str, field: str, cap: str) -> IngestError:
    return IngestError(
        path,
        f"{what} unpacks to more than {size}, over the cap of {cap} (InputLimits.{field}); such a file would take "
        f"many times that in memory. If it is genuine, raise the cap ({_VARIABLES[field]}, or "
        f"IngestOptions(limits=InputLimits({field}=…))) "
        "or split the file.",
    )


def check_archive(path: Path, *, kind: str = "Office") -> None:
    """Refuse an Office package (a ZIP archive) whose members unpack past :class:`InputLimits`' caps, by their
    declared sizes and by streaming each member through a counter; a file that is no ZIP archive is left to the
    reader, which says so in its own words."""
    limits = input_limits()
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    with archive:
        members = archive.infolist()
        total = 0
        for info in members:
            if info.file_size > limits.member_bytes:
                raise _over(
                    path, f"its part {info.filename!r}", _mib(info.file_size), "member_bytes", _mib(limits.member_bytes)
                )
            total += info.file_size
            if total > limits.archive_bytes:
                raise _over(path, f"this {kind} file", _mib(total), "archive_bytes", _mib(limits.archive_bytes))
        total = 0
        for info in members:
            size = 0
            try:
                with archive.open(info) as member:
                    while chunk := member.read(_CHUNK):
                        size += len(chunk)
                        total += len(chunk)
                        if size > limits.member_bytes:
                            raise _over(
                                path,
                                f"its part {info.filename!r}",
                                _mib(size),
                                "member_bytes",
                                _mib(limits.member_bytes),
                            )
                        if total > limits.archive_bytes:
                            raise _over(
                                path, f"this {kind} file", _mib(total), "archive_bytes", _mib(limits.archive_bytes)
                            )
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as e:
                raise IngestError(
                    path,
                    f"is damaged: its part {info.filename!r} cannot be unpacked ({e}); open and re-save it.",
                ) from e


def check_text_chars(path: Path, chars: int) -> None:
    """Refuse a document whose extracted text passed the ``text_chars`` cap."""
    cap = input_limits().text_chars
    if chars > cap:
        raise IngestError(
            path,
            f"holds more than {cap:,} characters of text (InputLimits.text_chars); split it, or raise the cap "
            "(UNIVERSALRAG_MAX_TEXT_CHARS, or IngestOptions(limits=InputLimits(text_chars=…))).",
        )


def check_columns(path: Path, columns: int, *, where: str = "") -> None:
    """Refuse a table wider than the ``columns`` cap."""
    cap = input_limits().columns
    if columns > cap:
        raise IngestError(
            path,
            f"has a row of {columns:,} columns{where}, over the cap of {cap:,} (InputLimits.columns); a table that "
            "wide is not searchable as rows. Transpose it or raise the cap "
            "(UNIVERSALRAG_MAX_COLUMNS, or IngestOptions(limits=InputLimits(columns=…))).",
        )
