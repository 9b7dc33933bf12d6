"""Anchoring choices the common emit paths do not cover: anchors that are in no tuple tree (with
ackers on), a ``BasicBolt``'s explicit anchors, how a spout whose worker runs no acker spreads
its roots over the ackers, and a spout task's initial inactive state."""

from __future__ import annotations

from typing import Any

import pytest
from transport_fakes import ScriptedTransport

from stormpy import BasicBolt, Bolt, Spout, Stream, TopologyBuilder, Tuple
from stormpy.messaging.codec import decode_frame
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.spout_task import SpoutTask


class TwoUntracked(Spout):
    """Emits two untracked tuples (no message id)."""

    outputs = [Stream(["n"])]

    def __init__(self) -> None:
        self.left = 2

    def next_tuple(self) -> None:
        if self.left:
            self.left -= 1
            self.emit([self.left])


class ListAnchored(Bolt):
    """Emits each input on, anchored to ``[input]`` (a list: the general emit path)."""

    outputs = [Stream(["n", "tag"], name="out")]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup.values[0], "relayed"], [tup], "out")
        self.ack(tup)


def test_anchors_in_no_tree_give_an_untracked_tuple_with_its_metadata() -> None:
    """With ackers on, a bolt anchoring to untracked inputs (given as a list) sends plain
    untracked tuples: values, stream, its own task and component, the stream's fields."""
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("src", TwoUntracked)
    b.set_bolt("relay", ListAnchored).shuffle_grouping("src")
    b.set_bolt("sink", sink).shuffle_grouping("relay", "out")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    for _ in range(5):
        worker.run_once()
    (relay,) = worker.layout.component_tasks["relay"]
    assert sorted(sink.values) == [[0, "relayed"], [1, "relayed"]]
    for tup in sink.tuples:
        assert (tup.task, tup.component, tup.stream) == (relay, "relay", "out")
        assert tup.fields == Fields(["n", "tag"])
        assert tup.root == 0 and not tup.anchors and not tup.tree_edges()


class EmitsUnanchoredOnRequest(BasicBolt):
    """A BasicBolt passing ``anchors=[]`` explicitly (no anchor), through ``how``."""

    outputs = [Stream(["v"]), Stream(["v"], name="direct", direct=True)]

    def __init__(self, how: str) -> None:
        self.how = how

    def prepare(self, conf: Any, context: Any) -> None:
        self.sink_tasks = context.tasks_of("sink")

    def process(self, tup: Tuple) -> None:
        if self.how == "emit":
            self.emit(tup.values, [])
        elif self.how == "emit_many":
            self.emit_many([tup.values], [])
        else:
            self.emit_direct(self.sink_tasks[0], tup.values, [], "direct")


class FailsAll(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.fail(tup)


@pytest.mark.parametrize("how", ["emit", "emit_many", "emit_direct"])
def test_a_basic_bolts_explicit_anchors_replace_the_current_input(how: str) -> None:
    """Explicit anchors (here none: ``[]``) win over the automatic anchoring to the input: the
    downstream failure of such an emit does not fail the spout tuple, which completes when the
    BasicBolt's input is acked."""
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("basic", EmitsUnanchoredOnRequest, kwargs={"how": how}).shuffle_grouping("feeder")
    sink = b.set_bolt("sink", FailsAll)
    if how == "emit_direct":
        sink.direct_grouping("basic", "direct")
    else:
        sink.shuffle_grouping("basic")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    feeder.feed(["x"], msg_id="m")
    for _ in range(6):
        worker.run_once()
    assert worker.stats()["sink"]["failed"] == 1
    assert feeder.acked == ["m"] and feeder.failed == []


class GreetsBeforeItsFirstInput(BasicBolt):
    """A BasicBolt emitting from a callback it schedules in ``prepare``: on the loop, before any
    input, so there is no current input to anchor to."""

    outputs = [Stream(["v"])]

    def prepare(self, conf: Any, context: Any) -> None:
        self.call_soon_threadsafe(lambda: self.emit(["hello"]))

    def process(self, tup: Tuple) -> None:
        self.emit(tup.values)


def test_a_basic_bolts_emit_before_any_input_is_unanchored() -> None:
    """Outside ``process`` a BasicBolt has no input to anchor to: with ackers on, an emit from a
    callback before its first input sends an untracked tuple (it does not fail the task), and
    the inputs that follow are anchored as usual."""
    feeder = FeederSpout(["v"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("basic", GreetsBeforeItsFirstInput).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("basic")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    for _ in range(4):
        worker.run_once()
    assert sink.values == [["hello"]]
    (greeting,) = sink.tuples
    assert greeting.root == 0 and not greeting.anchors
    feeder.feed(["x"], msg_id="m")
    for _ in range(6):
        worker.run_once()
    assert sink.values == [["hello"], ["x"]]
    assert sink.tuples[1].root != 0  # the input's emit is in its tree
    assert feeder.acked == ["m"] and worker.stats()["basic"]["failed"] == 0


def test_a_spout_without_an_acker_in_its_worker_spreads_roots_over_the_ackers() -> None:
    """No acker runs with the spout: roots are not pinned to one acker, so the inits of many
    spout tuples reach every acker task (each one's share is random; all 60 on one of two
    ackers has odds 2**-59)."""
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    spec = b.create_topology()
    conf = {"topology.acker.executors": 2}
    probe = Worker(WorkerConfig("t", spec, conf, local_tasks=[]))
    tasks = probe.layout.component_tasks
    here = [*tasks["feeder"], *tasks["sink"]]
    peers = {t: "ackers" for t in tasks["__acker"]}
    transport = ScriptedTransport()
    worker = Worker(WorkerConfig("t", spec, conf, local_tasks=here, task_peers=peers),
                    transport=transport, clock=SimulatedClock())
    worker.open()
    assert worker.dispatch.acker_cores == [None, None]
    for i in range(60):
        feeder.feed([i], msg_id=i)
    for _ in range(4):
        worker.run_once()
    inits = [t for _p, f in transport.sent for t in decode_frame(f) if t[1] == "__ack_init"]
    assert len(inits) == 60
    assert {t[0] for t in inits} == set(tasks["__acker"])


class Watched(Spout):
    """Records its activations and deactivations."""

    outputs = [Stream(["v"])]
    calls: list[str] = []

    def activate(self) -> None:
        Watched.calls.append("activate")

    def deactivate(self) -> None:
        Watched.calls.append("deactivate")

    def next_tuple(self) -> None:
        pass


def test_a_spout_task_starts_inactive() -> None:
    """Before its first activation a spout task is inactive: a deactivation is not passed on
    (no ``deactivate`` without an ``activate`` before it), an activation is."""
    calls = Watched.calls
    calls.clear()
    b = TopologyBuilder()
    b.set_spout("watched", Watched)
    worker = Worker(WorkerConfig("t", b.create_topology(), {}, active=False),
                    clock=SimulatedClock())
    (task,) = worker.layout.component_tasks["watched"]
    runner = worker.tasks[task]
    assert isinstance(runner, SpoutTask) and runner.active is False
    runner.set_active(False)
    assert calls == []
    runner.set_active(True)
    runner.set_active(False)
    assert calls == ["activate", "deactivate"]


class ManyOnAStream(BasicBolt):
    """Emits two copies of each input at once on the ``pairs`` stream (automatic anchors)."""

    outputs = [Stream(["v"], name="pairs")]

    def process(self, tup: Tuple) -> None:
        self.emit_many([tup.values, tup.values], stream="pairs")


def test_a_basic_bolts_emit_many_is_anchored_to_the_input_on_the_stream_given() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("basic", ManyOnAStream).shuffle_grouping("feeder")
    b.set_bolt("sink", FailsAll).shuffle_grouping("basic", "pairs")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    feeder.feed(["x"], msg_id="m")
    for _ in range(6):
        worker.run_once()
    assert worker.stats()["sink"]["failed"] == 2
    assert feeder.failed == ["m"] and feeder.acked == []
