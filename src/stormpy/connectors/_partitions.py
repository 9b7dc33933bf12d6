"""Which partitions of a log a spout task reads: the round-robin share both log spouts use.

:func:`round_robin_share` is storm-kafka-client's ``RoundRobinManualPartitioner``: every
partition (a Kafka topic-partition, a Kinesis shard) sorted, the i-th belonging to the task of
index ``i mod num_tasks``. Every task computes the same split from the same list, so no two tasks
read one partition and none is left out; a task index outside ``0..num_tasks-1`` is an error
(ValueError naming both), not an empty share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = ["round_robin_share"]

T = TypeVar("T")


def round_robin_share(items: Iterable[T], task_index: int, num_tasks: int, *,
                      key: Callable[[T], Any] | None = None) -> list[T]:
    """The items of the task of index ``task_index`` among ``num_tasks`` tasks: every
    ``num_tasks``-th of the items sorted (by ``key`` when given), starting at ``task_index``."""
    if num_tasks < 1 or not 0 <= task_index < num_tasks:
        raise ValueError(f"task index {task_index} out of range for {num_tasks} tasks")
    ordered: list[T] = sorted(items, key=key) if key is not None else sorted(items)  # type: ignore[type-var]
    return ordered[task_index::num_tasks]
