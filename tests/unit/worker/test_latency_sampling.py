"""Sampled execute and process latency (``topology.stats.sample.rate``) and capacity: the gap
maths, the timed path of one-tuple and batch bolts on a simulated clock, and what the task
documents carry."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.stats import NEVER, capacity, check_sample_rate, sample_gap
from stormpy.worker.tasks import TaskRunner

#: the simulated time the bolts below advance and the timed path reads (seconds)
NOW = [0.0]
STEP = 0.002


def clock() -> float:
    return NOW[0]


class Slow(Bolt):
    """Each execute takes STEP simulated seconds, then acks (or holds the tuple with ``hold``:
    acked one execute later, so its process latency spans two executes)."""

    outputs = ["n"]

    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        NOW[0] += STEP
        if self.hold:
            for t in self.held:
                self.ack(t)
            self.held = [tup]
        else:
            self.ack(tup)


class SlowBatch(Bolt):
    """``execute_batch``: STEP simulated seconds per tuple of the batch, then ``ack_many``."""

    outputs = ["n"]

    def execute(self, tup: Tuple) -> None:
        raise AssertionError("the batch form is used")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        NOW[0] += STEP * len(tuples)
        self.ack_many(tuples)


def worker_with(bolt: Any, conf: Mapping[str, Any], n: int) -> tuple[Worker, TaskRunner]:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    if isinstance(bolt, tuple):
        b.set_bolt("bolt", bolt[0], kwargs=bolt[1]).shuffle_grouping("feeder")
    else:
        b.set_bolt("bolt", bolt).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.acker.executors": 1, **conf}), clock=SimulatedClock())
    worker.open()
    runner = next(r for r in worker.tasks.values() if r.component_id == "bolt")
    runner.sampler.clock = clock
    for i in range(n):
        feeder.feed([i], msg_id=i)
    for _ in range(4 * n + 10):
        worker.run_once()
    return worker, runner


def doc_of(worker: Worker, component: str) -> dict[str, Any]:
    return next(d for d in worker.task_stats() if d["component"] == component)


# -- the maths ---------------------------------------------------------------------------------------
def test_gap_is_one_at_rate_one_and_never_at_rate_zero() -> None:
    assert sample_gap(1.0, 0.3) == 1 and sample_gap(1.0, 1.0) == 1
    assert sample_gap(0.0, 0.3) == NEVER
    assert sample_gap(0.5, 1.0) == 1  # u = 1: the very next tuple


def test_gaps_are_geometric_with_mean_one_over_rate() -> None:
    rng = random.Random(11)
    for rate in (0.05, 0.2, 0.5):
        gaps = [sample_gap(rate, 1.0 - rng.random()) for _ in range(40000)]
        assert min(gaps) >= 1
        mean = sum(gaps) / len(gaps)
        assert abs(mean - 1 / rate) < 0.05 / rate, (rate, mean)
        # memoryless like a coin per tuple: P(gap == 1) is the rate itself
        assert abs(gaps.count(1) / len(gaps) - rate) < 0.02


def test_a_task_takes_its_drawn_gaps_in_turn() -> None:
    from stormpy.worker.stats import GAP_TABLE, TaskStats

    stats = TaskStats("bolt", 1)
    stats.set_sample_rate(0.05)
    assert len(stats.gaps) == GAP_TABLE and min(stats.gaps) >= 1
    drawn = set(stats.gaps)
    taken = [stats.next_gap() for _ in range(5 * GAP_TABLE)]
    assert set(taken) <= drawn and 0 <= stats.gap_index < GAP_TABLE
    stats.set_sample_rate(1.0)
    assert {stats.next_gap() for _ in range(100)} == {1}


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.05", None, True])
def test_a_bad_sample_rate_is_refused_naming_the_key(bad: Any) -> None:
    with pytest.raises(ValueError, match="topology.stats.sample.rate"):
        check_sample_rate(bad)


def test_capacity_is_executed_times_latency_over_the_window() -> None:
    assert capacity(1000, 5.0, 10.0) == pytest.approx(0.5)
    assert capacity(0, 5.0, 10.0) == 0.0
    assert capacity(1000, None, 10.0) is None
    with pytest.raises(ValueError, match="positive window"):
        capacity(1, 1.0, 0.0)


# -- the timed path ----------------------------------------------------------------------------------
def test_every_tuple_timed_at_rate_one() -> None:
    worker, _ = worker_with(Slow, {"topology.stats.sample.rate": 1.0}, 30)
    d = doc_of(worker, "bolt")
    assert d["executed"] == 30 and d["execute_latency_count"] == 30
    assert d["execute_latency_sum"] == pytest.approx(30 * STEP)
    # acked inside execute, after its work: process latency equals execute latency here
    assert d["process_latency_count"] == 30
    assert d["process_latency_sum"] == pytest.approx(30 * STEP)
    ms = 1000.0 * d["execute_latency_sum"] / d["execute_latency_count"]
    # 30 tuples of 2 ms each in a 0.12 s window: the task was busy half the window
    assert capacity(d["executed"], ms, 30 * STEP * 2) == pytest.approx(0.5)


def test_a_share_of_tuples_is_timed_and_the_mean_is_exact() -> None:
    random.seed(5)
    worker, runner = worker_with(Slow, {"topology.stats.sample.rate": 0.25}, 400)
    d = doc_of(worker, "bolt")
    assert d["executed"] == 400
    assert 60 <= d["execute_latency_count"] <= 140  # about 100 at 25 %
    assert d["execute_latency_sum"] / d["execute_latency_count"] == pytest.approx(STEP)
    assert runner.stats.sample_countdown >= 1  # the next timed tuple is ahead


def test_process_latency_runs_to_the_ack() -> None:
    worker, _ = worker_with((Slow, {"hold": True}), {"topology.stats.sample.rate": 1.0}, 20)
    d = doc_of(worker, "bolt")
    # a tuple is acked at the end of the next execute: two steps from its start; the last
    # tuple is still held (not acked), so it has no process latency
    assert d["execute_latency_sum"] / d["execute_latency_count"] == pytest.approx(STEP)
    assert d["process_latency_count"] >= 1
    assert d["process_latency_sum"] / d["process_latency_count"] == pytest.approx(2 * STEP)


def test_a_timed_batch_gives_each_timed_tuple_its_share() -> None:
    worker, _ = worker_with(SlowBatch, {"topology.stats.sample.rate": 1.0}, 50)
    d = doc_of(worker, "bolt")
    assert d["executed"] == 50 and d["execute_latency_count"] == 50
    assert d["execute_latency_sum"] == pytest.approx(50 * STEP)
    # the batch's last timed tuple is acked by ack_many at the end of the batch
    assert d["process_latency_count"] >= 1


def test_sampled_batches_at_a_low_rate_keep_the_per_tuple_mean() -> None:
    random.seed(3)
    worker, _ = worker_with(SlowBatch, {"topology.stats.sample.rate": 0.1}, 300)
    d = doc_of(worker, "bolt")
    assert d["executed"] == 300 and d["execute_latency_count"] >= 1
    assert d["execute_latency_sum"] / d["execute_latency_count"] == pytest.approx(STEP)


def test_sampling_off_and_spouts_send_no_latency_figures() -> None:
    worker, runner = worker_with(Slow, {"topology.stats.sample.rate": 0}, 10)
    d = doc_of(worker, "bolt")
    assert d["executed"] == 10 and "execute_latency_count" not in d
    assert runner.stats.sample_countdown > 1 << 60
    assert "execute_latency_count" not in doc_of(worker, "feeder")


def test_task_documents_carry_the_receive_queue() -> None:
    worker, _ = worker_with(Slow, {}, 5)
    d = doc_of(worker, "bolt")
    assert d["receive_queue"] == 0 and d["receive_queue_full"] == 0


def test_a_bad_rate_in_the_topology_conf_stops_the_worker_build() -> None:
    with pytest.raises(ValueError, match="topology.stats.sample.rate"):
        worker_with(Slow, {"topology.stats.sample.rate": 2}, 1)


def test_a_restarted_task_continues_its_latency_sums_but_not_its_queue_level() -> None:
    from stormpy.worker.heartbeats import add_base, component_stats

    earlier = {2: {"task": 2, "component": "bolt", "emitted": {}, "executed": 100,
                   "execute_latency_sum": 0.2, "execute_latency_count": 5, "receive_queue": 40,
                   "receive_queue_full": 3}}
    now = [{"task": 2, "component": "bolt", "emitted": {}, "transferred": 0, "executed": 10,
            "acked": 0, "failed": 0, "latency_sum": 0.0, "latency_count": 0,
            "execute_latency_sum": 0.01, "execute_latency_count": 1, "receive_queue": 2,
            "receive_queue_full": 0}]
    (doc,) = add_base(now, earlier)
    assert doc["executed"] == 110 and doc["execute_latency_count"] == 6
    assert doc["execute_latency_sum"] == pytest.approx(0.21)
    assert doc["receive_queue_full"] == 3 and doc["receive_queue"] == 2  # a level: not added
    summed = component_stats([doc])["bolt"]
    assert summed["execute_latency_count"] == 6 and summed["receive_queue_full"] == 3


def test_a_gap_beyond_never_is_never() -> None:
    # a rate so small that the drawn gap overflows NEVER: still NEVER, not a larger number
    assert sample_gap(1e-300, 0.5) == NEVER


def test_a_task_without_a_sample_rate_never_times_a_tuple() -> None:
    from stormpy.worker.stats import TaskStats

    stats = TaskStats("bolt", 1)
    assert stats.sample_countdown == NEVER
    assert [stats.next_gap() for _ in range(3)] == [NEVER] * 3


def test_the_gap_table_is_entered_and_reentered_where_the_random_bits_say(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import stormpy.worker.stats as stats_module

    bits = iter([5, 63, 0])
    monkeypatch.setattr(stats_module, "getrandbits", lambda k: next(bits))
    stats = stats_module.TaskStats("bolt", 1)
    stats.set_sample_rate(0.25)
    table = list(range(100, 100 + stats_module.GAP_TABLE))
    assert stats.sample_countdown == stats.gaps[5] and stats.gap_index == 6  # entered at 5
    stats.gaps = table
    stats.gap_index = stats_module.GAP_TABLE - 1
    assert stats.next_gap() == table[-1]  # the last entry; the next is drawn: 63
    assert stats.gap_index == 63 and stats.next_gap() == table[63]
    assert stats.gap_index == 0 and stats.next_gap() == table[0]  # drawn again: 0
