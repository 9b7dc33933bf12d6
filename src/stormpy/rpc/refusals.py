"""Logging refused RPC requests without letting a peer flood the log.

* :func:`shorten` makes a peer-chosen value (request id, error message) safe to log: escaped to
  ASCII and cut to :data:`LOG_FIELD_LIMIT` characters, with the original length.
* :class:`RefusalLog` writes at most ``burst`` refusal lines per ``interval`` seconds; the rest
  are counted and reported in one line when logging resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["LOG_FIELD_LIMIT", "RefusalLog", "shorten"]

log = logging.getLogger("stormpy.rpc.server")

#: Longest peer-chosen string (request id, error message) written to the log.
LOG_FIELD_LIMIT = 80


def shorten(value: object, limit: int = LOG_FIELD_LIMIT) -> str:
    """``repr``-safe text of ``value`` cut to ``limit`` characters (with the original length)."""
    text = value if isinstance(value, str) else repr(value)
    text = text.encode("unicode_escape", "replace").decode("ascii", "replace")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...({len(text)} chars)"


class RefusalLog:
    """Rate-limited logging of refused requests: ``burst`` lines per ``interval`` seconds."""

    def __init__(self, name: str, burst: int = 20, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.burst = burst
        self.interval = interval
        self._clock = clock
        self._window_start = float("-inf")
        self._logged = 0
        self.suppressed = 0

    def refused(self, request_id: str | None, message: str) -> bool:
        """Log one refusal unless over the rate; True when a line was written."""
        now = self._clock()
        if now - self._window_start >= self.interval:
            if self.suppressed:
                log.warning("RPC server %s: %d more requests refused in the last %.0f s (not logged)",
                            self.name, self.suppressed, now - self._window_start)
            self._window_start, self._logged, self.suppressed = now, 0, 0
        if self._logged >= self.burst:
            self.suppressed += 1
            return False
        self._logged += 1
        log.info("RPC server %s: refused request %s: %s", self.name, shorten(request_id),
                 shorten(message, 300))
        return True
