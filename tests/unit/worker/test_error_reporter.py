"""Reported errors are throttled once, per task, by ``Worker.record_error``; the cluster's
``ErrorReporter`` writes every error it is handed, with the host the worker records. So the
error that stops a worker reaches ZooKeeper however many errors its tasks reported before it
(a second, per-worker throttle in the reporter used to drop it)."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.cluster.records import ErrorInfo
from stormpy.testing import FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError
from stormpy.worker.error_reporter import ErrorReporter


class RecordingState:
    """The one ``ClusterState`` method the reporter calls, recording what it writes."""

    def __init__(self) -> None:
        self.written: list[tuple[str, ErrorInfo]] = []

    def report_error(self, topology_id: str, error: ErrorInfo) -> None:
        self.written.append((topology_id, error))


class Complains(Bolt):
    """Reports two errors per tuple; raises on "die"."""

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == "die":
            raise RuntimeError("died on purpose")
        self.report_error(f"first of {tup.values[0]}")
        self.report_error(f"second of {tup.values[0]}")
        self.ack(tup)


def reporter_of(state: RecordingState) -> ErrorReporter:
    return ErrorReporter(state, "topo-1", "node-7", 6701)  # type: ignore[arg-type]


def test_the_reporter_writes_every_error_it_is_handed_with_its_host_and_port() -> None:
    state = RecordingState()
    reporter = reporter_of(state).start()
    for i in range(12):  # more than Storm's 5 per interval: the worker has throttled already
        reporter.report("bolt", 3, f"error {i}")
    reporter.close()
    assert [e.message for _, e in state.written] == [f"error {i}" for i in range(12)]
    assert {(topology, e.component, e.task, e.host, e.port) for topology, e in state.written} \
        == {("topo-1", "bolt", 3, "node-7", 6701)}


def test_the_error_that_stops_a_worker_is_written_after_its_tasks_used_their_budgets() -> None:
    """Three tasks report two errors each (their whole budget): six errors in the interval;
    then a component raises. Its error is written, with the worker's host and port."""
    state = RecordingState()
    reporter = reporter_of(state)
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("complains", Complains, 3).all_grouping("feeder")
    conf: dict[str, Any] = {"topology.max.error.report.per.interval": 2,
                            "topology.error.throttle.interval.secs": 60,
                            "topology.acker.executors": 0}
    worker = Worker(WorkerConfig("t", b.create_topology(), conf, worker_port=6701,
                                 hostname=reporter.hostname),
                    clock=SimulatedClock(), on_error=reporter.report)
    worker.open()
    feeder.feed(["a"])
    feeder.feed(["b"])  # over each task's budget: throttled in the worker, never handed on
    for _ in range(3):
        worker.run_once()
    feeder.feed(["die"])
    with pytest.raises(WorkerError, match="died on purpose"):
        for _ in range(3):
            worker.run_once()
    reporter.close()
    messages = [e.message for _, e in state.written]
    assert sorted(messages[:6]) == sorted(["first of a", "second of a"] * 3)
    assert worker.errors_suppressed == 6
    (fatal,) = messages[6:]
    assert "RuntimeError: died on purpose" in fatal
    assert {(e.host, e.port) for _, e in state.written} == {("node-7", 6701)}
    assert {(e["host"], e["port"]) for e in worker.errors["complains"]} == {("node-7", 6701)}
