"""A stateful word count as a cluster topology (bundled by test_state_cluster.py and
test_partition_stateful_host.py): the durable spout (``durable.py``: acks and fails recorded in
SQLite) emitting ``[word, id]``, a plain bolt and a stateful counting bolt. Beside the word
counts the counting bolt keeps, in the same state, the checkpoints that counted each input (key
``i<id>``: the txids, one per time it was counted), so a test tells an input counted twice in one
checkpoint from one counted again after its commit (a replay of a committed input)."""

from __future__ import annotations

from typing import Any

from durable import DurableSpout

from stormpy import Tuple
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.topology import BasicBolt, TopologyBuilder
from stormpy.topology._spec import TopologySpec


def word(i: int) -> str:
    return f"W{i % 13}"


class DurableWords(DurableSpout):
    outputs = ["word", "id"]

    def values(self, i: int) -> list[Any]:
        return [word(i), i]


class Lower(BasicBolt):
    outputs = ["word", "id"]

    def process(self, tup: Tuple) -> None:
        self.emit([tup["word"].lower(), tup["id"]])


class WordCount(StatefulBolt):
    outputs = ["word", "count"]

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state
        self.since: list[int] = []  # ids counted since the last prepare

    def execute(self, tup: Tuple) -> None:
        w = tup["word"]
        n = self.counts.get(w, 0) + 1
        self.counts.put(w, n)
        self.since.append(tup["id"])
        self.emit([w, n], anchors=tup)
        self.ack(tup)

    def pre_prepare(self, txid: int) -> None:
        for i in self.since:
            key = id_key(i)
            self.counts.put(key, [*self.counts.get(key, []), txid])
        self.since = []

    def pre_rollback(self) -> None:
        self.since = []

    def state_rolled_back(self) -> None:
        self.since = []


def id_key(i: int) -> str:
    """The state key of input ``i``'s checkpoints."""
    return f"i{i}"


def split_state(items: dict[str, Any]) -> tuple[dict[str, int], dict[int, list[int]]]:
    """A counting task's state as (word counts, input id -> txids that counted it)."""
    words = {k: v for k, v in items.items() if not k.startswith("i")}
    ids = {int(k[1:]): v for k, v in items.items() if k.startswith("i")}
    return words, ids


def build(database: str, n: int, counters: int = 2) -> TopologySpec:
    """``n`` words, counted by ``counters`` stateful tasks."""
    b = TopologyBuilder()
    b.set_spout("words", DurableWords, kwargs={"database": database, "n": n})
    b.set_bolt("lower", Lower, 2).shuffle_grouping("words")
    b.set_bolt("count", WordCount, counters).fields_grouping("lower", "word")
    return b.create_topology()
