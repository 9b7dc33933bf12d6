"""The global count as a cluster topology (bundled by test_transactional_cluster.py): numbers in
four partitions, counted per batch, added to a SQLite file by a committer exactly once per
transaction; the stored value also lists every applied ``[txid, batch total]`` (one atomic
write with the count)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import TopologyContext, Tuple
from stormpy.topology._spec import TopologySpec
from stormpy.transactional import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    MemoryTransactionalSpout,
    SqliteState,
    TransactionalTopologyBuilder,
    TransactionAttempt,
)


class BatchCount(BatchBolt):
    outputs = ["id", "count"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.count = 0

    def execute(self, tup: Tuple) -> None:
        self.count += 1

    def finish_batch(self) -> None:
        self.emit([self.id, self.count])


class UpdateCount(Committer):
    outputs = ["id", "count"]

    def __init__(self, database: str) -> None:
        self.database = database

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.sum = 0

    def execute(self, tup: Tuple) -> None:
        self.sum += tup.values[1]

    def finish_batch(self) -> None:
        txid = self.id.transaction_id
        state = SqliteState(self.database)
        try:
            value = state.update("count", txid, lambda old: {
                "count": (old["count"] if old else 0) + self.sum,
                "applied": [*(old["applied"] if old else []), [txid, self.sum]]})
        finally:
            state.close()
        self.emit([self.id, value.value["count"]])


def build(database: str, n: int, partitions: int = 4, take: int = 10) -> TopologySpec:
    data = [[[i] for i in range(p, n, partitions)] for p in range(partitions)]
    spout = MemoryTransactionalSpout(data, ["n"], take)
    b = TransactionalTopologyBuilder("txcount", "numbers", spout, 2)
    b.set_bolt("partial", BatchCount, 3).shuffle_grouping("numbers")
    b.set_bolt("total", UpdateCount, kwargs={"database": database}).global_grouping("partial")
    return b.create_topology()
