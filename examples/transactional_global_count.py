"""The global count of Storm's transactional-topology article: a MemoryTransactionalSpout over
three partitions, BatchCount counting each batch per task, and UpdateGlobalCount (a committer)
adding the batch's total to a SQLite database exactly once per transaction.

Run it (nothing else to start: in local mode the coordinator's state lives with the
LocalCluster; ``-c transactional.zookeeper.servers=[...]`` keeps it in a ZooKeeper instead):

    stormpy local examples transactional_global_count:topology --idle-stop 2

The count in ``global-count.sqlite`` ends at exactly the number of words, however often batches
are replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import TopologyContext, Tuple
from stormpy.transactional import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    MemoryTransactionalSpout,
    SqliteState,
    TransactionalTopologyBuilder,
    TransactionAttempt,
)

WORDS = ["cat", "dog", "chicken", "cat", "dog", "apple", "cat", "dog", "horse", "mouse",
         "banana", "pear", "cow", "cat", "dog"]
GLOBAL_COUNT_KEY = "GLOBAL-COUNT"


def partitions(n_words: int, n_partitions: int = 3) -> list[list[list[str]]]:
    """``n_words`` words spread round robin over ``n_partitions`` partitions (one field each)."""
    parts: list[list[list[str]]] = [[] for _ in range(n_partitions)]
    for i in range(n_words):
        parts[i % n_partitions].append([WORDS[i % len(WORDS)]])
    return parts


class BatchCount(BatchBolt):
    """Counts the tuples of one batch this task received; emits ``[id, count]`` at the end."""

    outputs = ["id", "count"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.count = 0

    def execute(self, tup: Tuple) -> None:
        self.count += 1

    def finish_batch(self) -> None:
        self.emit([self.id, self.count])


class UpdateGlobalCount(Committer):
    """Adds a batch's partial counts to the stored count, unless this txid was applied already."""

    outputs = ["id", "sum"]

    def __init__(self, database: str = "global-count.sqlite") -> None:
        self.database = database

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.sum = 0

    def execute(self, tup: Tuple) -> None:
        self.sum += tup.values[1]

    def finish_batch(self) -> None:
        state = SqliteState(self.database)
        try:
            stored = state.update(GLOBAL_COUNT_KEY, self.id.transaction_id,
                                  lambda count: (count or 0) + self.sum)
        finally:
            state.close()
        self.emit([self.id, stored.value])


def build(n_words: int = 1000, database: str = "global-count.sqlite",
          take_per_batch: int = 10) -> TransactionalTopologyBuilder:
    spout = MemoryTransactionalSpout(partitions(n_words), ["word"], take_per_batch)
    builder = TransactionalTopologyBuilder("global-count", "spout", spout, 3)
    builder.set_bolt("partial-count", BatchCount, 5).shuffle_grouping("spout")
    builder.set_bolt("sum", UpdateGlobalCount, kwargs={"database": database}) \
        .global_grouping("partial-count")
    return builder


topology = build().create_topology()
config = {"topology.max.spout.pending": 3}
