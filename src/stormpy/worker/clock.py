"""Clocks: real monotonic time, or simulated time that tests advance by hand."""

from __future__ import annotations

import threading
import time


class Clock:
    """Monotonic seconds; the executor loop reads it for timers (ticks, message timeouts)."""

    simulated = False

    def now(self) -> float:
        return time.monotonic()


class SimulatedClock(Clock):
    """Time that only moves when ``advance`` is called (thread-safe)."""

    simulated = True

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        with self._lock:
            self._now += seconds
