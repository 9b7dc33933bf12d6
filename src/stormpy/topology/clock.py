"""Time as components and the runtime see it: real monotonic time, or simulated time that a test
moves by hand (Storm's ``Time`` with ``Time.startSimulating``).

Simulated time is process-wide, as in Storm: inside ``with simulated_time():`` (and while a
``LocalCluster(simulated_time=True)`` runs) :func:`now` reads the simulated clock and
:func:`sleep` blocks its caller until a test advances that clock far enough, without real waiting.
Components that need time call these two functions (or ``context.clock``) instead of
``time.monotonic``/``time.sleep``; outside a simulation they are exactly those.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from stormpy._public import publish

__all__ = ["Clock", "SimulatedClock", "current_clock", "now", "simulated_time", "simulating",
           "sleep"]


class Clock:
    """Monotonic seconds; the executor loop reads it for timers (ticks, message timeouts)."""

    simulated = False

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` (ValueError when negative)."""
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative time ({seconds})")
        time.sleep(seconds)


class SimulatedClock(Clock):
    """Time that only moves when ``advance`` is called (thread-safe). ``sleep`` blocks its caller
    until the clock has been advanced past the wake-up time; :meth:`is_sleeping` tells whether a
    thread is blocked so (a LocalCluster counts such a worker as idle)."""

    simulated = True

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._cond = threading.Condition()
        #: thread ident → simulated wake-up time, for every thread blocked in ``sleep``
        self._sleepers: dict[int, float] = {}
        #: threads whose sleeps return at once (being shut down)
        self._released: set[int] = set()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and wake the sleepers that are due. A woken thread
        stops counting as sleeping before this returns."""
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        with self._cond:
            self._now += seconds
            for ident, due in list(self._sleepers.items()):
                if due <= self._now:
                    del self._sleepers[ident]
            self._cond.notify_all()

    def sleep(self, seconds: float) -> None:
        """Block until simulated time has moved ``seconds`` forward (0 returns at once)."""
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative time ({seconds})")
        ident = threading.get_ident()
        with self._cond:
            due = self._now + seconds
            if due <= self._now or ident in self._released:
                return
            self._sleepers[ident] = due
            try:
                while self._now < due and ident not in self._released:
                    self._cond.wait(0.5)
            finally:
                self._sleepers.pop(ident, None)

    def release(self, threads: list[threading.Thread], released: bool = True) -> None:
        """Make every simulated sleep of ``threads`` return at once (``released=False`` undoes
        it): how a LocalCluster stops a worker whose component sleeps in simulated time."""
        with self._cond:
            for t in threads:
                if t.ident is not None:
                    if released:
                        self._released.add(t.ident)
                    else:
                        self._released.discard(t.ident)
            self._cond.notify_all()

    def is_sleeping(self, thread: threading.Thread | int | None) -> bool:
        """True while ``thread`` (or thread ident) is blocked in :meth:`sleep`."""
        ident = thread.ident if isinstance(thread, threading.Thread) else thread
        return ident is not None and ident in self._sleepers

    @property
    def sleepers(self) -> int:
        """How many threads are blocked in :meth:`sleep`."""
        return len(self._sleepers)


_REAL = Clock()
_lock = threading.Lock()
_simulation: SimulatedClock | None = None
_depth = 0


def current_clock() -> Clock:
    """The process's clock: the simulated one while a simulation is active, else real time."""
    sim = _simulation
    return sim if sim is not None else _REAL


def simulating() -> bool:
    """True while simulated time is active in this process."""
    return _simulation is not None


def now() -> float:
    """Seconds on the process's clock (monotonic; simulated while simulating)."""
    return current_clock().now()


def sleep(seconds: float) -> None:
    """Sleep on the process's clock: really, or (while simulating) until a test advances
    simulated time by ``seconds``."""
    current_clock().sleep(seconds)


def enter_simulation() -> SimulatedClock:
    """Start simulating (or join the simulation already active) and return its clock. Every call
    must be paired with :func:`leave_simulation`; time is real again after the last one."""
    global _simulation, _depth
    with _lock:
        if _simulation is None:
            _simulation = SimulatedClock()
        _depth += 1
        return _simulation


def leave_simulation() -> None:
    """End one :func:`enter_simulation`; RuntimeError when none is active."""
    global _simulation, _depth
    with _lock:
        if _depth == 0:
            raise RuntimeError("leave_simulation() without a matching enter_simulation()")
        _depth -= 1
        if _depth == 0:
            _simulation = None


@contextmanager
def simulated_time() -> Iterator[SimulatedClock]:
    """``with simulated_time() as clock:`` — simulated time for the block (Storm's
    ``Time.startSimulating``/``Testing.withSimulatedTime``): LocalClusters created inside use
    ``clock`` for ticks and message timeouts, and :func:`sleep`/:func:`now` in components use it
    too. Blocks nest (the inner one shares the outer clock)."""
    clock = enter_simulation()
    try:
        yield clock
    finally:
        leave_simulation()

publish(__name__, globals())
