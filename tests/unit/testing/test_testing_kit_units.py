"""The test kit's time and component tools (issue 15, items 12-14): simulated time for timers
and sleeps inside components, components defined inside a test function, and unit-testing one
bolt with test_tuple and a recording collector."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from stormpy import (
    BasicBolt,
    Bolt,
    CustomStreamGrouping,
    FailedException,
    TopologyBuilder,
    TopologyContext,
    Tuple,
)
from stormpy.testing import (
    Capture,
    Emitted,
    FeederSpout,
    LocalCluster,
    RecordingCollector,
    SimulatedClock,
    complete_topology,
    simulated_time,
    test_tuple,
)
from stormpy.topology import clock
from stormpy.topology._errors import EmitError


class Sleepy(Bolt):
    """Sleeps 30 s (on the component clock) before passing each tuple on."""

    outputs = ["v"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.clock = context.clock

    def execute(self, tup: Tuple) -> None:
        self.clock.sleep(30)
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


class NapThenPass(Bolt):
    """Like Sleepy, through the module-level ``clock.sleep``."""

    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        clock.sleep(5)
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


class Ticks(Bolt):
    """Emits the component clock's time at every tick it gets (every 5 s)."""

    outputs = ["now"]
    component_config = {"topology.tick.tuple.freq.secs": 5}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.clock = context.clock

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.emit([self.clock.now()])
        self.ack(tup)


# -- item 12: simulated time -----------------------------------------------------------------

def test_simulated_time_moves_component_sleeps_ticks_and_timeouts_without_real_waiting() -> None:
    feeder, capture, ticks = FeederSpout(["v"]), Capture(), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sleepy", Sleepy).shuffle_grouping("feeder")
    b.set_bolt("nap", NapThenPass).shuffle_grouping("sleepy")
    b.set_bolt("sink", capture).shuffle_grouping("nap")
    b.set_bolt("ticks", Ticks).shuffle_grouping("feeder")
    b.set_bolt("tick_sink", ticks).shuffle_grouping("ticks")
    with simulated_time() as sim:
        assert clock.simulating() and clock.current_clock() is sim
        with LocalCluster() as cluster:
            assert cluster.clock is sim
            cluster.submit_topology("t", {"topology.message.timeout.secs": 60}, b.create_topology())
            feeder.feed([1], msg_id="one")
            cluster.wait_for(lambda: sim.sleepers == 1, 10, "the bolt to sleep")
            cluster.advance_time(29)
            assert capture.values == []
            cluster.advance_time(1)   # sleepy wakes; nap sleeps 5 more simulated seconds
            cluster.advance_time(5)
            cluster.wait_for(lambda: capture.values == [[1]], 10, "the tuple past both sleeps")
            cluster.wait_for(lambda: feeder.acked == ["one"], 10, "ack")
            # 35 simulated seconds: 7 ticks (delivered late: the sleeps held the worker's loop)
            assert len(ticks.values) == 7
    assert not clock.simulating()


def test_simulated_cluster_joins_the_process_simulation_and_refuses_real_time_inside() -> None:
    with simulated_time() as sim:
        with LocalCluster(simulated_time=True) as cluster:
            assert cluster.clock is sim
        with pytest.raises(ValueError, match="process-wide"):
            LocalCluster(simulated_time=False)
        assert clock.simulating()
    with LocalCluster(simulated_time=True) as cluster:
        assert isinstance(cluster.clock, SimulatedClock) and clock.current_clock() is cluster.clock
    assert not clock.simulating()


def test_simulated_sleep_returns_when_time_is_advanced() -> None:
    sim = SimulatedClock()
    woke = threading.Event()

    def sleeper() -> None:
        sim.sleep(10)
        woke.set()
    t = threading.Thread(target=sleeper)
    t.start()
    try:
        while not sim.is_sleeping(t):
            woke.wait(0.001)
        sim.advance(9)
        assert sim.is_sleeping(t)
        sim.advance(1)
        assert not sim.is_sleeping(t)  # before the thread even runs again
        assert woke.wait(10)
    finally:
        sim.advance(100)
        t.join(10)
    with pytest.raises(ValueError, match="negative"):
        sim.sleep(-1)


def test_stopping_a_cluster_releases_a_component_sleeping_in_simulated_time() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sleepy", Sleepy).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", None, b.create_topology())
        feeder.feed([1])
        sim = cluster.clock
        assert isinstance(sim, SimulatedClock)
        cluster.wait_for(lambda: sim.sleepers == 1, 10, "the bolt to sleep")
        cluster.kill_topology("t")  # returns (does not wait for 30 simulated seconds)
        assert sim.sleepers == 0


# -- item 13: components defined inside a test function ---------------------------------------

def test_local_classes_and_closures_run_in_local_cluster_and_complete_topology() -> None:
    seen: list[Any] = []

    class Recorder(Bolt):  # closes over ``seen``
        outputs = ["v"]

        def execute(self, tup: Tuple) -> None:
            seen.append(tup.values[0])
            self.emit([tup.values[0] * 10], anchors=tup)
            self.ack(tup)

    class ToLast(CustomStreamGrouping):
        def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
            return [self.target_tasks[-1]]

    feeder, capture = FeederSpout(["v"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("rec", Recorder).shuffle_grouping("feeder")
    b.set_bolt("sink", capture, 2).custom_grouping("rec", ToLast)
    spec = b.create_topology()
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", None, spec)
        feeder.feed([1])
        cluster.wait_for(lambda: capture.values == [[10]], 10, "the local bolt's output")
        assert list(capture.by_task) == [max(cluster.worker("t").layout.component_tasks["sink"])]
    assert seen == [1]
    result = complete_topology(spec, {"feeder": [[2], [3]]})
    assert sorted(result.tuples("rec")) == [[20], [30]]
    assert sorted(seen) == [1, 2, 3]


def test_two_local_classes_with_the_same_name_stay_apart() -> None:
    def make(factor: int) -> type[Bolt]:
        class Times(Bolt):
            outputs = ["v"]

            def execute(self, tup: Tuple) -> None:
                self.emit([tup.values[0] * factor], anchors=tup)
                self.ack(tup)
        return Times

    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("double", make(2)).shuffle_grouping("feeder")
    b.set_bolt("triple", make(3)).shuffle_grouping("feeder")
    result = complete_topology(b.create_topology(), {"feeder": [[1]]})
    assert result.tuples("double") == [[2]] and result.tuples("triple") == [[3]]


# -- item 14: one bolt without a topology ----------------------------------------------------

class Split(Bolt):
    outputs = {"default": ["word"], "lengths": ["n"]}

    def execute(self, tup: Tuple) -> None:
        if not tup["sentence"]:
            self.report_error(ValueError("empty sentence"))
            self.fail(tup)
            return
        for word in tup["sentence"].split():
            self.emit([word], anchors=tup)
        self.emit([len(tup["sentence"])], anchors=[tup], stream="lengths")
        self.ack(tup)


class Strict(BasicBolt):
    outputs = ["v"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.prefix = f"{context.component_id}:{context.task_id}:{conf.get('x')}"

    def process(self, tup: Tuple) -> None:
        if tup.values[0] < 0:
            raise FailedException("negative")
        self.emit([f"{self.prefix}:{tup.values[0]}"])


def test_test_tuple_defaults_match_storm_and_can_be_set() -> None:
    tup = test_tuple(["a", 1])
    assert (tup.component, tup.stream, tup.task) == ("component", "default", 1)
    assert tup.as_dict() == {"field1": "a", "field2": 1}
    named = test_tuple(["x"], component="words", stream="s", task=7, fields=["word"])
    assert (named.component, named.stream, named.task, named["word"]) == ("words", "s", 7, "x")
    with pytest.raises(ValueError, match="2 values for fields"):
        test_tuple([1, 2], fields=["only"])


def test_recording_collector_records_emits_with_anchors_acks_fails_and_errors() -> None:
    collector = RecordingCollector()
    bolt = collector.prepare(Split())
    tup = test_tuple(["the cow"], fields=["sentence"])
    bolt.execute(tup)
    assert collector.emitted_values() == [["the"], ["cow"]]
    assert collector.emitted_values("lengths") == [[7]]
    assert all(e.anchors == [tup] for e in collector.emitted)
    assert collector.emitted[0] == Emitted(["the"], "default", [tup])
    assert collector.acked == [tup] and collector.failed == []
    empty = test_tuple([""], fields=["sentence"])
    bolt.execute(empty)
    assert collector.failed == [empty]
    assert [str(e) for e in collector.errors] == ["empty sentence"]
    with pytest.raises(EmitError, match="undeclared stream 'nope'"):
        bolt.emit(["x"], stream="nope")
    with pytest.raises(EmitError, match="2 values"):
        bolt.emit(["x", "y"])


def test_recording_collector_runs_basic_bolts_like_the_runtime() -> None:
    collector = RecordingCollector()
    bolt = collector.prepare(Strict(), {"x": "c"}, component_id="strict", task=3)
    good, bad = test_tuple([1]), test_tuple([-1])
    bolt.execute(good)
    bolt.execute(bad)
    assert collector.emitted == [Emitted(["strict:3:c:1"], "default", [good])]
    assert collector.acked == [good] and collector.failed == [bad]
