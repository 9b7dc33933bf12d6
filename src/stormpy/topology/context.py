"""TopologyContext: what a running task may know about the topology and itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stormpy.topology.fields import Fields
from stormpy.topology.layout import TaskLayout
from stormpy.topology.offloop import OffLoop
from stormpy.topology.spec import TopologySpec


class TopologyContext:
    """Read-only view of the topology for one task (Storm's TopologyContext)."""

    def __init__(self, topology_id: str, spec: TopologySpec, layout: TaskLayout, task_id: int,
                 worker_tasks: Sequence[int], conf: Mapping[str, Any],
                 worker_port: int | None = None, off_loop: OffLoop | None = None) -> None:
        self.topology_id = topology_id
        self.spec = spec
        self.layout = layout
        self.task_id = task_id
        self.component_id = layout.task_component[task_id]
        self.worker_tasks = list(worker_tasks)
        self.worker_port = worker_port
        self.conf = conf
        self._off_loop = off_loop

    @property
    def off_loop(self) -> OffLoop:
        """This task's seam for blocking work (see ``stormpy.topology.offloop``); RuntimeError
        when the context does not belong to a running task."""
        if self._off_loop is None:
            raise RuntimeError(f"{self!r} belongs to no running task: it has no off_loop")
        return self._off_loop

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

    def __repr__(self) -> str:
        return f"TopologyContext({self.topology_id!r}, {self.component_id!r}, task={self.task_id})"
