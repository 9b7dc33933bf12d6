"""Direct emits from spouts and bolts: the tuple reaches exactly the chosen task on the chosen
stream, a spout's direct emit is tracked by its message id, a bolt's is anchored like any emit,
and direct emits count in the emitter's stats."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, Spout, Stream, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.testing import _registry as registry

SENT = 3


class DirectSpout(Spout):
    """Emits SENT tracked tuples on its direct stream, all to the last task of ``sink``."""

    outputs = [Stream(["v"], name="picked", direct=True)]

    def __init__(self, key: str) -> None:
        self.key = key

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.log = registry.lookup(self.key)
        self.target = max(context.tasks_of("sink"))
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < SENT:
            self.emit_direct(self.target, [f"v{self.i}"], msg_id=self.i, stream="picked")
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.log["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.log["failed"].append(msg_id)


def test_a_spouts_direct_emit_reaches_the_chosen_task_and_is_acked_by_its_message_id() -> None:
    log: dict[str, list[Any]] = {"acked": [], "failed": []}
    key = registry.register(log)
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("spout", DirectSpout, kwargs={"key": key})
    b.set_bolt("sink", sink, 3).direct_grouping("spout", "picked")
    try:
        with LocalCluster() as cluster:
            worker = cluster.submit_topology("direct-spout", {}, b.create_topology())
            cluster.wait_for(lambda: len(log["acked"]) == SENT, 10, "every direct emit acked")
            stats = worker.stats()["spout"]
            target = max(worker.layout.component_tasks["sink"])
    finally:
        registry.unregister(key)
    assert sorted(log["acked"]) == list(range(SENT)) and log["failed"] == []
    assert sink.by_task == {target: [[f"v{i}"] for i in range(SENT)]}
    assert {t.stream for t in sink.tuples} == {"picked"}
    assert stats["emitted"] == SENT


class Director(Bolt):
    """Emits each input, anchored, on its direct stream to the task named in its second value."""

    outputs = [Stream(["v"], name="direct-out", direct=True)]

    def execute(self, tup: Tuple) -> None:
        self.emit_direct(tup.values[1], [tup.values[0]], anchors=tup, stream="direct-out")
        self.ack(tup)


class FailAll(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.fail(tup)


def test_a_bolts_direct_emit_is_anchored_so_a_downstream_fail_fails_the_spout_tuple() -> None:
    feeder = FeederSpout(["v", "task"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("director", Director).shuffle_grouping("feeder")
    b.set_bolt("failer", FailAll, 2).direct_grouping("director", "direct-out")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("direct-bolt", {}, b.create_topology())
        target = max(worker.layout.component_tasks["failer"])
        feeder.feed(["x", target], msg_id=7)
        cluster.wait_for(lambda: feeder.failed == [7], 10, "the spout tuple failed downstream")
        assert worker.stats()["director"]["emitted"] == 1
    assert feeder.acked == []
