"""Searches as sequences of statements, run on one connection with the fewest round trips.

A search (:mod:`universalrag.store.corpus_search`) is written as a generator that yields the statements it needs, one
step at a time, and receives each one's rows. :func:`run_steps` drives several such searches together: at every
step it sends the next statement of every search still running in one round trip (psycopg's pipeline mode), so
probing six corpora costs as many round trips as the longest of their searches, not the sum, on one connection
and in one thread.

A statement is either a :class:`Raw` one — SQL text compiled once per shape (:func:`compiled`, cached) and
driver-ready parameters, which psycopg prepares on the server after a few runs — or any SQLAlchemy statement,
run through SQLAlchemy one after the other (those whose parameters need SQLAlchemy's processing, e.g. a
metadata filter). Where listeners of SQLAlchemy's cursor events are registered (logging, tracing), every
statement goes through SQLAlchemy instead, so they keep seeing all of them. Query vectors go to the server in
pgvector's binary format where the connection registered pgvector's types (:func:`vector_parameter`), not as 384
numbers written out as text; lists of ids and part numbers as one array literal (:func:`array_parameter`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import psycopg
import sqlalchemy as sa
from psycopg.rows import dict_row
from sqlalchemy import exc as sa_exc

__all__ = ["Raw", "Search", "Step", "array_parameter", "compiled", "run_steps", "vector_parameter"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Raw:
    """A statement as the driver takes it: SQL text with ``%(name)s`` placeholders and its parameters."""

    sql: str
    params: Mapping[str, Any]


#: What a search yields: a driver-ready statement, or a SQLAlchemy one.
Step = Raw | sa.Executable
#: A search: yields statements, receives each one's rows (mappings), returns its result.
Search = Generator[Step, Sequence[Mapping[str, Any]], _T]

_MAX_CACHED = 512
_cache: dict[Hashable, tuple[str, dict[str, Any]]] = {}
_cache_lock = threading.Lock()


def compiled(dialect: sa.Dialect, key: Hashable, build: Callable[[], sa.ClauseElement]) -> tuple[str, dict[str, Any]]:
    """The SQL text and constant parameters of the statement ``build()`` returns, compiled once per ``key`` (which
    must name everything the text depends on: tables, limit, settings, shape). The caller replaces the parameters
    that vary (vectors, ids) by name."""
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    compiled_stmt = build().compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    entry = (str(compiled_stmt), dict(compiled_stmt.params))
    with _cache_lock:
        if len(_cache) >= _MAX_CACHED:
            _cache.clear()  # shapes are few (corpora x limits); a full cache means tables came and went
        _cache[key] = entry
    return entry


def vector_parameter(vector: Sequence[float] | np.ndarray, *, binary: bool) -> np.ndarray | str:
    """``vector`` as the driver sends it: a float32 array (pgvector's binary format) when the connection
    registered pgvector's types (``binary``, :func:`~universalrag.store.engine.has_binary_vectors`), else
    pgvector's text form."""
    array = np.asarray(vector, dtype=np.float32)
    if binary:
        return array
    return "[" + ",".join(map(repr, array.tolist())) + "]"


def array_parameter(values: Sequence[str | int]) -> str:
    """``values`` (strings or whole numbers) as PostgreSQL's array literal, for a placeholder the statement casts
    (``%(ids)s::TEXT[]``, ``%(ords)s::INTEGER[]``): psycopg dumps a Python list element by element, 230 µs for the 75
    keys of a table probe's matched parts, against 3 µs for one string. Strings are quoted and escaped, so any text
    stays one element; anything else (None, a float, a nested list) is a ``TypeError``."""
    items = []
    for v in values:
        if isinstance(v, str):
            items.append('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"')
        elif isinstance(v, int) and not isinstance(v, bool):
            items.append(str(v))
        else:
            raise TypeError(f"an array parameter holds strings or whole numbers, not {type(v).__name__}")
    return "{" + ",".join(items) + "}"


def run_steps(conn: sa.Connection, searches: Sequence[Search[_T]]) -> list[_T]:
    """Drive ``searches`` on ``conn`` together (see the module docstring); their results, in order."""
    results: dict[int, _T] = {}
    pending: dict[int, Step] = {}
    for i, search in enumerate(searches):
        _advance(i, search, None, pending, results, first=True)
    while pending:
        order = list(pending)
        rows = _execute(conn, [pending[i] for i in order])
        for i, got in zip(order, rows, strict=True):
            _advance(i, searches[i], got, pending, results)
    return [results[i] for i in range(len(searches))]


def _advance(
    i: int,
    search: Search[_T],
    rows: Sequence[Mapping[str, Any]] | None,
    pending: dict[int, Step],
    results: dict[int, _T],
    *,
    first: bool = False,
) -> None:
    try:
        pending[i] = next(search) if first else search.send(rows)  # type: ignore[arg-type]
    except StopIteration as done:
        pending.pop(i, None)
        results[i] = done.value


def _execute(conn: sa.Connection, steps: Sequence[Step]) -> list[Sequence[Mapping[Any, Any]]]:
    """The rows of every step: SQLAlchemy statements one by one, driver-ready ones on the driver (several in one
    pipeline)."""
    raw = [(i, s) for i, s in enumerate(steps) if isinstance(s, Raw)]
    if len(raw) == len(steps) and not _observed(conn):  # the common case: every statement straight to the driver
        return _on_driver(conn, steps)  # type: ignore[arg-type]
    out: list[Sequence[Mapping[Any, Any]] | None] = [None] * len(steps)
    for i, step in enumerate(steps):
        if not isinstance(step, Raw):
            out[i] = conn.execute(step).mappings().all()
    if raw and _observed(conn):  # someone listens to SQLAlchemy's statement events: they see every statement
        for i, step in raw:
            out[i] = conn.exec_driver_sql(step.sql, dict(step.params)).mappings().all()
    elif raw:
        for (i, _), rows in zip(raw, _on_driver(conn, [s for _, s in raw]), strict=True):
            out[i] = rows
    return out  # type: ignore[return-value]


def _observed(conn: sa.Connection) -> bool:
    """Whether listeners of SQLAlchemy's cursor events (SQL logging, tracing, tests counting statements) are
    registered on ``conn`` or its engine: then driver-ready statements go through SQLAlchemy one by one, so they see
    each with its full execution context — at the cost of the round trips and the CPU the direct path saves."""
    return bool(conn.dispatch.before_cursor_execute) or bool(conn.dispatch.after_cursor_execute)


def _on_driver(conn: sa.Connection, steps: Sequence[Raw]) -> list[Sequence[Mapping[Any, Any]]]:
    """Run ``steps`` on ``conn``'s psycopg connection (inside its transaction if it has one): one statement as is,
    several in one pipeline (one round trip). A connection that died under them is invalidated, and the error
    says so, as SQLAlchemy's own execution does (the store's read retry then opens a fresh one)."""
    driver = conn.connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    try:
        if len(steps) == 1:
            with driver.cursor(row_factory=dict_row) as cursor:
                cursor.execute(steps[0].sql, steps[0].params)
                return [cursor.fetchall()]
        with driver.pipeline():
            cursors = [driver.cursor(row_factory=dict_row) for _ in steps]
            for cursor, step in zip(cursors, steps, strict=True):
                cursor.execute(step.sql, step.params)
        return [cursor.fetchall() for cursor in cursors]
    except psycopg.Error as e:
        invalidated = driver.closed or driver.broken
        if invalidated:
            conn.invalidate(e)
        raise sa_exc.DBAPIError.instance(
            steps[0].sql, None, e, psycopg.Error, connection_invalidated=invalidated
        ) from e
