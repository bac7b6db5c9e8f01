"""SQLAlchemy engine construction: psycopg 3 driver, pgvector types registered on every connection."""

from __future__ import annotations

import math

import psycopg
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from ..errors import ConfigError

__all__ = ["make_engine", "normalise_url"]


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
    connection per pool slot. ``connect_timeout`` (seconds, whole seconds upwards, at least 2 as in libpq)
    bounds how long opening a connection may take, the server's handshake included: an address that accepts
    but never answers fails within it instead of hanging.
    """
    connect_args = {} if connect_timeout is None else {"connect_timeout": max(2, math.ceil(connect_timeout))}
    engine = sa.create_engine(normalise_url(url), pool_size=pool_size, pool_pre_ping=True,
                              connect_args=connect_args)

    @sa.event.listens_for(engine, "connect")
    def _register_vector(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        from pgvector.psycopg import register_vector

        try:
            register_vector(dbapi_connection)
        except psycopg.ProgrammingError:  # the extension does not exist yet (before `init`)
            dbapi_connection.rollback()
        else:
            dbapi_connection.commit()

    return engine
