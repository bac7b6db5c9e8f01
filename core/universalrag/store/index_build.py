"""Building a corpus's HNSW indexes again: the server's memory and workers for the build, sized to the machine, and
the build's progress read from ``pg_stat_progress_create_index`` while it runs.

An HNSW build is several times faster when the whole graph fits in ``maintenance_work_mem`` (PostgreSQL's default,
64 MB, holds the graph of about 40,000 vectors of 384 dimensions; past it pgvector says "hnsw graph no longer fits
into maintenance_work_mem" and slows down) and spreads over ``max_parallel_maintenance_workers`` (default 2). Both are
set with ``set_config(..., true)`` (``SET LOCAL``) in the building transaction only: nothing else on the server sees
them. They are sized from the machine this library runs on, which is the server's own when it is the embedded one; a
remote server may have less memory, so each is a bounded share (:data:`BUILD_MEMORY_SHARE`, :data:`BUILD_MEMORY_MAX`,
:data:`BUILD_WORKERS_MAX`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import sqlalchemy as sa

__all__ = [
    "BUILD_MEMORY_MAX",
    "BUILD_MEMORY_MIN",
    "BUILD_MEMORY_SHARE",
    "BUILD_WORKERS_MAX",
    "PROGRESS_EVERY_S",
    "BuildProgress",
    "build_settings",
    "watch_build",
]

#: The share of the machine's memory an index build may use (``maintenance_work_mem``) ...
BUILD_MEMORY_SHARE = 0.25
#: ... at most this much (bytes): a build of 1M vectors of 384 dimensions needs about 1.5 GB ...
BUILD_MEMORY_MAX = 4 << 30
#: ... and at least PostgreSQL's default.
BUILD_MEMORY_MIN = 64 << 20
#: The most parallel workers an index build asks for (``max_parallel_maintenance_workers``): one core is kept for the
#: leader, and half the rest for everything else the machine does.
BUILD_WORKERS_MAX = 8


def _machine_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX: PostgreSQL's default
        return BUILD_MEMORY_MIN


def build_settings(*, memory: int | None = None, cores: int | None = None) -> dict[str, str]:
    """The transaction-local settings of an index build on a machine of ``memory`` bytes and ``cores`` cores (default:
    this one's): ``maintenance_work_mem`` a bounded share of the memory (in kB) and
    ``max_parallel_maintenance_workers`` half the cores but one."""
    memory = _machine_memory() if memory is None else memory
    cores = (os.cpu_count() or 1) if cores is None else cores
    work_mem = min(max(int(memory * BUILD_MEMORY_SHARE), BUILD_MEMORY_MIN), BUILD_MEMORY_MAX)
    workers = min(max((cores - 1) // 2, 0), BUILD_WORKERS_MAX)
    return {"maintenance_work_mem": f"{work_mem >> 10}kB", "max_parallel_maintenance_workers": str(workers)}


#: How often a running build's progress is read (seconds).
PROGRESS_EVERY_S = 0.5


@dataclass(frozen=True, slots=True)
class BuildProgress:
    """One reading of a running index build: the ``table`` being indexed, the build's ``phase`` (PostgreSQL's words,
    e.g. "building index: loading tuples"), and ``done`` of ``total`` of what that phase counts (``what``: "vectors"
    or "blocks" of the table; pgvector's HNSW build counts the blocks it has read). The index itself is not named:
    until its transaction commits, no other session can see it."""

    table: str
    phase: str
    done: int
    total: int
    what: str


_PROGRESS = sa.text(
    "SELECT p.phase, p.tuples_done, p.tuples_total, p.blocks_done, p.blocks_total, "
    "(SELECT relname FROM pg_class WHERE oid = p.relid) AS table_name "
    "FROM pg_stat_progress_create_index p WHERE p.pid = :pid"
)


def _reading(row: sa.RowMapping) -> BuildProgress:
    if row["tuples_total"]:
        done, total, what = row["tuples_done"], row["tuples_total"], "vectors"
    else:
        done, total, what = row["blocks_done"] or 0, row["blocks_total"] or 0, "blocks"
    return BuildProgress(
        table=row["table_name"] or "", phase=row["phase"] or "", done=int(done), total=int(total), what=what
    )


@contextmanager
def watch_build(
    engine: sa.Engine, pid: int, on_progress: Callable[[BuildProgress], object] | None, *, every_s: float | None = None
) -> Iterator[None]:
    """While the body runs (an index build in the backend ``pid``), read its progress every ``every_s`` seconds
    (default :data:`PROGRESS_EVERY_S`) on a connection of its own and hand each changed reading to ``on_progress``
    (on this watcher's thread). Nothing is read without ``on_progress``; a reading that fails stops the watching,
    never the build."""
    if on_progress is None:
        yield
        return
    every_s = PROGRESS_EVERY_S if every_s is None else every_s
    stop = threading.Event()

    def watch() -> None:
        last: BuildProgress | None = None
        try:
            with engine.connect() as conn:
                while not stop.wait(every_s):
                    row = conn.execute(_PROGRESS, {"pid": pid}).mappings().first()
                    conn.rollback()  # each reading sees the build as it is now
                    if row is not None and (reading := _reading(row)) != last:
                        on_progress(reading)
                        last = reading
        except sa.exc.SQLAlchemyError:
            return

    watcher = threading.Thread(target=watch, name=f"index-build-progress-{pid}", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
