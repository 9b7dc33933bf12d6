"""The connectors' one way to report an error: hand it to the task's ``report_error``.

Contract: :func:`report_to_task` passes ``"<label>: <text>"`` to ``component.report_error``
and does nothing else: the worker's ``TaskErrors`` logs every error and throttles, once, per task
(``topology.max.error.report.per.interval`` per ``topology.error.throttle.interval.secs``), what
goes on to ZooKeeper and the UI, so a broker outage neither floods ZooKeeper nor is throttled
twice. A component not bound to a runtime (used on its own, or in a unit test without a worker)
has no task to report to: the error is logged as a warning instead.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["report_to_task"]

log = logging.getLogger(__name__)


def report_to_task(component: Any, label: str, text: str) -> None:
    """Report ``text`` as ``<label>: text`` through ``component.report_error`` (see the module
    docstring)."""
    message = f"{label}: {text}"
    try:
        component.report_error(message)
    except RuntimeError:  # not bound: no runtime to report to
        log.warning("%s", message)
