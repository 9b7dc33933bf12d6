"""The stormpy word count used by the benchmark (sentences come from bench.workload)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from bench.workload import sentences
from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple


class BenchSentenceSpout(Spout):
    """Emits this task's share of ``count`` sentences; with ``reliable`` each has a message id
    and failed ones are replayed."""

    outputs = ["sentence"]

    def __init__(self, count: int, reliable: bool) -> None:
        self.count = count
        self.reliable = reliable

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        lines = sentences(self.count)
        n, idx = len(context.component_tasks), context.task_index
        self.lines = lines
        self.ids = iter(range(idx, self.count, n))
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        i = self.replay.pop() if self.replay else next(self.ids, None)
        if i is None:
            return
        self.emit([self.lines[i]], msg_id=i if self.reliable else None)

    def fail(self, msg_id: int) -> None:
        self.replay.append(msg_id)


class BenchSplit(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        emit = self.emit
        for word in tup.values[0].split():
            emit([word], tup)
        self.ack(tup)


class BenchCount(Bolt):
    outputs = ["word", "count"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Tuple) -> None:
        self.counts[tup.values[0]] += 1
        self.ack(tup)


def build(count: int, reliable: bool, split: int = 1, counters: int = 1):
    b = TopologyBuilder()
    b.set_spout("sentences", BenchSentenceSpout, 1, kwargs={"count": count, "reliable": reliable})
    b.set_bolt("split", BenchSplit, split).shuffle_grouping("sentences")
    b.set_bolt("count", BenchCount, counters).fields_grouping("split", ["word"])
    return b.create_topology()
