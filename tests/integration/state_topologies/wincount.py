"""A persistent tumbling count window as a cluster topology (bundled by
test_window_state_cluster.py): a durable spout (acked message ids recorded in SQLite, so a
restarted spout only emits what was never acked; each failed id recorded too, as every replay
follows a fail) and a stateful windowed bolt whose window and state live in the same SQLite
file. Each window records in the bolt's state how often each id was in an evaluated window and
whether the window had its full size."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from stormpy import TopologyContext
from stormpy.state import KeyValueState
from stormpy.topology import Spout, TopologyBuilder
from stormpy.topology.spec import TopologySpec
from stormpy.windowing import Count, StatefulWindowedBolt, Window

WINDOW = 50


class DurableNumbers(Spout):
    outputs = ["id", "key"]

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
            self.emit([i, i % 2], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.db.execute("INSERT INTO failed (id) VALUES (?)", (msg_id,))
        self.todo.append(msg_id)

    def close(self) -> None:
        self.db.close()


class WindowCount(StatefulWindowedBolt):
    outputs = ["end", "size"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: Window) -> None:
        size = 0
        for t in window:
            self.state.put(t["id"], self.state.get(t["id"], 0) + 1)
            size += 1
        self.state.put("windows", self.state.get("windows", 0) + 1)
        if size != WINDOW:
            self.state.put("short", self.state.get("short", 0) + 1)
        self.emit([window.end_timestamp, size])


def build(database: str, n: int) -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("numbers", DurableNumbers, kwargs={"database": database, "n": n})
    b.set_bolt("win", WindowCount.with_tumbling_window(Count(WINDOW)).with_persistence()
               .with_max_events_in_memory(20), 2).fields_grouping("numbers", "key")
    return b.create_topology()
