"""What a cluster worker publishes about itself: its local heartbeat file and its statistics.

The local heartbeat (``workers/<topology-id>-<port>/heartbeat`` under the supervisor's directory,
see docs/cluster-contract.md) is a msgpack map ``{"time": unix secs, "pid": int, "topology_id":
str, "port": int, "executors": [[start, end], ...]}``, replaced atomically so a reader never sees a
partial file. The supervisor reads it to decide whether the worker is alive.

:func:`component_stats` turns ``Worker.task_stats()`` into the ``stats`` of a
:class:`~stormpy.cluster.records.WorkerHeartbeat`: component → counter → number, and
:func:`task_metrics` into its ``metrics``: component → task id (a string) → metric name → value.
:func:`carried_counters` and :func:`add_base` keep a task's totals across worker restarts.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgpack
import psutil

from stormpy.cluster.local_layout import HEARTBEAT_FILE
from stormpy.cluster.records import WorkerHeartbeat
from stormpy.worker.stats import GAUGES

__all__ = ["HEARTBEAT_FILE", "add_base", "carried_counters", "component_stats", "process_stats",
           "replace_msgpack_file", "task_entries", "task_metrics", "write_local_heartbeat"]


_COUNTERS = ("transferred", "executed", "acked", "failed", "latency_sum", "latency_count")
#: counters only bolt tasks with sampling on (and workers that count them) send
_SAMPLED = ("execute_latency_sum", "execute_latency_count", "process_latency_sum",
            "process_latency_count", "receive_queue_full")


def replace_msgpack_file(path: str | os.PathLike[str], doc: Any) -> None:
    """Atomically replace the file at ``path`` (its directory must exist) with ``doc`` packed by
    msgpack: a reader sees the old file or the new one, never a partial one."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        out.write(msgpack.packb(doc, use_bin_type=True))
    os.replace(tmp, target)


def write_local_heartbeat(path: str | os.PathLike[str], *, time: float, pid: int, topology_id: str,
                          port: int, executors: Sequence[tuple[int, int]]) -> None:
    """Atomically replace the local heartbeat file at ``path`` (its directory must exist)."""
    replace_msgpack_file(path, {"time": time, "pid": pid, "topology_id": topology_id, "port": port,
                                "executors": [list(e) for e in executors]})


def component_stats(task_docs: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Sum task statistics per component (system components such as ``__acker`` included).

    Counters: ``tasks``, ``emitted`` (user streams only, like the local-mode stats),
    ``transferred``, ``executed``, ``acked``, ``failed``, ``latency_sum`` (seconds) and
    ``latency_count`` (so heartbeats of several workers can be added up), the sampled
    ``execute_latency_*`` / ``process_latency_*`` sums and counts and ``receive_queue_full`` when
    tasks send them, and ``complete_latency_ms`` when at least one latency was measured.
    """
    out: dict[str, dict[str, float]] = {}
    for doc in task_docs:
        c = out.setdefault(doc["component"], {"tasks": 0, "emitted": 0, **dict.fromkeys(_COUNTERS, 0)})
        c["tasks"] += 1
        c["emitted"] += sum(n for s, n in doc["emitted"].items() if not s.startswith("__"))
        for key in _COUNTERS:
            c[key] += doc[key]
        for key in _SAMPLED:
            if key in doc:
                c[key] = c.get(key, 0) + doc[key]
    for c in out.values():
        if c["latency_count"]:
            c["complete_latency_ms"] = round(1000.0 * c["latency_sum"] / c["latency_count"], 3)
    return out


def task_entries(task_docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The heartbeat's per-task maps (``WorkerHeartbeat.tasks``): each task's ``task``,
    ``component``, ``emitted`` per stream (system streams included) and numeric counters, as the
    task reported them (cumulative since the worker started)."""
    out = []
    for doc in task_docs:
        entry: dict[str, Any] = {"task": int(doc["task"]), "component": str(doc["component"]),
                                 "emitted": {str(s): n for s, n in doc["emitted"].items()}}
        for key, value in doc.items():
            if key not in entry and isinstance(value, int | float) and not isinstance(value, bool):
                entry[key] = value
        out.append(entry)
    return out


def process_stats(process: psutil.Process | None = None) -> dict[str, float]:
    """This process's figures for the heartbeat's ``process`` map: ``cpu_user_secs``,
    ``cpu_system_secs``, ``rss_bytes``, ``threads`` and ``gc_collections_<generation>`` (from
    :func:`gc.get_stats`). Empty when psutil cannot read the process."""
    proc = process or psutil.Process()
    try:
        with proc.oneshot():
            cpu = proc.cpu_times()
            out: dict[str, float] = {"cpu_user_secs": float(cpu.user), "cpu_system_secs": float(cpu.system),
                                     "rss_bytes": float(proc.memory_info().rss),
                                     "threads": float(proc.num_threads())}
    except psutil.Error:
        return {}
    for generation, stats in enumerate(gc.get_stats()):
        out[f"gc_collections_{generation}"] = float(stats.get("collections", 0))
    return out


def task_metrics(task_docs: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The metrics components registered (``context.register_metric``), per component and task."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for doc in task_docs:
        if doc.get("metrics"):
            out.setdefault(doc["component"], {})[str(doc["task"])] = doc["metrics"]
    return out


def carried_counters(beats: Iterable[WorkerHeartbeat], tasks: Iterable[int]) -> dict[int, dict[str, Any]]:
    """For each of ``tasks``, the per-task entry (``WorkerHeartbeat.tasks``) of the newest
    heartbeat that holds it: what earlier incarnations counted for the task. Entries that are not
    maps with a ``task`` int, a ``component`` and an ``emitted`` map are ignored."""
    wanted = set(tasks)
    newest: dict[int, tuple[float, dict[str, Any]]] = {}
    for beat in beats:
        for entry in beat.tasks:
            task = entry.get("task") if isinstance(entry, dict) else None
            if type(task) is not int or task not in wanted or \
                    not isinstance(entry.get("emitted"), dict):
                continue
            if task not in newest or beat.time > newest[task][0]:
                newest[task] = (beat.time, entry)
    return {task: entry for task, (_, entry) in newest.items()}


def add_base(task_docs: Iterable[dict[str, Any]], base: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """``task_docs`` (``Worker.task_stats()``) with each task's carried counters from ``base``
    added: numeric counters and ``emitted`` per stream, not the levels of ``stats.GAUGES`` (the
    inputs are not changed)."""
    out = []
    for doc in task_docs:
        carried = base.get(doc["task"])
        if not carried:
            out.append(doc)
            continue
        doc = dict(doc)
        emitted = dict(doc["emitted"])
        for stream, n in carried["emitted"].items():
            if _is_number(n):
                emitted[stream] = emitted.get(stream, 0) + n
        doc["emitted"] = emitted
        for key, value in carried.items():
            if key not in ("task", "component", "emitted") and key not in GAUGES and \
                    _is_number(value) and _is_number(doc.get(key, 0)):
                doc[key] = doc.get(key, 0) + value
        out.append(doc)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
