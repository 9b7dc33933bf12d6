"""The one exponential backoff of stormpy: how long to wait after consecutive failures.

:class:`Backoff` contract: after the *n*-th consecutive failure the delay is 0 while ``n <=
free_failures``, else ``first * factor ** (n - free_failures - 1)``, never more than ``cap``. With
``jitter`` (0 … 1) a delay is shortened by a random fraction of at most ``jitter`` of itself
(so the cap still holds and retries of many clients spread out). :meth:`Backoff.reset` (a success)
starts over.

It serves both shapes of retrying:

* a blocking retry loop asks :meth:`Backoff.failed` for the delay and waits it out (on a stop
  event, say);
* a scheduler that must not block (the executor loop, a queue of jobs) records the failure with
  :meth:`Backoff.failed_at` (``now`` on its own clock), which returns when the next attempt is due,
  and asks :meth:`Backoff.ready` before trying again.

:meth:`Backoff.delay` is the pure rule (no state, no jitter) for callers that count failures
themselves.

A shared service at the bottom of the import order: the standard library only.
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """Exponential backoff with a cap, optional jitter and a reset (see the module docstring)."""

    def __init__(self, first: float, cap: float, *, factor: float = 2.0, jitter: float = 0.0,
                 free_failures: int = 0, rng: random.Random | None = None) -> None:
        if not first > 0:
            raise ValueError(f"Backoff: first must be > 0 seconds, got {first!r}")
        if not cap >= first:
            raise ValueError(f"Backoff: cap must be >= first ({first!r}), got {cap!r}")
        if not factor >= 1:
            raise ValueError(f"Backoff: factor must be >= 1, got {factor!r}")
        if not 0 <= jitter <= 1:
            raise ValueError(f"Backoff: jitter must be between 0 and 1, got {jitter!r}")
        if free_failures < 0:
            raise ValueError(f"Backoff: free_failures must be >= 0, got {free_failures!r}")
        self.first = float(first)
        self.cap = float(cap)
        self.factor = float(factor)
        self.jitter = float(jitter)
        self.free_failures = free_failures
        self._rng = rng or random.Random()
        #: consecutive failures since the last :meth:`reset`
        self.failures = 0
        #: the delay the last failure asked for (0.0 after a reset)
        self.last_delay = 0.0
        #: when the next attempt is due, on the clock of :meth:`failed_at` (0.0: at once)
        self.next_attempt = 0.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th consecutive failure, without jitter."""
        steps = failures - self.free_failures
        if steps <= 0:
            return 0.0
        # stop multiplying once over the cap: no overflow for any count
        value = self.first
        for _ in range(steps - 1):
            value *= self.factor
            if value >= self.cap:
                return self.cap
        return min(self.cap, value)

    def failed(self) -> float:
        """Record a failure; return the seconds to wait before the next attempt (jittered)."""
        self.failures += 1
        value = self.delay(self.failures)
        if self.jitter and value > 0:
            value -= value * self.jitter * self._rng.random()
        self.last_delay = value
        return value

    def failed_at(self, now: float) -> float:
        """Record a failure that happened at ``now``; return (and remember) when the next attempt
        is due on that same clock."""
        self.next_attempt = now + self.failed()
        return self.next_attempt

    def ready(self, now: float) -> bool:
        """True when an attempt may be made at ``now`` (no failure pending, or its delay is over)."""
        return now >= self.next_attempt

    def reset(self) -> None:
        """A success: the next failure waits ``first`` again (or nothing, with ``free_failures``)."""
        self.failures = 0
        self.last_delay = 0.0
        self.next_attempt = 0.0

    def __repr__(self) -> str:
        return (f"Backoff(first={self.first:g}, cap={self.cap:g}, factor={self.factor:g}, "
                f"jitter={self.jitter:g}, failures={self.failures})")
