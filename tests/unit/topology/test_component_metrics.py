"""The component metrics seam: ``context.register_metric(name, fn)`` sampled at heartbeats, carried
in the worker heartbeat and listed in topology info (and by ``LocalCluster.get_metrics``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy.cluster import Assignment, StormBase, WorkerHeartbeat
from stormpy.nimbus.info import topology_info
from stormpy.testing import LocalCluster
from stormpy.topology import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._layout import compute_layout
from stormpy.worker.heartbeats import task_metrics


class CountingSpout(Spout):
    outputs = ["n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.n = 0
        context.register_metric("progress", lambda: {"emitted": self.n, "task": context.task_id})
        context.register_metric("broken", lambda: 1 / 0)
        context.register_metric("not_plain", lambda: {1: object()})

    def next_tuple(self) -> None:
        if self.n < 10:
            self.n += 1
            self.emit([self.n])


class Sink(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_registered_metrics_are_sampled_and_bad_ones_reported_once_and_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout, 2)
    builder.set_bolt("sink", Sink).shuffle_grouping("numbers")
    with LocalCluster() as cluster, caplog.at_level("WARNING", "stormpy.topology"):
        cluster.submit_topology("m", {}, builder.create_topology())
        cluster.wait_until_quiet("m")
        metrics = cluster.get_metrics("m")
        metrics = cluster.get_metrics("m")  # sampled again: still reported once per task
    assert set(metrics) == {"numbers"}  # the sink registered nothing
    tasks = metrics["numbers"]
    assert len(tasks) == 2
    for task, values in tasks.items():
        assert values["progress"] == {"emitted": 10, "task": int(task)}
        assert "broken" not in values and "not_plain" not in values
    reports = [r.getMessage() for r in caplog.records if "is left out" in r.getMessage()]
    assert sorted(m.split("'")[1] for m in reports) == ["broken", "broken", "not_plain", "not_plain"]
    assert any("ZeroDivisionError" in m for m in reports)


def test_register_metric_checks_its_arguments() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout)
    spec = builder.create_topology()
    ctx = TopologyContext("t", spec, compute_layout(spec, {}), 1, [1], {})
    with pytest.raises(ValueError, match="metric name"):
        ctx.register_metric("", lambda: 1)
    with pytest.raises(TypeError, match="'m'"):
        ctx.register_metric("m", 5)  # type: ignore[arg-type]


def test_metrics_travel_in_heartbeats_to_topology_info() -> None:
    docs = [{"component": "kafka", "task": 3, "metrics": {"kafkaOffset": {"lag": 1}}},
            {"component": "kafka", "task": 4}, {"component": "count", "task": 5}]
    assert task_metrics(docs) == {"kafka": {"3": {"kafkaOffset": {"lag": 1}}}}
    beats = {("n1", 6700): WorkerHeartbeat("t-1", "n1", 6700, 10.0, 1.0, [(3, 3)],
                                           metrics={"kafka": {"3": {"kafkaOffset": {"lag": 1}}}}),
             ("n1", 6701): WorkerHeartbeat("t-1", "n1", 6701, 10.0, 1.0, [(4, 4)],
                                           metrics={"kafka": {"4": {"kafkaOffset": {"lag": 7}}}})}
    assignment = Assignment("t-1", "bundle", {(3, 3): ("n1", 6700), (4, 4): ("n1", 6701)},
                            {"n1": "host"})
    base = StormBase("t-1", "t", "active", 2, 0.0, "me", {"kafka": 2})
    info = topology_info(base, assignment, None, beats, {}, 10.0)
    assert info["metrics"] == {"kafka": {"3": {"kafkaOffset": {"lag": 1}},
                                         "4": {"kafkaOffset": {"lag": 7}}}}
