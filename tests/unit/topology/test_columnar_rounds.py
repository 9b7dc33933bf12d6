"""The worker loop around a columnar bolt: a round's work counts the tuples of the batches it ran
together with everything else of the round, a columnar bolt that raises stops the worker with
an error naming it, a queued batch counts its tuples in ``receive_queue``, and batches from
another worker reach a columnar task's queue as one item."""

from __future__ import annotations

import pytest

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError
from stormpy.worker.loop import EXECUTE_BUDGET

#: the sizes of the batches the columnar bolt ran, and what the bolt after it received
RAN: list[int] = []
TAIL: list[int] = []
WORD = Fields(["word"])


class Split(Bolt):
    """Splits every sentence of its input into words, one ``emit_many`` per round."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.emit_many([[w] for t in tuples for w in t.values[0].split()], tuples)
        self.ack_many(tuples)


class Columns(Bolt):
    """Columnar: records each batch's size, emits it (one tuple anchored to the batch), acks the
    batch; raises on the word "boom"."""

    outputs = ["size"]

    def execute(self, tup: Tuple) -> None:  # pragma: no cover - only batches reach it here
        raise AssertionError("words come as batches")

    def execute_columns(self, batch: ColumnBatch) -> None:
        if "boom" in batch.column(0):
            raise ValueError("a bad word")
        RAN.append(len(batch))
        self.emit([len(batch)], batch)
        self.ack(batch)


class Tail(Bolt):
    def execute(self, tup: Tuple) -> None:
        TAIL.append(tup.values[0])
        self.ack(tup)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()
    TAIL.clear()


def _worker(feeder: FeederSpout) -> Worker:
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", Split).shuffle_grouping("feeder")
    b.set_bolt("columns", Columns).shuffle_grouping("split")
    b.set_bolt("tail", Tail).shuffle_grouping("columns")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 0}),
                    clock=SimulatedClock())
    worker.open()
    return worker


def test_a_round_counts_the_batch_tuples_it_ran_with_the_rest_of_its_work() -> None:
    feeder = FeederSpout(["sentence"])
    worker = _worker(feeder)
    for s in ("a b c", "d e"):
        feeder.feed([s])
    assert worker.run_once() == 2  # the spout emits both sentences
    # split runs the 2 sentences and queues one batch of 5 words; columns (downstream, later in
    # the same round) runs it and emits one tuple, which tail (after it) runs too: 2 + 5 + 1
    assert worker.run_once() == 8
    assert RAN == [5] and TAIL == [5]
    assert worker.run_once() == 0
    stats = worker.stats()
    assert stats["split"]["executed"] == 2 and stats["columns"]["executed"] == 5
    assert stats["tail"]["executed"] == 1


def test_a_columnar_bolt_that_raises_is_a_worker_error_naming_its_task() -> None:
    feeder = FeederSpout(["sentence"])
    worker = _worker(feeder)
    (task,) = worker.layout.component_tasks["columns"]
    feeder.feed(["x boom"])
    worker.run_once()
    with pytest.raises(WorkerError) as info:
        worker.run_once()
    assert str(info.value) == f"component 'columns' task {task} raised ValueError: a bad word"
    assert info.value.component == "columns" and info.value.task == task
    assert isinstance(info.value.__cause__, ValueError)
    (error,) = worker.errors["columns"]
    assert error["task"] == task and "ValueError: a bad word" in error["error"]


def test_a_queued_batch_counts_its_tuples_in_the_receive_queue() -> None:
    worker = _worker(FeederSpout(["sentence"]))
    (task,) = worker.layout.component_tasks["columns"]
    (split,) = worker.layout.component_tasks["split"]
    worker.dispatch.deliver_batch[task](ColumnBatch([["a"], ["b"], ["c"]], "default", split,
                                                    "split", WORD))
    docs = {d["component"]: d for d in worker.task_stats()}
    assert docs["columns"]["receive_queue"] == 3 and docs["split"]["receive_queue"] == 0
    worker.run_once()
    assert RAN == [3]
    docs = {d["component"]: d for d in worker.task_stats()}
    assert docs["columns"]["receive_queue"] == 0


def test_queued_batch_tuples_hold_the_spouts_back_once_the_receive_queue_is_full() -> None:
    """The receive queue holds ``topology.executor.receive.buffer.size`` tuples, a queued batch
    counting all of its tuples: 6 batches of 10 left after a round (the rest of the budget) fill
    a queue of 50, so the spouts wait that round."""
    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", Split).shuffle_grouping("feeder")
    b.set_bolt("columns", Columns).shuffle_grouping("split")
    b.set_bolt("tail", Tail).shuffle_grouping("columns")
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.acker.executors": 0,
                                  "topology.executor.receive.buffer.size": 50}),
                    clock=SimulatedClock())
    worker.open()
    (task,) = worker.layout.component_tasks["columns"]
    (split,) = worker.layout.component_tasks["split"]
    for _ in range(EXECUTE_BUDGET + 6):
        worker.dispatch.deliver_batch[task](ColumnBatch([["w"]] * 10, "default", split, "split",
                                                        WORD))
    feeder.feed(["a b"])
    worker.run_once()
    assert len(RAN) == EXECUTE_BUDGET
    docs = {d["component"]: d for d in worker.task_stats()}
    assert docs["columns"]["receive_queue"] == 60 and docs["columns"]["receive_queue_full"] == 1
    assert worker.stats()["feeder"]["emitted"] == 0  # held back
    worker.run_once()  # the last 6 batches: room again, the spout emits
    assert len(RAN) == EXECUTE_BUDGET + 6
    assert worker.stats()["feeder"]["emitted"] == 1


def test_a_round_runs_the_tasks_after_a_columnar_bolt_too() -> None:
    """After a columnar bolt's step, the round goes on to the tasks after it: a tuple queued for
    ``tail`` (later in the execution order) runs in the same round as the batch."""
    worker = _worker(FeederSpout(["sentence"]))
    (task,) = worker.layout.component_tasks["columns"]
    (split,) = worker.layout.component_tasks["split"]
    (tail,) = worker.layout.component_tasks["tail"]
    worker.dispatch.deliver_batch[task](ColumnBatch([["a"], ["b"]], "default", split, "split", WORD))
    worker.tasks[tail].queue.append(Tuple([7], "default", task, "columns", Fields(["size"])))
    # the batch's 2 tuples, then tail's two: its queued 7, then columns' emit (queued behind the
    # 7, not chained past it: per-task order)
    assert worker.run_once() == 2 + 2
    assert RAN == [2] and TAIL == [7, 2]
    assert not worker.tasks[tail].queue
