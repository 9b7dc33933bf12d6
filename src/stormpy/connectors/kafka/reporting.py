"""The Kafka spout's and bolt's one way to report a client error: logged and handed to the
task's ``report_error``, at most once per ``REPORT_INTERVAL_SECS`` per kind of error, so a
broker outage does not flood the log or ZooKeeper."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["REPORT_INTERVAL_SECS", "report_throttled"]

#: seconds between two reports of the same kind of error by one task
REPORT_INTERVAL_SECS = 10.0


def report_throttled(component: Any, reported: dict[str, float], now: float, kind: str,
                     log: logging.Logger, role: str, label: str, text: str) -> None:
    """Log ``text`` as ``<role> task <id>: text`` and report it as ``<label>: text``
    unless an error of this ``kind`` was reported less than ``REPORT_INTERVAL_SECS`` before
    ``now`` (``reported`` holds the last time per kind and is updated). A component not bound
    to a runtime (unit tests) only logs."""
    if now - reported.get(kind, -1e18) < REPORT_INTERVAL_SECS:
        return
    reported[kind] = now
    log.warning("%s task %s: %s", role, component.context.task_id, text)
    try:
        component.report_error(f"{label}: {text}")
    except RuntimeError:  # not bound (unit tests without a runtime)
        pass
