"""What ``ack`` and ``ack_many`` put in the round's ack buffer (root -> XOR of the acked edges),
exactly: runs of one root folded together, a root coming back after another, tuples in several
trees, untracked tuples, entries already in the buffer from earlier acks of the round; the acked
counts; and which containers ``ack_many`` searches for the tuple whose process latency is timed
(a list only: an iterator is spent by then)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.stats import GAP_TABLE

A, B, C = 1001, 2002, 3003
NOW = [0.0]


class Holds(Bolt):
    """Keeps its tuples (batch form); the test acks them."""

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.held: list[Tuple] = []

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.held.extend(tuples)


class AcksEach(Bolt):
    """Emits each tuple's value twice anchored to it (to nobody), then acks it."""

    outputs = ["n"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup.values[0]], tup)
        self.emit([tup.values[0]], tup)
        self.ack(tup)


def bolt() -> tuple[Worker, Any]:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["n"]))
    b.set_bolt("bolt", Holds).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    return worker, next(r for r in worker.tasks.values() if r.component_id == "bolt")


def tup(root: int = 0, edge: int = 0, ack_val: int = 0,
        anchors: dict[int, int] | None = None) -> Tuple:
    t = Tuple(["v"], "default", 1, "feeder", Fields(["n"]), root, edge, anchors)
    t.ack_val = ack_val
    return t


def expected(tuples: list[Tuple], start: dict[int, int]) -> dict[int, int]:
    """The buffer one ``ack`` per tuple should leave, computed from the tuples' trees."""
    buf = dict(start)
    for t in tuples:
        for root, edge in t.tree_edges().items():
            buf[root] = buf.get(root, 0) ^ edge ^ t.ack_val
    return buf


BATCH = [tup(A, 0b1, 0b110000), tup(A, 0b10, 0b1100000), tup(A, 0b100, 0),
         tup(B, 0b1000, 0b10000000), tup(A, 0b1000000000, 0b10000000000),
         tup(), tup(0, 0, 0b100000000000, {A: 0b1000000000000, C: 0b10000000000000}),
         tup(B, 0b100000000000000, 0), tup(B, 0b1000000000000000, 0b10000000000000000)]


@pytest.mark.parametrize("start", [{}, {A: 0b111 << 40, B: 0b101 << 40, C: 0b11 << 40}],
                         ids=["empty", "earlier-acks"])
def test_ack_many_leaves_the_same_xor_per_root_as_one_ack_per_tuple(start: dict[int, int]) -> None:
    worker, runner = bolt()
    buf = worker.dispatch.ack_buffer
    buf.update(start)
    runner.instance.ack_many(BATCH)
    assert buf == expected(BATCH, start)
    assert runner.stats.acked == len(BATCH)
    runner.instance.ack_many(iter(BATCH[:2]))  # any iterable; counted again
    assert buf == expected(BATCH + BATCH[:2], start)
    assert runner.stats.acked == len(BATCH) + 2


@pytest.mark.parametrize("start", [{}, {A: 0b111 << 40, C: 0b11 << 40}],
                         ids=["empty", "earlier-acks"])
def test_ack_of_a_tuple_in_one_or_several_trees(start: dict[int, int]) -> None:
    worker, runner = bolt()
    buf = worker.dispatch.ack_buffer
    buf.update(start)
    for t in BATCH:
        runner.instance.ack(t)
    worker.dispatch.fold_run()  # the last run of one root is still open
    assert buf == expected(BATCH, start)
    assert runner.stats.acked == len(BATCH)


@pytest.mark.parametrize("start", [{}, {B: 0b101 << 40, C: 0b11 << 40}],
                         ids=["empty", "earlier-acks"])
def test_single_acks_mixed_with_ack_many_leave_the_entries_in_the_order_of_one_update_each(
        start: dict[int, int]) -> None:
    worker, runner = bolt()
    dispatch = worker.dispatch
    buf = dispatch.ack_buffer
    buf.update(start)
    ack, ack_many = runner.instance.ack, runner.instance.ack_many
    ack(BATCH[0])
    ack(BATCH[1])  # a run of A, open
    assert dispatch.run_root == A and A not in buf
    ack_many([BATCH[3]])  # B: the run of A goes in first
    assert dispatch.run_root == 0
    ack(BATCH[7])
    ack(BATCH[6])  # several trees: the open run of B goes in first
    ack(BATCH[4])
    ack(BATCH[8])
    assert dispatch.pending_acks()
    dispatch.fold_run()
    assert dispatch.run_root == 0 and dispatch.run_xor == 0
    tuples = [BATCH[0], BATCH[1], BATCH[3], BATCH[7], BATCH[6], BATCH[4], BATCH[8]]
    want = expected(tuples, start)
    assert buf == want and list(buf) == list(want)


def test_the_open_run_is_sent_with_the_round_and_the_tree_completes() -> None:
    b = TopologyBuilder()
    spout = FeederSpout(["n"])
    b.set_spout("feeder", spout)
    b.set_bolt("bolt", AcksEach).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    worker.set_active(True)
    for i in range(3):
        spout.feed([i], msg_id=i)
    for _ in range(20):
        worker.run_once()
        if len(spout.acked) == 3:
            break
    assert sorted(spout.acked) == [0, 1, 2] and not spout.failed
    assert worker.dispatch.run_root == 0 and worker.dispatch.ack_buffer == {}


def test_ack_many_of_untracked_tuples_or_nothing_adds_no_entry() -> None:
    worker, runner = bolt()
    runner.instance.ack_many([tup(), tup(0, 5, 7), tup()])
    runner.instance.ack_many([])
    assert worker.dispatch.ack_buffer == {} and runner.stats.acked == 3


def test_only_a_list_is_searched_for_the_timed_tuple() -> None:
    """Every tuple is timed; the followed one is the first. ack_many over a tuple or an iterator
    acks it without its process latency; a list without it records nothing; a list with it
    records it."""
    worker, runner = bolt()
    runner.sampler.clock = lambda: NOW[0]
    runner.stats.gaps = [1] * GAP_TABLE
    runner.stats.sample_countdown = 1
    NOW[0] = 0.0
    for i in range(3):
        runner.queue.append(tup(A + i, 1 << i))
        worker.run_once()
    first, second, third = runner.instance.held
    NOW[0] = 4.0
    runner.instance.ack_many([second, third])
    assert runner.stats.process_latency_count == 0
    runner.instance.ack_many((first,))
    assert runner.stats.process_latency_count == 0
    runner.instance.ack_many(iter([first]))
    assert runner.stats.process_latency_count == 0
    runner.instance.ack_many([second, first])
    assert (runner.stats.process_latency_count, runner.stats.process_latency_sum) == (1, 4.0)
    assert runner.stats.acked == 6
