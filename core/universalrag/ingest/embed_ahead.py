"""Embedding ahead of the caller: slices of texts handed to one worker thread, embedded in the order given, while
the caller goes on reading files and writing the ones already embedded.

Ingestion used to alternate: read a group of files, embed, write, embed, write. The encoder waited while files
were parsed and while the database took each write; on the 20-page Wikipedia run of ``benchmarks/ingest.py`` that
was 10 % of the wall time, time the encoder's threads could have used. One worker keeps the slices in order (so
progress and the vectors of each file come back as they would have) and leaves the encoder's own threads to share
out each call (ONNX Runtime's bulk session, or torch on a GPU); a second worker would only compete with it for the
same cores. No database access here.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

import numpy as np

from ..embed.base import Embedder
from ..errors import EmbeddingError

__all__ = ["EmbedAhead"]


class EmbedAhead:
    """An ordered queue of embedding calls run by one worker thread (use it as a context manager: leaving it drops
    the calls not started, and does not wait for the one running).

    :meth:`submit` queues a slice; :meth:`ready` says whether the oldest queued slice is done; :meth:`take` waits for
    it and returns ``(start, vectors)``, raising what the embedder raised. :meth:`drop_pending` cancels the slices
    not started yet (a stop was asked) and says how many still run or wait to be taken.
    """

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="universalrag-embed")
        self._queue: collections.deque[tuple[int, int, Future[np.ndarray]]] = collections.deque()

    def __enter__(self) -> EmbedAhead:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Cancel the calls not started; the running one ends on its own (its result is dropped)."""
        self._queue.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def submit(self, start: int, texts: Sequence[str]) -> None:
        """Queue ``texts`` (rows ``start`` onwards of the caller's vectors) for embedding."""
        batch = list(texts)
        self._queue.append((start, len(batch), self._pool.submit(self._embed, batch)))

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = self._embedder.embed(texts)
        if len(vectors) != len(texts):
            raise EmbeddingError(
                f"The encoder {self._embedder.name!r} returned {len(vectors)} vectors for "
                f"{len(texts)} texts; its embed() must return one vector per text, in order."
            )
        return vectors

    def __len__(self) -> int:
        """Slices queued and not taken yet."""
        return len(self._queue)

    def ready(self) -> bool:
        """Whether the oldest queued slice is embedded (or failed), so that :meth:`take` will not wait."""
        return bool(self._queue) and self._queue[0][2].done()

    def take(self) -> tuple[int, np.ndarray]:
        """``(start, vectors)`` of the oldest queued slice, waiting for it; what the embedder raised is raised here."""
        start, _, future = self._queue.popleft()
        return start, future.result()

    def drop_pending(self) -> int:
        """Cancel the queued slices that have not started; returns how many are left (running or done)."""
        kept: collections.deque[tuple[int, int, Future[np.ndarray]]] = collections.deque()
        for item in self._queue:
            if not item[2].cancel():
                kept.append(item)
        self._queue = kept
        return len(kept)
