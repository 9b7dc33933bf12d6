"""The test kit's contracts a user's test relies on, asserted exactly: the tuples complete_topology
captures, the acked/failed positions, the mocked acks' bookkeeping, FeederSpout/Capture, and the
clear errors for misuse (written for the ``testing`` mutation target, docs/testing.md)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder, Tuple
from stormpy.testing import (
    AckFailMapTracker,
    Capture,
    FeederSpout,
    FixedTupleSpout,
    LocalCluster,
    MockedSources,
    WaitTimeout,
    complete_topology,
    wait_for,
)
from stormpy.testing import _registry as registry
from stormpy.testing._complete import timeout_bound_secs
from stormpy.topology import Stream, clock
from stormpy.topology._errors import InvalidTopologyError


class _Src(Spout):
    """A spout the mocked sources replace (it emits nothing itself)."""

    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class _Streams(Spout):
    """Declares a grouped stream with two fields and a direct stream."""

    @classmethod
    def declare_outputs(cls, kwargs: Any) -> dict[str, Stream]:
        return {"default": Stream(["n"]), "pairs": Stream(["a", "b"], name="pairs"),
                "direct": Stream(["n"], name="direct", direct=True)}

    def next_tuple(self) -> None:
        pass


class _Double(Bolt):
    """Emits twice its input, anchored; fails the 3, acks the others."""

    outputs = ["d"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup["n"] * 2], anchors=tup)
        (self.fail if tup["n"] == 3 else self.ack)(tup)


class _Kind(Bolt):
    """Emits the type name of the value it received."""

    outputs = ["kind"]

    def execute(self, tup: Tuple) -> None:
        self.emit([type(tup["n"]).__name__], anchors=tup)
        self.ack(tup)


class _Meet(Bolt):
    """Acks only once the other topology's bolt got a tuple too (both runs are up at once)."""

    outputs = ["n"]
    meeting = threading.Barrier(2, timeout=20)

    def execute(self, tup: Tuple) -> None:
        self.meeting.wait()
        self.emit([tup["n"]], anchors=tup)
        self.ack(tup)


class _Ticks(Bolt):
    """Acks the 1, holds the others unacked, emits the number of ticks seen at each tick
    (``topology.tick.tuple.freq.secs`` = 1: one per simulated second)."""

    outputs = ["ticks"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.ticks = 0

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.ticks += 1
            self.emit([self.ticks])
        elif tup["n"] == 1:
            self.ack(tup)


class _Endless(Spout):
    """Emits forever (the topology is never quiet)."""

    outputs = ["n"]

    def next_tuple(self) -> None:
        self.emit([0])


class _Swallow(Bolt):
    def execute(self, tup: Tuple) -> None:
        pass


def _doubling() -> Any:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_bolt("double", _Double).shuffle_grouping("src")
    return b.create_topology()


def test_mocked_sources_keep_each_spouts_rows_per_stream_in_order() -> None:
    src = MockedSources({"s": [["a"], ["b"]], "t": {"x": [[1, 2]]}})
    src.add_mock_data("s", ["c"], stream="other")
    assert src.data == {"s": [("default", ["a"]), ("default", ["b"]), ("other", ["c"])],
                        "t": [("x", [1, 2])]}
    for bad in ("ab", 5):
        with pytest.raises(TypeError) as err:
            src.add_mock_data("s", ["ok"], bad)
        assert str(err.value) == f"mock data for s/default: each tuple must be a list of values, got {bad!r}"
    assert src.data["s"][-1] == ("default", ["ok"])  # rows before the bad one are kept


# -- the mocked acks (AckFailMapTracker) ------------------------------------------------------

def test_ack_fail_map_tracker_records_in_order_and_answers_membership() -> None:
    t = AckFailMapTracker()
    assert (t.acked, t.failed, t.num_acks) == ([], [], 0)
    t.ack("a")
    t.ack("b")
    t.ack("a")
    t.fail("c")
    assert t.acked == ["a", "b", "a"]
    assert t.failed == ["c"]
    assert t.num_acks == 3
    assert t.is_acked("a") and not t.is_acked("c")
    assert t.is_failed("c") and not t.is_failed("a")
    copy = t.acked
    copy.append("x")
    assert t.acked == ["a", "b", "a"]  # a copy: the test cannot change the record


def test_ack_fail_map_tracker_assertions_name_what_is_missing() -> None:
    t = AckFailMapTracker()
    t.ack(1)
    t.fail(2)
    t.assert_acked(1)
    t.assert_failed(2)
    t.assert_acked()
    t.assert_not_completed(3)
    with pytest.raises(AssertionError) as err:
        t.assert_acked(1, 2, 3)
    assert str(err.value) == "expected [2, 3] to be acked; acked [1], failed [2]"
    with pytest.raises(AssertionError) as err:
        t.assert_failed(1, 2)
    assert str(err.value) == "expected [1] to be failed; acked [1], failed [2]"
    with pytest.raises(AssertionError) as err:
        t.assert_not_completed(1, 2, 3)
    assert str(err.value) == "expected [1, 2] to be neither acked nor failed; acked [1], failed [2]"
    with pytest.raises(AssertionError) as err:
        t.assert_not_completed(2)
    assert str(err.value) == "expected [2] to be neither acked nor failed; acked [1], failed [2]"


def test_check_acks_counts_the_acks_since_the_previous_check_and_reset_forgets_all() -> None:
    t = AckFailMapTracker()
    t.check_acks(0)
    t.ack("a")
    t.ack("b")
    t.check_acks(2)
    t.check_acks(0)
    t.ack("c")
    with pytest.raises(AssertionError) as err:
        t.check_acks(2)
    assert str(err.value) == "expected 2 acks since the last check, got 1 (acked so far: ['a', 'b', 'c'])"
    t.check_acks(0)  # the failed check still moved the mark
    t.fail("d")
    t.reset()
    assert (t.acked, t.failed, t.num_acks) == ([], [], 0)
    t.ack("e")
    t.check_acks(1)  # the mark went back to zero with reset


# -- complete_topology -------------------------------------------------------------------------

def test_complete_topology_returns_the_exact_tuples_and_the_acked_and_failed_positions() -> None:
    spec = _doubling()
    before = dict(registry._objects)
    result = complete_topology(spec, {"src": [[1], [2], [3]]})
    assert result.tuples("src") == [[1], [2], [3]]
    assert result.tuples("double") == [[2], [4], [6]]
    assert result.tuples("double", "nope") == []
    assert result.acked("src") == [0, 1]
    assert result.failed("src") == [2]
    assert result.acked("src", "other") == [] and result.failed("src", "other") == []
    got = result.tuples("double")
    got.append([0])
    assert result.tuples("double") == [[2], [4], [6]]  # a copy
    assert result.stats["src"]["emitted"] == 3 and result.stats["double"]["executed"] == 3
    assert (result.stats["src"]["acked"], result.stats["src"]["failed"]) == (2, 1)
    assert registry._objects == before  # the mocked spouts' trackers are gone again
    assert spec.components["src"].class_path.endswith("_Src")  # the user's spec is untouched


def test_complete_topology_over_two_workers_and_on_a_given_cluster() -> None:
    spec = _doubling()
    result = complete_topology(spec, {"src": [[1], [2]]}, workers=2)
    assert sorted(result.tuples("double")) == [[2], [4]]
    assert result.acked("src") == [0, 1]
    with LocalCluster(simulated_time=True) as cluster:
        result = complete_topology(spec, MockedSources().add_mock_data("src", [5]), cluster=cluster)
        assert result.tuples("double") == [[10]]
        assert result.acked("src") == [0]
        # the caller's cluster stays up and the run's topology is gone from it
        assert cluster.topologies() == []
        again = complete_topology(spec, {"src": [[3]]}, cluster=cluster)
        assert again.failed("src") == [0]


def test_complete_topology_positions_count_per_stream() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Streams)
    b.set_bolt("sink", _Swallow).shuffle_grouping("src").shuffle_grouping("src", "pairs")
    conf = {"topology.message.timeout.secs": 5}
    sources = MockedSources().add_mock_data("src", [1], [2]).add_mock_data("src", [3, 4], stream="pairs")
    result = complete_topology(b.create_topology(), sources, conf)
    assert result.tuples("src", "pairs") == [[3, 4]]
    assert result.failed("src") == [0, 1]
    assert result.failed("src", "pairs") == [0]
    assert result.acked("src", "pairs") == []


def test_complete_topology_with_message_timeouts_off_returns_the_unacked_as_pending() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_bolt("sink", _Swallow).shuffle_grouping("src")
    result = complete_topology(b.create_topology(), {"src": [[1]]},
                               {"topology.enable.message.timeouts": False})
    assert result.tuples("src") == [[1]]
    assert (result.acked("src"), result.failed("src")) == ([], [])


def test_mocking_what_is_not_a_grouped_declared_stream_of_a_spout_is_refused_clearly() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Streams)
    b.set_bolt("sink", _Swallow).shuffle_grouping("src")
    spec = b.create_topology()
    with pytest.raises(InvalidTopologyError) as err:
        complete_topology(spec, {"sink": [[1]]})
    assert str(err.value) == "mock source 'sink' is not a spout of the topology"
    with pytest.raises(InvalidTopologyError) as err:
        complete_topology(spec, {"nope": [[1]]})
    assert str(err.value) == "mock source 'nope' is not a spout of the topology"
    with pytest.raises(InvalidTopologyError) as err:
        complete_topology(spec, {"src": {"warn": [[1]]}})
    assert str(err.value) == ("mock data for spout 'src' on stream 'warn', which it does not "
                              "declare (declared: ['default', 'direct', 'pairs'])")
    with pytest.raises(InvalidTopologyError) as err:
        complete_topology(spec, {"src": {"direct": [[1]]}})
    assert str(err.value) == ("spout 'src': stream 'direct' is direct; mocked sources emit on "
                              "grouped streams only")
    with pytest.raises(InvalidTopologyError) as err:
        complete_topology(spec, {"src": {"pairs": [[1, 2], [1]]}})
    assert str(err.value) == "mock data for src/pairs: [1] has 1 values for fields ['a', 'b']"


def test_the_timeout_bound_is_one_and_a_half_timeouts_rounded_up_plus_one_second() -> None:
    assert timeout_bound_secs(30) == 46
    assert timeout_bound_secs(7) == 12
    assert timeout_bound_secs(1) == 3
    assert timeout_bound_secs(0.5) == 2


def test_complete_topology_runs_in_one_worker_unless_told_otherwise() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_bolt("kind", _Kind).shuffle_grouping("src")
    spec = b.create_topology()
    # one worker hands the emitted objects over as they are; several serialise them between
    # workers (a tuple value arrives as a list)
    assert complete_topology(spec, {"src": [[(1, 2)]]}).tuples("kind") == [["tuple"]]
    assert complete_topology(spec, {"src": [[(1, 2)]]}, workers=2).tuples("kind") == [["list"]]


def test_complete_topology_shuts_down_the_cluster_it_made() -> None:
    before = threading.active_count()
    assert not clock.simulating()
    complete_topology(_doubling(), {"src": [[1]]})
    assert not clock.simulating()  # its simulated time ended with it
    wait_for(lambda: threading.active_count() <= before, 20, "the run's threads to end")


def test_two_runs_share_a_cluster_at_the_same_time() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_bolt("meet", _Meet).shuffle_grouping("src")
    spec = b.create_topology()
    results: dict[int, Any] = {}

    def run(n: int) -> None:
        results[n] = complete_topology(spec, {"src": [[n]]}, cluster=cluster, timeout=30)

    with LocalCluster(simulated_time=True) as cluster:
        threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert {n: r.tuples("meet") for n, r in results.items()} == {1: [[1]], 2: [[2]]}


def _ticking(held: bool) -> Any:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_bolt("ticks", _Ticks).shuffle_grouping("src")
    return b.create_topology(), {"src": [[1], [2]] if held else [[1]]}


def test_simulated_time_moves_only_until_every_mocked_tuple_completed() -> None:
    conf = {"topology.message.timeout.secs": 3, "topology.tick.tuple.freq.secs": 1}
    spec, data = _ticking(held=False)
    result = complete_topology(spec, data, conf)
    assert (result.acked("src"), result.tuples("ticks")) == ([0], [])  # nothing pending: no step
    spec, data = _ticking(held=True)
    result = complete_topology(spec, data, conf)
    assert (result.acked("src"), result.failed("src")) == ([0], [1])
    ticks = len(result.tuples("ticks"))
    # the held tuple times out between 1 and 1.5 timeouts; time stops moving, one second at a
    # time, once it has
    assert 3 <= ticks <= 5, result.tuples("ticks")
    assert result.tuples("ticks") == [[n] for n in range(1, ticks + 1)]  # one second per step


def test_with_message_timeouts_off_simulated_time_does_not_move() -> None:
    spec, data = _ticking(held=True)
    result = complete_topology(spec, data, {"topology.enable.message.timeouts": False,
                                            "topology.tick.tuple.freq.secs": 1})
    assert (result.acked("src"), result.failed("src"), result.tuples("ticks")) == ([0], [], [])


def test_a_mocked_spout_that_cannot_emit_everything_times_out_naming_the_wait() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_bolt("sink", _Swallow).shuffle_grouping("src")
    conf = {"topology.max.spout.pending": 1, "topology.enable.message.timeouts": False}
    with pytest.raises(WaitTimeout) as err:
        complete_topology(b.create_topology(), {"src": [[1], [2]]}, conf, timeout=0.5)
    assert str(err.value) == "timed out after 0.5s waiting for mock sources to emit every tuple"


def test_a_topology_that_never_goes_quiet_times_out_after_the_given_timeout() -> None:
    b = TopologyBuilder()
    b.set_spout("src", _Src)
    b.set_spout("endless", _Endless)
    b.set_bolt("sink", _Swallow).shuffle_grouping("src").shuffle_grouping("endless")
    with pytest.raises(TimeoutError, match=r"still busy after 0.5s"):
        complete_topology(b.create_topology(), {"src": [[1]]}, timeout=0.5)


def test_a_run_on_a_shared_cluster_waits_for_its_own_topology_only() -> None:
    b = TopologyBuilder()
    b.set_spout("endless", _Endless)
    b.set_bolt("sink", _Swallow).shuffle_grouping("endless")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("busy", {}, b.create_topology())
        result = complete_topology(_doubling(), {"src": [[1]]}, cluster=cluster, timeout=5)
        assert result.tuples("double") == [[2]]
        assert cluster.topologies() == ["busy"]


# -- FixedTupleSpout, FeederSpout, Capture -----------------------------------------------------

def _run_fixed(kwargs: dict[str, Any], parallelism: int = 1, stream: str = "default",
               capture: Capture | None = None,
               captured: int | None = None) -> tuple[Capture, AckFailMapTracker]:
    """FixedTupleSpout as a user's topology uses it, its acks and fails in a tracker."""
    tracker = AckFailMapTracker()
    key = registry.register(tracker)
    capture = capture or Capture()
    b = TopologyBuilder()
    b.set_spout("fixed", FixedTupleSpout, parallelism, kwargs={**kwargs, "key": key})
    b.set_bolt("sink", capture).shuffle_grouping("fixed", stream)
    total = len(kwargs["tuples"])
    try:
        with LocalCluster(simulated_time=True) as cluster:
            cluster.submit_topology("t", {"topology.message.timeout.secs": 2}, b.create_topology())
            want = total if captured is None else captured
            cluster.wait_for(lambda: len(capture.values) == want, 10, "every tuple captured")
            cluster.wait_for(lambda: len(tracker.acked) + len(tracker.failed) == total
                             or not capture.ack, 10, "every tuple completed")
            if not capture.ack:
                cluster.advance_time(4)
    finally:
        registry.unregister(key)
    return capture, tracker


def test_fixed_tuple_spout_emits_its_tuples_once_with_their_positions_as_message_ids() -> None:
    capture, tracker = _run_fixed({"tuples": [[1], [2], [3]], "fields": ["n"]})
    assert capture.values == [[1], [2], [3]]
    assert tracker.acked == [0, 1, 2] and tracker.failed == []


def test_fixed_tuple_spout_spreads_its_tuples_over_its_tasks_by_position() -> None:
    capture, tracker = _run_fixed({"tuples": [[1], [2], [3], [4], [5]], "fields": ["n"]}, 2)
    assert sorted(v[0] for v in capture.values) == [1, 2, 3, 4, 5]  # each once
    assert sorted(tracker.acked) == [0, 1, 2, 3, 4]


def test_fixed_tuple_spout_on_a_named_stream_and_on_several_streams() -> None:
    capture, tracker = _run_fixed({"tuples": [[1], [2]], "fields": ["n"], "stream": "s"}, stream="s")
    assert capture.values == [[1], [2]] and tracker.acked == [0, 1]
    assert {t.stream for t in capture.tuples} == {"s"}
    capture, tracker = _run_fixed({"tuples": [[1], [2, 3], [4]], "streams": ["a", "b", "a"],
                                   "fields": {"a": ["n"], "b": ["x", "y"]}}, stream="a",
                                  captured=2)
    assert capture.values == [[1], [4]]
    # ids are (stream, position within that stream); the tuple on "b" nobody subscribes to is
    # acked at once (no tree)
    assert sorted(tracker.acked) == [("a", 0), ("a", 1), ("b", 0)]


def test_fixed_tuple_spout_refuses_a_stream_list_of_the_wrong_length() -> None:
    with pytest.raises(ValueError) as err:
        FixedTupleSpout([[1], [2]], ["n"], streams=["a"])
    assert str(err.value) == "FixedTupleSpout: 1 stream names for 2 tuples"
    assert FixedTupleSpout([[1]], ["n"]).streams == ["default"]


def test_the_kits_spouts_declare_their_streams_under_their_names() -> None:
    b = TopologyBuilder()
    b.set_spout("one", FixedTupleSpout, kwargs={"tuples": [], "fields": ["n"], "stream": "s"})
    b.set_spout("many", FixedTupleSpout, kwargs={"tuples": [], "fields": {"a": ["n"], "b": ["m"]}})
    b.set_spout("feeder", FeederSpout(["v"], streams={"other": ["a", "b"]}))
    comps = b.create_topology().components
    assert {n: (s.name, s.fields.to_list()) for n, s in comps["one"].streams.items()} == {"s": ("s", ["n"])}
    assert {n: (s.name, s.fields.to_list()) for n, s in comps["many"].streams.items()} == {
        "a": ("a", ["n"]), "b": ("b", ["m"])}
    assert {n: (s.name, s.fields.to_list()) for n, s in comps["feeder"].streams.items()} == {
        "default": ("default", ["v"]), "other": ("other", ["a", "b"])}


def test_fixed_tuple_spout_without_a_key_runs_without_tracking() -> None:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("fixed", FixedTupleSpout, kwargs={"tuples": [[7]], "fields": ["n"]})
    b.set_bolt("sink", capture).shuffle_grouping("fixed")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: capture.values == [[7]], 10, "the tuple captured")
        cluster.wait_until_quiet("t")
        assert cluster.get_stats("t")["fixed"]["acked"] == 1


def test_capture_without_ack_leaves_the_tuples_to_time_out() -> None:
    capture, tracker = _run_fixed({"tuples": [[1], [2]], "fields": ["n"]}, capture=Capture(ack=False))
    assert capture.values == [[1], [2]]
    assert (tracker.acked, sorted(tracker.failed)) == ([], [0, 1])


def test_capture_records_each_receiving_task_in_order() -> None:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("fixed", FixedTupleSpout, kwargs={"tuples": [[1], [2], [3], [4]], "fields": ["n"]})
    b.set_bolt("sink", capture, 2).fields_grouping("fixed", ["n"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: len(capture.values) == 4, 10, "every tuple captured")
    by_task = capture.by_task
    assert 1 <= len(by_task) <= 2
    assert sorted(v for vs in by_task.values() for v in vs) == [[1], [2], [3], [4]]
    for task, values in by_task.items():
        assert values == [t.values for t, k in zip(capture.tuples, capture._tasks) if k == task]
    tuples = capture.tuples
    tuples.clear()
    assert len(capture.tuples) == 4  # a copy


def test_feeder_feeds_streams_many_rows_and_tells_every_delegate() -> None:
    feeder = FeederSpout(["v"], streams={"other": ["a", "b"]})
    delegate = AckFailMapTracker()
    feeder.set_ack_fail_delegate(delegate)
    assert feeder.feed_many([["x"], ["y"]]) == [0, 1]
    random_ids = feeder.feed_many([["z"]], with_ids=False)
    assert len(random_ids) == 1 and isinstance(random_ids[0], str) and len(random_ids[0]) == 32
    assert feeder.feed([1, 2], msg_id="o", stream="other") == "o"
    assert feeder.pending_feed == 4
    main, other = Capture(), Capture(ack=False)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("main", main).shuffle_grouping("feeder")
    b.set_bolt("other", other).shuffle_grouping("feeder", "other")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {"topology.message.timeout.secs": 2}, b.create_topology())
        cluster.wait_for(lambda: len(feeder.acked) == 3, 10, "the default stream's acks")
        cluster.advance_time(4)
        cluster.wait_for(lambda: feeder.failed == ["o"], 10, "the other stream's tuple to fail")
    assert feeder.pending_feed == 0
    assert main.values == [["x"], ["y"], ["z"]] and other.values == [[1, 2]]
    assert sorted(feeder.acked, key=str) == sorted([0, 1, random_ids[0]], key=str)
    assert (delegate.acked, delegate.failed) == (feeder.acked, ["o"])
    feeder.assert_acked(0, 1)
    feeder.assert_failed("o")
    with pytest.raises(AssertionError, match=r"expected \['o'\] to be acked"):
        feeder.assert_acked("o")
    with pytest.raises(AssertionError, match=r"expected \[0\] to be failed"):
        feeder.assert_failed(0)
    assert feeder.tracker.failed == ["o"]


# -- the registry the kit's handles share with their components; finding ZooKeeper -----------

def test_the_registry_hands_back_what_was_registered_until_it_is_unregistered() -> None:
    first, second = object(), object()
    key, other = registry.register(first), registry.register(second)
    try:
        assert len(key) == 32 and int(key, 16) >= 0 and key != other
        assert registry.lookup(key) is first and registry.lookup(other) is second
        registry.unregister(key)
        with pytest.raises(KeyError) as caught:
            registry.lookup(key)
        assert caught.value.args[0] == (
            f"no registered test object {key!r}: testing handles (FeederSpout, Capture) only work "
            "in local mode, in the process that created them")
        assert caught.value.__suppress_context__ and caught.value.__cause__ is None
        registry.unregister(key)  # a second time: nothing to do
        assert registry.lookup(other) is second
    finally:
        registry.unregister(other)


def test_zookeeper_counts_as_available_only_with_both_its_classpath_and_java(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.testing import _zookeeper

    def missing() -> None:
        raise _zookeeper.ZooKeeperNotFound("not here")
    found: list[str] = []
    monkeypatch.setattr(_zookeeper, "find_zookeeper_classpath", lambda: found.append("classpath"))
    monkeypatch.setattr(_zookeeper, "require_java", lambda: found.append("java"))
    assert _zookeeper.zookeeper_available() is True and found == ["classpath", "java"]
    monkeypatch.setattr(_zookeeper, "require_java", missing)
    assert _zookeeper.zookeeper_available() is False
    monkeypatch.setattr(_zookeeper, "require_java", lambda: None)
    monkeypatch.setattr(_zookeeper, "find_zookeeper_classpath", missing)
    assert _zookeeper.zookeeper_available() is False


# -- the StateStore conformance check: a store that keeps the contract passes, each breach is caught

class _FlawedStore:
    """A memory store with one ``flaw`` (none: the memory store as it is), for check_state_store."""

    #: flaws that leave a value readable (a stale read cache) that is no longer listed
    READ_CACHED = {"values read after delete", "shallow delete", "keeps a refused unserialisable value",
                   "keeps a refused big value"}

    def __init__(self, flaw: str = "", timeout_secs: float = 5.0) -> None:
        from stormpy.state import MemoryBackend
        from stormpy.topology._state import CHECKPOINTS

        self.inner = MemoryBackend(timeout_secs).store(CHECKPOINTS, "t-1")
        self.flaw = flaw
        self.location = self.inner.location
        self.timeout_secs = 0.0 if flaw == "no timeout" else self.inner.timeout_secs
        self.kept: dict[str, Any] = {}
        self.gone: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        from stormpy.topology._state import StateKeyError

        flaw = self.flaw
        if flaw == "ignores the default":
            default = None
        if flaw == "no copy" and key in self.kept:
            return self.kept[key]
        if flaw == "a parent reads as a value" and key == "spout" and self.inner.get(key) is None:
            return {}
        if flaw == "the root has a value" and key == "":
            return "root"
        if flaw in self.READ_CACHED and key in self.kept:  # a stale read cache: not listed
            return self.kept[key]
        try:
            return self.inner.get(key, default)
        except StateKeyError:
            if flaw == "anonymous key errors on get":
                raise StateKeyError("?", "bad key") from None
            raise

    def put(self, key: str, value: Any) -> None:
        from stormpy.topology._state import StateKeyError, StateValueError

        flaw = self.flaw
        if flaw == "accepts bad keys" and key.startswith("/"):
            return
        if (flaw, key) in {("accepts unserialisable values", "bad/value"), ("accepts big values", "big")}:
            return
        try:
            self.inner.put(key, value)
        except StateKeyError:
            if flaw == "anonymous key errors on put":
                raise StateKeyError("?", "bad key") from None
            raise
        except StateValueError:
            if (flaw, key) in {("keeps a refused unserialisable value", "bad/value"),
                               ("keeps a refused big value", "big")}:
                self.kept[key] = "partial"
            if (flaw, key) in {("anonymous value errors", "bad/value"),
                               ("anonymous big value errors", "big")}:
                raise StateValueError("?", "bad value") from None
            raise
        if flaw == "no copy":
            self.kept[key] = self.inner.get(key)

    def delete(self, key: str) -> bool:
        flaw = self.flaw
        if flaw == "shallow delete" and key == "spout/shard 2" and key not in self.gone:
            self.gone.add(key)
            self.kept["spout/shard 2/x"] = self.inner.get("spout/shard 2/x")
        if flaw == "deleting again reports True" and key in self.gone:
            return True
        if flaw == "deleting again reports True":
            self.gone.add(key)
        if flaw == "values read after delete" and key == "spout":
            self.kept["spout/shard-0001"] = self.inner.get("spout/shard-0001")
        if flaw == "a deleted top node stays listed" and key == "spout":
            self.gone.add(key)
        return self.inner.delete(key)

    def children(self, key: str = "") -> list[str]:
        if self.flaw == "not empty" and key == "":
            return ["leftover", *self.inner.children(key)]
        if self.flaw == "a deleted top node stays listed" and key == "" and "spout" in self.gone:
            return ["spout"]
        return self.inner.children(key)


def test_the_conformance_check_passes_a_store_that_keeps_the_contract() -> None:
    from stormpy.state import MemoryBackend
    from stormpy.testing._state import check_state_store
    from stormpy.topology._state import CHECKPOINTS, TRANSACTIONAL

    check_state_store(MemoryBackend().store(CHECKPOINTS, "t-1"))
    check_state_store(MemoryBackend().store(TRANSACTIONAL, "t-2"))
    check_state_store(_FlawedStore(timeout_secs=0.5))  # any positive timeout, under a second too


@pytest.mark.parametrize(("flaw", "message"), [
    ("not empty", "the store must start empty"),
    ("ignores the default", ""),
    ("no copy", "get must return a copy"),
    ("a parent reads as a value", "a parent without a value of its own reads as missing"),
    ("shallow delete", ""),
    ("deleting again reports True", ""),
    ("the root has a value", "the store's own node starts without a value"),
    ("keeps a refused unserialisable value", ""),
    ("keeps a refused big value", ""),
    ("a deleted top node stays listed", ""),
    ("values read after delete", ""),
    ("no timeout", ""),
])
def test_the_conformance_check_catches_each_breach_of_the_contract(flaw: str, message: str) -> None:
    from stormpy.testing._state import check_state_store

    with pytest.raises(AssertionError) as caught:
        check_state_store(_FlawedStore(flaw))
    assert str(caught.value) == message


@pytest.mark.parametrize(("flaw", "end"), [
    ("accepts bad keys", "('/a', 1) did not raise StateKeyError"),
    ("accepts unserialisable values", "did not raise StateValueError"),
    ("accepts big values", "did not raise StateValueError"),
    ("anonymous key errors on put", "bad key does not name 'memory:checkpoints/t-1'"),
    ("anonymous key errors on get", "bad key does not name 'memory:checkpoints/t-1'"),
    ("anonymous value errors", "does not name 'bad/value'"),
    ("anonymous big value errors", "does not name 'big'"),
])
def test_the_conformance_check_names_the_refusal_a_store_got_wrong(flaw: str, end: str) -> None:
    from stormpy.testing._state import check_state_store

    with pytest.raises(AssertionError) as caught:
        check_state_store(_FlawedStore(flaw))
    assert str(caught.value).endswith(end), str(caught.value)
