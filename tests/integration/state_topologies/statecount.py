"""A stateful word count as a cluster topology (bundled by test_state_cluster.py): a durable spout
(acked message ids recorded in SQLite, so a restarted spout only emits what was never acked; each
failed id recorded too, as every replay follows a fail), a plain bolt and a stateful counting bolt
whose state lives in the same SQLite file."""

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
    outputs = ["word"]

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
            self.emit([word(i)], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.db.execute("INSERT INTO failed (id) VALUES (?)", (msg_id,))
        self.todo.append(msg_id)

    def close(self) -> None:
        self.db.close()


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


def build(database: str, n: int, counters: int = 2) -> TopologySpec:
    """``n`` words, counted by ``counters`` stateful tasks."""
    b = TopologyBuilder()
    b.set_spout("words", DurableWords, kwargs={"database": database, "n": n})
    b.set_bolt("lower", Lower, 2).shuffle_grouping("words")
    b.set_bolt("count", WordCount, counters).fields_grouping("lower", "word")
    return b.create_topology()
