"""Tracked topologies and AckTracker as a user's test relies on them: spouts that emit batches
(``emit_batch``: the wrapped spout emits them, its ``ack_many``/``fail_many`` get the batch's ids,
tracked waits count every record), direct emits, the spout's config, streams and lifecycle passed
through, clear errors for what is no spout, and tracked waits' counts, targets and timeouts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import (
    AckTracker,
    Capture,
    FeederSpout,
    LocalCluster,
    TrackedTopology,
    WaitTimeout,
    tracked_wait,
)
from stormpy.topology import Stream
from stormpy.topology._errors import InvalidTopologyError

SETTLED: dict[str, list[Any]] = {"ack_many": [], "fail_many": []}


class _Batches(Spout):
    """Emits one tracked batch of three and one untracked batch of two."""

    outputs = ["n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit_batch([[1], [2], [3]], msg_ids=["a", "b", "c"])
            self.emit_batch([[4], [5]])

    def ack_many(self, msg_ids: Any) -> None:
        SETTLED["ack_many"].append(list(msg_ids))

    def fail_many(self, msg_ids: Any) -> None:
        SETTLED["fail_many"].append(list(msg_ids))


class _FailTwo(Bolt):
    def execute(self, tup: Tuple) -> None:
        (self.fail if tup["n"] == 2 else self.ack)(tup)


def test_an_ack_tracker_spout_emits_batches_and_its_batch_callbacks_get_the_ids() -> None:
    SETTLED["ack_many"].clear()
    SETTLED["fail_many"].clear()
    tracker, capture = AckTracker(_Batches), Capture()
    b = TopologyBuilder()
    b.set_spout("batches", tracker)
    b.set_bolt("sink", capture).shuffle_grouping("batches")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: len(tracker.acked) == 3, 10, "the batch's acks")
    assert sorted(capture.values) == [[1], [2], [3], [4], [5]]
    assert tracker.acked == ["a", "b", "c"] and tracker.failed == []
    assert SETTLED == {"ack_many": [["a", "b", "c"]], "fail_many": []}


def test_a_failed_record_fails_the_whole_batch_through_the_tracker() -> None:
    SETTLED["ack_many"].clear()
    SETTLED["fail_many"].clear()
    tracker = AckTracker(_Batches)
    b = TopologyBuilder()
    b.set_spout("batches", tracker)
    b.set_bolt("fail2", _FailTwo).shuffle_grouping("batches")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: len(tracker.failed) == 3, 10, "the batch's fails")
    assert tracker.failed == ["a", "b", "c"] and tracker.acked == []
    assert SETTLED == {"ack_many": [], "fail_many": [["a", "b", "c"]]}


def test_a_tracked_wait_counts_every_record_of_tracked_and_untracked_batches() -> None:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("batches", _Batches)
    b.set_bolt("sink", capture).shuffle_grouping("batches")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", {}, tracked.topology)
        tracked_wait(tracked, 5, timeout=20)
        assert sorted(capture.values) == [[1], [2], [3], [4], [5]]
        assert (tracked.counts.acked, tracked.counts.failed, tracked.counts.untracked) == (3, 0, 2)


# -- AckTracker and TrackedTopology: wrapping, forwarding, waits ------------------------------

CALLS: list[str] = []


class _Lifecycle(Spout):
    """Emits one tuple directly to the sink's task (on the stream named by ``direct``) and one on
    stream "s"; records its lifecycle and acks."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        direct = kwargs["direct"]
        return {"s": Stream(["n"], name="s"), direct: Stream(["n"], name=direct, direct=True)}

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"topology.max.spout.pending": kwargs["pending"]}

    def __init__(self, pending: int, direct: str, tag: str = "") -> None:
        self.direct = direct
        self.tag = tag

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sink_tasks = context.tasks_of("sink")
        self.sent = False
        CALLS.append(f"open pending={conf['topology.max.spout.pending']}")

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit_direct(self.sink_tasks[0], [7], msg_id="direct", stream=self.direct)
            self.emit([8], stream="s")

    def ack(self, msg_id: Any) -> None:
        CALLS.append(f"ack {msg_id}")

    def activate(self) -> None:
        CALLS.append(f"activate{self.tag}")

    def deactivate(self) -> None:
        CALLS.append(f"deactivate{self.tag}")

    def close(self) -> None:
        CALLS.append(f"close{self.tag}")


class _Many(Spout):
    """Emits two tracked tuples and one untracked with emit_many, once, on stream "m"."""

    outputs = {"m": ["n"]}

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit_many(iter([[1], [2]]), msg_ids=iter(["x", "y"]), stream="m")
            self.emit_many([[3]], stream="m")


class _Endless(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        self.emit([0])


def test_an_ack_tracker_runs_the_spout_unchanged_and_forwards_its_lifecycle() -> None:
    CALLS.clear()
    tracker = AckTracker(_Lifecycle, kwargs={"pending": 3, "direct": "d", "tag": "!"})
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("src", tracker)
    b.set_bolt("sink", capture).direct_grouping("src", "d").shuffle_grouping("src", "s")
    spec = b.create_topology()
    assert spec.components["src"].config["topology.max.spout.pending"] == 3
    assert sorted(spec.components["src"].streams) == ["d", "s"]
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, spec)
        cluster.wait_for(lambda: tracker.acked == ["direct"], 10, "the direct tuple's ack")
        cluster.wait_for(lambda: len(capture.values) == 2, 10, "both tuples")
        assert sorted(capture.values) == [[7], [8]]
        assert sorted((t.stream, t.values[0]) for t in capture.tuples) == [("d", 7), ("s", 8)]
        cluster.deactivate("t")
        cluster.wait_for(lambda: CALLS[-1] == "deactivate!", 10, "the spout deactivated")
        cluster.activate("t")
        cluster.wait_for(lambda: CALLS[-1] == "activate!", 10, "the spout activated again")
        cluster.kill_topology("t")
    assert CALLS == ["open pending=3", "activate!", "ack direct", "deactivate!", "activate!",
                     "close!"]


def test_a_tracked_topology_counts_a_direct_emit_by_its_message_id() -> None:
    CALLS.clear()
    b = TopologyBuilder()
    b.set_spout("src", _Lifecycle, kwargs={"pending": 2, "direct": "d"})
    b.set_bolt("sink", Capture()).direct_grouping("src", "d").shuffle_grouping("src", "s")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", {}, tracked.topology)
        tracked_wait(tracked, 2, timeout=20)
        assert (tracked.counts.acked, tracked.counts.failed, tracked.counts.untracked) == (1, 0, 1)


def test_an_ack_tracker_takes_a_handle_and_merges_kwargs_and_refuses_what_is_no_spout() -> None:
    feeder = FeederSpout(["v"])
    tracker = AckTracker(feeder, kwargs={"fields": ["w"]})
    assert tracker.component_kwargs["inner_kwargs"] == {**feeder.component_kwargs, "fields": ["w"]}
    assert AckTracker(feeder).component_kwargs["inner_kwargs"] == feeder.component_kwargs
    with pytest.raises(InvalidTopologyError) as err:
        AckTracker(42)
    assert str(err.value) == "AckTracker wraps a Spout class or handle, not 42"
    with pytest.raises(InvalidTopologyError) as err:
        AckTracker(Capture())
    assert str(err.value) == ("AckTracker wraps spouts; <class 'stormpy.testing._components.CaptureBolt'> "
                              "is not a Spout subclass")
    with pytest.raises(InvalidTopologyError) as err:
        AckTracker(_FailTwo)
    assert "is not a Spout subclass" in str(err.value)


def test_a_tracked_wait_refuses_a_negative_count_and_says_how_far_it_got() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", _FailTwo).shuffle_grouping("feeder")
    spec = b.create_topology()
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(spec, cluster)
        assert spec.components["feeder"].class_path.endswith("FeederSpoutComponent")  # a copy
        cluster.submit_topology("t", {"topology.message.timeout.secs": 30}, tracked.topology)
        with pytest.raises(ValueError) as err:
            tracked.wait(-1)
        assert str(err.value) == "tracked wait for a negative number of tuples (-1)"
        feeder.feed([1])
        feeder.feed([2])
        feeder.feed([2])
        tracked_wait(tracked, 3, timeout=20)
        assert (tracked.completed, tracked.counts.acked, tracked.counts.failed) == (3, 1, 2)
        with pytest.raises(WaitTimeout) as timeout:
            tracked_wait(tracked, 1, timeout=0.3)
        assert str(timeout.value) == (
            "tracked topology: timed out after 0.3s waiting for 1 more spout tuples to be fully "
            "processed and the cluster to be idle: 3 of 4 done (acked 1, failed 2, untracked 0)")
        feeder.feed([3])
        tracked_wait(tracked, 1, timeout=20)  # the timed-out wait did not move the target
        assert tracked.completed == 4


def test_a_tracked_wait_in_real_time_waits_for_the_tuples() -> None:

    feeder, capture = FeederSpout(["v"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", capture).shuffle_grouping("feeder")
    with LocalCluster() as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", {}, tracked.topology)
        feeder.feed([1])
        tracked_wait(tracked, 1, timeout=20)
        assert capture.values == [[1]] and len(feeder.acked) == 1


def test_a_tracked_wait_counts_emit_many_records_and_waits_for_one_by_default() -> None:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("many", _Many)
    b.set_bolt("sink", capture).shuffle_grouping("many", "m")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", {}, tracked.topology)
        tracked.wait(0, timeout=20)  # nothing more to wait for: returns once idle
        tracked_wait(tracked, 2, timeout=20)
        tracked.wait(timeout=20)  # one more by default
        assert sorted(capture.values) == [[1], [2], [3]]
        assert (tracked.counts.acked, tracked.counts.untracked) == (2, 1)
        assert {t.stream for t in capture.tuples} == {"m"}


def test_a_tracked_wait_on_a_topology_that_never_goes_idle_times_out() -> None:
    b = TopologyBuilder()
    b.set_spout("endless", _Endless)
    b.set_bolt("sink", _FailTwo).shuffle_grouping("endless")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", {}, tracked.topology)
        with pytest.raises(WaitTimeout, match=r"^tracked topology: timed out after 0.5s waiting "
                                              r"for 1 more spout tuples"):
            tracked.wait(1, timeout=0.5)


# -- a tracked spout's named-stream batches and its off-loop seam ------------------------------

class _SideBatches(Spout):
    """Emits one batch on stream "side", its message ids given as an iterator."""

    outputs = {"side": ["n"]}

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit_batch([[1], [2]], msg_ids=iter(["a", "b"]), stream="side")


def test_a_tracked_batch_on_a_named_stream_keeps_its_stream_and_its_iterated_ids() -> None:
    tracker, capture = AckTracker(_SideBatches), Capture()
    b = TopologyBuilder()
    b.set_spout("batches", tracker)
    b.set_bolt("sink", capture).shuffle_grouping("batches", "side")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: len(tracker.acked) == 2, 10, "the batch's acks")
    assert sorted((t.stream, t.values[0]) for t in capture.tuples) == [("side", 1), ("side", 2)]
    assert sorted(tracker.acked) == ["a", "b"]


class _OffLoop(Spout):
    """Reports an error when opened, computes a value off the loop and emits it, and emits a
    second tuple from a callback it schedules on the loop from the background thread."""

    outputs = ["n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.report_error(RuntimeError("reported when opened"))
        self.run_in_background(self._compute, self._computed)

    def _compute(self) -> int:
        self.call_soon_threadsafe(lambda: self.emit([1], msg_id="soon"))
        return 6 * 7

    def _computed(self, result: Any, error: BaseException | None) -> None:
        self.emit([result], msg_id="computed")

    def next_tuple(self) -> None:
        pass


def test_a_tracked_spout_reports_errors_and_works_off_the_loop_as_unwrapped() -> None:
    tracker, capture = AckTracker(_OffLoop), Capture()
    b = TopologyBuilder()
    b.set_spout("offloop", tracker)
    b.set_bolt("sink", capture).shuffle_grouping("offloop")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: len(tracker.acked) == 2, 10, "both tuples acked")
        (error,) = cluster.errors("t", "offloop")
    assert sorted(tracker.acked) == ["computed", "soon"]
    assert sorted(capture.values) == [[1], [42]]
    assert "RuntimeError: reported when opened" in error["error"]


# -- TrackedTopology.wait's bounds, judged on a stand-in cluster and a driven clock -----------

class _DrivenTime:
    """``time`` for ``_tracking``: ``monotonic`` reads ``now``, moved by the stand-in's waits."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class _StandIn:
    """The cluster calls a tracked wait makes, with LocalCluster's defaults. Every wait is recorded
    with the time it was given; ``progress`` runs at each wait (tuples completing meanwhile); a
    wait whose condition does not hold then takes all its time and raises TimeoutError, as
    LocalCluster's do."""

    def __init__(self, time_: _DrivenTime, clock: Any, progress: Any = None, quiet: bool = True) -> None:
        self.time = time_
        self.clock = clock
        self.progress = progress or (lambda: None)
        self.quiet = quiet
        self.waits: list[tuple[str, float]] = []

    def _waited(self, kind: str, timeout: float, met: bool) -> None:
        self.waits.append((kind, timeout))
        assert len(self.waits) < 50, f"waited again and again: {self.waits[:6]}"
        if not met:
            self.time.now += timeout
            raise TimeoutError(f"{kind} not met")

    def wait_until_quiet(self, topology: Any = None, timeout: float = 30.0) -> None:
        self.progress()
        self._waited("quiet", timeout, self.quiet)

    def wait_for(self, condition: Any, timeout: float = 30.0, what: str = "condition") -> None:
        self.progress()
        self._waited("until", timeout, bool(condition()))


def _stand_in_run(monkeypatch: pytest.MonkeyPatch, clock: Any = None, progress: Any = None,
                  quiet: bool = True) -> tuple[TrackedTopology, _StandIn]:
    from stormpy.testing import _tracking

    time_ = _DrivenTime()
    monkeypatch.setattr(_tracking, "time", time_)
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    cluster = _StandIn(time_, clock, progress, quiet)
    return TrackedTopology(b.create_topology(), cluster), cluster  # type: ignore[arg-type]


def test_a_tracked_wait_returns_once_its_tuples_completed_and_the_cluster_is_quiet(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tracked, cluster = _stand_in_run(monkeypatch)
    tracked.counts.ack("x")  # completed before: the next wait counts from its own target
    tracked.wait(1, timeout=5)
    assert cluster.waits == [("quiet", 5.0)]
    cluster.waits.clear()

    def two_more() -> None:  # completes exactly the target (3) during the first wait
        while tracked.counts.completed < 3:
            tracked.counts.ack("y")
    cluster.progress = two_more
    tracked.wait(2, timeout=5)
    assert cluster.waits == [("until", 5.0), ("quiet", 5.0)]
    assert tracked.completed == 3


def test_a_tracked_wait_gives_each_wait_only_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    tracked, cluster = _stand_in_run(monkeypatch)
    with pytest.raises(WaitTimeout) as caught:
        tracked.wait(1, timeout=0.5)
    assert cluster.waits == [("until", 0.5)]
    assert str(caught.value) == (
        "tracked topology: timed out after 0.5s waiting for 1 more spout tuples to be fully "
        "processed and the cluster to be idle: 0 of 1 done (acked 0, failed 0, untracked 0)")
    # done but never quiet: the quiet wait too gets the time left, not more
    tracked, cluster = _stand_in_run(monkeypatch, quiet=False)
    tracked.counts.emitted(None)
    with pytest.raises(WaitTimeout):
        tracked.wait(1, timeout=0.5)
    assert cluster.waits == [("quiet", 0.5)]


def test_tracked_waits_wait_30_seconds_for_one_tuple_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for wait in (lambda t: t.wait(), tracked_wait):
        tracked, cluster = _stand_in_run(monkeypatch)
        with pytest.raises(WaitTimeout) as caught:
            wait(tracked)
        assert cluster.waits == [("until", 30.0)]
        assert "timed out after 30s waiting for 1 more spout tuples" in str(caught.value)
        assert "0 of 1 done" in str(caught.value)


def test_under_simulated_time_a_tracked_wait_moves_time_one_second_per_idle_round(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.topology.clock import SimulatedClock

    clock = SimulatedClock()
    start = clock.now()

    def progress() -> None:  # the tuple times out (and fails) once 3 s passed
        if clock.now() - start >= 3.0 and tracked.counts.completed == 0:
            tracked.counts.fail("held")
    tracked, cluster = _stand_in_run(monkeypatch, clock=clock, progress=progress)
    tracked.wait(1, timeout=0.5)
    # three idle rounds moved time three seconds; the round that saw the fail moved it no more
    assert clock.now() - start == 3.0
    assert cluster.waits == [("quiet", 0.5)] * 4 + [("quiet", 0.5)]
