"""InflightRecordTracker: one test per cell of the prev/next ack table, out-of-order acks,
integer ordering of sequence numbers, retries and count-out, and a property test against a model."""

from __future__ import annotations

import logging

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from stormpy.connectors.kinesis import InflightRecordTracker, KinesisRecord

SHARD = "shardId-000000000001"


def rec(seq: int | str) -> KinesisRecord:
    return KinesisRecord(SHARD, str(seq), "pk", b"x")


def tracker_with(*seqs: int, max_retries: int = 3) -> InflightRecordTracker:
    t = InflightRecordTracker(SHARD, max_retries)
    for s in seqs:
        t.on_emit(rec(s), False)
    return t


def held(t: InflightRecordTracker) -> list[tuple[int, bool]]:
    return [(int(s), a) for s, a in t.held()]


# --- the table: prev (acked / pending / absent) x next (acked / pending / absent) --------------
def test_prev_acked_next_acked_drops_the_node_and_prev() -> None:
    t = tracker_with(1, 2, 3, 4, 5)
    t.on_ack(2)
    t.on_ack(4)
    assert held(t) == [(1, False), (2, True), (3, False), (4, True), (5, False)]
    assert t.on_ack(3)
    assert held(t) == [(1, False), (4, True), (5, False)]
    assert t.checkpoint is None
    t.on_ack(1)
    assert t.checkpoint == "4"


def test_prev_acked_next_pending_drops_prev_keeps_the_node() -> None:
    t = tracker_with(1, 2, 3, 4)
    t.on_ack(2)
    t.on_ack(3)
    assert held(t) == [(1, False), (3, True), (4, False)]
    assert t.checkpoint is None


def test_prev_acked_next_absent_drops_prev_keeps_the_node() -> None:
    t = tracker_with(1, 2, 3)
    t.on_ack(2)
    t.on_ack(3)
    assert held(t) == [(1, False), (3, True)]
    assert t.checkpoint is None


def test_prev_pending_next_acked_drops_the_node() -> None:
    t = tracker_with(1, 2, 3, 4)
    t.on_ack(3)
    t.on_ack(2)
    assert held(t) == [(1, False), (3, True), (4, False)]
    assert t.checkpoint is None


def test_prev_pending_next_pending_keeps_the_node() -> None:
    t = tracker_with(1, 2, 3)
    t.on_ack(2)
    assert held(t) == [(1, False), (2, True), (3, False)]
    assert t.checkpoint is None


def test_prev_pending_next_absent_keeps_the_node() -> None:
    t = tracker_with(1, 2)
    t.on_ack(2)
    assert held(t) == [(1, False), (2, True)]
    assert t.checkpoint is None


def test_prev_absent_next_acked_drops_both_and_checkpoints_next() -> None:
    t = tracker_with(1, 2, 3)
    t.on_ack(2)
    t.on_ack(1)
    assert held(t) == [(3, False)]
    assert t.checkpoint == "2"


def test_prev_absent_next_pending_drops_the_node_and_checkpoints_it() -> None:
    t = tracker_with(1, 2)
    t.on_ack(1)
    assert held(t) == [(2, False)]
    assert t.checkpoint == "1"


def test_prev_absent_next_absent_drops_the_node_and_checkpoints_it() -> None:
    t = tracker_with(1)
    t.on_ack(1)
    assert held(t) == []
    assert t.checkpoint == "1"
    assert t.in_flight == 0


# --- beyond the table --------------------------------------------------------------------------
def test_out_of_order_acks_move_the_checkpoint_only_over_the_acked_prefix() -> None:
    t = tracker_with(10, 20, 30, 40, 50, 60)
    for seq, expected in [(50, None), (30, None), (20, None), (10, "30"), (60, "30"), (40, "60")]:
        assert t.on_ack(seq)
        assert t.checkpoint == expected, seq
    assert t.in_flight == 0 and len(t) == 0


def test_sequence_numbers_compare_as_integers() -> None:
    big = 49590338271490256608559692538361571095921575989136588898
    t = tracker_with(9, 10, big, big + 1)
    assert t.latest_emitted == str(big + 1)
    t.on_ack(10)
    t.on_ack(9)
    assert t.checkpoint == "10"
    with pytest.raises(ValueError, match="out of order"):
        t.on_emit(rec(100), False)  # "100" > "10..." as strings, but smaller as an integer
    t.on_ack(str(big))
    t.on_ack(big + 1)
    assert t.checkpoint == str(big + 1)


def test_unknown_and_repeated_acks_change_nothing() -> None:
    t = tracker_with(1, 2)
    assert not t.on_ack(7)
    assert t.on_ack(2)
    assert not t.on_ack(2)
    assert not t.on_fail(2)
    assert held(t) == [(1, False), (2, True)] and t.in_flight == 1


def test_resume_from_a_checkpoint_refuses_records_at_or_before_it() -> None:
    t = InflightRecordTracker(SHARD, 0, checkpoint="100")
    assert t.checkpoint == "100"
    with pytest.raises(ValueError, match="shardId-000000000001"):
        t.on_emit(rec(100), False)
    t.on_emit(rec(101), False)
    t.on_ack(101)
    assert t.checkpoint == "101"


def test_bad_sequence_number_and_bad_max_retries_are_named() -> None:
    with pytest.raises(ValueError, match="'abc'"):
        tracker_with(1).on_ack("abc")
    with pytest.raises(ValueError, match="max_retries"):
        InflightRecordTracker(SHARD, -1)


def test_a_failed_record_is_retried_up_to_max_retries_then_counted_out(
        caplog: pytest.LogCaptureFixture) -> None:
    t = tracker_with(1, 2, max_retries=2)
    for attempt in range(2):
        assert t.on_fail(1)
        assert t.should_retry()
        retry = t.record_to_retry()
        assert retry is not None and retry.sequence_number == "1"
        t.on_emit(retry, True)
        assert not t.should_retry() and t.retries == attempt + 1
    with caplog.at_level(logging.WARNING):
        assert not t.on_fail(1)
    assert t.counted_out == 1 and t.checkpoint == "1" and t.in_flight == 1
    assert SHARD in caplog.text and " 1 failed 3 time(s)" in caplog.text


def test_max_retries_zero_disables_replay() -> None:
    t = tracker_with(1, 2, max_retries=0)
    assert not t.on_fail(2)
    assert not t.should_retry() and t.record_to_retry() is None
    assert t.counted_out == 1
    t.on_ack(1)
    assert t.checkpoint == "2"


def test_retries_come_out_in_failure_order_and_an_ack_unqueues() -> None:
    t = tracker_with(1, 2, 3)
    t.on_fail(3)
    t.on_fail(1)
    t.on_fail(2)
    assert t.record_to_retry() == rec(3)
    t.on_ack(3)
    assert t.record_to_retry() == rec(1)
    t.on_emit(rec(1), True)
    assert t.record_to_retry() == rec(2)


# --- property test against a trivial model ----------------------------------------------------
class TrackerModel(RuleBasedStateMachine):
    """Model: emit order, the set of done (acked or counted-out) records, the retry queue;
    checkpoint = the latest record whose predecessors in emit order are all done."""

    def __init__(self) -> None:
        super().__init__()
        self.max_retries = 2
        self.t = InflightRecordTracker(SHARD, self.max_retries)
        self.emitted: list[int] = []
        self.done: set[int] = set()
        self.queue: list[int] = []
        self.retries: dict[int, int] = {}
        self.counted_out = 0

    @rule(gap=st.integers(1, 10**30))
    def emit(self, gap: int) -> None:
        seq = (self.emitted[-1] if self.emitted else 0) + gap
        self.t.on_emit(rec(seq), False)
        self.emitted.append(seq)
        self.retries[seq] = 0

    @precondition(lambda self: self.emitted)
    @rule(i=st.integers(0, 10**6))
    def ack(self, i: int) -> None:
        seq = self.emitted[i % len(self.emitted)]
        assert self.t.on_ack(seq) == (seq not in self.done)
        self.done.add(seq)
        if seq in self.queue:
            self.queue.remove(seq)

    @precondition(lambda self: self.emitted)
    @rule(i=st.integers(0, 10**6))
    def fail(self, i: int) -> None:
        seq = self.emitted[i % len(self.emitted)]
        queued = self.t.on_fail(seq)
        if seq in self.done:
            assert not queued
        elif self.retries[seq] < self.max_retries:
            assert queued
            if seq not in self.queue:
                self.queue.append(seq)
        else:
            assert not queued
            self.counted_out += 1
            self.done.add(seq)
            if seq in self.queue:
                self.queue.remove(seq)

    @precondition(lambda self: self.queue)
    @rule()
    def retry(self) -> None:
        record = self.t.record_to_retry()
        assert record is not None and int(record.sequence_number) == self.queue[0]
        self.t.on_emit(record, True)
        self.retries[self.queue.pop(0)] += 1

    @invariant()
    def agrees_with_the_model(self) -> None:
        expected = None
        for seq in self.emitted:
            if seq not in self.done:
                break
            expected = str(seq)
        assert self.t.checkpoint == expected
        assert self.t.in_flight == len(self.emitted) - len(self.done)
        assert self.t.should_retry() == bool(self.queue)
        assert self.t.counted_out == self.counted_out
        nodes = self.t.held()
        assert not nodes or not nodes[0][1], "the earliest node held is never an acked one"
        assert all(not (a and b) for (_, a), (_, b) in zip(nodes, nodes[1:])), "acked neighbours"


TrackerModel.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
test_tracker_matches_the_model = TrackerModel.TestCase
