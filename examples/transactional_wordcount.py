"""A transactional word count: sentences from a partitioned spout are split, counted per batch
and word, and committed exactly once per transaction — per-word counts into SQLite and, when a
``table`` directory is given, the batch's word counts into a Parquet table through Spark.

Run it (nothing else to start: in local mode the coordinator's state lives with the LocalCluster):

    stormpy local examples transactional_wordcount:topology --idle-stop 2
    stormpy local examples transactional_wordcount:with_spark --idle-stop 5   # needs [spark]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from stormpy import BasicBolt, TopologyContext, Tuple
from stormpy.connectors.spark import SparkCommitterBolt
from stormpy.transactional import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    MemoryTransactionalSpout,
    SqliteState,
    TransactionalTopologyBuilder,
    TransactionAttempt,
)

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


class Split(BasicBolt):
    """Splits a sentence into ``[attempt, word]`` tuples."""

    outputs = ["id", "word"]

    def process(self, tup: Tuple) -> None:
        for word in tup.values[1].split():
            self.emit([tup[0], word])


class BatchWordCount(BatchBolt):
    """Counts the words of one batch this task received; emits ``[id, word, count]`` at the end."""

    outputs = ["id", "word", "count"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Tuple) -> None:
        self.counts[tup.values[1]] += 1

    def finish_batch(self) -> None:
        for word, count in sorted(self.counts.items()):
            self.emit([self.id, word, count])


class CommitWordCounts(Committer):
    """Adds a batch's per-word counts to SQLite, each word once per txid."""

    outputs = ["id", "words"]

    def __init__(self, database: str = "wordcount.sqlite") -> None:
        self.database = database

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Tuple) -> None:
        self.counts[tup.values[1]] += tup.values[2]

    def finish_batch(self) -> None:
        state = SqliteState(self.database)
        try:
            for word, count in self.counts.items():
                state.update(word, self.id.transaction_id, lambda old, c=count: (old or 0) + c)
        finally:
            state.close()
        self.emit([self.id, len(self.counts)])


def build(n_sentences: int = 5000, database: str = "wordcount.sqlite", table: str | None = None,
          take_per_batch: int = 100) -> TransactionalTopologyBuilder:
    partitions = [[[SENTENCES[i % len(SENTENCES)]] for i in range(p, n_sentences, 4)]
                  for p in range(4)]
    spout = MemoryTransactionalSpout(partitions, ["sentence"], take_per_batch)
    builder = TransactionalTopologyBuilder("wordcount", "sentences", spout, 2)
    builder.set_bolt("split", Split, 2).shuffle_grouping("sentences")
    builder.set_bolt("count", BatchWordCount, 3).fields_grouping("split", ["word"])
    builder.set_bolt("commit", CommitWordCounts, 2, kwargs={"database": database}) \
        .fields_grouping("count", ["word"])
    if table:
        builder.set_bolt("parquet", SparkCommitterBolt, kwargs={"path": table}) \
            .shuffle_grouping("count")
    return builder


topology = build().create_topology()
with_spark = build(table="wordcount-parquet").create_topology()
config = {"topology.max.spout.pending": 3}
