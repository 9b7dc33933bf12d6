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
