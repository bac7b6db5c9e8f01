"""Routing decisions logged in SQL without slowing or breaking a query.

:class:`DecisionLog` puts each decision on a bounded queue (dropped, and counted, when full); one background
thread writes them in batches (:func:`universalrag.store.routing_log.write_decisions`). A failed write is
counted and logged once as a warning, never raised into a query. The query's text is stored only when
``store_text`` is true; otherwise only its SHA-256.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

from .errors import StoreError
from .store import Store
from .types import RouteDecision

__all__ = ["DecisionLog", "query_hash"]

_log = logging.getLogger(__name__)


def query_hash(query: str) -> str:
    """The SHA-256 (hex) of a query, whitespace-normalised: how the log identifies it without its text."""
    return hashlib.sha256(" ".join(query.split()).encode("utf-8")).hexdigest()


class DecisionLog:
    """Best-effort, batched logging of decisions to ``store``'s ``routing_log`` table.

    ``capacity`` bounds the queue; ``batch`` rows are written per statement; ``interval`` (seconds) is the
    longest a row waits. The writer thread starts on the first decision and stops at :meth:`close`.
    """

    def __init__(
        self, store: Store, *, store_text: bool = False, capacity: int = 10_000, batch: int = 200, interval: float = 0.5
    ) -> None:
        self.store, self.store_text = store, store_text
        self.batch, self.interval = batch, interval
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self.written = self.dropped = self.failed = 0
        self._disabled = False
        self._atexit = False
        self._max_idle = max(1, int(10 / interval))  # about ten seconds

    def record(self, query: str, decision: RouteDecision, *, candidates: Sequence[str]) -> None:
        """Queue one decision (returns at once; dropped when the queue is full or logging failed for good)."""
        if self._disabled or decision.id is None:
            return
        row = {
            "id": decision.id,
            "query_hash": query_hash(query),
            "query_text": query if self.store_text else None,
            "candidates": list(candidates),
            "scores": {k: float(v) for k, v in decision.scores.items()},
            "prior": {k: float(v) for k, v in decision.prior.items()},
            "evidence": {c: {k: float(v) for k, v in f.items()} for c, f in decision.evidence.items()},
            "routes": list(decision.routes),
            "latency_ms": float(decision.latency_ms),
            "router": decision.router,
            "router_version": decision.version,
        }
        try:
            self._queue.put_nowait(row)
        except queue.Full:
            self.dropped += 1
            return
        self._idle.clear()
        self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="universalrag-routing-log", daemon=True)
                self._thread.start()
                if not self._atexit:
                    atexit.register(self.close, 2.0)  # a short-lived process still writes what it decided
                    self._atexit = True

    def _run(self) -> None:
        idle = 0
        while True:
            try:
                first = self._queue.get(timeout=self.interval)
            except queue.Empty:
                self._idle.set()
                idle += 1
                with self._lock:  # idle for a while: stop (the next decision starts a new writer)
                    if idle >= self._max_idle and self._queue.empty():
                        self._thread = None
                        return
                continue
            idle = 0
            if first is None:
                self._idle.set()
                return
            rows = [first]
            stop = False
            while len(rows) < self.batch:
                try:
                    row = self._queue.get_nowait()
                except queue.Empty:
                    break
                if row is None:
                    stop = True
                    break
                rows.append(row)
            self._write(rows)
            if self._queue.empty():
                self._idle.set()
            if stop:
                return

    def _write(self, rows: list[dict[str, Any]]) -> None:
        from .store.routing_log import write_decisions

        try:
            self.written += write_decisions(self.store, rows)
        except StoreError as e:
            self.failed += len(rows)
            if self.failed == len(rows):  # the first failure only
                _log.warning("Routing decisions could not be logged (%s); queries are not affected.", e)
            if "does not exist" in str(e):  # the schema predates the routing log: stop trying
                self._disabled = True

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued decision is written (or ``timeout`` seconds pass); ``True`` when done."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._queue.empty() and self._idle.wait(timeout=max(0.0, deadline - time.monotonic())):
                if self._queue.empty():
                    return True
            time.sleep(0.01)
        return False

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, then stop the writer thread."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)
