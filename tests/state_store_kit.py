"""Test components of the ``context.state_store`` seam, shared by the unit tests (memory) and the
ZooKeeper integration tests: a spout counting its opens in the checkpoint area and checking the
transactional area both its tasks share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Spout, TopologyBuilder, TopologyContext
from stormpy.testing import Capture
from stormpy.topology.state import CHECKPOINTS, TRANSACTIONAL

__all__ = ["CountingSpout", "counting_topology"]


class CountingSpout(Spout):
    """Counts its opens in the checkpoint area and emits what it read back, once."""

    outputs = ["task", "opens", "shared"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        store = context.state_store(CHECKPOINTS)
        key = f"{context.component_id}/{context.task_index}"
        store.put(key, {"opens": store.get(key, {"opens": 0})["opens"] + 1})
        context.state_store(TRANSACTIONAL).put(f"seen/{context.task_id}", True)
        self.task = context.task_id
        self.store = store
        self.key = key
        self.tx = context.state_store(TRANSACTIONAL)
        self.done = False

    def next_tuple(self) -> None:
        if not self.done and len(self.tx.children("seen")) == 2:  # both tasks opened
            self.done = True
            self.emit([self.task, self.store.get(self.key)["opens"], self.tx.children("seen")])


def counting_topology(capture: Capture) -> Any:
    b = TopologyBuilder()
    b.set_spout("counter", CountingSpout, 2)
    b.set_bolt("capture", capture).shuffle_grouping("counter")
    return b.create_topology()
