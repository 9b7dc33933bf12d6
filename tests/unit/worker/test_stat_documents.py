"""The per-task stat documents a worker reports and their per-component sums (what the CLI, the
UI and the metrics consumers show)."""

from __future__ import annotations

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.stats import summarize


def test_a_fresh_tasks_document_has_every_counter_at_zero() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("sink", Capture(), 2).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 0}),
                    clock=SimulatedClock())
    docs = {d["task"]: d for d in worker.task_stats()}
    tasks = worker.layout.component_tasks
    (spout,) = tasks["feeder"]
    assert docs[spout] == {"component": "feeder", "task": spout, "emitted": {"default": 0},
                           "transferred": 0, "executed": 0, "acked": 0, "failed": 0,
                           "latency_sum": 0.0, "latency_count": 0, "receive_queue": 0,
                           "receive_queue_full": 0}
    for task in tasks["sink"]:
        assert docs[task] == {"component": "sink", "task": task, "emitted": {}, "transferred": 0,
                              "executed": 0, "acked": 0, "failed": 0, "latency_sum": 0.0,
                              "latency_count": 0, "execute_latency_sum": 0.0,
                              "execute_latency_count": 0, "process_latency_sum": 0.0,
                              "process_latency_count": 0, "receive_queue": 0,
                              "receive_queue_full": 0}
    assert worker.stats()["sink"] == {"emitted": 0, "transferred": 0, "executed": 0, "acked": 0,
                                      "failed": 0, "tasks": 2, "complete_latency_ms": None}


def doc(component: str, task: int, emitted: dict[str, int], n: int, latency_sum: float,
        latency_count: int) -> dict[str, object]:
    return {"component": component, "task": task, "emitted": emitted, "transferred": n,
            "executed": 2 * n, "acked": 3 * n, "failed": 4 * n, "latency_sum": latency_sum,
            "latency_count": latency_count}


def test_summaries_add_up_tasks_per_component_without_system_streams() -> None:
    docs = [doc("spout", 1, {"default": 5, "__ack_init": 7, "side": 1}, 1, 0.5, 2),
            doc("spout", 2, {"default": 2}, 10, 0.25, 1),
            doc("bolt", 3, {"__system": 9}, 100, 0.0, 0)]
    assert summarize(docs) == {
        "spout": {"emitted": 8, "transferred": 11, "executed": 22, "acked": 33, "failed": 44,
                  "tasks": 2, "complete_latency_ms": 250.0},
        "bolt": {"emitted": 0, "transferred": 100, "executed": 200, "acked": 300, "failed": 400,
                 "tasks": 1, "complete_latency_ms": None},
    }


def test_complete_latency_is_in_milliseconds_rounded_to_microseconds() -> None:
    (summary,) = summarize([doc("s", 1, {}, 0, 1.0, 3)]).values()
    assert summary["complete_latency_ms"] == 333.333
    (summary,) = summarize([doc("s", 1, {}, 0, 0.0012345, 1)]).values()
    assert summary["complete_latency_ms"] == 1.234
    assert summarize([]) == {}
