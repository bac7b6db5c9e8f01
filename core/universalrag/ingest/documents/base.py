"""What the PDF, Word and PowerPoint readers share: construction, the context-manager protocol, ``info``, the
fallback title (:func:`file_stem`), and the translation of an Office package that cannot be opened into an
:class:`~universalrag.errors.IngestError`."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from ...errors import IngestError
from ..limits import check_archive
from .model import DocumentInfo, DocumentOptions

__all__ = ["BaseReader", "file_stem", "open_office_package"]


def file_stem(path: Path) -> str:
    """The file's name without its extensions of format and compression (``nettle.pdf.gz`` → ``nettle``): the
    title of a document that names none."""
    name = path.stem if path.suffix.lower() in (".gz", ".gzip") else path.name
    return Path(name).stem


class BaseReader:
    """A reader of one file: ``with Reader(path) as r: r.info, r.pages()``. Subclasses implement
    :meth:`open` (which sets ``_info``), :meth:`close` and ``pages()``."""

    format = ""

    def __init__(self, path: str | Path, *, options: DocumentOptions | None = None) -> None:
        self.path = Path(path)
        self.options = options or DocumentOptions()
        self._info: DocumentInfo | None = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> DocumentInfo:
        """Open and check the file."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the parsed file."""

    @property
    def info(self) -> DocumentInfo:
        """What the file says about itself (after :meth:`open`)."""
        if self._info is None:
            raise RuntimeError("Call open() (or use the reader as a context manager) first.")
        return self._info


def open_office_package(path: Path, load: Callable[[str], Any], *, not_a_package: type[Exception], kind: str) -> Any:
    """``load(path)`` for a Word or PowerPoint file; a file that is not such a package, or whose XML is damaged,
    becomes an :class:`IngestError` saying how to repair it. ``kind`` names it ("Word (.docx)"). A package whose
    parts unpack past the caps of :mod:`universalrag.ingest.limits` is refused before it is loaded."""
    check_archive(path, kind=kind.split()[0])
    try:
        return load(str(path))
    except (not_a_package, zipfile.BadZipFile, KeyError, ValueError, OSError) as e:
        raise IngestError(
            path, f"is not a readable {kind} file ({e}); open and re-save it in {kind.split()[0]} or LibreOffice."
        ) from e
    except Exception as e:
        if type(e).__module__.startswith("lxml"):
            raise IngestError(path, f"is damaged: its XML cannot be parsed ({e}); re-save it.") from e
        raise
