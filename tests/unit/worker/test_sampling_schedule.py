"""Which tuples the sampled latency path times, to the tuple: the countdown carried from round to
round, the gaps taken in turn, a timed tuple at the very end of a round, the one-tuple and the
batch forms (a batch's time shared by its timed tuples), a batch bolt's queue over the round's
budget, and which timed tuple is followed to its ack (one at a time; a newer one takes over only
once the followed one is acked, failed, or older than the message timeout).

The gap table is set by hand and the clock is simulated, so every figure is exact: tuple ``i``
takes ``2**i`` time units, so the execute latency sum names the timed tuples bit by bit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from sampling_kit import sampled_runner

from stormpy import Bolt, Tuple
from stormpy.topology._fields import Fields
from stormpy.worker import Worker
from stormpy.worker.loop import EXECUTE_BUDGET
from stormpy.worker.tasks import TaskRunner

#: the simulated time the sampled path reads (the bolts below advance it)
NOW = [0.0]


def clock() -> float:
    return NOW[0]


class PowersOfTwo(Bolt):
    """Tuple ``[i]`` takes ``2**i`` time units; each is acked at the end of its execute."""

    outputs = ["n"]

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.seen: list[int] = []

    def execute(self, tup: Tuple) -> None:
        self.seen.append(tup.values[0])
        NOW[0] += 2.0 ** tup.values[0]
        self.ack(tup)


class EightPerBatch(Bolt):
    """``execute_batch``: every call takes 8 time units whatever its size; keeps the tuples
    (the test acks them)."""

    outputs = ["n"]

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.calls: list[list[int]] = []
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        raise AssertionError("the batch form is used")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.calls.append([t.values[0] for t in tuples])
        self.held.extend(tuples)
        NOW[0] += 8.0


class Holds(Bolt):
    """Keeps every tuple; takes no time (the test moves the clock and acks or fails)."""

    outputs = ["n"]

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.held.append(tup)


class HoldsBatches(Holds):
    """``Holds`` in the batch form."""

    def execute(self, tup: Tuple) -> None:
        raise AssertionError("the batch form is used")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.held.extend(tuples)


def bolt_runner(bolt: type[Bolt], conf: Mapping[str, Any], gaps: list[int],
                countdown: int) -> tuple[Worker, TaskRunner]:
    """A worker with ``bolt`` behind a feeder, its task's gaps set to ``gaps`` (taken in turn
    from the first) and the countdown to ``countdown``."""
    NOW[0] = 0.0
    return sampled_runner(bolt, conf, gaps, countdown, clock)


def queue(worker: Worker, runner: TaskRunner, values: range) -> None:
    """Put untracked tuples ``[i]`` for i in ``values`` on the bolt's queue, as the feeder
    would send them."""
    (feeder,) = worker.layout.component_tasks["feeder"]
    for i in values:
        runner.queue.append(Tuple([i], "default", feeder, "feeder", Fields(["n"])))


def timed(runner: TaskRunner) -> tuple[int, float]:
    return runner.stats.execute_latency_count, runner.stats.execute_latency_sum


def test_the_one_tuple_path_times_exactly_the_tuples_the_gaps_name() -> None:
    worker, runner = bolt_runner(PowersOfTwo, {}, [2, 4, 1, 1, 5, 1, 3], countdown=3)
    queue(worker, runner, range(10))
    worker.run_once()
    # countdown 3: the third tuple (index 2), then gaps 2, 4, 1 (indexes 4, 8, 9); the last
    # gap, 1, lands exactly on the end of the round: the next round's first tuple is timed
    assert runner.instance.seen == list(range(10)) and not runner.queue
    assert timed(runner) == (4, 2.0 ** 2 + 2.0 ** 4 + 2.0 ** 8 + 2.0 ** 9)
    assert runner.stats.sample_countdown == 1
    queue(worker, runner, range(10, 13))
    worker.run_once()  # index 0 (tuple 10), then a gap of 5: three tuples into the next round
    assert timed(runner) == (5, 2.0 ** 2 + 2.0 ** 4 + 2.0 ** 8 + 2.0 ** 9 + 2.0 ** 10)
    assert runner.stats.sample_countdown == 3
    queue(worker, runner, range(13, 15))
    worker.run_once()  # two of the three: none timed, no clock read
    assert timed(runner)[0] == 5 and runner.stats.sample_countdown == 1
    queue(worker, runner, range(15, 17))
    worker.run_once()  # tuple 15, a gap of 1: tuple 16, then a gap of 3
    assert runner.instance.seen == list(range(17)) and runner.stats.executed == 17
    sum_timed = sum(2.0 ** i for i in (2, 4, 8, 9, 10, 15, 16))
    assert timed(runner) == (7, sum_timed)
    assert runner.stats.sample_countdown == 3
    # each timed tuple was acked at the end of its own execute, with nothing else followed
    # meanwhile: its process latency is its execute latency
    assert runner.stats.process_latency_count == 7
    assert runner.stats.process_latency_sum == sum_timed


def test_a_timed_batch_shares_its_time_among_its_timed_tuples() -> None:
    worker, runner = bolt_runner(EightPerBatch, {}, [4, 2, 2, 20], countdown=3)
    bolt = runner.instance
    queue(worker, runner, range(10))
    worker.run_once()
    # timed: indexes 2, 6, 8, then a gap of 2 ends exactly on the round: 3 of 10 tuples timed,
    # each given a tenth of the call's 8 units
    assert bolt.calls == [list(range(10))]
    assert runner.stats.execute_latency_count == 3
    assert runner.stats.execute_latency_sum == pytest.approx(8.0 * 3 / 10)
    assert runner.stats.sample_countdown == 1
    # the followed tuple is the batch's last timed one (tuple 8): acking the others records no
    # process latency, acking it does (from the start of the call)
    NOW[0] = 100.0
    bolt.ack_many([t for t in bolt.held if t.values[0] != 8])
    assert runner.stats.process_latency_count == 0
    bolt.ack_many([t for t in bolt.held if t.values[0] == 8])
    assert runner.stats.process_latency_count == 1
    assert runner.stats.process_latency_sum == 100.0
    queue(worker, runner, range(10, 12))
    NOW[0] = 200.0
    worker.run_once()  # the first tuple is timed, then a gap of 20
    assert bolt.calls[1] == [10, 11]
    assert runner.stats.execute_latency_count == 4
    assert runner.stats.execute_latency_sum == pytest.approx(8.0 * 3 / 10 + 8.0 / 2)
    assert runner.stats.sample_countdown == 19
    NOW[0] = 210.0
    bolt.ack_many(bolt.held[10:])
    assert runner.stats.process_latency_count == 2
    assert runner.stats.process_latency_sum == 100.0 + 10.0
    queue(worker, runner, range(12, 30))
    worker.run_once()  # 18 of the 19 to go: one left, no timed tuple in this batch
    assert bolt.calls[2] == list(range(12, 30))
    assert runner.stats.execute_latency_count == 4 and runner.stats.sample_countdown == 1
    queue(worker, runner, range(30, 31))
    worker.run_once()  # the one left
    assert runner.stats.execute_latency_count == 5 and runner.stats.sample_countdown == 1


def test_a_timed_batch_over_the_budget_is_cut_at_the_budget() -> None:
    worker, runner = bolt_runner(EightPerBatch, {}, [2000], countdown=5)
    queue(worker, runner, range(EXECUTE_BUDGET + 6))
    worker.run_once()
    assert runner.instance.calls == [list(range(EXECUTE_BUDGET))]
    assert len(runner.queue) == 6 and runner.stats.executed == EXECUTE_BUDGET
    assert runner.stats.execute_latency_count == 1
    assert runner.stats.sample_countdown == 5 + 2000 - EXECUTE_BUDGET
    worker.run_once()
    assert runner.instance.calls[1] == list(range(EXECUTE_BUDGET, EXECUTE_BUDGET + 6))
    assert runner.stats.executed == EXECUTE_BUDGET + 6 and runner.stats.execute_latency_count == 1


@pytest.mark.parametrize("bolt", [Holds, HoldsBatches], ids=["one-tuple", "batch"])
def test_one_timed_tuple_is_followed_to_its_ack_at_a_time(bolt: type[Holds]) -> None:
    """Every tuple is timed (gaps of 1); the message timeout is 10 s, so a followed tuple is
    given up for a newer timed one when it is more than 10 s old."""
    worker, runner = bolt_runner(bolt, {"topology.message.timeout.secs": 10}, [], countdown=1)
    inst = runner.instance
    ack = inst.ack if bolt is Holds else (lambda t: inst.ack_many([t]))
    process = runner.stats

    def run_at(t: float, i: int) -> Tuple:
        NOW[0] = t
        queue(worker, runner, range(i, i + 1))
        worker.run_once()
        tup: Tuple = inst.held[-1]
        assert tup.values == [i]
        return tup

    # acked at once: followed, and the next timed tuple right after is followed again
    a = run_at(5.0, 0)
    NOW[0] = 6.0
    ack(a)
    c = run_at(7.0, 1)
    NOW[0] = 8.0
    ack(c)
    assert (process.process_latency_count, process.process_latency_sum) == (2, 2.0)
    # b is followed; d comes exactly 10 s later: b is not stale yet, d is not followed
    b = run_at(20.0, 2)
    d = run_at(30.0, 3)
    NOW[0] = 31.0
    ack(d)
    assert process.process_latency_count == 2
    NOW[0] = 32.0
    ack(b)
    assert (process.process_latency_count, process.process_latency_sum) == (3, 14.0)
    # e is followed; f comes more than 10 s later and takes over
    e = run_at(40.0, 4)
    f = run_at(50.5, 5)
    NOW[0] = 51.0
    ack(e)
    assert process.process_latency_count == 3
    NOW[0] = 52.0
    ack(f)
    assert (process.process_latency_count, process.process_latency_sum) == (4, 15.5)
    # a failed followed tuple has no process latency and frees the place at once
    g = run_at(60.0, 6)
    NOW[0] = 61.0
    inst.fail(g)
    h = run_at(62.0, 7)
    NOW[0] = 63.0
    ack(h)
    assert (process.process_latency_count, process.process_latency_sum) == (5, 16.5)
    # failing a tuple that is not followed leaves the followed one alone
    k = run_at(70.0, 8)
    m = run_at(71.0, 9)
    inst.fail(m)
    NOW[0] = 74.0
    ack(k)
    assert (process.process_latency_count, process.process_latency_sum) == (6, 20.5)
    assert process.failed == 2 and process.acked == 8
    assert process.execute_latency_count == 10


def test_without_a_message_timeout_a_followed_tuple_is_stale_after_30_s() -> None:
    worker, runner = bolt_runner(Holds, {"topology.message.timeout.secs": None,
                                         "topology.enable.message.timeouts": False}, [],
                                 countdown=1)
    inst = runner.instance
    for t, i in ((0.0, 0), (30.0, 1), (30.5, 2)):
        NOW[0] = t
        queue(worker, runner, range(i, i + 1))
        worker.run_once()
    first, second, third = inst.held
    NOW[0] = 31.0
    inst.ack(first)
    inst.ack(second)
    assert runner.stats.process_latency_count == 0  # the third took over at 30.5
    inst.ack(third)
    assert (runner.stats.process_latency_count, runner.stats.process_latency_sum) == (1, 0.5)


def test_an_untimed_batch_over_the_budget_is_cut_at_the_budget() -> None:
    worker, runner = bolt_runner(EightPerBatch, {}, [], countdown=5000)
    queue(worker, runner, range(EXECUTE_BUDGET + 6))
    worker.run_once()
    assert runner.instance.calls == [list(range(EXECUTE_BUDGET))]
    assert len(runner.queue) == 6 and runner.stats.executed == EXECUTE_BUDGET
    assert runner.stats.execute_latency_count == 0
    assert runner.stats.sample_countdown == 5000 - EXECUTE_BUDGET
    worker.run_once()
    assert runner.instance.calls[1] == list(range(EXECUTE_BUDGET, EXECUTE_BUDGET + 6))
    assert runner.stats.sample_countdown == 5000 - EXECUTE_BUDGET - 6
