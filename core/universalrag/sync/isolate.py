"""Failure isolation for the sync worker: one item that the encoder or the database refuses fails alone.

A batch is tried whole first (the common case costs nothing more); when it fails with an error that belongs to
its content, it is split in halves and each half tried again, down to the single item, which then fails with the
reason. An error that is not about the content (the connection is lost, the process is interrupted) is raised
at once and ends the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import psycopg

__all__ = ["bisect", "describe", "item_error", "refused_by_database"]

T = TypeVar("T")


def item_error(error: BaseException) -> bool:
    """True for an exception that one item's content can cause (never an interrupt, an exit or memory
    exhaustion, which concern the whole process)."""
    return isinstance(error, Exception) and not isinstance(error, MemoryError)


def refused_by_database(error: BaseException) -> bool:
    """True when the database refused a statement (a data error, a limit, a trigger) on a connection that is
    still usable; False when the connection itself failed."""
    if not isinstance(error, psycopg.Error) or getattr(error, "sqlstate", None) is None:
        return False
    sqlstate = str(error.sqlstate)
    # Class 08: connection exceptions; 57P: the server is shutting down or the backend was terminated.
    return not (sqlstate.startswith("08") or sqlstate.startswith("57P"))


def bisect(
    items: Sequence[T],
    run: Callable[[Sequence[T]], None],
    fail: Callable[[T, BaseException], None],
    *,
    isolable: Callable[[BaseException], bool],
) -> None:
    """``run(items)``; when it raises an error ``isolable`` accepts, run each half again, down to the single
    item, for which ``fail(item, error)`` is called instead. Other errors propagate."""
    if not items:
        return
    try:
        run(items)
        return
    except BaseException as e:
        if not isolable(e):
            raise
        if len(items) == 1:
            fail(items[0], e)
            return
    middle = len(items) // 2
    bisect(items[:middle], run, fail, isolable=isolable)
    bisect(items[middle:], run, fail, isolable=isolable)


def describe(error: BaseException) -> str:
    """A one-line reason for a stored item error (a database error's primary message, else the exception)."""
    if isinstance(error, psycopg.Error) and error.diag.message_primary:
        return f"the database refused to store it ({error.diag.message_primary})"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
