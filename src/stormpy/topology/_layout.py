"""Task ids and executors of a topology, computed the same way everywhere.

As in Storm, components are taken in sorted id order (system components included) and each gets a
contiguous run of task ids starting at 1; a component's tasks are split into ``num_executors``
contiguous ranges. Nimbus, workers and local mode all derive the same layout from the spec and
the acker count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stormpy.topology._spec import MAX_TASK_PARALLELISM_KEY, ComponentSpec, TopologySpec

ACKER_COMPONENT = "__acker"

#: An executor as the cluster records and the wire name it: ``(start_task, end_task)``, inclusive.
ExecutorKey = tuple[int, int]


def acker_count(conf: Mapping[str, Any]) -> int:
    """``topology.acker.executors``; None means one per worker, 0 disables acking."""
    n = conf.get("topology.acker.executors")
    if n is None:
        n = conf.get("topology.workers", 1) or 1
    return int(n)


@dataclass(frozen=True)
class Executor:
    """A contiguous range of task ids of one component, run together."""

    component: str
    start_task: int
    end_task: int

    @property
    def tasks(self) -> range:
        return range(self.start_task, self.end_task + 1)

    @property
    def key(self) -> ExecutorKey:
        return (self.start_task, self.end_task)


@dataclass(frozen=True)
class TaskLayout:
    """Component → task ids, task id → component, and the executors."""

    component_tasks: dict[str, list[int]]
    task_component: dict[int, str]
    executors: list[Executor]

    @property
    def acker_tasks(self) -> list[int]:
        return self.component_tasks.get(ACKER_COMPONENT, [])


def task_count(comp: ComponentSpec, conf: Mapping[str, Any]) -> int:
    """The tasks ``comp`` gets, as Storm's ``getComponentParallelism`` computes them: the tasks
    asked for (``ComponentSpec.num_tasks``: component ``topology.tasks``, else the task count, else
    the parallelism), capped by ``topology.max.task.parallelism`` — the component's own value when
    it sets one, else the topology's (Storm merges the component config over the topology's).
    ValueError naming the key when the topology's cap is not an integer >= 1."""
    n = comp.num_tasks
    cap = comp.config.get(MAX_TASK_PARALLELISM_KEY)
    if cap is None:
        cap = conf.get(MAX_TASK_PARALLELISM_KEY)
        if cap is not None and (not isinstance(cap, int) or isinstance(cap, bool) or cap < 1):
            raise ValueError(f"{MAX_TASK_PARALLELISM_KEY} must be an integer >= 1 or unset, "
                             f"got {cap!r}")
    return n if cap is None else min(n, int(cap))


def split_tasks(tasks: list[int], executors: int) -> list[list[int]]:
    """Split ``tasks`` into ``executors`` contiguous, nearly equal runs (first runs larger)."""
    base, extra = divmod(len(tasks), executors)
    out, i = [], 0
    for e in range(executors):
        n = base + (1 if e < extra else 0)
        out.append(tasks[i:i + n])
        i += n
    return out


def compute_layout(spec: TopologySpec, conf: Mapping[str, Any],
                   executor_overrides: Mapping[str, int] | None = None) -> TaskLayout:
    """The task layout for ``spec`` with ``acker_count(conf)`` acker tasks.

    Each component gets ``task_count(component, conf)`` tasks over ``min(parallelism, tasks)``
    executors. ``executor_overrides`` (component → executors) comes from a rebalance, which Nimbus
    refuses beyond the component's task count (as Storm does); a larger count recorded anyway
    runs one executor per task.
    """
    counts: dict[str, tuple[int, int]] = {}
    for cid, c in spec.components.items():
        n_tasks = task_count(c, conf)
        counts[cid] = (n_tasks, min(c.parallelism, n_tasks))
    n_ackers = acker_count(conf)
    if n_ackers > 0:
        counts[ACKER_COMPONENT] = (n_ackers, n_ackers)
    for cid, n in (executor_overrides or {}).items():
        if cid in counts:
            counts[cid] = (counts[cid][0], max(1, min(int(n), counts[cid][0])))
    component_tasks: dict[str, list[int]] = {}
    task_component: dict[int, str] = {}
    executors: list[Executor] = []
    next_task = 1
    for cid in sorted(counts):
        n_tasks, n_exec = counts[cid]
        tasks = list(range(next_task, next_task + n_tasks))
        next_task += n_tasks
        component_tasks[cid] = tasks
        for t in tasks:
            task_component[t] = cid
        for run in split_tasks(tasks, n_exec):
            executors.append(Executor(cid, run[0], run[-1]))
    return TaskLayout(component_tasks, task_component, executors)
