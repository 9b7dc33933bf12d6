"""The test kit's tracking tools (issue 15, items 8-11): feeds without message ids are tracked,
tracked topologies and tracked waits, ack trackers, mocked sources on any stream."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import (
    AckFailMapTracker,
    AckTracker,
    Capture,
    FeederSpout,
    LocalCluster,
    MockedSources,
    TrackedTopology,
    WaitTimeout,
    complete_topology,
    tracked_wait,
)
from stormpy.topology._errors import InvalidTopologyError

TIMEOUT = {"topology.message.timeout.secs": 10}


class Identity(Bolt):
    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


class NeverAcks(Bolt):
    def execute(self, tup: Tuple) -> None:
        pass


class FailOdd(Bolt):
    """Fails the tuples whose value is odd, acks the others."""

    def execute(self, tup: Tuple) -> None:
        (self.fail if tup.values[0] % 2 else self.ack)(tup)


class Counting(Spout):
    """Emits 0..n-1, each with its value as message id."""

    outputs = ["v"]

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.emit([self.i], msg_id=self.i)
            self.i += 1


class Untracked(Spout):
    """Emits 0..n-1 without message ids."""

    outputs = ["v"]

    def __init__(self, n: int) -> None:
        self.n = n
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.emit([self.i])
            self.i += 1


class TwoStreams(Spout):
    outputs = {"default": ["word"], "errors": ["code", "text"]}


class Uppercase(Bolt):
    outputs = ["text"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup["text"].upper()], anchors=tup)
        self.ack(tup)


# -- item 8: FeederSpout.feed without a message id is tracked --------------------------------

def test_feed_without_message_id_gets_a_random_one_and_is_acked_or_failed() -> None:
    feeder, blackhole = FeederSpout(["v"]), FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_spout("blackhole", blackhole)
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    b.set_bolt("never", NeverAcks).shuffle_grouping("blackhole")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        first, second = feeder.feed(["a"]), feeder.feed(["b"])
        assert isinstance(first, str) and first != second
        cluster.wait_for(lambda: sorted(feeder.acked) == sorted([first, second]), 10, "acks")
        lost = blackhole.feed(["x"])
        cluster.advance_time(30)
        assert blackhole.failed == [lost]


# -- item 9: tracked topologies --------------------------------------------------------------

def test_tracked_wait_returns_once_the_fed_tuples_are_fully_processed() -> None:
    feeder, capture = FeederSpout(["v"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("identity", Identity, 2).shuffle_grouping("feeder")
    b.set_bolt("sink", capture).shuffle_grouping("identity")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", TIMEOUT, tracked.topology)
        feeder.feed([1])
        feeder.feed([2])
        tracked_wait(tracked, 2, timeout=20)
        assert sorted(capture.values) == [[1], [2]]  # no polling: the wait covered it all
        assert len(feeder.acked) == 2
        feeder.feed([3])
        tracked.wait(1, timeout=20)
        assert sorted(capture.values) == [[1], [2], [3]]


def test_tracked_wait_advances_simulated_time_until_unacked_tuples_time_out() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("never", NeverAcks).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", TIMEOUT, tracked.topology)
        msg_id = feeder.feed([1])
        tracked_wait(tracked, 1, timeout=20)
        assert feeder.failed == [msg_id]


def test_tracked_wait_counts_untracked_spout_emits() -> None:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("src", Untracked, kwargs={"n": 3})
    b.set_bolt("sink", capture).shuffle_grouping("src")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", TIMEOUT, tracked.topology)
        tracked_wait(tracked, 3, timeout=20)
        assert len(capture.values) == 3


def test_tracked_wait_times_out_with_a_clear_error() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        tracked = TrackedTopology(b.create_topology(), cluster)
        cluster.submit_topology("t", TIMEOUT, tracked.topology)
        with pytest.raises(WaitTimeout, match=r"1 more spout tuples.*0 of 1 done"):
            tracked_wait(tracked, 1, timeout=0.5)


# -- item 10: ack tracking -------------------------------------------------------------------

def test_ack_tracker_wraps_any_spout_and_asserts_acks_and_fails() -> None:
    tracker = AckTracker(Counting, kwargs={"n": 4})
    b = TopologyBuilder()
    b.set_spout("numbers", tracker)
    b.set_bolt("judge", FailOdd).shuffle_grouping("numbers")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        cluster.wait_for(lambda: len(tracker.acked) + len(tracker.failed) == 4, 10, "4 outcomes")
    tracker.assert_acked(0, 2)
    tracker.assert_failed(1, 3)
    assert tracker.is_acked(0) and not tracker.is_acked(1) and tracker.is_failed(3)
    tracker.check_acks(2)
    tracker.check_acks(0)
    with pytest.raises(AssertionError, match=r"expected \[1\] to be acked"):
        tracker.assert_acked(0, 1)
    with pytest.raises(AssertionError, match="expected 5 acks since the last check, got 0"):
        tracker.check_acks(5)


def test_feeder_tells_its_ack_fail_delegate() -> None:
    feeder, delegate = FeederSpout(["v"]), AckFailMapTracker()
    feeder.set_ack_fail_delegate(delegate)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("judge", FailOdd).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed([2], msg_id="even")
        feeder.feed([3], msg_id="odd")
        cluster.wait_for(lambda: delegate.num_acks == 1 and delegate.failed == ["odd"], 10,
                         "delegate told")
    delegate.assert_acked("even")
    feeder.assert_acked("even")
    feeder.assert_failed("odd")
    with pytest.raises(AssertionError, match="'even'.* to be failed"):
        feeder.assert_failed("even")


# -- item 11: mocked sources on any stream ---------------------------------------------------

def two_stream_topology() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("src", TwoStreams)
    b.set_bolt("words", Identity).shuffle_grouping("src")
    b.set_bolt("upper", Uppercase).shuffle_grouping("src", "errors")
    return b


def test_complete_topology_mocks_every_stream_of_a_spout() -> None:
    spec = two_stream_topology().create_topology()
    sources = MockedSources().add_mock_data("src", ["a"], ["b"]) \
        .add_mock_data("src", [404, "not found"], [500, "boom"], stream="errors")
    result = complete_topology(spec, sources)
    assert sorted(result.tuples("src", "errors")) == [[404, "not found"], [500, "boom"]]
    assert sorted(result.tuples("upper")) == [["BOOM"], ["NOT FOUND"]]
    assert sorted(result.tuples("words")) == [["a"], ["b"]]
    assert result.acked("src") == [0, 1]
    assert result.acked("src", "errors") == [0, 1]
    mapping = complete_topology(spec, {"src": {"errors": [[1, "x"]]}})
    assert mapping.tuples("upper") == [["X"]]
    assert mapping.tuples("words") == []


def test_mock_data_on_an_undeclared_stream_or_with_wrong_arity_is_refused() -> None:
    spec = two_stream_topology().create_topology()
    with pytest.raises(InvalidTopologyError, match=r"stream 'warnings'.*declared: \['default', "
                                                   r"'errors'\]"):
        complete_topology(spec, {"src": {"warnings": [["w"]]}})
    with pytest.raises(InvalidTopologyError, match="1 values for fields"):
        complete_topology(spec, MockedSources().add_mock_data("src", [1], stream="errors"))

