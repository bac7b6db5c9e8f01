"""Ctrl-C during a long command: the first one stops at the next safe point (an ingest: between files, and between
the embedding calls of a group of text files once every file embedded is written; each file is committed or rolled
back as a whole), a second one stops at once."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

from .context import Output

__all__ = ["StopAfterCurrent"]


class StopAfterCurrent:
    """Within ``with StopAfterCurrent(out) as stop:``, the first SIGINT sets :attr:`requested` (and says so on
    stderr); :meth:`check` raises :class:`KeyboardInterrupt` at the next safe point. A second SIGINT raises at
    once (:attr:`forced`). Outside the main thread (a served command) it changes nothing."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.requested = False
        self.forced = False
        self._previous: Any = None

    def __enter__(self) -> StopAfterCurrent:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            self.forced = True
            raise KeyboardInterrupt
        self.requested = True
        self.out.err.print(
            "stopping after the current file and the files already embedded (Ctrl-C again to stop now)", markup=False
        )

    def check(self) -> None:
        """Raise :class:`KeyboardInterrupt` when a stop was requested (call it between units of work)."""
        if self.requested:
            raise KeyboardInterrupt
