"""``sync_status``: backlog, lag, failures and the progress of an attached table's backfill, per synced corpus,
read from the ``sync_status`` view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from ..errors import StoreError
from ..store import Store

__all__ = ["BackfillProgress", "CorpusSyncStatus", "backfill_line", "sync_status"]

_COLUMNS = ("corpus", "source", "backlog", "in_progress", "retrying", "failed", "lag", "last_error")
#: Columns of the view from revision 0016 on (the backfill of an attached table).
_BACKFILL_COLUMNS = ("backfill_rows", "backfill_left", "backfill_failed", "attached_for")


@dataclass(frozen=True, slots=True)
class BackfillProgress:
    """The rows a table held when ``attach_table`` queued them, while the worker still embeds them.

    ``done``: embedded (or removed, for rows deleted meanwhile); ``left``: still queued; ``failed``: parked after
    too many errors; ``rate``: rows done per second since the table was attached (0 when none is done yet);
    ``eta_s``: seconds left at that rate (``None`` while no row is done).
    """

    rows: int
    done: int
    left: int
    failed: int
    elapsed_s: float
    rate: float
    eta_s: float | None

    @property
    def fraction(self) -> float:
        """The share of the rows done, 0 to 1."""
        return self.done / self.rows if self.rows else 1.0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dictionary."""
        return {
            "rows": self.rows,
            "done": self.done,
            "left": self.left,
            "failed": self.failed,
            "elapsed_s": round(self.elapsed_s, 1),
            "rate": round(self.rate, 2),
            "eta_s": None if self.eta_s is None else round(self.eta_s, 1),
        }


def backfill_progress(rows: int, left: int, failed: int, elapsed_s: float) -> BackfillProgress:
    """Progress of a backfill of ``rows`` rows of which ``left`` are queued and ``failed`` parked after
    ``elapsed_s`` seconds."""
    done = max(rows - left - failed, 0)
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    return BackfillProgress(
        rows=rows,
        done=done,
        left=left,
        failed=failed,
        elapsed_s=elapsed_s,
        rate=rate,
        eta_s=left / rate if rate > 0 else None,
    )


def backfill_line(progress: dict[str, Any]) -> str:
    """One line for people: ``backfill 12,345 / 100,000 rows (12.3 %), 51.2 rows/s, about 28 min left``
    (``progress``: :meth:`BackfillProgress.to_dict`)."""
    rows, done = int(progress["rows"]), int(progress["done"])
    line = (
        f"backfill {done:,} / {rows:,} rows ({100 * done / rows if rows else 100:.1f} %), {progress['rate']:.1f} rows/s"
    )
    eta = progress["eta_s"]
    if eta is None:
        line += ", no row done yet (is a worker running?)"
    else:
        line += f", about {_duration(float(eta))} left"
    if progress["failed"]:
        line += f", {progress['failed']:,} failed"
    return line


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True, slots=True)
class CorpusSyncStatus:
    """One corpus fed through the sync queue.

    ``backlog``: queued units not parked; ``in_progress``: claimed by a worker; ``retrying``: waiting after an
    error; ``failed``: parked after too many errors (``SELECT universalrag.sync_retry()`` queues them again);
    ``lag_s``: age of the oldest queued unit; ``source``: the attached table, if any; ``backfill``: while rows
    that the table held when attached are still queued, their progress (else ``None``).
    """

    corpus: str
    source: str | None
    backlog: int
    in_progress: int
    retrying: int
    failed: int
    lag_s: float
    last_error: str | None
    backfill: BackfillProgress | None = None

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
            "backfill": None if self.backfill is None else self.backfill.to_dict(),
        }


def _backfill(row: Any) -> BackfillProgress | None:
    rows, left = row.get("backfill_rows"), int(row.get("backfill_left") or 0)
    if rows is None or left == 0:
        return None  # attached before revision 0016, not attached, or done
    return backfill_progress(int(rows), left, int(row["backfill_failed"] or 0), row["attached_for"].total_seconds())


def sync_status(store: Store) -> list[CorpusSyncStatus]:
    """The sync state of every corpus attached to a table or fed by ``add_text``/``add_image``/``add_file``,
    on this database and on the servers of remote corpora (each keeps its own queue; a server that cannot be
    reached is left out with a warning).

    An empty list when the schema predates the sync migration.
    """
    with store.transaction("read the sync status") as conn:
        inspector = sa.inspect(conn)
        if not inspector.has_table("sync_queue", schema=store.schema):
            return []
        present = {c["name"] for c in inspector.get_columns("sync_status", schema=store.schema)}
        wanted = _COLUMNS + tuple(c for c in _BACKFILL_COLUMNS if c in present)
        view = sa.table("sync_status", *(sa.column(c) for c in wanted), schema=store.schema)
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
            backfill=_backfill(r),
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
