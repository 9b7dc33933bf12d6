"""Connector errors are throttled once: the Kafka spout, the Kafka bolt's delivery half and the
Kinesis spout hand every error to the task's ``report_error`` and log nothing themselves; the
worker's ``TaskErrors`` logs each error once and throttles, per task, what is kept and reported
(``topology.max.error.report.per.interval`` per ``topology.error.throttle.interval.secs``)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kafka_stub import Cluster, Harness

from stormpy.connectors._reporting import report_to_task
from stormpy.connectors.kinesis import KinesisSpout, KinesisSpoutConfig
from stormpy.worker.task_errors import TaskErrors

PER_INTERVAL = 3


class Task:
    """A task's error path as the worker builds it: ``report_error`` → ``TaskErrors.record``."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.reported: list[str] = []
        self.errors = TaskErrors({"topology.max.error.report.per.interval": PER_INTERVAL,
                                  "topology.error.throttle.interval.secs": 10},
                                 lambda: self.now, "host-a", 6700,
                                 lambda component, task, text: self.reported.append(text))

    def report_error(self, text: str) -> None:
        self.errors.record("source", 1, text)


def connector_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("stormpy.connectors")]


def worker_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "stormpy.worker"]


def test_the_kafka_spout_hands_every_error_to_the_task_which_throttles_once(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    task = Task()
    cluster = Cluster()
    cluster.create("t", 1)
    h = Harness(cluster).open()
    h.spout.report_error = task.report_error  # type: ignore[method-assign]
    caplog.clear()
    for i in range(10):  # ten failures of one kind within a second
        h.spout._report(f"committing t-0 failed ({i})")
        task.now += 0.1
    assert h.spout.counters["errors"] == 10
    assert connector_logs(caplog) == []  # the spout neither logs nor throttles ...
    assert len(worker_logs(caplog)) == 10  # ... the task logs each error once ...
    assert task.reported == [f"KafkaSpout: committing t-0 failed ({i})" for i in range(PER_INTERVAL)]
    assert task.errors.suppressed == 10 - PER_INTERVAL  # ... and throttles what goes on


def test_the_kinesis_spout_hands_every_error_to_the_task(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    task = Task()
    spout = KinesisSpout(KinesisSpoutConfig(name="clicks", stream="c").to_doc())
    spout.report_error = task.report_error  # type: ignore[method-assign]
    spout.errors = 0
    for _ in range(5):
        spout._background_error(ConnectionError("endpoint unreachable"))
    assert spout.errors == 5
    assert spout.last_error == "KinesisSpout 'clicks': ConnectionError: endpoint unreachable"
    assert connector_logs(caplog) == []
    assert len(worker_logs(caplog)) == 5
    assert len(task.reported) == PER_INTERVAL and task.errors.suppressed == 5 - PER_INTERVAL


def test_an_unbound_component_logs_the_error_instead(caplog: pytest.LogCaptureFixture) -> None:
    class Unbound:
        def report_error(self, text: Any) -> None:
            raise RuntimeError("not bound to a runtime")

    caplog.set_level(logging.WARNING)
    report_to_task(Unbound(), "KafkaBolt", "delivery failed")
    assert connector_logs(caplog) == ["KafkaBolt: delivery failed"]
