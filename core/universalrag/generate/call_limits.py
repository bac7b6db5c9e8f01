"""How many model calls a run may make, how fast, and until when: one object shared by the threads of a run.

:class:`CallLimits` hands out permission for one call at a time (:meth:`CallLimits.acquire`): ``False`` once the
run's budget of ``max_calls`` is spent or its ``max_seconds`` have passed; otherwise it waits, when needed, so
that no more than ``per_minute`` calls start in any minute (calls are spaced evenly), and says yes. Answers read
from a cache never ask.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..errors import ConfigError

__all__ = ["CallLimits"]


class CallLimits:
    """A budget of calls, a rate limit and a deadline (see the module docstring). ``max_seconds`` counts from the
    first :meth:`acquire`; ``None`` (or 0) means no limit for that bound."""

    def __init__(
        self,
        *,
        max_calls: int | None = None,
        per_minute: float | None = None,
        max_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        for name, value in (("max_calls", max_calls), ("per_minute", per_minute), ("max_seconds", max_seconds)):
            if value is not None and value < 0:
                raise ConfigError(f"{name} must be 0 (no limit) or more, got {value}.")
        self.max_calls = max_calls or None
        self.per_minute = per_minute or None
        self.max_seconds = max_seconds or None
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._started: float | None = None
        self._next_slot = 0.0
        self.calls = 0
        self.refused = 0

    @property
    def exhausted(self) -> str | None:
        """Why no call may start any more (``"budget"`` or ``"deadline"``), or ``None``."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return "budget"
        if self.max_seconds is not None and self._started is not None:
            if self._clock() - self._started >= self.max_seconds:
                return "deadline"
        return None

    def acquire(self) -> bool:
        """Permission for one call: ``True`` (counted, after any wait the rate limit needs) or ``False`` when the
        budget is spent or the deadline has passed (counted in :attr:`refused`)."""
        with self._lock:
            now = self._clock()
            if self._started is None:
                self._started = now
            if self.exhausted is not None:
                self.refused += 1
                return False
            wait = 0.0
            if self.per_minute is not None:
                slot = max(now, self._next_slot)
                self._next_slot = slot + 60.0 / self.per_minute
                wait = slot - now
            if self.max_seconds is not None and now + wait - self._started >= self.max_seconds:
                self.refused += 1
                return False
            self.calls += 1
        if wait > 0:
            self._sleep(wait)
        return True
