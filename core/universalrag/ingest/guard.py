"""The last guard of a run's per-file loop: whatever a reader raises for one file becomes that file's
:class:`~universalrag.errors.IngestError`, so that the run goes on with the next file.

Readers translate the errors they expect into ``IngestError`` with advice of their own; this module words the
rest (an operating-system refusal, a nesting too deep to follow, a reader's own failure). It never takes an
interrupt, an exit or the process running out of memory: those end the run.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from ..errors import IngestError

__all__ = ["file_failure", "from_caller", "is_file_failure"]

_CALLER = "_universalrag_from_caller"
F = TypeVar("F", bound=Callable[..., Any])


def from_caller(callback: F | None) -> F | None:
    """``callback`` (the caller's ``on_progress``, ``on_file``...) with what it raises marked as the caller's, so
    that the guard lets it through instead of making it a file's failure."""
    if callback is None:
        return None

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except Exception as e:
            try:
                setattr(e, _CALLER, True)
            except AttributeError:  # an exception type that takes no attributes: wrapped instead
                raise _CallerError(e) from e
            raise

    return cast(F, call)


class _CallerError(Exception):
    """An exception of the caller's callback that could not be marked."""


def is_file_failure(error: BaseException) -> bool:
    """True for an exception one file can cause (any ``Exception`` but ``MemoryError`` and what the caller's
    callbacks raise)."""
    return (
        isinstance(error, Exception)
        and not isinstance(error, MemoryError | _CallerError)
        and not getattr(error, _CALLER, False)
    )


def file_failure(path: str | Path, error: BaseException) -> IngestError:
    """The :class:`IngestError` of ``path`` for an exception its reader did not translate."""
    if isinstance(error, IngestError):
        return error
    if isinstance(error, OSError):
        if error.errno == errno.ENAMETOOLONG:
            return IngestError(
                path,
                f"its path is too long for the operating system ({len(str(path)):,} characters); "
                "rename it or move it to a shorter folder.",
            )
        return IngestError(
            path, f"could not be read ({error.strerror or error}); check that it exists and is readable."
        )
    if isinstance(error, RecursionError):
        return IngestError(path, "is nested deeper than its reader can follow; flatten its structure.")
    text = (str(error).strip().splitlines() or [""])[0][:300]
    what = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return IngestError(path, f"could not be read: its reader failed ({what}); the rest of the run went on.")
