"""A persistent tumbling count window as a cluster topology (bundled by
test_window_state_cluster.py): the durable spout (``durable.py``: acks and fails recorded in
SQLite) and a stateful windowed bolt whose window and state live in the same SQLite file. Each
window records in the bolt's state how often each id was in an evaluated window and whether the
window had its full size."""

from __future__ import annotations

from typing import Any

from durable import DurableSpout

from stormpy.state import KeyValueState
from stormpy.topology import TopologyBuilder
from stormpy.topology._spec import TopologySpec
from stormpy.windowing import Count, StatefulWindowedBolt, Window

WINDOW = 50


class DurableNumbers(DurableSpout):
    outputs = ["id", "key"]

    def values(self, i: int) -> list[Any]:
        return [i, i % 2]


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
