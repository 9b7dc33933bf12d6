"""Reporting component errors of a cluster worker to ZooKeeper without slowing the executor loop.

``report`` (any thread, never blocks) queues an error; a side thread writes it with
``ClusterState.report_error``. Like Storm, at most ``topology.max.error.report.per.interval``
errors (default 5) are written per ``topology.error.throttle.interval.secs`` (default 10); the
rest are only logged. ``close`` writes what is still queued (bounded by its timeout), so an error
that stops the worker reaches ZooKeeper before the process exits.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import ErrorInfo
from stormpy.cluster.state import ClusterState

__all__ = ["ErrorReporter"]

log = logging.getLogger(__name__)

_STOP = object()


class ErrorReporter:
    """Writes ``ErrorInfo`` documents for ``topology_id`` from a worker at ``host:port``."""

    def __init__(self, state: ClusterState, topology_id: str, host: str, port: int,
                 conf: Mapping[str, Any] | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        conf = conf or {}
        self.state = state
        self.topology_id = topology_id
        self.host = host
        self.port = port
        self.max_per_interval = int(conf.get("topology.max.error.report.per.interval") or 5)
        self.interval = float(conf.get("topology.error.throttle.interval.secs") or 10)
        self._clock = clock
        self._queue: queue.Queue[Any] = queue.Queue()
        self._window_start = clock()
        self._in_window = 0
        self._lock = threading.Lock()
        self.suppressed = 0
        self._thread: threading.Thread | None = None

    def start(self) -> ErrorReporter:
        """Start the writer thread; return self."""
        self._thread = threading.Thread(target=self._run, name="stormpy-error-reporter", daemon=True)
        self._thread.start()
        return self

    def report(self, component: str, task: int, text: str) -> None:
        """Queue one error (throttled); safe from any thread."""
        now = self._clock()
        with self._lock:
            if now - self._window_start >= self.interval:
                self._window_start, self._in_window = now, 0
            if self._in_window >= self.max_per_interval:
                self.suppressed += 1
                return
            self._in_window += 1
        self._queue.put(ErrorInfo(component=component, task=task, time=time.time(), message=text,
                                  host=self.host, port=self.port))

    def _write(self, error: ErrorInfo) -> None:
        try:
            self.state.report_error(self.topology_id, error)
        except (ClusterStateError, ValueError) as exc:
            log.warning("could not report the error of %s task %d to ZooKeeper: %s",
                        error.component, error.task, exc)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            self._write(item)

    def close(self, timeout: float = 5.0) -> None:
        """Write the queued errors (within ``timeout``) and stop the thread; idempotent."""
        if self._thread is None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    self._write(item)
            return
        self._queue.put(_STOP)
        self._thread.join(timeout)
        self._thread = None
