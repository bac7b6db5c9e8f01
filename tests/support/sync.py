"""Helpers for the sync tests: an application schema next to the test schema, written with plain SQL."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

__all__ = ["app_sql", "attach_table", "queue_count", "unit_rows"]


def app_sql(url: str) -> psycopg.Connection[Any]:
    """An autocommit psycopg connection, as an application would hold (no project code)."""
    return psycopg.connect(url, autocommit=True)


def attach_table(conn: psycopg.Connection[Any], schema: str, table: str, *, corpus: str, content: str) -> None:
    """``SELECT schema.attach_table(table, corpus => ..., content => ...)`` as an application would send it
    (``table`` qualified, e.g. ``"shop.parts"``)."""
    conn.execute(
        sql.SQL("SELECT {}.attach_table({}::regclass, corpus => {}, content => {})").format(
            sql.Identifier(schema), sql.Literal(table), sql.Literal(corpus), sql.Literal(content)
        )
    )


def queue_count(
    conn: psycopg.Connection[Any], schema: str, corpus: str | None = None, *, parked: bool | None = None
) -> int:
    """Entries of the sync queue (of ``corpus``; only parked / only not parked when ``parked`` is given)."""
    where = [sql.SQL("true")]
    params: list[Any] = []
    if corpus is not None:
        where.append(sql.SQL("corpus = %s"))
        params.append(corpus)
    if parked is not None:
        where.append(sql.SQL("parked_at IS NOT NULL") if parked else sql.SQL("parked_at IS NULL"))
    statement = sql.SQL("SELECT count(*) FROM {}.sync_queue WHERE {}").format(
        sql.Identifier(schema), sql.SQL(" AND ").join(where)
    )
    return int(conn.execute(statement, params).fetchone()[0])  # type: ignore[index]


def unit_rows(conn: psycopg.Connection[Any], schema: str, corpus: str) -> dict[str, dict[str, Any]]:
    """Units of ``corpus`` by their source row's key text (or id for units queued from SQL)."""
    statement = sql.SQL("SELECT id::text, content, metadata, created_at, uri, embedding IS NOT NULL FROM {}.{}").format(
        sql.Identifier(schema), sql.Identifier(f"corpus_{corpus}")
    )
    out: dict[str, dict[str, Any]] = {}
    for uid, content, metadata, created, uri, has_vector in conn.execute(statement).fetchall():
        key = metadata.get("source_key")
        name = str(next(iter(key.values()))) if isinstance(key, dict) and len(key) == 1 else uid
        out[name] = {
            "id": uid,
            "content": content,
            "metadata": metadata,
            "created_at": created,
            "uri": uri,
            "has_vector": has_vector,
        }
    return out
