"""Waiting on conditions: the one polling helper of stormpy, for tests and daemons alike.

* :func:`wait_for` polls a condition until it holds and returns its (truthy) value, or raises
  :class:`WaitTimeout` naming what was awaited. Tests wait on what they need, never on a fixed
  sleep; daemons and local parts that wait for a server to serve, a leader to settle or replicas
  to appear use it too, turning a ``WaitTimeout`` into their own error.
* :func:`stays_unchanged` checks that something keeps its value for a while (the only honest use
  of elapsed time in a test: "nothing happens"), naming what it watches when it changes.

``WaitTimeout`` is both a ``TimeoutError`` and an ``AssertionError``, so a timed-out wait reads as
a failed test and code expecting either keeps working.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["WaitTimeout", "stays_unchanged", "wait_for"]

T = TypeVar("T")


class WaitTimeout(TimeoutError, AssertionError):
    """A condition did not hold in time, or a watched value changed; the message says which."""


def wait_for(condition: Callable[[], T], timeout: float, what: str, *, interval: float = 0.01,
             ignore: tuple[type[BaseException], ...] = (),
             check: Callable[[], None] | None = None,
             clock: Callable[[], float] | None = None,
             sleep: Callable[[float], None] | None = None) -> T:
    """Poll ``condition`` every ``interval`` seconds until it returns something truthy, and return
    that value. After ``timeout`` seconds raise :class:`WaitTimeout` naming ``what``; the
    last poll is the first at or past the deadline (what holds by then is still returned).

    Exceptions of the types in ``ignore`` raised by ``condition`` count as "not yet" (the last one
    is named in the timeout message); any other exception propagates. ``check``, when given, runs
    after every poll that found the condition false and may raise to end the wait early (a
    daemon that exited, a worker that failed).

    ``clock`` (seconds, monotonic) and ``sleep`` replace ``time.monotonic`` and ``time.sleep``
    when given: a caller that takes a driven clock for its tests hands it on.
    """
    if timeout < 0:
        raise ValueError(f"wait_for: timeout must be >= 0, got {timeout}")
    now = clock if clock is not None else time.monotonic
    pause = sleep if sleep is not None else time.sleep
    deadline = now() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except ignore as exc:
            last_error = exc
        if check is not None:
            check()
        if now() >= deadline:
            extra = f" (last error: {last_error!r})" if last_error is not None else ""
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}{extra}")
        pause(interval)


def stays_unchanged(read: Callable[[], Any], seconds: float, what: str, *,
                    interval: float = 0.05) -> Any:
    """Read ``read()`` now and every ``interval`` seconds for ``seconds`` seconds; return the value
    when it never changed, raise :class:`WaitTimeout` naming ``what`` with the old and new value
    as soon as it does."""
    start = read()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
        now = read()
        if now != start:
            raise WaitTimeout(f"{what} changed within {seconds:g}s: {start!r} -> {now!r}")
    return start
