"""Task hooks (Storm's ``ITaskHook``): code that watches one task's emits, acks, fails and
executes without being part of the component.

Register a hook on a task with ``context.add_task_hook(hook)`` (usually in ``open``/``prepare``),
or for every task of the topology (or of one component, in its config) with
``topology.auto.task.hooks``: a list of ``TaskHook`` subclass import paths (``"module:Class"``
or ``"module.Class"``), each built with no arguments once per task. ``add_task_hook`` calls the
hook's ``prepare(conf, context)`` at once, as Storm does; auto hooks are added (and prepared) when
the worker builds the task, before the component's ``open``/``prepare``.

Every callback runs on the executor loop, synchronously, right after the event (after the
component's own ``ack``/``fail``/``execute``): it must be quick and must not block. An exception
from a hook is the task's error and stops the worker, like one from the component.
A task with no hook pays nothing: the worker installs the hooked collector methods only on the
tasks that have hooks once they are opened.

Latencies are milliseconds, or None where stormpy does not know them (Storm reports 0 for an
unsampled tuple): a spout tuple that timed out, a spout ack or fail without acker tasks, a bolt
ack or fail of a tuple outside its ``execute``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stormpy.topology._context import TopologyContext

__all__ = ["AUTO_TASK_HOOKS", "BoltAckInfo", "BoltExecuteInfo", "BoltFailInfo", "EmitInfo",
           "SpoutAckInfo", "SpoutFailInfo", "TaskHook"]

#: config key: TaskHook class paths instantiated for every task (Storm's name)
AUTO_TASK_HOOKS = "topology.auto.task.hooks"


@dataclass(frozen=True)
class EmitInfo:
    """An emit: ``values`` on ``stream`` by ``task_id``, delivered to ``out_tasks``."""

    values: list[Any]
    stream: str
    task_id: int
    out_tasks: list[int]


@dataclass(frozen=True)
class SpoutAckInfo:
    """A spout tuple's tree completed: the spout's ``ack(message_id)`` just ran."""

    message_id: Any
    spout_task_id: int
    complete_latency_ms: float | None


@dataclass(frozen=True)
class SpoutFailInfo:
    """A spout tuple failed (a bolt failed it, or it timed out): ``fail(message_id)`` just ran."""

    message_id: Any
    spout_task_id: int
    fail_latency_ms: float | None


@dataclass(frozen=True)
class BoltExecuteInfo:
    """A bolt's ``execute(tuple)`` returned, after ``execute_latency_ms``."""

    tuple: Any
    executing_task_id: int
    execute_latency_ms: float


@dataclass(frozen=True)
class BoltAckInfo:
    """A bolt acked ``tuple``; ``process_latency_ms`` runs from the start of its execute."""

    tuple: Any
    acking_task_id: int
    process_latency_ms: float | None


@dataclass(frozen=True)
class BoltFailInfo:
    """A bolt failed ``tuple``; ``fail_latency_ms`` runs from the start of its execute."""

    tuple: Any
    failing_task_id: int
    fail_latency_ms: float | None


class TaskHook:
    """Override the events to watch; every method does nothing by default."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once when the hook is added to a task."""

    def cleanup(self) -> None:
        """Called once when the task shuts down, before the component's ``close``/``cleanup``."""

    def emit(self, info: EmitInfo) -> None:
        """After every emit of the task's component (not the runtime's own startup event)."""

    def spout_ack(self, info: SpoutAckInfo) -> None:
        """After the spout's ``ack``."""

    def spout_fail(self, info: SpoutFailInfo) -> None:
        """After the spout's ``fail``."""

    def bolt_execute(self, info: BoltExecuteInfo) -> None:
        """After the bolt's ``execute`` (or a ``BasicBolt``'s ``process``) returned."""

    def bolt_ack(self, info: BoltAckInfo) -> None:
        """After the bolt acked a tuple."""

    def bolt_fail(self, info: BoltFailInfo) -> None:
        """After the bolt failed a tuple."""
