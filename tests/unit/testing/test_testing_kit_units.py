"""The test kit's time and component tools (issue 15, items 12-14): simulated time for timers
and sleeps inside components, components defined inside a test function, and unit-testing one
bolt with test_tuple and a recording collector."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from clock_bolts_kit import Sleepy

from stormpy import (
    BasicBolt,
    Bolt,
    CustomStreamGrouping,
    FailedException,
    Spout,
    Stream,
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
from stormpy.topology._layout import Executor


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


# -- the one-component harness, judged exactly (what a user's unit test reads) -----------------

class Words(Spout):
    """A spout with a plain, a direct and a two-field stream."""

    outputs = [Stream(["w"]), Stream(["w"], name="d", direct=True), Stream(["a", "b"], name="pair")]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.opened = (dict(conf), context)

    def next_tuple(self) -> None:
        pass


class Sized(Bolt):
    """Streams named by its ``size`` argument (``declare_outputs`` needs it)."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"default": Stream([f"f{i}" for i in range(kwargs["size"])]),
                "d": Stream(["v"], name="d", direct=True)}

    def __init__(self, size: int) -> None:
        self.size = size

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.prepared = (dict(conf), context)

    def execute(self, tup: Tuple) -> None:
        pass


class Echo(BasicBolt):
    """Emits each input on every kind of emit; fails on "fail", raises on "boom"."""

    outputs = [Stream(["v"]), Stream(["v"], name="d", direct=True), Stream(["v"], name="s")]

    def process(self, tup: Tuple) -> None:
        value = tup.values[0]
        if value == "fail":
            raise FailedException("asked to")
        if value == "boom":
            raise RuntimeError("boom")
        self.emit([value])
        self.emit_direct(4, [value], stream="d")
        self.emit_many([[value], [value]])
        if value == "own":
            self.emit([value], anchors=[OWN], stream="s")
            self.emit_direct(5, [value], anchors=[OWN], stream="d")
            self.emit_many([[value]], anchors=[OWN], stream="s")


OWN = test_tuple(["own anchor"])


def test_test_tuple_takes_any_sequence_and_says_which_lengths_differ() -> None:
    tup = test_tuple(("a", "b", "c"))
    assert tup.values == ["a", "b", "c"] and isinstance(tup.values, list)
    assert tup.as_dict() == {"field1": "a", "field2": "b", "field3": "c"}
    assert test_tuple([]).values == [] and test_tuple([]).as_dict() == {}
    with pytest.raises(ValueError) as caught:
        test_tuple([1, 2], fields=["only"])
    assert str(caught.value) == "test_tuple: 2 values for fields ['only']"
    with pytest.raises(ValueError) as caught:
        test_tuple([1], fields=("a", "b"))
    assert str(caught.value) == "test_tuple: 1 values for fields ['a', 'b']"


def test_a_prepared_bolt_gets_the_conf_and_a_one_task_context_with_working_state() -> None:
    collector = RecordingCollector()
    bolt = collector.prepare(Sized(2), {"x": 1}, kwargs={"size": 2}, component_id="sized", task=5)
    conf, context = bolt.prepared
    assert conf == {"x": 1}
    assert (context.topology_id, context.component_id, context.task_id) == ("test-topology", "sized", 5)
    assert context.component_tasks == [5] and context.worker_tasks == [5]
    assert context.tasks_of("sized") == [5] and context.component_of(5) == "sized"
    assert context.spec.components["sized"].kind == "bolt"
    assert context.output_fields("default").to_list() == ["f0", "f1"]
    store = context.state_store()
    store.put("k", 1)
    assert store.get("k") == 1
    assert collector.prepare(Sized(1), kwargs={"size": 1}).prepared[0] == {}


def test_a_prepared_spout_is_opened_with_its_streams_in_the_context() -> None:
    collector = RecordingCollector()
    spout = collector.prepare(Words(), {"y": 2}, component_id="words", task=3)
    conf, context = spout.opened
    assert conf == {"y": 2} and (context.component_id, context.task_id) == ("words", 3)
    assert context.spec.components["words"].kind == "spout"
    assert sorted(context.spec.components["words"].streams) == ["d", "default", "pair"]
    assert context.output_fields("pair").to_list() == ["a", "b"]


def test_a_spouts_emits_are_recorded_with_ids_tasks_and_streams() -> None:
    collector = RecordingCollector()
    spout = collector.prepare(Words())
    assert spout.emit(["a"], msg_id=1) == []
    spout.emit(("b",))
    spout.emit(["x", "y"], msg_id=0, stream="pair")
    spout.emit_direct(7, ["c"], msg_id=2, stream="d")
    spout.emit_many([["d"], ["e"]], msg_ids=iter([3, 4]))
    spout.emit_many([["f"]])
    assert spout.emit_batch([["g", 1], ["h", 2]], msg_ids=[5, 6], stream="pair") == [[], []]
    assert spout.emit_batch(iter([["i"]])) == [[]]
    assert collector.emitted == [
        Emitted(["a"], "default", [], 1), Emitted(["b"], "default", [], None),
        Emitted(["x", "y"], "pair", [], 0),
        Emitted(["c"], "d", [], 2, task=7), Emitted(["d"], "default", [], 3),
        Emitted(["e"], "default", [], 4), Emitted(["f"], "default", [], None),
        Emitted(["g", 1], "pair", [], 5), Emitted(["h", 2], "pair", [], 6),
        Emitted(["i"], "default", [], None)]
    assert collector.emitted_values() == [["a"], ["b"], ["d"], ["e"], ["f"], ["i"]]
    assert collector.emitted_values("pair") == [["x", "y"], ["g", 1], ["h", 2]]
    assert collector.acked == [] and collector.failed == []


def test_a_spouts_bad_emits_are_refused_whole_with_the_exact_reason() -> None:
    collector = RecordingCollector()
    spout = collector.prepare(Words(), component_id="words")
    refusals = [
        (lambda: spout.emit(["a"], stream="nope"),
         "component 'words' emitted on undeclared stream 'nope' (declared: ['d', 'default', 'pair'])"),
        (lambda: spout.emit(["a"], stream="d"), "component 'words': stream 'd' is declared direct"),
        (lambda: spout.emit_direct(1, ["a"]), "component 'words': stream 'default' is not declared direct"),
        (lambda: spout.emit(["a", "b"]),
         "component 'words', stream 'default': emitted 2 values for fields ['w']"),
        (lambda: spout.emit("ab"),
         "component 'words', stream 'default': emit takes a list of values, got str"),
        (lambda: spout.emit_many([["a"], ["b"]], msg_ids=[1]),
         "component 'words', stream 'default': emit_many got 1 message ids for 2 tuples"),
        (lambda: spout.emit_many([["a"], ["b", "c"]], msg_ids=[1, 2]),
         "component 'words', stream 'default': emitted 2 values for fields ['w']"),
        (lambda: spout.emit_batch([["a"]], msg_ids=[1, 2], stream="pair"),
         "component 'words', stream 'pair': emit_many got 2 message ids for 1 tuples"),
        (lambda: spout.emit_direct(1, ["a", "b"], stream="d"),
         "component 'words', stream 'd': emitted 2 values for fields ['w']"),
    ]
    for emit, message in refusals:
        with pytest.raises(EmitError) as caught:
            emit()
        assert str(caught.value) == message
    assert collector.emitted == []


def test_a_bolts_emits_keep_their_anchors_and_its_acks_fails_and_resets_are_recorded() -> None:
    collector = RecordingCollector()
    bolt = collector.prepare(Sized(1), kwargs={"size": 1})
    a, b = test_tuple([1]), test_tuple([2])
    assert bolt.emit([1]) == []
    bolt.emit([2], anchors=a)
    bolt.emit([3], anchors=(a, b))
    bolt.emit_direct(9, ["x"], anchors=iter([b]), stream="d")
    bolt.emit_direct(8, ["y"], stream="d")
    bolt.emit_many([[4], [5]], anchors=a)
    bolt.emit_many(iter([[6]]))
    assert collector.emitted == [
        Emitted([1]), Emitted([2], anchors=[a]), Emitted([3], anchors=[a, b]),
        Emitted(["x"], "d", [b], task=9), Emitted(["y"], "d", [], task=8),
        Emitted([4], anchors=[a]), Emitted([5], anchors=[a]), Emitted([6])]
    with pytest.raises(EmitError) as caught:
        bolt.emit_many([[7], [8, 9]])
    assert str(caught.value) == "component 'component', stream 'default': emitted 2 values for fields ['f0']"
    assert len(collector.emitted) == 8  # nothing of a refused emit_many was recorded
    bolt.ack(a)
    bolt.ack_many([b, a])
    bolt.fail(b)
    bolt.reset_timeout(a)
    bolt.report_error(ValueError("bad"))
    assert collector.acked == [a, b, a] and collector.failed == [b]
    assert collector.timeouts_reset == [a] and [str(e) for e in collector.errors] == ["bad"]
    collector.clear()
    assert (collector.emitted, collector.acked, collector.failed, collector.timeouts_reset,
            collector.errors) == ([], [], [], [], [])


def test_streams_that_cannot_be_named_leave_emits_unchecked_but_values_still_checked() -> None:
    collector = RecordingCollector()
    bolt = collector.bind(Sized(3), component_id="sized")  # no kwargs: declare_outputs fails
    bolt.emit([1, 2], stream="anything")
    bolt.emit_direct(1, [1], stream="default")
    assert collector.emitted == [Emitted([1, 2], "anything"), Emitted([1], "default", task=1)]
    with pytest.raises(EmitError) as caught:
        bolt.emit({"a": 1})
    assert str(caught.value) == "component 'sized', stream 'default': emit takes a list of values, got dict"
    context = collector.context(bolt, component_id="sized", task=2)
    assert context.spec.components["sized"].streams == {} and context.task_id == 2


def test_work_off_the_loop_runs_at_once_and_its_result_or_error_reaches_on_done() -> None:
    collector = RecordingCollector()
    bolt = collector.prepare(Sized(1), kwargs={"size": 1})
    done: list[tuple[Any, Any]] = []
    assert bolt.run_in_background(lambda: 42, lambda result, error: done.append((result, error))) is None
    error = KeyError("lost")

    def fails() -> None:
        raise error
    bolt.run_in_background(fails, lambda result, exc: done.append((result, exc)))
    assert done == [(42, None), (None, error)]
    calls: list[int] = []
    bolt.call_soon_threadsafe(lambda: calls.append(1))
    assert calls == [1]
    spout = RecordingCollector().prepare(Words())
    spout.run_in_background(lambda: "s", lambda result, exc: done.append((result, exc)))
    spout.call_soon_threadsafe(lambda: calls.append(2))
    spout.report_error("text")
    assert done[-1] == ("s", None) and calls == [1, 2]


def test_a_basic_bolt_anchors_to_its_input_and_is_acked_or_failed_as_by_the_runtime() -> None:
    collector = RecordingCollector()
    bolt = collector.prepare(Echo())
    tup, failing = test_tuple(["x"]), test_tuple(["fail"])
    bolt.execute(tup)
    assert collector.emitted == [Emitted(["x"], anchors=[tup]), Emitted(["x"], "d", [tup], task=4),
                                 Emitted(["x"], anchors=[tup]), Emitted(["x"], anchors=[tup])]
    assert collector.acked == [tup] and collector.failed == []
    collector.clear()
    bolt.execute(failing)
    assert collector.failed == [failing] and collector.acked == [] and collector.emitted == []
    own = test_tuple(["own"])
    bolt.execute(own)
    # anchors and streams given are kept, on every kind of emit
    assert collector.emitted[-3:] == [Emitted(["own"], "s", [OWN]), Emitted(["own"], "d", [OWN], task=5),
                                      Emitted(["own"], "s", [OWN])]
    assert collector.acked == [own]
    boom = test_tuple(["boom"])
    with pytest.raises(RuntimeError, match="boom"):
        bolt.execute(boom)
    assert collector.acked == [own] and collector.failed == [failing]
    bolt.execute(tup)  # the input is the current one again after a failure and an error
    assert collector.emitted[-1] == Emitted(["x"], anchors=[tup])


def test_a_context_describes_the_component_alone_by_default_as_component_task_1() -> None:
    collector = RecordingCollector()
    bolt = collector.bind(Sized(1))  # no kwargs: its streams cannot be named
    with pytest.raises(EmitError) as caught:
        bolt.emit("v")
    assert str(caught.value) == \
        "component 'component', stream 'default': emit takes a list of values, got str"
    context = collector.context(bolt)
    assert (context.component_id, context.task_id, context.conf) == ("component", 1, {})
    (spec,) = context.spec.components.values()
    assert (spec.id, spec.kind, spec.class_path) == ("component", "bolt", f"{__name__}:Sized")
    assert context.layout.executors == [Executor("component", 1, 1)]
    assert context.layout.component_tasks == {"component": [1]}
    assert context.layout.task_component == {1: "component"}
    prepared = RecordingCollector().prepare(Sized(1), kwargs={"size": 1}).prepared[1]
    assert (prepared.component_id, prepared.task_id) == ("component", 1)
    named = collector.context(bolt, component_id="b", task=4)
    assert named.layout.executors == [Executor("b", 4, 4)] and named.spec.components["b"].id == "b"
