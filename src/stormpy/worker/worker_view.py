"""WorkerView: what a task runner needs from the worker that runs it.

Task runners (``tasks.py``, ``bolt_task.py``, ``spout_task.py``) are typed against this protocol,
never against ``Worker``, so the imports run one way: the loop imports the task runners, the task
runners import this. Per-tuple traffic goes through the ``Dispatch`` tables, which the runners
keep references to; the methods here are off the hot path (errors, debug logging).
"""

from __future__ import annotations

from typing import Any, Protocol

from stormpy.worker.dispatch import Dispatch

__all__ = ["WorkerView"]


class WorkerView(Protocol):
    """The worker as its task runners see it (``Worker`` implements it)."""

    @property
    def dispatch(self) -> Dispatch:
        """The worker's delivery table, ack buffer and ackers."""

    def record_error(self, component: str, task: int, text: str) -> None:
        """Keep and report an error of a task (shown by ``stormpy`` commands and the UI)."""

    def log_emit(self, component: str, task: int, stream: str, values: list[Any],
                 targets: list[int]) -> None:
        """Show one emit (``topology.debug``, or an observer such as the test kit's)."""

    def chain_failed(self, component: str, task: int, exc: BaseException) -> BaseException:
        """A chained execute of ``component``'s ``task`` raised ``exc``: record it as that
        task's error (the one that stops the worker) and return the ``WorkerError`` to raise;
        the loop stops at the end of its round even if an emitter's code swallows it."""
