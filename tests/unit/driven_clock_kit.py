"""A clock the test drives: a stand-in for ``time.monotonic`` and ``time.sleep`` (or a module's
whole ``time``) where sleeping advances the clock at once and is recorded, so waits, polls and
deadlines are checked exactly and without waiting."""

from __future__ import annotations


class DrivenClock:
    """``monotonic()`` (also the instance called) reads ``now``; ``sleep(secs)`` records ``secs``
    in ``sleeps`` and moves ``now`` on by it."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def __call__(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        self.sleeps.append(secs)
        self.now += secs
