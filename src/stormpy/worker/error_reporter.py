"""Reporting component errors of a cluster worker to ZooKeeper without slowing the executor loop.

``report`` (any thread, never blocks) queues an error and wakes the reporter's service (a
:class:`~stormpy.host.service.Service` named ``stormpy-error-reporter``), whose round writes every
queued error with ``ClusterState.report_error``, in the order reported. Errors arrive already
throttled: ``Worker.record_error`` is the one throttle (per task, as Storm's executors; the error
that stops the worker never throttled), so the reporter writes every error it is handed, the fatal
one included. ``close`` stops the service and writes what is still queued (bounded by its
timeout), so an error that stops the worker reaches ZooKeeper before the process exits. The host
written is the one the worker records (``WorkerConfig.hostname``: the process gives both the same).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import ErrorInfo
from stormpy.cluster.state import ClusterState
from stormpy.host.service import Service

__all__ = ["ErrorReporter"]

log = logging.getLogger(__name__)

#: With nothing reported, the service sleeps this long (a report wakes it at once).
_IDLE_SECS = 60.0


class ErrorReporter:
    """Writes ``ErrorInfo`` documents for ``topology_id`` from a worker at ``hostname:port``."""

    def __init__(self, state: ClusterState, topology_id: str, hostname: str, port: int) -> None:
        self.state = state
        self.topology_id = topology_id
        self.hostname = hostname
        self.port = port
        self._queued: deque[ErrorInfo] = deque()
        self._lock = threading.Lock()
        self._service = Service("stormpy-error-reporter", self._write_queued, interval=_IDLE_SECS,
                                log=log)

    def start(self) -> ErrorReporter:
        """Start the writer service; return self."""
        self._service.start()
        return self

    def report(self, component: str, task: int, text: str) -> None:
        """Queue one error to be written (never dropped); safe from any thread."""
        error = ErrorInfo(component=component, task=task, time=time.time(), message=text,
                          host=self.hostname, port=self.port)
        with self._lock:
            self._queued.append(error)
        self._service.wake()

    def _write_queued(self, deadline: float | None = None) -> None:
        """Write the queued errors, oldest first (until ``deadline`` on ``time.monotonic``)."""
        while deadline is None or time.monotonic() < deadline:
            with self._lock:
                if not self._queued:
                    return
                error = self._queued.popleft()
            try:
                self.state.report_error(self.topology_id, error)
            except (ClusterStateError, ValueError) as exc:
                log.warning("could not report the error of %s task %d to ZooKeeper: %s",
                            error.component, error.task, exc)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the service and write the errors still queued (within ``timeout``); idempotent."""
        deadline = time.monotonic() + timeout
        self._service.stop(timeout)
        self._write_queued(deadline)
