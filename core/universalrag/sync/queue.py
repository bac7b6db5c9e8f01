"""The worker's SQL against ``sync_queue``: claim, fetch, check, finish. Pure statements run on a psycopg connection.

Claiming: ``FOR UPDATE SKIP LOCKED`` picks queued items no other worker is claiming, and a session-level advisory
lock per unit (``pg_try_advisory_lock``) makes one worker at a time own a unit from claim to commit. Claims are
committed at once (attempts + 1, ``locked_by`` = the worker's backend pid), so a crash counts as an attempt and a
claim whose backend is gone (the worker was killed) is taken over by the next claim.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from ..store.schema import unit_table_name

__all__ = [
    "NOTIFY_CHANNEL",
    "QueueItem",
    "SourceRow",
    "claim",
    "fetch_rows",
    "check_rows",
    "finish",
    "release_all",
    "park_exhausted",
    "unlock",
    "unlock_items",
    "delete_units",
    "key_id",
]

#: Channel of the ``pg_notify`` sent when units are queued; the payload is the schema.
NOTIFY_CHANNEL = "universalrag_sync"


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One claimed queue entry: a source row (``row_key``) or a unit queued from SQL (``kind`` and payload)."""

    id: int
    corpus: str
    unit_id: str
    row_key: dict[str, Any] | None
    kind: str | None
    content: str | None
    data: bytes | None
    metadata: dict[str, Any] | None
    uri: str | None
    attempts: int


@dataclass(frozen=True, slots=True)
class SourceRow:
    """A source row as the corpus's expressions see it (``body``: text or a path; ``data``: image bytes)."""

    row_key: dict[str, Any]
    kind: str
    body: str | None
    data: bytes | None
    caption: str | None
    uri: str | None
    metadata: dict[str, Any]


def _queue(schema: str) -> sql.Composed:
    return sql.SQL("{}.sync_queue").format(sql.Identifier(schema))


def _claimable() -> sql.SQL:
    """Ready items no live worker holds (``q``; parameters ``corpora`` and ``lease``)."""
    return sql.SQL("""q.parked_at IS NULL AND q.run_after <= clock_timestamp()
              AND (%(corpora)s::text[] IS NULL OR q.corpus = ANY (%(corpora)s::text[]))
              AND (q.locked_by IS NULL OR q.locked_by = pg_backend_pid()
                   OR q.locked_at < clock_timestamp() - %(lease)s * interval '1 second'
                   OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = q.locked_by))""")


def queued(conn: Any, schema: str, corpora: Sequence[str]) -> dict[str, int]:
    """How many entries of each of ``corpora`` wait in the queue (not parked), by corpus (those with none left out).
    One count over the queue's (corpus, unit) index."""
    statement = sql.SQL(
        "SELECT corpus, count(*) FROM {q} WHERE corpus = ANY(%(corpora)s) AND parked_at IS NULL GROUP BY corpus"
    ).format(q=_queue(schema))
    return {str(name): int(n) for name, n in conn.execute(statement, {"corpora": list(corpora)}).fetchall()}


def park_exhausted(conn: Any, schema: str, *, max_attempts: int, corpora: Sequence[str] | None, lease_s: float) -> int:
    """Park the ready items that were claimed ``max_attempts`` times without being settled (each claim ended with
    the worker stopping: killed, or an error outside the item), so that a batch that stops every worker is not
    claimed again forever; returns how many. ``sync_retry()`` queues them again."""
    statement = sql.SQL("""
        UPDATE {q} AS q SET parked_at = clock_timestamp(), locked_by = NULL, locked_at = NULL,
            last_error = 'the worker stopped ' || q.attempts || ' times while working on this item (it was killed, '
                || 'or failed outside the item: see its log)' || coalesce('; earlier error: ' || q.last_error, '')
        WHERE q.id IN (SELECT q.id FROM {q} AS q WHERE {claimable} AND q.attempts >= %(max)s FOR UPDATE SKIP LOCKED)
    """).format(q=_queue(schema), claimable=_claimable())
    with conn.transaction():
        cursor = conn.execute(
            statement,
            {"corpora": list(corpora) if corpora else None, "lease": float(lease_s), "max": int(max_attempts)},
        )
    return int(cursor.rowcount)


def claim(
    conn: Any,
    schema: str,
    *,
    limit: int,
    corpora: Sequence[str] | None,
    lease_s: float,
    max_chars: int = 1 << 30,
    max_attempts: int | None = None,
    busy: Sequence[int] = (),
) -> list[QueueItem]:
    """Claim up to ``limit`` ready items and commit the claim; returns them in queue order (the text queued with
    an item is read up to ``max_chars`` characters).

    Items claimed ``max_attempts`` times are left for :func:`park_exhausted`; ``busy`` names the ids this session
    claimed and has not settled yet (a batch still being written), which it must not claim a second time."""
    statement = sql.SQL("""
        WITH candidates AS (
            SELECT q.id, q.corpus, q.unit_id FROM {q} AS q
            WHERE {claimable} AND (%(max)s::int IS NULL OR q.attempts < %(max)s::int)
              AND NOT (q.id = ANY (%(busy)s::bigint[]))
            ORDER BY q.id LIMIT %(limit)s
            FOR UPDATE OF q SKIP LOCKED
        ), got AS (
            SELECT c.id FROM candidates c
            WHERE pg_try_advisory_lock(hashtext(%(schema)s), hashtext(c.corpus || '/' || c.unit_id::text))
        )
        UPDATE {q} AS q SET attempts = q.attempts + 1, locked_at = clock_timestamp(), locked_by = pg_backend_pid()
        FROM got WHERE q.id = got.id
        RETURNING q.id, q.corpus, q.unit_id, q.row_key, q.kind, left(q.content, %(chars)s), q.data, q.metadata,
            q.uri, q.attempts
    """).format(q=_queue(schema), claimable=_claimable())
    with conn.transaction():
        rows = conn.execute(
            statement,
            {
                "corpora": list(corpora) if corpora else None,
                "lease": float(lease_s),
                "limit": int(limit),
                "schema": schema,
                "chars": int(max_chars),
                "max": None if max_attempts is None else int(max_attempts),
                "busy": [int(i) for i in busy],
            },
        ).fetchall()
    items = [
        QueueItem(
            id=r[0],
            corpus=r[1],
            unit_id=str(r[2]),
            row_key=r[3],
            kind=r[4],
            content=r[5],
            data=bytes(r[6]) if r[6] is not None else None,
            metadata=r[7],
            uri=r[8],
            attempts=r[9],
        )
        for r in rows
    ]
    return sorted(items, key=lambda i: i.id)


def fetch_rows(
    conn: Any, schema: str, corpus: str, keys: Sequence[dict[str, Any]], *, max_chars: int = 1 << 30
) -> list[SourceRow]:
    """The current state of the source rows with these keys (rows deleted meanwhile are simply absent); texts
    are read up to ``max_chars`` characters (the rest never leaves the server)."""
    statement = sql.SQL(
        "SELECT row_key, kind, left(body, %s), data, left(caption, %s), uri, metadata FROM {}.sync_fetch(%s, %s)"
    ).format(sql.Identifier(schema))
    rows = conn.execute(statement, (int(max_chars), int(max_chars), corpus, Jsonb(list(keys)))).fetchall()
    return [
        SourceRow(
            row_key=r[0],
            kind=r[1],
            body=r[2],
            data=bytes(r[3]) if r[3] is not None else None,
            caption=r[4],
            uri=r[5],
            metadata=dict(r[6] or {}),
        )
        for r in rows
    ]


def key_id(key: dict[str, Any]) -> str:
    """A row key as canonical JSON text (to match keys across queries)."""
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def check_rows(conn: Any, schema: str, corpus: str, keys: Sequence[dict[str, Any]]) -> dict[str, str]:
    """``present`` (now locked against deletion until commit), ``busy`` (another transaction is deleting or
    re-keying it) or ``gone``, by :func:`key_id`. Run inside the write transaction."""
    statement = sql.SQL("SELECT row_key, state FROM {}.sync_check(%s, %s)").format(sql.Identifier(schema))
    return {key_id(k): state for k, state in conn.execute(statement, (corpus, Jsonb(list(keys)))).fetchall()}


def delete_units(conn: Any, schema: str, corpus: str, unit_ids: Sequence[str]) -> int:
    """Delete units of ``corpus`` by id, with the knowledge graph's mentions of them; returns how many existed."""
    if not unit_ids:
        return 0
    ids = [uuid.UUID(u) for u in unit_ids]
    mentions = sql.SQL("DELETE FROM {}.graph_mentions WHERE corpus = %s AND unit_id = ANY (%s::uuid[])").format(
        sql.Identifier(schema)
    )
    conn.execute(mentions, (corpus, ids))
    statement = sql.SQL("DELETE FROM {}.{} WHERE id = ANY (%s::uuid[])").format(
        sql.Identifier(schema), sql.Identifier(unit_table_name(corpus))
    )
    return int(conn.execute(statement, (ids,)).rowcount)


def finish(
    conn: Any,
    schema: str,
    *,
    done: Sequence[QueueItem],
    failed: Sequence[tuple[QueueItem, str, float]],
    released: Sequence[QueueItem],
    max_attempts: int,
) -> int:
    """Settle claimed items inside the write transaction; returns how many failed items were parked.

    ``done`` items are deleted with every older entry of the same unit (they are superseded); ``failed`` ones
    keep their error and wait ``delay`` seconds, parked once they reached ``max_attempts``; ``released`` ones
    go back to the queue without counting the attempt.
    """
    q = _queue(schema)
    if done:
        conn.execute(
            sql.SQL(
                "DELETE FROM {q} AS q USING unnest(%s::text[], %s::uuid[], %s::bigint[]) AS d(corpus, unit_id, id) "
                "WHERE q.corpus = d.corpus AND q.unit_id = d.unit_id AND q.id <= d.id"
            ).format(q=q),
            ([i.corpus for i in done], [uuid.UUID(i.unit_id) for i in done], [i.id for i in done]),
        )
    parked = 0
    if failed:
        rows = conn.execute(
            sql.SQL(
                "UPDATE {q} AS q SET last_error = d.error, locked_by = NULL, locked_at = NULL, "
                "run_after = clock_timestamp() + d.delay * interval '1 second', "
                "parked_at = CASE WHEN q.attempts >= %s THEN clock_timestamp() END "
                "FROM unnest(%s::bigint[], %s::text[], %s::float8[]) AS d(id, error, delay) "
                "WHERE q.id = d.id RETURNING q.parked_at IS NOT NULL"
            ).format(q=q),
            (
                int(max_attempts),
                [i.id for i, _, _ in failed],
                [e for _, e, _ in failed],
                [float(d) for _, _, d in failed],
            ),
        ).fetchall()
        parked = sum(1 for (is_parked,) in rows if is_parked)
    if released:
        conn.execute(
            sql.SQL(
                "UPDATE {q} SET attempts = greatest(attempts - 1, 0), locked_by = NULL, locked_at = NULL "
                "WHERE id = ANY (%s)"
            ).format(q=q),
            ([i.id for i in released],),
        )
    return parked


def release_all(conn: Any, schema: str) -> None:
    """Give back every claim of this (autocommit) connection and its unit locks, after an error or when stopping.

    The attempt stays counted (as it does when the worker is killed): a batch that stops the worker every time is
    parked by :func:`park_exhausted` after ``max_attempts`` instead of being claimed again forever."""
    conn.execute(
        sql.SQL("UPDATE {q} SET locked_by = NULL, locked_at = NULL WHERE locked_by = pg_backend_pid()").format(
            q=_queue(schema)
        )
    )
    unlock(conn)


def unlock(conn: Any) -> None:
    """Release the unit locks this session holds (claims end with the write transaction)."""
    conn.execute("SELECT pg_advisory_unlock_all()")


def unlock_items(conn: Any, schema: str, items: Sequence[QueueItem]) -> None:
    """Release the unit locks of ``items`` only (one per claim: a unit claimed again by a batch still in flight
    stays locked for that batch), once their write transaction committed."""
    if items:
        conn.execute(
            "SELECT count(pg_advisory_unlock(hashtext(%s), hashtext(c || '/' || u))) "
            "FROM unnest(%s::text[], %s::text[]) AS i(c, u)",
            (schema, [i.corpus for i in items], [i.unit_id for i in items]),
        )
