"""TopologyContext: what a running task may know about the topology and itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stormpy.topology.fields import Fields
from stormpy.topology.layout import TaskLayout
from stormpy.topology.spec import TopologySpec
from stormpy.topology.state import CHECKPOINTS, StateBackend, StateStore


class TopologyContext:
    """Read-only view of the topology for one task (Storm's TopologyContext), and the task's
    handle on durable state (:meth:`state_store`)."""

    def __init__(self, topology_id: str, spec: TopologySpec, layout: TaskLayout, task_id: int,
                 worker_tasks: Sequence[int], conf: Mapping[str, Any],
                 worker_port: int | None = None, state: StateBackend | None = None) -> None:
        self.topology_id = topology_id
        self.spec = spec
        self.layout = layout
        self.task_id = task_id
        self.component_id = layout.task_component[task_id]
        self.worker_tasks = list(worker_tasks)
        self.worker_port = worker_port
        self.conf = conf
        self._state = state

    @property
    def component_tasks(self) -> list[int]:
        """Task ids of this task's component."""
        return self.layout.component_tasks[self.component_id]

    @property
    def task_index(self) -> int:
        """Position of this task among its component's tasks (0-based)."""
        return self.component_tasks.index(self.task_id)

    def tasks_of(self, component: str) -> list[int]:
        """Task ids of any component; KeyError naming it when unknown."""
        try:
            return self.layout.component_tasks[component]
        except KeyError:
            raise KeyError(f"unknown component {component!r}") from None

    def component_of(self, task_id: int) -> str:
        return self.layout.task_component[task_id]

    def output_fields(self, stream: str = "default", component: str | None = None) -> Fields:
        return self.spec.stream_fields(component or self.component_id, stream)

    def state_store(self, area: str = CHECKPOINTS) -> StateStore:
        """This topology's store for ``area`` (``"checkpoints"`` or ``"transactional"``), shared by
        every task of the topology: small msgpack values under key paths, bounded in time (see
        :mod:`stormpy.topology.state`). ZooKeeper on a cluster and in a LocalCluster configured
        with ``storm.zookeeper.servers``, memory otherwise. ValueError for an unknown area;
        RuntimeError when the runtime gave this context no state (a context built by hand)."""
        if self._state is None:
            raise RuntimeError(f"{self!r} has no state backend (contexts made by the runtime have "
                               "one)")
        return self._state.store(area, self.topology_id)

    def __repr__(self) -> str:
        return f"TopologyContext({self.topology_id!r}, {self.component_id!r}, task={self.task_id})"
