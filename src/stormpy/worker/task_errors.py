"""The errors of a worker's tasks (Storm's ``reportError``), recorded on the loop thread.

Each error is logged. Then it is throttled, once, per task as Storm's executors do: a task keeps
at most ``topology.max.error.report.per.interval`` errors per
``topology.error.throttle.interval.secs``, measured on the worker's clock (simulated in tests);
the rest are only logged and counted (``suppressed``). The error that stops the worker
(``force``) is never throttled. A kept error joins the last ``MAX_ERRORS_KEPT`` of its component
(with time, task, the worker's host name and port: ``Worker.errors``, ``LocalCluster.errors``)
and is handed to ``on_error``, which must not drop it: on a cluster that is the
``ErrorReporter``, writing every error it is handed to ZooKeeper with the same host and port.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.worker.errors import WorkerError, caused_by
from stormpy.worker.factory import OnError

__all__ = ["MAX_ERRORS_KEPT", "SUMMARIZED_LOG_EXTRA", "TaskErrors"]

log = logging.getLogger("stormpy.worker")

#: errors kept per component
MAX_ERRORS_KEPT = 10
#: ``extra`` of the log records of what stops a worker (its error, then the stop): a front end
#: that prints them itself (``stormpy local``'s summary) leaves these records out
SUMMARIZED_LOG_EXTRA = {"summarized": True}


class TaskErrors:
    """The recorded errors of one worker's tasks (see the module docstring); ``now`` is the
    worker's clock."""

    def __init__(self, conf: Mapping[str, Any], now: Callable[[], float], hostname: str,
                 port: int | None, on_error: OnError | None) -> None:
        self._now = now
        self.hostname = hostname
        self.port = port
        self._on_error = on_error
        #: the last ``MAX_ERRORS_KEPT`` kept errors of each component
        self.kept: dict[str, deque[dict[str, Any]]] = {}
        #: errors only logged because their task was over its throttle
        self.suppressed = 0
        self._per_interval = int(conf["topology.max.error.report.per.interval"])
        self._interval = float(conf["topology.error.throttle.interval.secs"])
        #: per task: [start of its current window, errors in it]
        self._windows: dict[int, list[float]] = {}

    def record(self, component: str, task: int, text: str, force: bool = False) -> None:
        """Log an error of ``component``'s ``task``; unless throttled (never with ``force``),
        keep it and hand it to ``on_error``."""
        log.error("error in component %s task %d: %s", component, task, text,
                  extra=SUMMARIZED_LOG_EXTRA if force else None)
        if not force and self._throttled(task, self._now()):
            self.suppressed += 1
            return
        errs = self.kept.setdefault(component, deque(maxlen=MAX_ERRORS_KEPT))
        errs.append({"component": component, "task": task, "time": time.time(),
                     "host": self.hostname, "port": self.port, "error": text})
        if self._on_error is not None:
            try:
                self._on_error(component, task, text)
            except Exception:  # noqa: BLE001 - reporting must never kill the loop
                log.exception("could not report error of %s", component)

    def fatal(self, component: str, task: int, exc: BaseException,
              what: str | None = None) -> WorkerError:
        """Record ``exc`` (its traceback; forced: never throttled) as the error of
        ``component``'s ``task`` that stops the worker, and return the ``WorkerError`` to raise,
        ``exc`` its cause. Its message: ``what`` failed (by default: the component's task
        raised), then the exception's type and text."""
        self.record(component, task, "".join(traceback.format_exception(exc)).rstrip(), True)
        head = f"{what}:" if what else f"component {component!r} task {task} raised"
        failure = WorkerError(component, task, f"{head} {type(exc).__name__}: {exc}")
        caused_by(failure, exc)
        return failure

    def _throttled(self, task: int, now: float) -> bool:
        window = self._windows.get(task)
        if window is None or now - window[0] >= self._interval:
            self._windows[task] = [now, 1]
            return False
        window[1] += 1
        return window[1] > self._per_interval
