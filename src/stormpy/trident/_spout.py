"""Batch spouts for tests and examples (Storm's ``trident.testing.FixedBatchSpout`` and
``FeederBatchSpout``), as partitioned transactional spouts (a replayed batch is identical)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from stormpy.topology._context import TopologyContext
from stormpy.topology._streams import Stream
from stormpy.transactional._api import BatchOutputCollector, PartitionedTransactionalSpout
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.transactional._memory import MemoryTransactionalSpout

__all__ = ["FeederBatchSpout", "FixedBatchSpout"]


class FixedBatchSpout(MemoryTransactionalSpout):
    """``rows`` (value lists of ``fields``) in batches of up to ``max_batch_size``, once."""

    def __init__(self, fields: Sequence[str], max_batch_size: int,
                 rows: Sequence[Sequence[Any]]) -> None:
        super().__init__([list(rows)], fields, max_batch_size)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"fields": self.fields, "max_batch_size": self.take, "rows": self.data[0]}


_feeds_lock = threading.Lock()
_feeds: dict[str, list[list[list[Any]]]] = {}


class FeederBatchSpout(PartitionedTransactionalSpout):
    """Batches given while the topology runs: ``feed(rows)`` makes ``rows`` the next batch.
    The batches are kept in this process under ``name``: for LocalCluster and tests only."""

    def __init__(self, name: str, fields: Sequence[str]) -> None:
        self.name = name
        self.fields = list(fields)
        with _feeds_lock:
            _feeds.setdefault(name, [])

    @property
    def component_class(self) -> type:
        return type(self)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"name": self.name, "fields": self.fields}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"default": Stream(["tx", *kwargs["fields"]])}

    def feed(self, rows: Sequence[Sequence[Any]]) -> None:
        with _feeds_lock:
            _feeds[self.name].append([list(r) for r in rows])

    def get_coordinator(self, conf: Mapping[str, Any], context: TopologyContext) -> _Coordinator:
        return _Coordinator(self.name)

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> _Emitter:
        return _Emitter(self.name)


class _Coordinator(PartitionedTransactionalSpout.Coordinator):
    def __init__(self, name: str) -> None:
        self.name = name
        self.started = 0

    def number_partitions(self) -> int:
        return 1

    def is_ready(self) -> bool:
        with _feeds_lock:
            fed = len(_feeds.get(self.name, ()))
        if self.started >= fed:
            return False
        self.started += 1
        return True


class _Emitter(PartitionedTransactionalSpout.Emitter):
    def __init__(self, name: str) -> None:
        self.name = name

    def emit_partition_batch_new(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                 partition: int, last_meta: Any) -> Any:
        index = last_meta["batch"] + 1 if last_meta else 0
        meta = {"batch": index}
        self.emit_partition_batch(attempt, collector, partition, meta)
        return meta

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, meta: Any) -> None:
        with _feeds_lock:
            feed = _feeds.get(self.name, [])
            rows = feed[meta["batch"]] if meta["batch"] < len(feed) else []
        for row in rows:
            collector.emit([attempt, *row])
