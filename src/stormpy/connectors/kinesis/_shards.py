"""The shards of one Kinesis spout task: which it owns (``assign``) and each one's local state.

Shard ``i`` of the list sorted by shard id belongs to task index ``i % num_tasks`` (the
connectors' shared :func:`~stormpy.connectors._partitions.round_robin_share`, as the Kafka spout's
partitions). A :class:`LocalShardState` holds an owned shard's getter, tracker and last stored
checkpoint; :class:`~stormpy.connectors.kinesis._state.StateManager` drives them.
"""

from __future__ import annotations

from stormpy.connectors._partitions import round_robin_share
from stormpy.connectors.kinesis._checkpoints import Checkpoint
from stormpy.connectors.kinesis._client import ShardInfo
from stormpy.connectors.kinesis._getter import BufferedGetter
from stormpy.connectors.kinesis._tracker import InflightRecordTracker

__all__ = ["LocalShardState", "assign"]


def assign(shards: list[ShardInfo], task_index: int, num_tasks: int) -> list[ShardInfo]:
    """The shards of task ``task_index`` among ``num_tasks``: every ``num_tasks``-th shard of the
    list sorted by id, starting at ``task_index`` (ValueError when the index is out of range)."""
    return round_robin_share(shards, task_index, num_tasks, key=lambda s: s.shard_id)


class LocalShardState:
    """One owned shard: its getter (once started), tracker and last stored checkpoint."""

    def __init__(self, info: ShardInfo) -> None:
        self.info = info
        self.getter: BufferedGetter | None = None
        self.tracker: InflightRecordTracker | None = None
        self.stored: Checkpoint | None = None
        self.done = False
        self.writing = False

    @property
    def shard_id(self) -> str:
        return self.info.shard_id

    def current(self) -> Checkpoint | None:
        """The checkpoint this task could store now (None before the shard started)."""
        if self.tracker is None or self.getter is None:
            return None
        end = (self.getter.finished and self.tracker.in_flight == 0
               and not self.tracker.should_retry())
        return Checkpoint(self.tracker.checkpoint, end)
