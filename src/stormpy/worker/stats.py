"""Per-task counters, kept as plain ints on the hot path and summed per component on demand."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class TaskStats:
    """Counters of one task. ``emitted`` counts emits per stream (kept by the stream routers);
    ``transferred`` counts deliveries (one emit to three tasks transfers three tuples)."""

    __slots__ = ("component", "task", "routers", "transferred", "executed", "acked", "failed",
                 "latency_sum", "latency_count")

    def __init__(self, component: str, task: int) -> None:
        self.component = component
        self.task = task
        #: stream name → router; each router counts the emits on its stream
        self.routers: Mapping[str, Any] = {}
        self.transferred = 0
        self.executed = 0
        self.acked = 0
        self.failed = 0
        self.latency_sum = 0.0
        self.latency_count = 0

    @property
    def emitted(self) -> dict[str, int]:
        return {name: r.emitted for name, r in self.routers.items()}

    def to_doc(self) -> dict[str, Any]:
        return {"component": self.component, "task": self.task, "emitted": dict(self.emitted),
                "transferred": self.transferred, "executed": self.executed, "acked": self.acked,
                "failed": self.failed, "latency_sum": self.latency_sum,
                "latency_count": self.latency_count}


def summarize(docs: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Sum task stat documents per component: emitted (all user streams), transferred, executed,
    acked, failed and complete latency in ms (spouts) — what the CLI and UI show."""
    out: dict[str, dict[str, Any]] = {}
    for d in docs:
        c = out.setdefault(d["component"], {"emitted": 0, "transferred": 0, "executed": 0,
                                            "acked": 0, "failed": 0, "latency_sum": 0.0,
                                            "latency_count": 0, "tasks": 0})
        c["tasks"] += 1
        c["emitted"] += sum(n for s, n in d["emitted"].items() if not s.startswith("__"))
        for k in ("transferred", "executed", "acked", "failed", "latency_sum", "latency_count"):
            c[k] += d[k]
    for c in out.values():
        n = c.pop("latency_count")
        total = c.pop("latency_sum")
        c["complete_latency_ms"] = round(1000.0 * total / n, 3) if n else None
    return out
