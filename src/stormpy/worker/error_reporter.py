"""Reporting component errors of a cluster worker to ZooKeeper without slowing the executor loop.

``report`` (any thread, never blocks) queues an error; a side thread writes it with
``ClusterState.report_error``. Errors arrive already throttled: ``Worker.record_error`` is the
one throttle (per task, as Storm's executors; the error that stops the worker never throttled),
so the reporter writes every error it is handed, the fatal one included. ``close`` writes what is
still queued (bounded by its timeout), so an error that stops the worker reaches ZooKeeper before
the process exits. The host written is the one the worker records (``WorkerConfig.hostname``:
the process gives both the same).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import ErrorInfo
from stormpy.cluster.state import ClusterState

__all__ = ["ErrorReporter"]

log = logging.getLogger(__name__)

_STOP = object()


class ErrorReporter:
    """Writes ``ErrorInfo`` documents for ``topology_id`` from a worker at ``hostname:port``."""

    def __init__(self, state: ClusterState, topology_id: str, hostname: str, port: int) -> None:
        self.state = state
        self.topology_id = topology_id
        self.hostname = hostname
        self.port = port
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None

    def start(self) -> ErrorReporter:
        """Start the writer thread; return self."""
        self._thread = threading.Thread(target=self._run, name="stormpy-error-reporter", daemon=True)
        self._thread.start()
        return self

    def report(self, component: str, task: int, text: str) -> None:
        """Queue one error to be written (never dropped); safe from any thread."""
        self._queue.put(ErrorInfo(component=component, task=task, time=time.time(), message=text,
                                  host=self.hostname, port=self.port))

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
