"""The per-task error throttle of ``Worker.record_error`` at its edges: each task has its own
budget, and a new window starts exactly ``topology.error.throttle.interval.secs`` after the
previous one began (simulated time)."""

from __future__ import annotations

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.worker import SimulatedClock, Worker, WorkerConfig


def worker_with(clock: SimulatedClock) -> tuple[Worker, list[int]]:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("sink", Capture(), 2).shuffle_grouping("feeder")
    conf = {"topology.max.error.report.per.interval": 1,
            "topology.error.throttle.interval.secs": 10}
    worker = Worker(WorkerConfig("t", b.create_topology(), conf), clock=clock)
    return worker, worker.layout.component_tasks["sink"]


def kept(worker: Worker) -> list[str]:
    return [e["error"] for e in worker.errors.get("sink", [])]


def test_each_task_has_its_own_error_budget() -> None:
    worker, (first, second) = worker_with(SimulatedClock())
    worker.record_error("sink", first, "a")
    worker.record_error("sink", second, "b")
    worker.record_error("sink", first, "c")
    assert kept(worker) == ["a", "b"] and worker.errors_suppressed == 1


def test_a_new_window_starts_exactly_one_interval_after_the_last_began() -> None:
    clock = SimulatedClock(1000.0)
    worker, (task, _other) = worker_with(clock)
    worker.record_error("sink", task, "first")
    clock.advance(9.5)
    worker.record_error("sink", task, "throttled")
    clock.advance(0.5)  # exactly 10 s after the window began
    worker.record_error("sink", task, "new window")
    worker.record_error("sink", task, "throttled again")
    assert kept(worker) == ["first", "new window"] and worker.errors_suppressed == 2
