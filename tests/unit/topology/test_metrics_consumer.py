"""Storm's metrics-consumer hook (``topology.metrics.consumer.register``) in local mode, and the
validation of its entries."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.testing import LocalCluster
from stormpy.topology import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._metrics_consumer import (
    ConsumerContext,
    IMetricsConsumer,
    TaskInfo,
    parse_consumer_register,
)
from stormpy.worker.metrics_consumers import MetricsFeed, data_points

RECORDS: list[tuple[TaskInfo, dict[str, Any]]] = []
EVENTS: list[tuple[str, Any]] = []
LOCK = threading.Lock()


class RecordingConsumer(IMetricsConsumer):
    def prepare(self, conf: Mapping[str, Any], argument: Any, context: ConsumerContext) -> None:
        with LOCK:
            EVENTS.append(("prepare", (argument, context)))

    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        with LOCK:
            RECORDS.append((task_info, data_points))

    def cleanup(self) -> None:
        with LOCK:
            EVENTS.append(("cleanup", None))


class BrokenConsumer(IMetricsConsumer):
    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        raise RuntimeError("consumer bug")


class NumberSpout(Spout):
    outputs = ["n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.n = 0
        context.register_metric("progress", lambda: self.n)

    def next_tuple(self) -> None:
        if self.n < 20:
            self.n += 1
            self.emit([self.n], msg_id=self.n)


class Sink(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_consumer_receives_data_points_with_acked_counts_in_local_mode() -> None:
    RECORDS.clear()
    EVENTS.clear()
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout)
    builder.set_bolt("sink", Sink, 2).shuffle_grouping("numbers")
    conf = {"topology.builtin.metrics.bucket.size.secs": 0.05,
            "topology.metrics.consumer.register": [
                {"class": RecordingConsumer, "argument": {"to": "list"}, "parallelism.hint": 1},
                {"class": BrokenConsumer}]}
    with LocalCluster() as cluster:
        cluster.submit_topology("mc", conf, builder.create_topology())

        def spout_acked() -> bool:
            with LOCK:
                return any(info.component == "numbers" and points["acked"] == 20
                           and points["progress"] == 20 for info, points in RECORDS)
        cluster.wait_for(spout_acked, timeout=30)
        cluster.kill_topology("mc")
    with LOCK:
        records, events = list(RECORDS), list(EVENTS)
    assert events[0][0] == "prepare" and events[-1] == ("cleanup", None)
    argument, context = events[0][1]
    assert argument == {"to": "list"} and context.port == 0
    assert {info.component for info, _ in records} >= {"numbers", "sink"}
    assert set(context.tasks) == {info.task for info, _ in records}
    sink = [p for info, p in records if info.component == "sink"]
    assert sum(p["executed"] for p in sink[-2:]) > 0
    spout = [p for info, p in records if info.component == "numbers"][-1]
    assert spout["emitted"]["default"] == 20 and spout["complete_latency_ms"] >= 0
    assert all(info.timestamp > 0 and info.host for info, _ in records)


def test_data_points_of_a_task_doc() -> None:
    doc = {"task": 3, "component": "c", "emitted": {"default": 4}, "acked": 2, "failed": 0,
           "latency_sum": 0.5, "latency_count": 2, "metrics": {"queue": 7}}
    points = data_points(doc)
    assert points == {"emitted": {"default": 4}, "acked": 2, "failed": 0, "latency_sum": 0.5,
                      "latency_count": 2, "complete_latency_ms": 250.0, "queue": 7}


@pytest.mark.parametrize(("value", "message"), [
    ("x", "must be a list"),
    (["x"], r"\[0\]:? must be a map"),
    ([{"class": "nocolon"}], r"\[0\].class:? must be an import path"),
    ([{}], r"\[0\].class:? is missing"),
    ([{"class": "a:B", "parallelism.hint": 0}], "parallelism.hint:? must be an int"),
    ([{"class": "a:B", "argumnet": 1}], r"unknown fields \['argumnet'\]"),
])
def test_bad_registrations_are_refused_naming_the_field(value: Any, message: str) -> None:
    """The worker's parser and the submit check (the key table's rule) name the same field."""
    with pytest.raises(ValueError, match=message):
        parse_consumer_register(value)
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout)
    with LocalCluster() as cluster, pytest.raises(SettingError, match=message):
        cluster.submit_topology("bad", {"topology.metrics.consumer.register": value},
                                builder.create_topology())


def test_a_consumer_that_cannot_load_is_left_out_and_bad_intervals_refused() -> None:
    context = ConsumerContext("t", "h", 1, (1,))
    feed = MetricsFeed({"topology.metrics.consumer.register": [{"class": "no.such.module:X"}],
                        "topology.builtin.metrics.bucket.size.secs": 0.01}, context, lambda: None)
    feed.start()
    feed.stop()
    assert feed.consumers == []
    with pytest.raises(ValueError, match="bucket.size.secs must be a number > 0"):
        MetricsFeed({"topology.builtin.metrics.bucket.size.secs": -1}, context, lambda: None)
