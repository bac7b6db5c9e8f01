"""The worker's own psycopg connections (autocommit; claims and unit locks belong to the session)."""

from __future__ import annotations

from typing import Any

import psycopg

from ..config import redact_url
from ..store.engine import normalise_url
from ..store.translate import store_error

__all__ = ["connect"]


def connect(url: str) -> Any:
    """An autocommit psycopg connection to ``url`` that knows pgvector's types."""
    from pgvector.psycopg import register_vector

    conninfo = normalise_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        conn = psycopg.connect(conninfo, autocommit=True, application_name="universalrag worker")
        register_vector(conn)
    except psycopg.Error as e:
        raise store_error(e, "connect the sync worker", redact_url(url)) from e
    return conn
