"""A windowed join as a cluster topology (bundled by test_join_cluster.py): the durable spout
(``durable.py``: acks and fails recorded in SQLite) of record ids, a splitter sending each
record's two halves on streams ``users`` and ``orders`` in one execute, a JoinBolt on a sliding
processing-time window keyed by id, and a sink writing every joined row to SQLite before acking
it (optionally slowly: ``row_secs`` per row)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from durable import DurableSpout, connect

from stormpy import TopologyContext, Tuple
from stormpy.topology import Bolt, TopologyBuilder
from stormpy.topology._spec import TopologySpec
from stormpy.windowing import Duration, JoinBolt


class DurableRecords(DurableSpout):
    outputs = ["id"]
    wal = True

    def values(self, i: int) -> list[Any]:
        return [i]


class Split(Bolt):
    outputs = {"users": ["id", "name"], "orders": ["id", "amount"]}

    def execute(self, tup: Tuple) -> None:
        i = tup["id"]
        self.emit([i, f"user{i}"], tup, "users")
        self.emit([i, i * 10], tup, "orders")
        self.ack(tup)


class RowSink(Bolt):
    """Writes each row, then takes ``row_secs`` more before acking it: a sink slower than the
    join's output, so rows queue up at it (a worker killed with them loses them)."""

    def __init__(self, database: str, row_secs: float = 0.0) -> None:
        self.database = database
        self.row_secs = row_secs

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.db = connect(self.database, wal=True)
        self.db.execute("CREATE TABLE IF NOT EXISTS rows (id INTEGER, name TEXT, amount INTEGER)")

    def execute(self, tup: Tuple) -> None:
        self.db.execute("INSERT INTO rows VALUES (?, ?, ?)", tuple(tup.values))
        if self.row_secs:
            time.sleep(self.row_secs)
        self.ack(tup)

    def cleanup(self) -> None:
        self.db.close()


def build(spout_db: str, sink_db: str, n: int, row_secs: float = 0.0) -> TopologySpec:
    join = (JoinBolt("users", "id", selector="stream").join("orders", "id", "users")
            .select("id, name, amount")
            .with_window(Duration(seconds=1), Duration(ms=500)))
    b = TopologyBuilder()
    b.set_spout("records", DurableRecords, kwargs={"database": spout_db, "n": n})
    b.set_bolt("split", Split).shuffle_grouping("records")
    b.set_bolt("join", join, 2).fields_grouping("split", "id", "users").fields_grouping(
        "split", "id", "orders")
    b.set_bolt("sink", RowSink, kwargs={"database": sink_db, "row_secs": row_secs}
               ).shuffle_grouping("join")
    return b.create_topology()
