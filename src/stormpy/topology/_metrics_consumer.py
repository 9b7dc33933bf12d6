"""Storm's metrics-consumer hook: user code that receives every task's raw data points.

A topology lists its consumers in ``topology.metrics.consumer.register``, as in Storm::

    conf["topology.metrics.consumer.register"] = [
        {"class": "mypkg.metrics:FileConsumer", "parallelism.hint": 1, "argument": "/tmp/points"},
    ]

``class`` is an import path (``module:Class``, or a class object in local mode) of a subclass of
:class:`IMetricsConsumer`; ``argument`` (optional, any msgpack-able value) is handed to
``prepare``; ``parallelism.hint`` (optional int >= 1) is accepted for Storm compatibility but does
not change anything: stormpy runs one instance of each consumer in every worker (not as a bolt fed
by a metrics stream), and that instance receives the data points of that worker's tasks.

Every ``topology.builtin.metrics.bucket.size.secs`` (Storm's key, default 60) the worker calls
``handle_data_points(task_info, data_points)`` once per task from a side thread of its own, never
from the executor loop: a slow consumer delays only later deliveries (which then carry the newest
figures; none are queued), never tuples. Data points are cumulative since the task first started
(counters carried across worker restarts on a cluster), not per-interval deltas as in Storm.
Exceptions a consumer raises are logged and do not stop the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ConsumerContext", "ConsumerSpec", "IMetricsConsumer", "REGISTER_KEY", "TaskInfo",
           "parse_consumer_register"]

#: the topology config key listing the consumers
REGISTER_KEY = "topology.metrics.consumer.register"


@dataclass(frozen=True)
class TaskInfo:
    """Where a task's data points come from (Storm's ``IMetricsConsumer.TaskInfo``).
    ``timestamp`` is the time they were taken (Unix seconds)."""

    component: str
    task: int
    host: str
    port: int
    timestamp: float


@dataclass(frozen=True)
class ConsumerContext:
    """What ``prepare`` learns about the place a consumer runs: the topology, the worker's host
    and port (0 in local mode) and the task ids whose data points it will receive."""

    topology_id: str
    host: str
    port: int
    tasks: tuple[int, ...]


class IMetricsConsumer:
    """Receives the data points of the tasks of one worker (Storm's ``IMetricsConsumer``).

    Data points map a name to a value: each task's counters ``emitted`` (stream → tuples, system
    streams included), ``transferred``, ``executed``, ``acked``, ``failed``, ``latency_sum``
    (seconds) and ``latency_count`` (complete latency of spout tuples), ``complete_latency_ms``
    when a latency was measured, and every metric the task registered with
    ``context.register_metric`` under its own name (its current value).
    """

    def prepare(self, conf: Mapping[str, Any], argument: Any, context: ConsumerContext) -> None:
        """Called once before the first ``handle_data_points``, on the consumer's thread."""

    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        """Called with one task's data points each interval."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """Called once when the worker stops (or the topology is killed in local mode)."""


@dataclass(frozen=True)
class ConsumerSpec:
    """One validated entry of ``topology.metrics.consumer.register``."""

    cls: Any  # an import path "module:Class" or, in local mode, a class
    argument: Any
    parallelism_hint: int


def parse_consumer_register(value: Any) -> list[ConsumerSpec]:
    """Validate the value of ``topology.metrics.consumer.register`` (None or a list of maps);
    ValueError naming the entry and the field that is wrong. Classes are not imported here."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise ValueError(f"{REGISTER_KEY} must be a list of maps, not {type(value).__name__}")
    out = []
    for i, entry in enumerate(value):
        where = f"{REGISTER_KEY}[{i}]"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where} must be a map with a 'class', not {type(entry).__name__}")
        unknown = sorted(set(entry) - {"class", "argument", "parallelism.hint"})
        if unknown:
            raise ValueError(f"{where} has unknown fields {unknown} (known: class, argument, "
                             "parallelism.hint)")
        cls = entry.get("class")
        if isinstance(cls, str):
            module, colon, name = cls.partition(":")
            if not colon or not module or not name or ":" in name:  # as the submit check
                raise ValueError(f"{where}.class must be an import path 'module:Class', got {cls!r}")
        elif not isinstance(cls, type):
            raise ValueError(f"{where}.class is missing or not an import path 'module:Class'")
        hint = entry.get("parallelism.hint", 1)
        if type(hint) is not int or hint < 1:
            raise ValueError(f"{where}.parallelism.hint must be an int >= 1, got {hint!r}")
        out.append(ConsumerSpec(cls, entry.get("argument"), hint))
    return out
