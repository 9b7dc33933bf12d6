"""What a cluster worker publishes about itself: its local heartbeat file and its statistics.

The local heartbeat (``workers/<topology-id>-<port>/heartbeat`` under the supervisor's directory,
see docs/cluster-contract.md) is a msgpack map ``{"time": unix secs, "pid": int, "topology_id":
str, "port": int, "executors": [[start, end], ...]}``, replaced atomically so a reader never sees a
partial file. The supervisor reads it to decide whether the worker is alive.

:func:`component_stats` turns ``Worker.task_stats()`` into the ``stats`` of a
:class:`~stormpy.cluster.records.WorkerHeartbeat`: component → counter → number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgpack

from stormpy.cluster.local_layout import HEARTBEAT_FILE

__all__ = ["HEARTBEAT_FILE", "component_stats", "write_local_heartbeat"]


_COUNTERS = ("transferred", "executed", "acked", "failed", "latency_sum", "latency_count")


def write_local_heartbeat(path: str | os.PathLike[str], *, time: float, pid: int, topology_id: str,
                          port: int, executors: Sequence[tuple[int, int]]) -> None:
    """Atomically replace the local heartbeat file at ``path`` (its directory must exist)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{pid}.tmp")
    data = msgpack.packb({"time": time, "pid": pid, "topology_id": topology_id, "port": port,
                          "executors": [list(e) for e in executors]}, use_bin_type=True)
    with open(tmp, "wb") as out:
        out.write(data)
    os.replace(tmp, target)


def component_stats(task_docs: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Sum task statistics per component (system components such as ``__acker`` included).

    Counters: ``tasks``, ``emitted`` (user streams only, like the local-mode stats),
    ``transferred``, ``executed``, ``acked``, ``failed``, ``latency_sum`` (seconds) and
    ``latency_count`` (so heartbeats of several workers can be added up), and
    ``complete_latency_ms`` when at least one latency was measured.
    """
    out: dict[str, dict[str, float]] = {}
    for doc in task_docs:
        c = out.setdefault(doc["component"], {"tasks": 0, "emitted": 0, **dict.fromkeys(_COUNTERS, 0)})
        c["tasks"] += 1
        c["emitted"] += sum(n for s, n in doc["emitted"].items() if not s.startswith("__"))
        for key in _COUNTERS:
            c[key] += doc[key]
    for c in out.values():
        if c["latency_count"]:
            c["complete_latency_ms"] = round(1000.0 * c["latency_sum"] / c["latency_count"], 3)
    return out
