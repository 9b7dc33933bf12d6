"""Which tuples a columnar bolt's task times, to the tuple, for its single tuples and its batches
in one queue: the countdown across runs of tuples and batches, its edges (exactly 0 is timed,
1 is not), a run's time shared by its timed tuples, the followed tuple or batch (process
latency), and the tuples each run returns. The gap table is set by hand and the sample clock is
simulated: tuple ``[i]`` (alone or in a batch) takes ``2**i`` time units, from 100."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sampling_kit import sampled_runner

from stormpy import Bolt, Tuple
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._fields import Fields
from stormpy.worker import Worker
from stormpy.worker.tasks import TaskRunner

NOW = [100.0]
N = Fields(["n"])


def clock() -> float:
    return NOW[0]


class Powers(Bolt):
    """Columnar; ``[i]`` takes ``2**i``; acks single tuples at once, keeps batches."""

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.runs: list[list[int]] = []
        self.batches: list[ColumnBatch] = []

    def execute(self, tup: Tuple) -> None:
        self.runs.append([tup.values[0]])
        NOW[0] += 2.0 ** tup.values[0]
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.batches.append(batch)
        NOW[0] += sum(2.0 ** v for v in batch.column(0))


class PowersInBatches(Powers):
    """The same with ``execute_batch`` for its single tuples."""

    def execute(self, tup: Tuple) -> None:
        raise AssertionError("the batch form is used")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.runs.append([t.values[0] for t in tuples])
        NOW[0] += sum(2.0 ** t.values[0] for t in tuples)
        self.ack_many(tuples)


def _runner(bolt: type[Bolt], gaps: list[int], countdown: int) -> tuple[Worker, TaskRunner]:
    NOW[0] = 100.0
    return sampled_runner(bolt, {"topology.message.timeout.secs": 10}, gaps, countdown, clock)


def _tuples(worker: Worker, runner: TaskRunner, values: range) -> None:
    (feeder,) = worker.layout.component_tasks["feeder"]
    for i in values:
        runner.queue.append(Tuple([i], "default", feeder, "feeder", N))


def _batch(worker: Worker, runner: TaskRunner, values: list[int]) -> ColumnBatch:
    (feeder,) = worker.layout.component_tasks["feeder"]
    batch = ColumnBatch([[v] for v in values], "default", feeder, "feeder", N)
    worker.dispatch.deliver_batch[runner.task_id](batch)
    return batch


def _timed(runner: TaskRunner) -> tuple[int, float]:
    return runner.stats.execute_latency_count, runner.stats.execute_latency_sum


def test_a_run_of_single_tuples_shares_its_time_among_its_timed_tuples() -> None:
    for bolt in (Powers, PowersInBatches):
        worker, runner = _runner(bolt, [3, 2], 2)
        _tuples(worker, runner, range(5))
        assert runner.run_columns is not None and runner.run_columns(5) == 5
        # countdown 2 - 5: tuples 1 and 4 timed (gaps 3, then 2 carried over): 31 units * 2 / 5
        assert _timed(runner) == (2, 31 * 2 / 5)
        assert runner.stats.sample_countdown == 2  # the next gap (2) counted from tuple 4
        assert runner.stats.process_latency_count == 1  # the run's first tuple was followed
        _tuples(worker, runner, range(2))
        assert runner.run_columns(2) == 2  # countdown 2 - 2 = 0: the last one is timed
        assert _timed(runner) == (3, 31 * 2 / 5 + 3 / 2)
        assert [v for run in runner.instance.runs for v in run] == [0, 1, 2, 3, 4, 0, 1]


def test_countdown_edges_for_tuples_and_batches() -> None:
    worker, runner = _runner(Powers, [4], 3)
    _tuples(worker, runner, range(2))
    assert runner.run_columns is not None and runner.run_columns(2) == 2
    assert _timed(runner) == (0, 0.0) and runner.stats.sample_countdown == 1  # 1: not timed
    worker, runner = _runner(Powers, [4], 4)
    _batch(worker, runner, [0, 1, 2])
    assert runner.run_columns is not None and runner.run_columns(1) == 3
    assert _timed(runner) == (0, 0.0) and runner.stats.sample_countdown == 1
    _batch(worker, runner, [0])  # countdown exactly 0: timed
    assert runner.run_columns(1) == 1
    assert _timed(runner) == (1, 1.0) and runner.stats.sample_countdown == 4


def test_runs_of_tuples_around_batches_count_every_tuple() -> None:
    worker, runner = _runner(Powers, [], 1000)
    _tuples(worker, runner, range(2))
    _batch(worker, runner, [0, 1, 2])
    _tuples(worker, runner, range(3, 4))
    _batch(worker, runner, [5])
    _tuples(worker, runner, range(4, 6))
    assert runner.run_columns is not None and runner.run_columns(7) == 9
    assert runner.stats.executed == 9 and not runner.queue
    assert runner.instance.runs == [[0], [1], [3], [4], [5]]
    assert [b.column(0) for b in runner.instance.batches] == [[0, 1, 2], [5]]


def test_timed_batches_share_their_time_and_one_is_followed_until_acked_or_stale() -> None:
    worker, runner = _runner(Powers, [2, 2, 2, 2, 2, 2], 1)
    bolt = runner.instance
    first = _batch(worker, runner, [0, 1])  # countdown 1 - 2: tuple 0 timed, then 2 more on
    assert runner.run_columns is not None and runner.run_columns(1) == 2
    assert _timed(runner) == (1, 3 / 2)
    second = _batch(worker, runner, [0, 1, 2, 3])  # countdown 1 - 4: tuples 0 and 2 timed
    runner.run_columns(1)
    assert _timed(runner) == (3, 3 / 2 + 15 * 2 / 4)
    bolt.ack(second)  # not the followed one (first still is, and not stale)
    assert runner.stats.process_latency_count == 0
    NOW[0] += 5
    bolt.ack(first)
    assert runner.stats.process_latency_count == 1
    assert runner.stats.process_latency_sum == 3 + 15 + 5  # from first's start (100)
    third = _batch(worker, runner, [0, 1])
    runner.run_columns(1)  # followed: nothing was
    fourth = _batch(worker, runner, [0, 1])
    NOW[0] += 10 - 3  # fourth starts exactly 10 after third: not stale yet
    runner.run_columns(1)
    bolt.ack(fourth)
    assert runner.stats.process_latency_count == 1
    fifth = _batch(worker, runner, [0, 1])
    NOW[0] += 1  # now more than 10 after third: fifth takes over
    runner.run_columns(1)
    NOW[0] += 2
    bolt.ack(third)
    assert runner.stats.process_latency_count == 1
    bolt.ack(fifth)
    assert runner.stats.process_latency_count == 2
    assert runner.stats.process_latency_sum == 3 + 15 + 5 + 3 + 2


def test_the_first_timed_batch_is_followed_whatever_the_clock_reads() -> None:
    worker, runner = _runner(Powers, [2], 1)
    NOW[0] = 0.0  # a sample clock starting at 0: nothing followed yet, not a stale start
    batch = _batch(worker, runner, [0])
    assert runner.run_columns is not None and runner.run_columns(1) == 1
    NOW[0] += 4
    runner.instance.ack(batch)
    assert runner.stats.process_latency_count == 1 and runner.stats.process_latency_sum == 5


def test_after_an_ack_or_a_fail_of_the_followed_batch_the_next_timed_one_is_followed() -> None:
    for end in ("ack", "fail"):
        worker, runner = _runner(Powers, [1, 1, 1], 1)
        bolt = runner.instance
        first = _batch(worker, runner, [0])
        assert runner.run_columns is not None and runner.run_columns(1) == 1
        getattr(bolt, end)(first)
        counted = 1 if end == "ack" else 0  # no process latency for a failed batch
        assert runner.stats.process_latency_count == counted
        second = _batch(worker, runner, [1])  # 1 unit after first started: well within 10
        runner.run_columns(1)
        NOW[0] += 3
        bolt.ack(second)
        assert runner.stats.process_latency_count == counted + 1
        assert runner.stats.process_latency_sum == counted * 1 + 2 + 3


def test_failing_another_batch_keeps_the_followed_one() -> None:
    worker, runner = _runner(Powers, [1, 5], 1)
    bolt = runner.instance
    followed = _batch(worker, runner, [0])
    assert runner.run_columns is not None and runner.run_columns(1) == 1
    other = _batch(worker, runner, [1])  # not timed (the next gap is 5)
    runner.run_columns(1)
    bolt.fail(other)
    assert runner.stats.failed == 1 and runner.stats.process_latency_count == 0
    bolt.ack(followed)
    assert runner.stats.process_latency_count == 1
    assert runner.stats.process_latency_sum == 1 + 2


def test_a_countdown_left_at_1_times_and_follows_nothing() -> None:
    worker, runner = _runner(Powers, [4], 3)
    _tuples(worker, runner, range(2))  # 3 - 2 = 1: not timed; Powers acks them at once
    assert runner.run_columns is not None and runner.run_columns(2) == 2
    assert runner.stats.sample_countdown == 1 and runner.stats.process_latency_count == 0
    worker, runner = _runner(Powers, [4], 4)
    batch = _batch(worker, runner, [0, 1, 2])  # 4 - 3 = 1: not timed
    assert runner.run_columns is not None and runner.run_columns(1) == 3
    runner.instance.ack(batch)
    assert runner.stats.sample_countdown == 1 and runner.stats.process_latency_count == 0


def test_a_timed_run_of_one_tuple_is_followed_to_its_ack() -> None:
    for bolt in (Powers, PowersInBatches):
        worker, runner = _runner(bolt, [4], 1)
        _tuples(worker, runner, range(3, 4))
        assert runner.run_columns is not None and runner.run_columns(1) == 1
        assert _timed(runner) == (1, 8.0)
        assert runner.stats.process_latency_count == 1  # acked in execute: 8 units
        assert runner.stats.process_latency_sum == 8.0
