"""The sync worker: embeds queued units in batches and writes them idempotently.

One batch: claim (committed) → read the current source rows → load and embed outside any transaction → one
write transaction that, per unit, locks its source row against deletion, deletes the unit's old vectors and
writes the new ones, and settles the queue. While draining (:meth:`Worker.drain`, :meth:`Worker.run`), the next
batch is claimed and read before a batch is written, and the encoder embeds it while the database writes (and
indexes) the first one. A unit's id is derived from its corpus and source row key, so a
batch replayed after a crash rewrites the same rows: at-least-once processing, exactly-once effect.

Corpora on other servers (``UNIVERSALRAG_SERVERS``, docs/scaling.md) have their queue on their server: a worker
of the home store also serves those, through one member worker per server.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from ..embed import normalised_mean
from ..embed.base import Embedder, check_embedder
from ..errors import ConfigError, StoreError
from ..store import Store, writer
from ..store.translate import store_error
from ..types import CorpusSpec, Modality, Unit
from . import isolate, queue
from .connection import connect
from .content import MAX_TEXT_CHARS, ContentLoader, ItemError, Loaded

__all__ = ["BatchResult", "Worker", "WorkerOptions"]

log = logging.getLogger(__name__)

#: Seconds between two passes of :func:`queue.park_exhausted` in one worker (and a pass on its first batch). The
#: pass reads every ready item of the queue; run before every batch it took about 4 ms a batch on a queue of 6,000
#: items and grows with the queue, while what it parks (items whose worker stopped ``max_attempts`` times) is
#: never claimed meanwhile (:func:`queue.claim` leaves them out), so it only needs to run now and then.
PARK_INTERVAL_S = 30.0


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker claims and retries.

    ``retry_delay_s`` doubles with every failed attempt (capped at an hour); an item that failed
    ``max_attempts`` times is parked (``sync_retry()`` queues it again). ``lease_s`` bounds how long a claim of a
    backend that still exists is respected (claims of a vanished backend are taken over at once).
    """

    batch_size: int = 128
    max_attempts: int = 5
    retry_delay_s: float = 5.0
    poll_interval_s: float = 5.0
    lease_s: float = 900.0
    corpora: tuple[str, ...] = ()
    file_roots: tuple[Path, ...] = ()
    allow_urls: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"The batch size must be at least 1, got {self.batch_size}.")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {self.max_attempts}.")


@dataclass(slots=True)
class BatchResult:
    """What one batch (or a drain) did: units written, units removed, items failed / parked / given back."""

    claimed: int = 0
    written: int = 0
    removed: int = 0
    failed: int = 0
    parked: int = 0
    released: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: BatchResult) -> None:
        """Accumulate ``other`` into this result."""
        for name in ("claimed", "written", "removed", "failed", "parked", "released"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors.extend(other.errors)

    @property
    def progressed(self) -> bool:
        """True when the batch settled at least one item."""
        return self.written + self.removed + self.failed > 0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "claimed": self.claimed,
            "written": self.written,
            "removed": self.removed,
            "failed": self.failed,
            "parked": self.parked,
            "released": self.released,
            "errors": self.errors[:20],
        }


@dataclass(slots=True)
class _Job:
    item: queue.QueueItem
    loaded: Loaded | None = None  # None: the content is NULL or the row is gone → remove the unit
    error: str | None = None
    vector: np.ndarray | None = None
    visual: np.ndarray | None = None


@dataclass(slots=True)
class _Batch:
    """Claimed items, the jobs for the newest entry of each unit, and the older entries those supersede;
    ``embedding`` while the encoder works on the jobs in the background."""

    items: list[queue.QueueItem]
    jobs: list[_Job] = field(default_factory=list)
    superseded: list[queue.QueueItem] = field(default_factory=list)
    embedding: Future[None] | None = None


def _by_corpus(jobs: list[_Job]) -> dict[str, list[_Job]]:
    out: dict[str, list[_Job]] = {}
    for job in jobs:
        out.setdefault(job.item.corpus, []).append(job)
    return out


def _loaded(job: _Job) -> Loaded:
    assert job.loaded is not None
    return job.loaded


def _embed_isolated(jobs: list[_Job], embed: Callable[[list[_Job]], Any], attribute: str, what: str) -> None:
    """Embed ``jobs`` in one call; when the encoder refuses the batch, in halves down to the single item, so that
    only the item it refuses fails (with the encoder's reason) and the rest goes on."""

    def run(batch: Sequence[_Job]) -> None:
        for job, vec in zip(batch, embed(list(batch)), strict=True):
            setattr(job, attribute, vec)

    def fail(job: _Job, error: BaseException) -> None:
        job.error = f"{what} failed on this item: {error}"

    isolate.bisect(jobs, run, fail, isolable=isolate.item_error)


class Worker:
    """Embeds ``store``'s sync queue with ``embedder`` (and ``visual_encoder`` for image corpora).

    The constructor does no I/O. Use :meth:`run_batch`, :meth:`drain` (``worker --once``) or :meth:`run`
    (wakes on ``LISTEN universalrag_sync``, polls every ``poll_interval_s`` otherwise). Close it (or use it as a
    context manager) to give back its claims. The queues of corpora on other servers are served too (see
    :meth:`members`); their notifications do not wake :meth:`run`, which polls them every ``poll_interval_s``.
    """

    def __init__(
        self, store: Store, *, embedder: Embedder, visual_encoder: Any = None, options: WorkerOptions | None = None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.visual_encoder = visual_encoder
        self.options = options or WorkerOptions()
        self.loader = ContentLoader(
            file_roots=self.options.file_roots,
            allow_urls=self.options.allow_urls,
            video_frames=visual_encoder is not None,
        )
        self._conn: Any = None
        self._checked: set[str] = set()
        self._members: dict[str, Worker] | None = None
        self._unsettled: set[str] = set()  # corpora written since their full-text indexes were last settled
        self._sized: set[str] = set()  # corpora whose vector index was sized for their backlog (see _size_indexes)
        self._grows_indexes = True  # False for a member server's worker: its corpora's indexes are chosen by hand
        self._ahead: _Batch | None = None  # the next batch, claimed while the current one is written
        self._encoder_thread: ThreadPoolExecutor | None = None
        self._parked_at: float | None = None  # when park_exhausted last ran (monotonic)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def conn(self) -> Any:
        """The worker's own autocommit connection (claims and unit locks belong to its session)."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = connect(self.store.resolve_url())
        return self._conn

    def members(self) -> dict[str, Worker]:
        """By server alias, a worker for the queue of each other server that holds a corpus this worker serves
        (``options.corpora``, else every registered corpus); built on first use from the registry. Without
        ``options.corpora``, a server the settings do not name is left out with a warning (name the corpus to
        get the ``ConfigError`` that says how to configure it)."""
        if self._members is None:
            members: dict[str, Worker] = {}
            for alias, names in self.store.remote_corpora(self.options.corpora or None).items():
                if not self.options.corpora and alias not in self.store.settings.servers:
                    log.warning(
                        "not syncing corpora %s: their server %r is not in UNIVERSALRAG_SERVERS",
                        ", ".join(names),
                        alias,
                    )
                    continue
                members[alias] = Worker(
                    self.store.member(alias),
                    embedder=self.embedder,
                    visual_encoder=self.visual_encoder,
                    options=replace(self.options, corpora=tuple(names)),
                )
                members[alias]._grows_indexes = False
            self._members = members
        return self._members

    def close(self) -> None:
        """Give back unfinished claims and close the connections (the member workers' too)."""
        for member in (self._members or {}).values():
            member.close()
        self._give_back_ahead()
        if self._conn is not None and not self._conn.closed:
            self._release()
            self._conn.close()
        self._conn = None
        if self._encoder_thread is not None:
            self._encoder_thread.shutdown(wait=True)
            self._encoder_thread = None

    def _release(self) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return  # never connected, or the session is gone: its claims went with it
        try:
            queue.release_all(conn, self.store.schema)
        except psycopg.Error as e:  # the connection is gone: its claims end with its backend anyway
            log.warning("could not give back the worker's claims: %s", e)

    # -- one batch ------------------------------------------------------------------------------------------
    def _spec(self, name: str) -> CorpusSpec:
        spec = self.store.corpus(name)
        if name not in self._checked:
            check_embedder(spec, self.embedder)
            visual = self.visual_encoder
            if visual is not None and spec.modality in (Modality.IMAGE, Modality.VIDEO):
                self.store.add_visual_channel(name, dimension=visual.dimension, encoder=visual.name)
                spec = self.store.corpus(name)
            self._checked.add(name)
        return spec

    def run_batch(self, *, retry_delay_s: float | None = None) -> BatchResult:
        """Claim, embed and write one batch here and one on each :meth:`members` server; returns what they did
        (``claimed == 0``: no queue had anything ready). A member server that cannot be reached is skipped with a
        warning and a line in ``errors`` (its items wait in its queue); other failures raise."""
        return self._run_everywhere(retry_delay_s, pipelined=False)

    def _run_everywhere(self, retry_delay_s: float | None, *, pipelined: bool) -> BatchResult:
        """One batch here and one on each member server; ``pipelined``: each also claims its next batch and
        embeds it while writing this one (the loops; :meth:`_stop_pipeline` gives such a batch back)."""
        result = self._run_local_batch(retry_delay_s, pipelined)
        for alias, member in self.members().items():
            try:
                result.add(member._run_local_batch(retry_delay_s, pipelined))
            except StoreError as e:
                self.store.skip_unreachable(member.store, list(member.options.corpora), e)
                result.errors.append(f"server {alias}: {e}")
        return result

    def _run_local_batch(self, retry_delay_s: float | None, pipelined: bool = False) -> BatchResult:
        """One batch of this server's queue: the one claimed ahead by the previous call, else a fresh claim.
        ``pipelined``: claim and read the next batch before writing this one, and embed it meanwhile."""
        options = self.options
        delay = options.retry_delay_s if retry_delay_s is None else retry_delay_s
        try:
            parked = self._park_exhausted()
            current, self._ahead = self._ahead, None
            try:
                if current is None:
                    current = self._claim_batch(background=False)
                result = BatchResult(claimed=len(current.items), parked=parked)
                if not current.items:
                    return result
                if pipelined:  # claimed and read while this batch is still being embedded: the encoder never waits
                    ahead = self._claim_batch(background=True, busy=current.items)
                    self._ahead = ahead if ahead.items else None
                if current.embedding is not None:
                    current.embedding.result()
                self._size_indexes(current.jobs)
                self._write_isolated(current.jobs, current.superseded, result, delay)
            except BaseException:
                self._give_back_ahead()
                self._release()
                raise
            if self._ahead is None:
                queue.unlock(self.conn)
            else:  # the batch ahead keeps its units locked
                queue.unlock_items(self.conn, self.store.schema, current.items)
            return result
        except psycopg.Error as e:
            raise store_error(e, "process the sync queue", self.store.url_redacted) from e

    def _size_indexes(self, jobs: list[_Job]) -> None:
        """Before the first write into a corpus, give it the index the units it holds and those queued for it call
        for (:meth:`~universalrag.store.Store.grow_vector_indexes`): a backlog that takes a corpus left to ``auto``
        past the binary threshold is written into the binary-quantised index it will end with, built while the
        corpus is small, not into a ``halfvec`` one rebuilt afterwards. Each HNSW insert costs the database about
        1.6 ms of a core into a ``halfvec`` index and 1.1 ms into a binary one (20,000 text-like vectors written 128 at
        a time, AMD EPYC), time the encoder loses on a machine whose cores it shares. A member server's corpora keep
        their index, as ``ingest`` leaves them (docs/database.md)."""
        names = sorted({j.item.corpus for j in jobs} - self._sized)
        if not names or not self._grows_indexes:
            return
        self._sized.update(names)
        self.store.grow_vector_indexes(names, coming=queue.queued(self.conn, self.store.schema, names))

    def _park_exhausted(self) -> int:
        """Park the items claimed ``max_attempts`` times (on the first batch, then every :data:`PARK_INTERVAL_S`)."""
        now = time.monotonic()
        if self._parked_at is not None and now - self._parked_at < PARK_INTERVAL_S:
            return 0
        self._parked_at = now
        options = self.options
        return queue.park_exhausted(
            self.conn,
            self.store.schema,
            max_attempts=options.max_attempts,
            corpora=options.corpora or None,
            lease_s=options.lease_s,
        )

    def _claim_batch(self, *, background: bool, busy: Sequence[queue.QueueItem] = ()) -> _Batch:
        """Claim a batch (never the ``busy`` items still being written), read its rows and embed them, here or
        (``background``) on the worker's encoder thread."""
        options = self.options
        items = queue.claim(
            self.conn,
            self.store.schema,
            limit=options.batch_size,
            corpora=options.corpora or None,
            lease_s=options.lease_s,
            max_chars=MAX_TEXT_CHARS + 1,
            max_attempts=options.max_attempts,
            busy=[i.id for i in busy],
        )
        batch = _Batch(items)
        if not items:
            return batch
        try:
            batch.jobs, batch.superseded = self._prepare(items)
            if background:
                if self._encoder_thread is None:
                    self._encoder_thread = ThreadPoolExecutor(1, thread_name_prefix="universalrag-sync-encoder")
                batch.embedding = self._encoder_thread.submit(self._embed, batch.jobs)
            else:
                self._embed(batch.jobs)
        except BaseException:
            self._ahead = batch if background else None  # given back by the caller's error path
            raise
        return batch

    def _give_back_ahead(self) -> None:
        """Give the batch claimed ahead back to the queue, its attempt not counted (it was never tried)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        if ahead.embedding is not None:
            wait_for([ahead.embedding])  # its jobs are dropped; the encoder thread must be idle again
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return  # the session is gone: its claims went with it
        try:
            with conn.transaction():
                queue.finish(conn, self.store.schema, done=[], failed=[], released=ahead.items, max_attempts=1 << 30)
            queue.unlock_items(conn, self.store.schema, ahead.items)
        except psycopg.Error as e:  # the connection is gone: its claims end with its backend anyway
            log.warning("could not give back the batch claimed ahead: %s", e)

    def _stop_pipeline(self) -> None:
        """Give back the batches claimed ahead, here and on the member servers (a loop stops)."""
        for worker in (self, *(self._members or {}).values()):
            worker._give_back_ahead()

    def _prepare(self, items: list[queue.QueueItem]) -> tuple[list[_Job], list[queue.QueueItem]]:
        """Jobs for the newest entry of each unit (older entries are superseded), with their content loaded."""
        latest: dict[tuple[str, str], queue.QueueItem] = {}
        for item in items:
            latest[(item.corpus, item.unit_id)] = item
        jobs = [_Job(item) for item in latest.values()]
        newest = {i.id for i in latest.values()}
        superseded = [i for i in items if i.id not in newest]
        for name, group in _by_corpus(jobs).items():
            spec = self._spec(name)
            current = self._fetch(name, group)
            for job in group:
                if job.error is None:
                    self._load(spec, job, current)
        return jobs, superseded

    def _fetch(self, name: str, group: list[_Job]) -> dict[str, queue.SourceRow]:
        """The source rows of ``group`` by key; a row whose content expression the database cannot evaluate
        fails alone (its job gets the error), the others are read."""
        current: dict[str, queue.SourceRow] = {}

        def run(batch: Sequence[_Job]) -> None:
            keys = [j.item.row_key for j in batch if j.item.row_key is not None]
            rows = queue.fetch_rows(self.conn, self.store.schema, name, keys, max_chars=MAX_TEXT_CHARS + 1)
            current.update((queue.key_id(r.row_key), r) for r in rows)

        def fail(job: _Job, error: BaseException) -> None:
            job.error = f"its source row could not be read: {isolate.describe(error)}"

        isolate.bisect(
            [j for j in group if j.item.row_key is not None], run, fail, isolable=isolate.refused_by_database
        )
        return current

    def _load(self, spec: CorpusSpec, job: _Job, current: dict[str, queue.SourceRow]) -> None:
        item = job.item
        try:
            if item.row_key is not None:
                row = current.get(queue.key_id(item.row_key))
                if row is None:
                    return  # deleted meanwhile: the write step removes the unit
                job.loaded = self.loader.load(
                    spec,
                    kind=row.kind,
                    body=row.body,
                    data=row.data,
                    caption=row.caption,
                    uri=row.uri,
                    metadata=row.metadata,
                )
            else:
                job.loaded = self.loader.load(
                    spec,
                    kind=item.kind or "text",
                    body=item.content if item.kind == "text" else None,
                    data=item.data,
                    caption=item.content,
                    uri=item.uri,
                    metadata=dict(item.metadata or {}),
                )
        except ItemError as e:
            job.error = str(e)
        except Exception as e:  # a reader's bug or a hostile file: this item fails, the batch goes on
            if not isolate.item_error(e):
                raise
            job.error = f"could not be read: {isolate.describe(e)}"

    def _embed(self, jobs: list[_Job]) -> None:
        ready = [j for j in jobs if j.loaded is not None and j.error is None]
        _embed_isolated(
            ready, lambda batch: self.embedder.embed([_loaded(j).text for j in batch]), "vector", "the text encoder"
        )
        visual = self.visual_encoder
        if visual is not None:
            images = [j for j in ready if j.error is None and _loaded(j).image is not None]
            _embed_isolated(
                images,
                lambda batch: visual.embed_images([_loaded(j).image for j in batch]),
                "visual",
                "the visual encoder",
            )
            videos = [j for j in ready if j.error is None and _loaded(j).frames]
            _embed_isolated(
                videos,
                lambda batch: [normalised_mean(visual.embed_images(list(_loaded(j).frames))) for j in batch],
                "visual",
                "the visual encoder",
            )

    def _write_isolated(
        self, jobs: list[_Job], superseded: list[queue.QueueItem], result: BatchResult, retry_delay_s: float
    ) -> None:
        """Write ``jobs`` in one transaction; when the database refuses it, in halves down to the single unit,
        which then fails alone with the database's reason (parked after ``max_attempts``)."""
        try:
            self._write(jobs, superseded, result, retry_delay_s)
            return
        except psycopg.Error as e:
            if not isolate.refused_by_database(e) or len(jobs) == 0:
                raise

        def run(batch: Sequence[_Job]) -> None:
            self._write(list(batch), [], result, retry_delay_s)

        def fail(job: _Job, error: BaseException) -> None:
            job.error = isolate.describe(error)
            self._write([job], [], result, retry_delay_s)

        isolate.bisect(jobs, run, fail, isolable=isolate.refused_by_database)
        with self.conn.transaction():  # the older entries of units that were not written go back to the queue
            queue.finish(self.conn, self.store.schema, done=[], failed=[], released=superseded, max_attempts=1 << 30)

    def _write(
        self, jobs: list[_Job], superseded: list[queue.QueueItem], total: BatchResult, retry_delay_s: float
    ) -> None:
        """One write transaction for ``jobs``; what it did is added to ``total`` once it committed."""
        result = BatchResult()
        conn, schema = self.conn, self.store.schema
        done: list[queue.QueueItem] = []
        failed: list[tuple[queue.QueueItem, str, float]] = []
        released: list[queue.QueueItem] = []
        # the partitions the units need, committed before the transaction that writes them
        self.store.prepare_partitions(
            {
                name: (self._unit(j) for j in group if j.error is None and j.loaded is not None)
                for name, group in _by_corpus(jobs).items()
            }
        )
        with conn.transaction():
            for name, group in _by_corpus(jobs).items():
                keys = [j.item.row_key for j in group if j.item.row_key is not None]
                states = queue.check_rows(conn, schema, name, keys) if keys else {}
                replace_ids: list[str] = []
                units: list[Unit] = []
                for job in group:
                    state = "present" if job.item.row_key is None else states.get(queue.key_id(job.item.row_key))
                    if state == "busy":
                        released.append(job.item)
                    elif state == "gone" or (job.error is None and job.loaded is None):
                        replace_ids.append(job.item.unit_id)
                        result.removed += 1
                        done.append(job.item)
                    elif job.error is not None:
                        delay = min(retry_delay_s * 2 ** max(job.item.attempts - 1, 0), 3600.0)
                        failed.append((job.item, job.error, delay))
                    else:
                        replace_ids.append(job.item.unit_id)
                        units.append(self._unit(job))
                        done.append(job.item)
                # The old vectors go and the new ones come in this one transaction.
                queue.delete_units(conn, schema, name, replace_ids)
                if units:
                    writer.copy_units(
                        conn, schema, self.store.tables.corpus(self.store.corpus(name)), units, source_id=None
                    )
                    result.written += len(units)
                    self._unsettled.add(name)
            settled = {(i.corpus, i.unit_id) for i in done}
            released.extend(i for i in superseded if (i.corpus, i.unit_id) not in settled)
            result.parked += queue.finish(
                conn, schema, done=done, failed=failed, released=released, max_attempts=self.options.max_attempts
            )
        result.failed += len(failed)
        result.released += len(released)
        result.errors.extend(f"{i.corpus}/{i.unit_id}: {e}" for i, e, _ in failed)
        total.add(result)

    @staticmethod
    def _unit(job: _Job) -> Unit:
        loaded = job.loaded
        assert loaded is not None and job.vector is not None
        return Unit(
            id=job.item.unit_id,
            corpus=job.item.corpus,
            content=loaded.text,
            embedding=np.asarray(job.vector, dtype=np.float32),
            uri=loaded.uri,
            metadata=loaded.metadata,
            visual_embedding=None if job.visual is None else np.asarray(job.visual, dtype=np.float32),
        )

    # -- loops ----------------------------------------------------------------------------------------------
    def drain(self, *, on_batch: Callable[[BatchResult], None] | None = None) -> BatchResult:
        """Process batches until nothing is ready (failing items are retried at once until parked)."""
        total = BatchResult()
        try:
            while True:
                batch = self._run_everywhere(0.0, pipelined=True)
                total.add(batch)
                if on_batch is not None and batch.claimed:
                    on_batch(batch)
                if batch.claimed == 0 or not batch.progressed:
                    break
        finally:
            self._stop_pipeline()
        self.settle()
        return total

    def settle(self) -> None:
        """Settle the full-text indexes of the corpora written since the last time, here and on the member servers
        (:meth:`~universalrag.store.Store.settle`), and give those grown past the binary threshold their
        binary-quantised index (:meth:`~universalrag.store.Store.grow_vector_indexes`): what the worker does whenever
        its queue runs dry."""
        for worker in (self, *self.members().values()):
            if worker._unsettled:
                written = sorted(worker._unsettled)
                worker.store.settle(written)
                if worker._grows_indexes:  # as ingest does: a corpus grown past the threshold
                    worker.store.grow_vector_indexes(written)
                worker._unsettled.clear()

    def run(
        self, *, stop: threading.Event | None = None, on_batch: Callable[[BatchResult], None] | None = None
    ) -> None:
        """Process the queue until ``stop`` is set, sleeping on LISTEN/NOTIFY when it is empty.

        A lost database connection (server restart, terminated backend) is re-opened after ``poll_interval_s``;
        the claims of the lost session are taken over by the next claim, so nothing is lost.
        """
        stop = stop or threading.Event()
        listener: Any = None
        try:
            while not stop.is_set():
                try:
                    if listener is None or listener.closed or listener.broken:
                        listener = connect(self.store.resolve_url())
                        listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(queue.NOTIFY_CHANNEL)))
                    batch = self._run_everywhere(None, pipelined=True)
                    if on_batch is not None and batch.claimed:
                        on_batch(batch)
                    if batch.claimed and batch.progressed:
                        continue
                    self._stop_pipeline()
                    self.settle()
                    self._wait(listener, stop)
                except (StoreError, psycopg.OperationalError) as e:
                    if not self._lost(listener, e):
                        raise
                    log.warning(
                        "lost the database connection (%s); reconnecting in %.0f s", e, self.options.poll_interval_s
                    )
                    self._stop_pipeline()
                    for conn in (listener, self._conn):
                        if conn is not None:
                            conn.close()
                    listener, self._conn = None, None
                    stop.wait(self.options.poll_interval_s)
        finally:
            self._stop_pipeline()
            if listener is not None:
                listener.close()

    def _wait(self, listener: Any, stop: threading.Event) -> None:
        deadline = time.monotonic() + self.options.poll_interval_s
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                if any(True for _ in listener.notifies(timeout=min(0.5, self.options.poll_interval_s), stop_after=1)):
                    return
            except psycopg.Error as e:
                raise store_error(e, "wait for queued units", self.store.url_redacted) from e

    def _lost(self, listener: Any, error: BaseException) -> bool:
        """True when ``error`` came from a lost connection (not from a query the database refused)."""
        broken = any(c is not None and (c.closed or c.broken) for c in (listener, self._conn))
        cause = error if isinstance(error, psycopg.Error) else error.__cause__
        return broken or (isinstance(cause, psycopg.OperationalError) and getattr(cause, "sqlstate", None) is None)
