"""The one background loop of stormpy: a named round of work run again and again on a thread.

:class:`Service` contract:

* **The round.** ``tick()`` (the ``tick`` callable given, or the method a subclass overrides)
  does one round of work and returns the seconds until the next round, or None for
  ``interval``. :meth:`Service.run_once` runs one round at once with the error guard below and
  returns that delay; it is the seam tests call directly.
* **Scheduling.** :meth:`Service.poll` runs a round when one is due (``now >= due``) or was asked
  for by :meth:`Service.wake`, and returns the time of the next round. The next round is due
  ``delay`` seconds after the round *ended* (fixed delay, so a slow round never makes rounds run
  back to back). The first round is due ``first_delay`` seconds after :meth:`Service.start` (0:
  at once). Times are on ``clock`` (``time.monotonic`` by default); a test that simulates time
  calls ``poll(now)`` itself and never starts the thread.
* **The thread.** :meth:`Service.start` starts a daemon thread named ``name`` that runs
  ``on_start`` (if given), then polls and waits for the next round or a wake until a stop is
  requested, then runs ``on_stop`` (if given), all on that thread. ``start`` is idempotent while
  the service runs; a stopped service does not start again.
* **Waking and stopping** work from any thread. :meth:`Service.wake` makes the next round run
  now (a wake during a round runs one more round right after it). :meth:`Service.request_stop`
  ends the loop after the current round without waiting (safe from inside ``tick``);
  :meth:`Service.stop` also joins the thread for at most ``timeout`` seconds (never when called
  on the thread itself) and returns whether it ended; a stop while another thread is inside
  :meth:`Service.start` waits for that start to finish and then stops the new thread. Both are
  idempotent.
* **Errors.** An exception from a round never ends the loop. One of ``expected_errors`` (an
  unreachable ZooKeeper, say) is logged as a warning without a traceback, on the first failure
  in a row and every ``warn_every``-th after; any other ``Exception`` is logged with its traceback
  every time. Every message names the service (``"<name>: round failed (3 in a row): ..."``).
  With a ``retry`` :class:`~stormpy.host.backoff.Backoff` a failed round is retried after the
  backoff's delay instead of ``interval`` (reset by the next good round). ``on_start`` and
  ``on_stop`` errors are logged the same way. :attr:`Service.failures` counts failures in a row,
  :attr:`Service.errors` all of them, :attr:`Service.rounds` every round run.

A shared service at the bottom of the import order: the standard library only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from stormpy.host.backoff import Backoff

__all__ = ["Service"]

_log = logging.getLogger(__name__)


class Service:
    """A named background loop (see the module docstring for the contract)."""

    def __init__(self, name: str, tick: Callable[[], float | None] | None = None, *,
                 interval: float, first_delay: float = 0.0,
                 expected_errors: tuple[type[BaseException], ...] = (), warn_every: int = 20,
                 retry: Backoff | None = None, on_start: Callable[[], None] | None = None,
                 on_stop: Callable[[], None] | None = None, log: logging.Logger | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not interval > 0:
            raise ValueError(f"service {name!r}: interval must be > 0 seconds, got {interval!r}")
        if first_delay < 0:
            raise ValueError(f"service {name!r}: first_delay must be >= 0, got {first_delay!r}")
        if warn_every < 1:
            raise ValueError(f"service {name!r}: warn_every must be >= 1, got {warn_every!r}")
        self.name = name
        self._tick = tick
        self.interval = float(interval)
        self.first_delay = float(first_delay)
        self.expected_errors = expected_errors
        self.warn_every = warn_every
        self.retry = retry
        self.on_start = on_start
        self.on_stop = on_stop
        self.log = log or _log
        self.clock = clock
        #: when the next round is due, on ``clock`` (set by :meth:`start`; 0.0: at once)
        self.due = 0.0
        self.rounds = 0
        self.failures = 0
        self.errors = 0
        self._woken = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: held while :meth:`start` makes and starts the thread, so a stop never sees it unstarted
        self._start_lock = threading.Lock()

    # -- the round ---------------------------------------------------------------------------------
    def tick(self) -> float | None:
        """One round of work; the seconds until the next one, or None for ``interval``."""
        if self._tick is None:
            raise NotImplementedError(f"service {self.name!r} has no tick")
        return self._tick()

    def run_once(self, *, raise_errors: bool = False) -> float:
        """Run one round now; return the seconds until the next one. An error is logged and
        counted (see the module docstring), or re-raised with ``raise_errors``."""
        self.rounds += 1
        try:
            delay = self.tick()
        except Exception as exc:
            self.failures += 1
            self.errors += 1
            if raise_errors:
                raise
            self._log_failure("round failed", exc)
            return self.retry.failed() if self.retry is not None else self.interval
        self.failures = 0
        if self.retry is not None:
            self.retry.reset()
        return self.interval if delay is None else max(0.0, float(delay))

    def poll(self, now: float | None = None) -> float:
        """Run a round when one is due at ``now`` (default: ``clock()``) or was asked for by
        :meth:`wake`; return when the next round is due."""
        at = self.clock() if now is None else now
        if self._woken.is_set() or at >= self.due:
            self._woken.clear()
            delay = self.run_once()
            # measured from the round's end: on the real clock after it, at ``now`` when simulated
            self.due = (self.clock() if now is None else at) + delay
        return self.due

    def _log_failure(self, what: str, exc: Exception) -> None:
        if self.expected_errors and isinstance(exc, self.expected_errors):
            if self.failures == 1 or self.failures % self.warn_every == 0:
                self.log.warning("%s: %s (%d in a row): %s", self.name, what, self.failures, exc)
            return
        self.log.error("%s: %s (%d in a row)", self.name, what, self.failures, exc_info=exc)

    def _hook(self, hook: Callable[[], None] | None, what: str) -> None:
        if hook is None:
            return
        try:
            hook()
        except Exception as exc:  # noqa: BLE001 - a hook's failure must not take the thread down
            self.errors += 1
            self.log.error("%s: %s failed", self.name, what, exc_info=exc)

    # -- the thread --------------------------------------------------------------------------------
    def start(self) -> Service:
        """Start the loop's thread (idempotent while running); return self."""
        with self._start_lock:
            if self._thread is not None:
                if self._stopping.is_set():
                    raise RuntimeError(f"service {self.name!r} was stopped; it does not start again")
                return self
            self.due = self.clock() + self.first_delay
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._hook(self.on_start, "on_start")
            while not self._stopping.is_set():
                due = self.poll()
                if self._stopping.is_set():
                    break
                self._woken.wait(max(0.0, due - self.clock()))
        finally:
            self._hook(self.on_stop, "on_stop")

    def wake(self) -> None:
        """Run the next round now (any thread)."""
        self._woken.set()

    def request_stop(self) -> None:
        """End the loop after the current round, without waiting (any thread, ``tick`` included)."""
        self._stopping.set()
        self._woken.set()

    def stop(self, timeout: float = 5.0) -> bool:
        """Request a stop and join the thread for at most ``timeout`` seconds (not when called on
        the thread itself); True when the thread has ended (or never started)."""
        self.request_stop()
        with self._start_lock:  # a start under way on another thread finishes first
            thread = self._thread
        if thread is None:
            return True
        if thread is not threading.current_thread():
            thread.join(timeout)
        return not thread.is_alive()

    @property
    def stopping(self) -> bool:
        """True once a stop was requested."""
        return self._stopping.is_set()

    @property
    def running(self) -> bool:
        """The thread runs and no stop was requested."""
        return self._thread is not None and self._thread.is_alive() and not self._stopping.is_set()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopping" if self.stopping else "idle"
        return f"Service({self.name!r}, interval={self.interval:g}, {state})"
