"""A bolt that raises in the loop's own execute step (not in a chained execute: chaining off, so
every tuple is queued and run by ``Worker.run_once``) stops the worker with an error naming its
component and task, its cause the bolt's exception, recorded in ``Worker.errors``: for the
tuple-at-a-time form, ``execute_batch`` and the sampled run (the countdown at its end)."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError


class Bad(Bolt):
    """Raises on every tuple."""

    def execute(self, tup: Tuple) -> None:
        raise ValueError(f"cannot take {tup.values[0]!r}")


class BadBatch(Bolt):
    """Raises on every batch."""

    def execute(self, tup: Tuple) -> None:  # pragma: no cover - only batches reach it here
        raise AssertionError("tuples come as batches")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        raise ValueError(f"cannot take {tuples[0].values[0]!r}")


def _worker(bolt: Any) -> tuple[Worker, FeederSpout, int]:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("bad", bolt).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.worker.chaining": False}),
                    clock=SimulatedClock())
    worker.open()
    (task,) = worker.layout.component_tasks["bad"]
    return worker, feeder, task


@pytest.mark.parametrize("form", ["execute", "execute_batch", "sampled"])
def test_a_bolt_raising_in_the_loops_execute_is_a_worker_error_naming_its_task(form: str) -> None:
    worker, feeder, task = _worker(BadBatch if form == "execute_batch" else Bad)
    if form == "sampled":
        worker.tasks[task].stats.sample_countdown = 1  # the next tuple run is the timed one
    feeder.feed(["x"])
    worker.run_once()  # the spout emits: queued (chaining is off), not run yet
    assert len(worker.tasks[task].queue) == 1
    with pytest.raises(WorkerError) as info:
        worker.run_once()
    assert str(info.value) == f"component 'bad' task {task} raised ValueError: cannot take 'x'"
    assert info.value.component == "bad" and info.value.task == task
    assert isinstance(info.value.__cause__, ValueError)
    (error,) = worker.errors["bad"]
    assert error["component"] == "bad" and error["task"] == task
    assert "ValueError: cannot take 'x'" in error["error"]
