"""Tracked topologies and AckTracker around spouts that emit batches (``emit_batch``): the
wrapped spout emits them, its ``ack_many``/``fail_many`` get the batch's ids, and tracked waits
count every record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import AckTracker, Capture, LocalCluster, TrackedTopology, tracked_wait

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
