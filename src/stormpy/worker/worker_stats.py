"""What a worker reports about its tasks (``Worker.task_stats``, ``Worker.spout_pending``,
``Worker.held_tuples``, ``Worker.window_tuples``, ``Worker.checkpoint_tuples``): plain reads of
the task runners' counters, safe from any thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormpy.worker.spout_task import SpoutTask
from stormpy.worker.tasks import TaskRunner

__all__ = ["checkpoint_tuples", "held_tuples", "spout_pending", "task_docs", "window_tuples"]


def task_docs(runners: Sequence[TaskRunner], queue_full: Sequence[int],
              queued_rows: Sequence[int]) -> list[dict[str, Any]]:
    """Each task's counters (``TaskStats.to_doc``) with its receive queue (tuples: a queued
    batch counts its rows, ``queued_rows``) and whether it is full (``queue_full``, in the order
    of ``runners``), plus ``metrics`` (``context.register_metric``) where it has any."""
    docs = [r.stats.to_doc() for r in runners]
    for i, (doc, r) in enumerate(zip(docs, runners)):
        doc["receive_queue"] = len(r.queue) + queued_rows[r.task_id]
        doc["receive_queue_full"] = queue_full[i]
        if r.context.has_metrics:
            doc["metrics"] = r.context.metric_values()
    return docs


def spout_pending(spouts: Sequence[SpoutTask]) -> dict[str, int]:
    """Per spout component, the tuple trees its tasks among ``spouts`` wait on (emitted with a
    message id, neither acked nor failed yet)."""
    pending: dict[str, int] = {}
    for r in spouts:
        pending[r.component_id] = pending.get(r.component_id, 0) + r.n_pending
    return pending


def held_tuples(runners: Sequence[TaskRunner]) -> dict[str, int]:
    """Per bolt component that holds input tuples waiting for a timer, how many it holds now
    (only components with some). A bolt takes part by defining ``held_tuples() -> int`` (a
    windowed bolt: the tuples in its open windows); it must be a cheap plain read, callable
    from any thread."""
    return _bolt_counts(runners, "held_tuples")


def window_tuples(runners: Sequence[TaskRunner]) -> dict[str, int]:
    """Per bolt component that holds input tuples un-acked in windows, how many (only components
    with some; a bolt takes part by defining ``window_tuples() -> int``, a cheap plain read)."""
    return _bolt_counts(runners, "window_tuples")


def checkpoint_tuples(runners: Sequence[TaskRunner]) -> dict[str, int]:
    """Per stateful bolt component, the input tuples it holds un-acked until a checkpoint commits
    (only components with some; a bolt takes part by defining ``checkpoint_tuples() -> int``, a
    cheap plain read)."""
    return _bolt_counts(runners, "checkpoint_tuples")


def _bolt_counts(runners: Sequence[TaskRunner], method: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in runners:
        count = getattr(r.instance, method, None)
        if count is not None and not r.is_spout:
            n = int(count())
            if n:
                counts[r.component_id] = counts.get(r.component_id, 0) + n
    return counts
