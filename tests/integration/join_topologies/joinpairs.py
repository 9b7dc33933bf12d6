"""A windowed join as a cluster topology (bundled by test_join_cluster.py): a durable spout of
record ids (acked ids recorded in SQLite, so a restarted spout only emits what was never acked;
each fail recorded too, as every replay follows one), a splitter sending each record's two halves
on streams ``users`` and ``orders`` in one execute, a JoinBolt on a sliding processing-time window
keyed by id, and a sink writing every joined row to SQLite before acking it."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from stormpy import TopologyContext, Tuple
from stormpy.topology import Bolt, Spout, TopologyBuilder
from stormpy.topology.spec import TopologySpec
from stormpy.windowing import Duration, JoinBolt


def connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    return db


class DurableRecords(Spout):
    outputs = ["id"]

    def __init__(self, database: str, n: int) -> None:
        self.database = database
        self.n = n

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.db = connect(self.database)
        self.db.execute("CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY)")
        self.db.execute("CREATE TABLE IF NOT EXISTS failed (id INTEGER)")
        done = {r[0] for r in self.db.execute("SELECT id FROM acked")}
        self.todo = [i for i in range(self.n) if i not in done]
        self.todo.reverse()

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
            self.emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.db.execute("INSERT INTO failed (id) VALUES (?)", (msg_id,))
        self.todo.append(msg_id)

    def close(self) -> None:
        self.db.close()


class Split(Bolt):
    outputs = {"users": ["id", "name"], "orders": ["id", "amount"]}

    def execute(self, tup: Tuple) -> None:
        i = tup["id"]
        self.emit([i, f"user{i}"], tup, "users")
        self.emit([i, i * 10], tup, "orders")
        self.ack(tup)


class RowSink(Bolt):
    def __init__(self, database: str) -> None:
        self.database = database

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.db = connect(self.database)
        self.db.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER, name TEXT, amount INTEGER)")

    def execute(self, tup: Tuple) -> None:
        self.db.execute("INSERT INTO rows VALUES (?, ?, ?)", tuple(tup.values))
        self.ack(tup)

    def cleanup(self) -> None:
        self.db.close()


def build(spout_db: str, sink_db: str, n: int) -> TopologySpec:
    join = (JoinBolt("users", "id", selector="stream").join("orders", "id", "users")
            .select("id, name, amount")
            .with_window(Duration(seconds=1), Duration(ms=500)))
    b = TopologyBuilder()
    b.set_spout("records", DurableRecords, kwargs={"database": spout_db, "n": n})
    b.set_bolt("split", Split).shuffle_grouping("records")
    b.set_bolt("join", join, 2).fields_grouping("split", "id", "users").fields_grouping(
        "split", "id", "orders")
    b.set_bolt("sink", RowSink, kwargs={"database": sink_db}).shuffle_grouping("join")
    return b.create_topology()
