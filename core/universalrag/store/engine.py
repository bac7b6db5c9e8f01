"""SQLAlchemy engine construction: psycopg 3 driver, pgvector types registered on every connection, and a ping
before a pooled connection is handed out — skipped, for searches, when that connection was used moments ago."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from contextvars import ContextVar

import psycopg
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from ..errors import ConfigError

__all__ = [
    "PING_AFTER_S",
    "SearchConnection",
    "has_binary_vectors",
    "make_engine",
    "normalise_url",
    "trust_recent_connections",
]

#: Searches skip the checkout ping of a connection checked in less than this many seconds ago.
PING_AFTER_S = 2.0
_BINARY = "universalrag_pgvector_binary"  # connection info: pgvector's types registered on it
_LAST_USED = "universalrag_last_used"  # connection info: time.monotonic() of its last check-in
_FRESH = "universalrag_fresh"  # connection info: just opened, not yet checked out
_trust_s: ContextVar[float] = ContextVar("universalrag_trust_recent_s", default=0.0)
_IDLE = psycopg.pq.TransactionStatus.IDLE


@contextlib.contextmanager
def trust_recent_connections(seconds: float | None = None) -> Iterator[None]:
    """Within this block (this thread or task), a pooled connection checked in less than ``seconds`` (default
    :data:`PING_AFTER_S`) ago is handed out without the ping round trip. For reads that are run once more when
    their connection turns out dead (the store's search does): a server restart then costs that retry, not a ping
    per call."""
    token = _trust_s.set(PING_AFTER_S if seconds is None else seconds)
    try:
        yield
    finally:
        _trust_s.reset(token)


def _enter_autocommit(conn: sa.Connection) -> psycopg.Connection:
    """``conn``'s driver connection, switched to autocommit: every statement is its own transaction, and no
    BEGIN/COMMIT round trips. Set on the psycopg connection directly — SQLAlchemy's ``isolation_level="AUTOCOMMIT"``
    does the same through its isolation-level machinery, at 0.2 ms of CPU per checkout. Statements SQLAlchemy runs
    on ``conn`` meanwhile are in autocommit too (its rollback at the end finds no transaction and sends nothing)."""
    driver = conn.connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    if driver.pgconn.transaction_status != _IDLE:  # the libpq status as is: no enum built per call
        driver.commit()  # a "connect" listener's query left its transaction open: end it as SQLAlchemy would
    driver.autocommit = True
    return driver


class SearchConnection:
    """``with SearchConnection(engine) as conn``: a pooled connection of ``engine`` in autocommit mode (its
    statements carry their own settings), handed out without the ping when it was used less than ``trust_s``
    (default :data:`PING_AFTER_S`) seconds ago, as :func:`trust_recent_connections` does; back in the pool, out of
    autocommit, after the block. What every search reads through — one plain class, cheaper to enter than the
    three generator-based context managers it replaces."""

    __slots__ = ("_conn", "_driver", "_engine", "_trust_s")

    def __init__(self, engine: sa.Engine, *, trust_s: float | None = None) -> None:
        self._engine = engine
        self._trust_s = PING_AFTER_S if trust_s is None else trust_s
        self._conn: sa.Connection | None = None
        self._driver: psycopg.Connection | None = None

    def __enter__(self) -> sa.Connection:
        token = _trust_s.set(self._trust_s)
        try:
            conn = self._engine.connect()
        finally:
            _trust_s.reset(token)
        try:
            self._driver = _enter_autocommit(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def __exit__(self, *exc: object) -> None:
        conn, driver = self._conn, self._driver
        self._conn = self._driver = None
        try:
            if driver is not None and not driver.closed:
                driver.autocommit = False
        finally:
            if conn is not None:
                conn.close()


def has_binary_vectors(conn: sa.Connection) -> bool:
    """Whether ``conn``'s driver connection registered pgvector's types (numpy vectors go over in binary)."""
    return bool(conn.connection.info.get(_BINARY))


def normalise_url(url: str | URL) -> URL:
    """The URL with the psycopg 3 driver (``postgresql://`` and ``postgres://`` are accepted)."""
    try:
        parsed = make_url(url)
    except (sa_exc.ArgumentError, ValueError) as e:
        raise ConfigError(
            "The database URL could not be parsed; expected postgresql://USER:PASSWORD@HOST:PORT/DBNAME."
        ) from e
    if parsed.get_backend_name() not in ("postgresql", "postgres"):
        raise ConfigError(f"universalrag needs PostgreSQL, not {parsed.get_backend_name()!r}.")
    return parsed.set(drivername="postgresql+psycopg")


def make_engine(url: str | URL, *, pool_size: int = 5, connect_timeout: float | None = None) -> sa.Engine:
    """An engine whose connections know pgvector's types (for binary COPY) once the extension exists.

    Pooled connections are pinged before use, so a server restart costs one failed checkout, not a stale
    connection per pool slot — except inside :func:`trust_recent_connections` for a connection used moments ago.
    ``connect_timeout`` (seconds, whole seconds upwards, at least 2 as in libpq) bounds how long opening a
    connection may take, the server's handshake included: an address that accepts but never answers fails within
    it instead of hanging.
    """
    connect_args = {} if connect_timeout is None else {"connect_timeout": max(2, math.ceil(connect_timeout))}
    # LIFO: the connection handed out is the one used last — the one whose ping a search may skip (used moments
    # ago) and whose server process is awake; FIFO hands out the one idle longest.
    engine = sa.create_engine(
        normalise_url(url), pool_size=pool_size, pool_pre_ping=False, pool_use_lifo=True, connect_args=connect_args
    )

    @sa.event.listens_for(engine, "connect")
    def _register_vector(dbapi_connection, record) -> None:  # type: ignore[no-untyped-def]
        from pgvector.psycopg import register_vector

        record.info[_FRESH] = True  # its first checkout needs no ping
        try:
            register_vector(dbapi_connection)
        except psycopg.ProgrammingError:  # the extension does not exist yet (before `init`)
            dbapi_connection.rollback()
        else:
            dbapi_connection.commit()
            record.info[_BINARY] = True

    @sa.event.listens_for(engine, "checkout")
    def _ping(dbapi_connection, record, _proxy) -> None:  # type: ignore[no-untyped-def]
        # SQLAlchemy's pool_pre_ping, made skippable: a DisconnectionError makes the pool replace the connection.
        if record.info.pop(_FRESH, False):
            return
        last, trust = record.info.get(_LAST_USED), _trust_s.get()
        if trust > 0 and last is not None and time.monotonic() - last < trust:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except psycopg.Error as e:
            raise sa_exc.DisconnectionError(f"the pooled connection is dead ({type(e).__name__})") from e

    @sa.event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection, record) -> None:  # type: ignore[no-untyped-def]
        if record is not None:
            record.info[_LAST_USED] = time.monotonic()

    return engine
