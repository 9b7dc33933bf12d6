"""A stateful word count as a cluster topology (bundled by test_state_cluster.py and
test_partition_stateful_host.py): a durable spout (acked message ids recorded in SQLite, so a
restarted spout only emits what was never acked; each failed id recorded too, as every replay
follows a fail) emitting ``[word, id]``, a plain bolt and a stateful counting bolt. Beside the
word counts the counting bolt keeps, in the same state, the checkpoints that counted each input
(key ``i<id>``: the txids, one per time it was counted), so a test tells an input counted twice
in one checkpoint from one counted again after its commit (a replay of a committed input)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from stormpy import TopologyContext, Tuple
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.topology import BasicBolt, Spout, TopologyBuilder
from stormpy.topology.spec import TopologySpec


def word(i: int) -> str:
    return f"W{i % 13}"


class DurableWords(Spout):
    outputs = ["word", "id"]

    def __init__(self, database: str, n: int) -> None:
        self.database = database
        self.n = n

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.db = sqlite3.connect(self.database, isolation_level=None, timeout=30)
        self.db.execute("CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY)")
        self.db.execute("CREATE TABLE IF NOT EXISTS failed (id INTEGER)")
        done = {r[0] for r in self.db.execute("SELECT id FROM acked")}
        self.todo = [i for i in range(self.n) if i not in done]
        self.todo.reverse()

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
            self.emit([word(i), i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.db.execute("INSERT INTO failed (id) VALUES (?)", (msg_id,))
        self.todo.append(msg_id)

    def close(self) -> None:
        self.db.close()


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
