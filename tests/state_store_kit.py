"""Test components of the ``context.state_store`` seam, shared by the unit tests (memory) and the
ZooKeeper integration tests: a spout counting its opens in the checkpoint area and checking the
transactional area both its tasks share."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from stormpy import Spout, TopologyBuilder, TopologyContext
from stormpy.state import MemoryBackend
from stormpy.testing import Capture
from stormpy.topology._state import CHECKPOINTS, TRANSACTIONAL

__all__ = ["CountingSpout", "counting_topology", "memory_backend_held"]


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


@contextmanager
def memory_backend_held(backend: MemoryBackend) -> Iterator[None]:
    """Another thread holds ``backend``'s lock while the block runs (its stores' calls then find
    it busy); released, and the thread joined, when the block ends."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with backend.locked("test"):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10), "the holder never took the lock"
        yield
    finally:
        release.set()
        holder.join(10)
