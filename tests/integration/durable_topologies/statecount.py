"""A stateful word count as a cluster topology (bundled by test_state_cluster.py): the durable
spout (``durable.py``: acks and fails recorded in SQLite), a plain bolt and a stateful counting
bolt whose state lives in the same SQLite file."""

from __future__ import annotations

from typing import Any

from durable import DurableSpout

from stormpy import Tuple
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.topology import BasicBolt, TopologyBuilder
from stormpy.topology.spec import TopologySpec


def word(i: int) -> str:
    return f"W{i % 13}"


class DurableWords(DurableSpout):
    outputs = ["word"]

    def values(self, i: int) -> list[Any]:
        return [word(i)]


class Lower(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        self.emit([tup["word"].lower()])


class WordCount(StatefulBolt):
    outputs = ["word", "count"]

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Tuple) -> None:
        w = tup["word"]
        n = self.counts.get(w, 0) + 1
        self.counts.put(w, n)
        self.emit([w, n], anchors=tup)
        self.ack(tup)


def build(database: str, n: int) -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("words", DurableWords, kwargs={"database": database, "n": n})
    b.set_bolt("lower", Lower, 2).shuffle_grouping("words")
    b.set_bolt("count", WordCount, 2).fields_grouping("lower", "word")
    return b.create_topology()
