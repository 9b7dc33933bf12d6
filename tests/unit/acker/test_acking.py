"""Storm's acking scenarios (storm-core's acking tests), on LocalCluster with simulated time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, Stream, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import Capture, FeederSpout, LocalCluster

TIMEOUT = {"topology.message.timeout.secs": 10}


class AckEveryOther(Bolt):
    """Acks the 1st, 3rd, 5th... tuple it receives and never the others."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.n = 0

    def execute(self, tup: Tuple) -> None:
        self.n += 1
        if self.n % 2 == 1:
            self.ack(tup)


class Identity(Bolt):
    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


class Branch(Bolt):
    """Emits two children per input, both anchored to it."""

    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=tup)
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


class SelfAnchorTwice(Bolt):
    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=[tup, tup])
        self.ack(tup)


class Gate(Bolt):
    """Holds data tuples until a tuple arrives on the ``control`` stream, then acks them all.
    On the control value "fail" it fails them instead."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        if tup.stream == "control":
            release = self.ack if tup.values[0] == "ack" else self.fail
            for held in self.held:
                release(held)
            self.held.clear()
            self.ack(tup)
        else:
            self.held.append(tup)


class Join(Bolt):
    """Pairs a tuple of stream a with the next one of stream b, emits one child anchored to both."""

    outputs = ["a", "b"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.pending: dict[str, list[Tuple]] = {"left": [], "right": []}

    def execute(self, tup: Tuple) -> None:
        self.pending[tup.component].append(tup)
        if self.pending["left"] and self.pending["right"]:
            a, b = self.pending["left"].pop(0), self.pending["right"].pop(0)
            self.emit([a.values[0], b.values[0]], anchors=[a, b])
            self.ack(a)
            self.ack(b)


class ResetHolder(Bolt):
    """Holds every data tuple; on each tick resets the timeout of those whose value is "keep";
    on a control tuple acks everything held."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            for held in self.held:
                if held.values[0] == "keep":
                    self.reset_timeout(held)
        elif tup.stream == "control":
            for held in self.held:
                self.ack(held)
            self.held.clear()
            self.ack(tup)
        else:
            self.held.append(tup)


def gated(builder: TopologyBuilder, upstream: str, control: FeederSpout) -> None:
    builder.set_spout("control", control)
    builder.set_bolt("gate", Gate).shuffle_grouping(upstream).all_grouping("control", "control")


def control_feeder() -> FeederSpout:
    return FeederSpout(["cmd"], streams={"control": ["cmd"]})


def test_timeout_fails_only_unacked_tuples_after_the_timeout() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("ack-every-other", AckEveryOther).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        for i in range(4):
            feeder.feed([i], msg_id=i)
        cluster.advance_time(9)
        assert feeder.acked == [0, 2]
        assert feeder.failed == []
        cluster.advance_time(12)
        assert sorted(feeder.failed) == [1, 3]
        assert feeder.acked == [0, 2]


def test_reset_timeout_keeps_a_slow_tuple_alive() -> None:
    feeder, control = FeederSpout(["v"]), control_feeder()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_spout("control", control)
    b.set_bolt("holder", ResetHolder, config={"topology.tick.tuple.freq.secs": 2}) \
        .shuffle_grouping("feeder").all_grouping("control", "control")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed(["keep"], msg_id="kept")
        feeder.feed(["drop"], msg_id="untouched")
        cluster.advance_time(40)
        assert feeder.failed == ["untouched"]
        assert feeder.acked == []
        control.feed(["ack"], stream="control")
        cluster.wait_for(lambda: feeder.acked == ["kept"], 10, "kept tuple acked")
        assert feeder.failed == ["untouched"]


def test_branching_tree_is_acked_only_when_every_branch_completes() -> None:
    feeder, control = FeederSpout(["v"]), control_feeder()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("identity", Identity).shuffle_grouping("feeder")
    b.set_bolt("branch", Branch, 2).shuffle_grouping("identity")
    gated(b, "branch", control)
    capture = Capture()
    b.set_bolt("tap", capture).shuffle_grouping("branch")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed(["x"], msg_id=1)
        feeder.feed(["y"], msg_id=2)
        cluster.wait_for(lambda: len(capture.tuples) == 4, 10, "4 branch tuples")
        cluster.wait_until_quiet()
        # The tap acked its branch tuples, the gate still holds the other copies.
        assert feeder.acked == []
        control.feed(["ack"], stream="control")
        cluster.wait_for(lambda: sorted(feeder.acked) == [1, 2], 10, "both roots acked")
        assert feeder.failed == []


def test_join_with_multiple_anchors_acks_both_roots_when_the_child_completes() -> None:
    left, right, control = FeederSpout(["v"]), FeederSpout(["v"]), control_feeder()
    b = TopologyBuilder()
    b.set_spout("left", left)
    b.set_spout("right", right)
    b.set_bolt("join", Join).global_grouping("left").global_grouping("right")
    gated(b, "join", control)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        left.feed(["l1"], msg_id="l1")
        cluster.wait_until_quiet()
        right.feed(["r1"], msg_id="r1")
        cluster.wait_until_quiet()
        assert left.acked == [] and right.acked == []
        control.feed(["ack"], stream="control")
        cluster.wait_for(lambda: left.acked == ["l1"] and right.acked == ["r1"], 10, "join acked")


def test_failing_a_joined_child_fails_both_roots_once() -> None:
    left, right, control = FeederSpout(["v"]), FeederSpout(["v"]), control_feeder()
    b = TopologyBuilder()
    b.set_spout("left", left)
    b.set_spout("right", right)
    b.set_bolt("join", Join).global_grouping("left").global_grouping("right")
    gated(b, "join", control)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        left.feed(["l1"], msg_id="l1")
        right.feed(["r1"], msg_id="r1")
        cluster.wait_until_quiet()
        control.feed(["fail"], stream="control")
        cluster.wait_for(lambda: left.failed == ["l1"] and right.failed == ["r1"], 10, "failed")
        cluster.advance_time(30)
        assert left.failed == ["l1"] and right.failed == ["r1"]
        assert left.acked == [] and right.acked == []


def test_self_anchoring_twice_still_acks() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("dup-anchor", SelfAnchorTwice).shuffle_grouping("feeder")
    b.set_bolt("sink", Capture()).shuffle_grouping("dup-anchor")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed(["x"], msg_id="x")
        cluster.wait_for(lambda: feeder.acked == ["x"], 10, "acked")


def test_topology_submitted_inactive_opens_no_spout_until_activated() -> None:
    feeder = FeederSpout(["v"])
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", capture).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology(), active=False)
        feeder.feed(["x"], msg_id=1)
        cluster.advance_time(5)
        assert capture.values == [] and feeder.pending_feed == 1
        cluster.activate("t")
        cluster.wait_for(lambda: feeder.acked == [1], 10, "acked after activation")
        assert capture.values == [["x"]]
        cluster.deactivate("t")
        cluster.wait_until_quiet()
        feeder.feed(["y"], msg_id=2)
        cluster.advance_time(3)
        assert capture.values == [["x"]]


def test_message_timeouts_disabled_never_fail() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("black-hole", Capture(ack=False)).shuffle_grouping("feeder")
    conf = {**TIMEOUT, "topology.enable.message.timeouts": False}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        feeder.feed(["x"], msg_id=1)
        cluster.advance_time(100, step=5)
        assert feeder.failed == [] and feeder.acked == []


def test_acker_disabled_acks_spout_tuples_on_emit() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("black-hole", Capture(ack=False)).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 0},
                                b.create_topology())
        feeder.feed(["x"], msg_id=1)
        feeder.feed(["y"], msg_id=2)
        cluster.wait_for(lambda: feeder.acked == [1, 2], 10, "acked on emit")
        cluster.advance_time(30, step=5)
        assert feeder.failed == []


def test_max_spout_pending_bounds_tuples_in_flight() -> None:
    feeder, control = FeederSpout(["v"]), control_feeder()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder).set_max_spout_pending(2)
    gated(b, "feeder", control)
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, b.create_topology())
        for i in range(5):
            feeder.feed([i], msg_id=i)
        cluster.wait_until_quiet()
        assert worker.stats()["feeder"]["emitted"] == 2
        assert feeder.pending_feed == 3
        control.feed(["ack"], stream="control")
        cluster.wait_for(lambda: len(feeder.acked) == 2, 10, "first two acked")
        cluster.wait_until_quiet()
        assert worker.stats()["feeder"]["emitted"] == 4
        control.feed(["ack"], stream="control")
        cluster.wait_until_quiet()
        control.feed(["ack"], stream="control")
        cluster.wait_for(lambda: sorted(feeder.acked) == [0, 1, 2, 3, 4], 60, "all acked")


def test_spout_sees_fail_once_even_when_the_timeout_passes_later() -> None:
    feeder, control = FeederSpout(["v"]), control_feeder()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    gated(b, "feeder", control)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed(["x"], msg_id="m")
        cluster.wait_until_quiet()
        control.feed(["fail"], stream="control")
        cluster.wait_for(lambda: feeder.failed == ["m"], 10, "failed")
        cluster.advance_time(40, step=5)
        assert feeder.failed == ["m"] and feeder.acked == []


@pytest.mark.parametrize("ackers, workers", [(1, 1), (3, 1), (2, 3)])
def test_many_roots_over_several_ackers_all_complete(ackers: int, workers: int) -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("identity", Identity, 2).shuffle_grouping("feeder")
    b.set_bolt("branch", Branch, 3).shuffle_grouping("identity")
    b.set_bolt("sink", Capture(), 2).shuffle_grouping("branch")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": ackers},
                                b.create_topology(), workers=workers)
        for i in range(500):
            feeder.feed([i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 500, 20, "500 acks")
        assert sorted(feeder.acked) == list(range(500))
        assert feeder.failed == []


def test_tick_tuples_arrive_at_the_configured_frequency() -> None:
    class_ticks = Capture()
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("ticked", class_ticks, config={"topology.tick.tuple.freq.secs": 5}) \
        .shuffle_grouping("feeder")
    b.set_bolt("unticked", Capture()).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        cluster.advance_time(12)
        ticks = [t for t in class_ticks.tuples if t.is_tick()]
        assert len(ticks) == 2
        assert ticks[0].values == [5.0] and ticks[0].component == "__system"


def test_topology_level_tick_frequency_reaches_every_bolt() -> None:
    a, c = Capture(), Capture()
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("a", a).shuffle_grouping("feeder")
    b.set_bolt("c", c, 2).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {"topology.tick.tuple.freq.secs": 3}, b.create_topology())
        cluster.advance_time(7)
        assert sum(t.is_tick() for t in a.tuples) == 2
        assert sorted(len(v) for v in c.by_task.values()) == [2, 2]


class Director(Bolt):
    outputs = [Stream(["v"], name="direct-out", direct=True)]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.targets = context.tasks_of("sink")

    def execute(self, tup: Tuple) -> None:
        self.emit_direct(self.targets[-1], list(tup.values), anchors=tup, stream="direct-out")
        self.ack(tup)


def test_streams_and_direct_emits_reach_the_named_task() -> None:
    feeder = FeederSpout(["v"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("director", Director).shuffle_grouping("feeder")
    b.set_bolt("sink", sink, 3).direct_grouping("director", "direct-out")
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, b.create_topology())
        for i in range(6):
            feeder.feed([i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 6, 10, "acked")
        last = worker.layout.component_tasks["sink"][-1]
        assert list(sink.by_task) == [last]
        assert sorted(v[0] for v in sink.by_task[last]) == list(range(6))


def test_feed_many_uses_positions_as_message_ids() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed_many([["a"], ["b"], ["c"]])
        cluster.wait_for(lambda: sorted(feeder.acked) == [0, 1, 2], 60, "acks")
