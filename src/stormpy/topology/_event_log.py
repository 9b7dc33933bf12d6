"""Sampled tuples (Storm's event logger): which components sample, and the events log format.

Contract: ``stormpy debug NAME [-c COMPONENT] --enable --sampling-pct P`` (the UI's Debug button,
``POST /api/v1/topology/:id/debug/enable/P``) stores ``{"enable": true, "samplingpct": P}`` in the
topology's StormBase ``component_debug`` under the topology id (every component) or the
component's name. A component's own entry wins over the topology's (:func:`sampling_pct`).
Each worker watches its StormBase; while a local task's component samples, P percent of that
task's emits (chosen at random, each emit independently) are written, one JSON object per line,
to the worker's events log (``worker-<topology id>-<port>-events.log`` beside the worker log) by a
side thread of the worker, never by the executor loop. A line (:func:`event_doc`)::

    {"ts": 1767225600.123, "time": "2026-01-01T00:00:00.123Z", "component": "split",
     "task": 3, "stream": "default", "values": ["the", 1], "message_id": null}

``ts`` is the emit time (Unix seconds), ``time`` the same in UTC, ``values`` the tuple's values
(a value JSON cannot carry is written as its ``repr``), ``message_id`` a spout's message id (its
``repr`` when JSON cannot carry it; null for bolts and unanchored spout tuples). The newest
sampled tuples of each worker also travel in its heartbeat (``WorkerHeartbeat.events``, at most
:data:`RECENT_EVENTS`, a long one cut short), which the UI's events page lists.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["EVENTLOGGER_EXECUTORS", "RECENT_EVENTS", "event_doc", "event_line", "sampling_pct"]

#: the topology config key of the event logger (0: none; None or >= 1: one per worker)
EVENTLOGGER_EXECUTORS = "topology.eventlogger.executors"
#: sampled tuples a worker's heartbeat carries (the newest)
RECENT_EVENTS = 50


def sampling_pct(component_debug: Mapping[str, Mapping[str, Any]], topology_id: str,
                 component: str) -> float | None:
    """The percentage of ``component``'s emits sampled, or None when it samples none."""
    entry = component_debug.get(component) or component_debug.get(topology_id)
    if not entry or not entry.get("enable"):
        return None
    pct = float(entry.get("samplingpct") or 0.0)
    return pct if pct > 0 else None


def _plain(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def event_doc(ts: float, component: str, task: int, stream: str, values: Any,
              message_id: Any = None) -> dict[str, Any]:
    """One sampled tuple as the events log writes it (see the module docstring)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts * 1000) % 1000:03d}Z"
    return {"ts": round(ts, 3), "time": stamp, "component": component, "task": task,
            "stream": str(stream), "values": [_plain(v) for v in values],
            "message_id": None if message_id is None else _plain(message_id)}


def event_line(doc: Mapping[str, Any]) -> str:
    """The events log line of ``doc`` (newline included)."""
    return json.dumps(doc, separators=(", ", ": ")) + "\n"
