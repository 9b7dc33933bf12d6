"""Benchmark topology for a persistent window (used by ``python -m bench.persistent_window``):
``numbers`` emits 0..n-1 reliably (message id = the number) and counts acks in the registry;
``window`` (a StatefulWindowedBolt with persistence) keeps a running count and sum of its
sliding count window from each window's new and expired tuples, in its checkpointed state, and
records the last window's (end, count, sum) in the registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Spout, TopologyBuilder, TopologyContext
from stormpy.state import KeyValueState
from stormpy.testing import registry
from stormpy.windowing import Count, StatefulWindowedBolt, Window


class Numbers(Spout):
    outputs = ["v"]

    def __init__(self, key: str, n: int) -> None:
        self.key = key
        self.n = n

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.log: dict[str, Any] = registry.lookup(self.key)
        self.i = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        emit = self.emit
        for _ in range(64):
            if self.replay:
                i = self.replay.pop()
            elif self.i < self.n:
                i = self.i
                self.i += 1
            else:
                return
            emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.log["acked"] += 1

    def fail(self, msg_id: Any) -> None:
        self.log["failed"] += 1
        self.replay.append(msg_id)


class RunningWindowSum(StatefulWindowedBolt):
    outputs = ["end", "count", "sum"]

    def __init__(self, key: str) -> None:
        self.key = key

    def init_state(self, state: KeyValueState) -> None:
        self.state = state
        self.log: dict[str, Any] = registry.lookup(self.key)

    def execute(self, window: Window) -> None:
        n, total = self.state.get("run", [0, 0])
        for t in window.get_new():
            n, total = n + 1, total + t.values[0]
        for t in window.get_expired():
            n, total = n - 1, total - t.values[0]
        self.state.put("run", [n, total])
        self.log["windows"] += 1
        self.log["last"] = (n, total)


def build(key: str, n: int, length: int, slide: int, max_events: int) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"key": key, "n": n})
    b.set_bolt("window", RunningWindowSum.with_window(Count(length), Count(slide))
               .with_persistence().with_max_events_in_memory(max_events),
               kwargs={"key": key}).shuffle_grouping("numbers")
    return b.create_topology()
