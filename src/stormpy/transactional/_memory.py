"""MemoryTransactionalSpout: a partitioned transactional spout over data given in the topology
(tests and examples)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stormpy.topology._context import TopologyContext
from stormpy.topology._streams import Stream
from stormpy.transactional._api import BatchOutputCollector, PartitionedTransactionalSpout
from stormpy.transactional._attempt import TransactionAttempt


def _partitions(data_by_partition: Any) -> list[list[list[Any]]]:
    if isinstance(data_by_partition, Mapping):
        keys = sorted(int(k) for k in data_by_partition)
        if keys != list(range(len(keys))):
            raise ValueError(f"data_by_partition keys must be the partitions 0..n-1, got {keys}")
        rows = [data_by_partition[k] if k in data_by_partition else data_by_partition[str(k)]
                for k in keys]
    elif isinstance(data_by_partition, Sequence):
        rows = list(data_by_partition)
    else:
        raise ValueError("data_by_partition must map partition numbers to lists of rows")
    return [[list(r) for r in part] for part in rows]


class MemoryTransactionalSpout(PartitionedTransactionalSpout):
    """Partition ``p`` holds ``data_by_partition[p]`` (rows of values for ``fields``); each
    transaction takes up to ``take_per_batch`` rows from every partition. Emits
    ``[attempt, *row]`` with fields ``["tx", *fields]``.

    Pass an instance to the builder (it carries its constructor arguments) or the class with
    ``kwargs``. The coordinator is ready while it has started fewer transactions than the
    longest partition needs (after a restart it may start a few empty ones)."""

    def __init__(self, data_by_partition: Any, fields: Sequence[str], take_per_batch: int) -> None:
        self.data = _partitions(data_by_partition)
        self.fields = list(fields)
        if not isinstance(take_per_batch, int) or take_per_batch < 1:
            raise ValueError(f"take_per_batch must be an integer >= 1, got {take_per_batch!r}")
        self.take = take_per_batch

    @property
    def component_class(self) -> type:
        return type(self)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"data_by_partition": self.data, "fields": self.fields,
                "take_per_batch": self.take}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"default": Stream(["tx", *kwargs["fields"]])}

    def get_coordinator(self, conf: Mapping[str, Any],
                        context: TopologyContext) -> MemoryCoordinator:
        return MemoryCoordinator(self.data, self.take)

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> MemoryEmitter:
        return MemoryEmitter(self.data, self.take)


class MemoryCoordinator(PartitionedTransactionalSpout.Coordinator):
    def __init__(self, data: list[list[list[Any]]], take: int) -> None:
        self.partitions = len(data)
        self.remaining = max((-(-len(p) // take) for p in data), default=0)

    def number_partitions(self) -> int:
        return self.partitions

    def is_ready(self) -> bool:
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True


class MemoryEmitter(PartitionedTransactionalSpout.Emitter):
    def __init__(self, data: list[list[list[Any]]], take: int) -> None:
        self.data = data
        self.take = take

    def emit_partition_batch_new(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                 partition: int, last_meta: Any) -> Any:
        start = last_meta["index"] + last_meta["amount"] if last_meta else 0
        amount = max(0, min(self.take, len(self.data[partition]) - start))
        meta = {"index": start, "amount": amount}
        self.emit_partition_batch(attempt, collector, partition, meta)
        return meta

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, meta: Any) -> None:
        rows = self.data[partition]
        for i in range(meta["index"], meta["index"] + meta["amount"]):
            collector.emit([attempt, *rows[i]])
