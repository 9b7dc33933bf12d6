"""The per-task error throttle of ``Worker.record_error`` at its edges: each task has its own
budget, and a new window starts exactly ``topology.error.throttle.interval.secs`` after the
previous one began (simulated time)."""

from __future__ import annotations

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig


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


def test_a_forced_error_is_kept_and_handed_on_even_over_the_budget() -> None:
    """``record_error(..., force=True)`` (the error that stops the worker) is never throttled:
    kept and handed to ``on_error`` although the task used its budget; not counted suppressed."""
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("sink", Capture(), 2).shuffle_grouping("feeder")
    conf = {"topology.max.error.report.per.interval": 1,
            "topology.error.throttle.interval.secs": 10}
    handed: list[tuple[str, int, str]] = []
    worker = Worker(WorkerConfig("t", b.create_topology(), conf), clock=SimulatedClock(),
                    on_error=lambda component, task, text: handed.append((component, task, text)))
    task = worker.layout.component_tasks["sink"][0]
    worker.record_error("sink", task, "first")
    worker.record_error("sink", task, "fatal", force=True)
    worker.record_error("sink", task, "throttled")
    assert kept(worker) == ["first", "fatal"] and worker.errors_suppressed == 1
    assert handed == [("sink", task, "first"), ("sink", task, "fatal")]


def test_a_worker_keeps_its_config_and_reports_errors_with_its_port() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    config = WorkerConfig("t", b.create_topology(), {}, worker_port=6703)
    worker = Worker(config, clock=SimulatedClock())
    assert worker.config is config and worker.worker_port == 6703
    (task,) = worker.layout.component_tasks["feeder"]
    worker.record_error("feeder", task, "oops")
    (error,) = worker.errors["feeder"]
    assert error["port"] == 6703 and error["task"] == task and error["host"] == worker.hostname


def test_without_a_state_backend_tasks_get_one_in_memory() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    (task,) = worker.layout.component_tasks["feeder"]
    store = worker.tasks[task].context.state_store()
    store.put("k", 1)
    assert store.get("k") == 1


def test_task_errors_throttle_a_record_that_does_not_say_force() -> None:
    """``TaskErrors.record`` without ``force`` is throttled: over the budget, an error is only
    logged and counted, not kept nor handed on."""
    from stormpy.worker.task_errors import TaskErrors

    handed: list[str] = []
    errors = TaskErrors({"topology.max.error.report.per.interval": 1,
                         "topology.error.throttle.interval.secs": 10}, lambda: 0.0, "host-a", 6700,
                        lambda component, task, text: handed.append(text))
    errors.record("sink", 3, "first")
    errors.record("sink", 3, "second")
    assert [e["error"] for e in errors.kept["sink"]] == ["first"] and handed == ["first"]
    assert errors.suppressed == 1
