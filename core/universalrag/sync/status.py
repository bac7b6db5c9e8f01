"""``sync_status``: backlog, lag and failures per synced corpus, read from the ``sync_status`` view."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from ..errors import StoreError
from ..store import Store

__all__ = ["CorpusSyncStatus", "sync_status"]


@dataclass(frozen=True, slots=True)
class CorpusSyncStatus:
    """One corpus fed through the sync queue.

    ``backlog``: queued units not parked; ``in_progress``: claimed by a worker; ``retrying``: waiting after an
    error; ``failed``: parked after too many errors (``SELECT universalrag.sync_retry()`` queues them again);
    ``lag_s``: age of the oldest queued unit; ``source``: the attached table, if any.
    """

    corpus: str
    source: str | None
    backlog: int
    in_progress: int
    retrying: int
    failed: int
    lag_s: float
    last_error: str | None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dictionary."""
        return {
            "corpus": self.corpus,
            "source": self.source,
            "backlog": self.backlog,
            "in_progress": self.in_progress,
            "retrying": self.retrying,
            "failed": self.failed,
            "lag_s": round(self.lag_s, 3),
            "last_error": self.last_error,
        }


def sync_status(store: Store) -> list[CorpusSyncStatus]:
    """The sync state of every corpus attached to a table or fed by ``add_text``/``add_image``/``add_file``,
    on this database and on the servers of remote corpora (each keeps its own queue; a server that cannot be
    reached is left out with a warning).

    An empty list when the schema predates the sync migration.
    """
    view = sa.table(
        "sync_status",
        *(
            sa.column(c)
            for c in ("corpus", "source", "backlog", "in_progress", "retrying", "failed", "lag", "last_error")
        ),
        schema=store.schema,
    )
    with store.transaction("read the sync status") as conn:
        if not sa.inspect(conn).has_table("sync_queue", schema=store.schema):
            return []
        rows = conn.execute(sa.select(view).order_by(view.c.corpus)).mappings().all()
    here = [
        CorpusSyncStatus(
            corpus=r["corpus"],
            source=r["source"],
            backlog=int(r["backlog"]),
            in_progress=int(r["in_progress"]),
            retrying=int(r["retrying"]),
            failed=int(r["failed"]),
            lag_s=r["lag"].total_seconds(),
            last_error=r["last_error"],
        )
        for r in rows
    ]
    for alias, names in store.remote_corpora().items():
        if alias not in store.settings.servers:
            continue  # not configured here: the worker says so; the status shows what it can reach
        member = store.member(alias)
        try:
            here += sync_status(member)
        except StoreError as e:  # a server that is down leaves its corpora out, with a warning
            store.skip_unreachable(member, names, e)
    return sorted(here, key=lambda status: status.corpus)
