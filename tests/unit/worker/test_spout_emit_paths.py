"""Spout emits: the value check covers every value, plain emits on a direct stream are refused
with the right advice, a stream with several subscribers routes each by its own grouping, and a
tuple anchored to a tuple that is in several trees stays in all of them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from stormpy import Bolt, EmitError, Spout, Stream, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError
from stormpy.worker.routing import stable_hash


class OddSpout(Spout):
    outputs = [Stream(["a", "b"]), Stream(["v"], name="only-direct", direct=True)]

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def next_tuple(self) -> None:
        if self.mode == "second value":
            self.emit(["fine", datetime.date(2020, 1, 2)])
        else:
            self.emit(["x"], stream="only-direct")


@pytest.mark.parametrize("mode, message", [
    ("second value", "component 'odd', stream 'default': cannot serialise datetime.date"),
    ("direct", "component 'odd': stream 'only-direct' is direct; use emit_direct(task, values)"),
])
def test_a_spouts_bad_emit_is_a_named_error(mode: str, message: str) -> None:
    b = TopologyBuilder()
    b.set_spout("odd", OddSpout, kwargs={"mode": mode})
    b.set_bolt("sink", Capture()).shuffle_grouping("odd")
    b.set_bolt("direct-sink", Capture()).direct_grouping("odd", "only-direct")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.open()
    with pytest.raises(WorkerError) as info:
        worker.run_once()
    assert isinstance(info.value.__cause__, EmitError)
    assert str(info.value.__cause__).startswith(message), str(info.value.__cause__)


class Join(Bolt):
    """Anchors one output to each pair of inputs (a tuple in two trees)."""

    outputs = ["k"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.held.append(tup)
        if len(self.held) == 2:
            self.emit([tup.values[0]], anchors=list(self.held))
            for held in self.held:
                self.ack(held)
            self.held = []


class Relay(Bolt):
    outputs = [Stream(["k"], name="relayed")]

    def __init__(self, as_list: bool) -> None:
        self.as_list = as_list

    def execute(self, tup: Tuple) -> None:
        self.emit(tup.values, anchors=[tup] if self.as_list else tup, stream="relayed")
        self.ack(tup)


@pytest.mark.parametrize("as_list", [False, True])
@pytest.mark.parametrize("sink_acks", [False, True])
def test_anchoring_to_a_tuple_in_two_trees_keeps_the_child_in_both(as_list: bool,
                                                                  sink_acks: bool) -> None:
    feeder = FeederSpout(["k"])
    sinks, keyed = Capture(ack=sink_acks), Capture(ack=sink_acks)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("join", Join).shuffle_grouping("feeder")
    b.set_bolt("relay", Relay, kwargs={"as_list": as_list}).shuffle_grouping("join")
    b.set_bolt("sinks", sinks, 2).all_grouping("relay", "relayed")  # two children per relay
    b.set_bolt("keyed", keyed, 3).fields_grouping("relay", ["k"], "relayed")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    feeder.feed(["a"], msg_id=1)
    feeder.feed(["key"], msg_id=2)
    for _ in range(10):
        worker.run_once()
    assert len(sinks.tuples) == 2 and all(t.stream == "relayed" for t in sinks.tuples)
    keyed_tasks = sorted(worker.layout.component_tasks["keyed"])
    assert keyed.by_task == {keyed_tasks[stable_hash("key") % 3]: [["key"]]}
    assert sorted(feeder.acked) == ([1, 2] if sink_acks else [])
    assert feeder.failed == []


class TwoWay(Spout):
    outputs = ["k"]

    def __init__(self) -> None:
        self.left = ["k1", "k2", "k3"]

    def next_tuple(self) -> None:
        if self.left:
            self.emit([self.left.pop(0)])


def test_a_spout_stream_with_several_subscribers_routes_each_by_its_grouping() -> None:
    everyone, keyed = Capture(), Capture()
    b = TopologyBuilder()
    b.set_spout("two", TwoWay)
    b.set_bolt("everyone", everyone, 2).all_grouping("two")
    b.set_bolt("keyed", keyed, 3).fields_grouping("two", ["k"])
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.open()
    for _ in range(3):
        worker.run_once()
    assert len(everyone.tuples) == 6
    keyed_tasks = sorted(worker.layout.component_tasks["keyed"])
    for task, values in keyed.by_task.items():
        assert all(keyed_tasks[stable_hash(v[0]) % 3] == task for v in values)
    assert sorted(v[0] for v in keyed.values) == ["k1", "k2", "k3"]
