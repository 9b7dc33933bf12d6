"""An emit anchored to several inputs that share a tree, one of them in several trees. As in
Storm, each anchor gets its own fresh edge, XORed into each of that anchor's trees: tree 0,
reached through two anchors, gets two different edges (they do not cancel out), so BOTH trees
wait for the child and complete or fail with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder, Tuple
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig

ACKED: list[Any] = []
FAILED: list[Any] = []


class Two(Spout):
    """Emits ``[0]`` and ``[1]``, tracked by their value."""

    outputs = ["n"]

    def open(self, conf: Mapping[str, Any], context: Any) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        if self.next < 2:
            self.emit([self.next], self.next)
            self.next += 1

    def ack(self, msg_id: Any) -> None:
        ACKED.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        FAILED.append(msg_id)


class Join(Bolt):
    """On the second input: their sum anchored to both (a tuple in both trees); acks both."""

    outputs = ["n"]

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.first: Tuple | None = None

    def execute(self, tup: Tuple) -> None:
        if self.first is None:
            self.first = tup
            return
        self.emit([self.first.values[0] + tup.values[0]], [self.first, tup])
        self.ack(self.first)
        self.ack(tup)


class Mix(Bolt):
    """Gets the spout's tuples and the join's; emits one tuple anchored to ``[spout tuple 0,
    the join's tuple]`` (both in tree 0, the second in tree 1 too) and acks all it got."""

    outputs = ["n"]

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.got: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.got.append(tup)
        if len(self.got) == 3:
            zero = next(t for t in self.got if t.component == "two" and t.values == [0])
            joined = next(t for t in self.got if t.component == "join")
            self.emit([99], [zero, joined])
            for t in self.got:
                self.ack(t)


class Keep(Bolt):
    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.got: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.got.append(tup)


@pytest.mark.parametrize("outcome", ["ack", "fail"])
def test_a_child_anchored_twice_in_one_tree_holds_that_tree(outcome: str) -> None:
    ACKED.clear()
    FAILED.clear()
    clock = SimulatedClock()
    b = TopologyBuilder()
    b.set_spout("two", Two)
    b.set_bolt("join", Join).global_grouping("two")
    b.set_bolt("mix", Mix).global_grouping("two").global_grouping("join")
    b.set_bolt("keep", Keep).global_grouping("mix")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1,
                                                            "topology.message.timeout.secs": 5}),
                    clock=clock)
    worker.open()
    for _ in range(10):
        worker.run_once()
    (keep,) = worker.layout.component_tasks["keep"]
    inst = worker.tasks[keep].instance
    (child,) = inst.got
    edges = child.tree_edges()
    assert child.values == [99] and len(edges) == 2 and all(edges.values())
    assert ACKED == [] and FAILED == []  # both trees wait for the child
    (inst.ack if outcome == "ack" else inst.fail)(child)
    for _ in range(3):
        worker.run_once()
    clock.advance(30)  # past every timeout: a tree still open would fail now
    for _ in range(3):
        worker.run_once()
    acked, failed = list(ACKED), list(FAILED)
    assert sorted(acked) == ([0, 1] if outcome == "ack" else [])
    assert sorted(failed) == ([] if outcome == "ack" else [0, 1])

