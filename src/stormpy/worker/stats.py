"""Per-task counters, kept as plain ints on the hot path and summed per component on demand.

Latency sampling (Storm's ``topology.stats.sample.rate``): a bolt task times a share of its tuples
only. ``TaskStats.sample_countdown`` counts the tuples left until the next timed one; the loop
lowers it by the number of tuples it is about to run and takes the timed path
(``sampling.LatencySampler.run``) only when it reaches zero, so an unsampled tuple costs no clock call
and no per-tuple work at all. The gaps between timed tuples are drawn from the geometric
distribution (:func:`sample_gap`), which times each tuple independently with probability ``rate``
like Storm's per-tuple coin, without a coin per tuple. A task draws ``GAP_TABLE`` gaps once and
takes them in turn (``TaskStats.next_gap``), starting at a random place each time round, so a
timed tuple costs no random draw or logarithm either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import log, log1p
from random import getrandbits, random
from typing import Any, Final

#: figures of a task document that are levels, not counters: never added up across incarnations
#: or turned into deltas
GAUGES: frozenset[str] = frozenset({"receive_queue"})
#: a countdown that never runs out (sampling off, spouts)
NEVER: Final = 1 << 62
#: gaps a task draws at once (a power of two)
GAP_TABLE: Final = 64


def check_sample_rate(value: Any) -> float:
    """``topology.stats.sample.rate`` as a float in [0, 1]; ValueError naming the key otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"topology.stats.sample.rate must be a number from 0 to 1, got {value!r}")
    return float(value)


def sample_gap(rate: float, u: float) -> int:
    """Tuples from one timed tuple to the next (>= 1) for ``rate`` in [0, 1], from a uniform
    ``u`` in (0, 1]: the geometric distribution of a coin with probability ``rate`` per tuple
    (mean ``1 / rate``). ``rate`` 0 gives :data:`NEVER`."""
    if rate >= 1.0:
        return 1
    if rate <= 0.0:
        return NEVER
    gap = 1 + int(log(u) / log1p(-rate))
    return gap if gap < NEVER else NEVER


class TaskStats:
    """Counters of one task. ``emitted`` counts emits per stream (kept by the stream routers);
    ``transferred`` counts deliveries (one emit to three tasks transfers three tuples).

    ``execute_latency_*`` and ``process_latency_*`` (seconds) hold the sampled tuples only: the
    mean latency is ``sum / count``; ``executed`` counts every tuple."""

    __slots__ = ("component", "task", "routers", "transferred", "executed", "acked", "failed",
                 "latency_sum", "latency_count", "sample_rate", "sample_countdown",
                 "execute_latency_sum", "execute_latency_count", "process_latency_sum",
                 "process_latency_count", "gaps", "gap_index")

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
        self.sample_rate = 0.0
        #: tuples to run until the next timed one (that one included); see the module doc
        self.sample_countdown = NEVER
        self.execute_latency_sum = 0.0
        self.execute_latency_count = 0
        self.process_latency_sum = 0.0
        self.process_latency_count = 0
        #: ``GAP_TABLE`` gaps drawn for ``sample_rate``, taken in turn from ``gap_index``
        self.gaps: list[int] = [NEVER]
        self.gap_index = 0

    def set_sample_rate(self, rate: Any) -> None:
        """Time ``rate`` (0 to 1) of the tuples from now on."""
        self.sample_rate = check_sample_rate(rate)
        self.gaps = [sample_gap(self.sample_rate, 1.0 - random()) for _ in range(GAP_TABLE)]
        self.gap_index = getrandbits(6) & (GAP_TABLE - 1)
        self.sample_countdown = self.next_gap()

    def next_gap(self) -> int:
        """The next gap to a timed tuple (see :func:`sample_gap` and the module doc)."""
        i = self.gap_index
        gap = self.gaps[i]
        i += 1
        self.gap_index = i if i < len(self.gaps) else getrandbits(6) & (len(self.gaps) - 1)
        return gap

    @property
    def emitted(self) -> dict[str, int]:
        return {name: r.emitted for name, r in self.routers.items()}

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "component": self.component, "task": self.task, "emitted": dict(self.emitted),
            "transferred": self.transferred, "executed": self.executed, "acked": self.acked,
            "failed": self.failed, "latency_sum": self.latency_sum,
            "latency_count": self.latency_count}
        if self.sample_rate > 0.0:
            doc.update(execute_latency_sum=self.execute_latency_sum,
                       execute_latency_count=self.execute_latency_count,
                       process_latency_sum=self.process_latency_sum,
                       process_latency_count=self.process_latency_count)
        return doc


def capacity(executed: float, execute_latency_ms: float | None, window_secs: float) -> float | None:
    """Storm's capacity: the share of ``window_secs`` the task spent executing, estimated as
    ``executed * execute latency / window`` (about 1 or more: the task cannot keep up). None
    without a latency; ValueError for a window that is not positive."""
    if window_secs <= 0:
        raise ValueError(f"capacity needs a positive window, got {window_secs!r} s")
    if execute_latency_ms is None:
        return None
    return executed * execute_latency_ms / (1000.0 * window_secs)


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
