"""MetricsFeed's parts without its thread: the delivery interval, one task's data points,
preparing consumers (by class or import path, a broken one left out, the next still prepared)
and one delivery round."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy.testing import wait_for
from stormpy.topology._metrics_consumer import ConsumerContext, IMetricsConsumer, TaskInfo
from stormpy.worker.metrics_consumers import MetricsFeed, data_points, feed_interval

CONTEXT = ConsumerContext("topo-1", "host-a", 6701, (3, 4))
PREPARED: list[tuple[str, Any, Any, Any]] = []
HANDLED: list[tuple[str, TaskInfo, dict[str, Any]]] = []


class Keeper(IMetricsConsumer):
    def prepare(self, conf: Mapping[str, Any], argument: Any, context: ConsumerContext) -> None:
        PREPARED.append((type(self).__name__, conf.get("marker"), argument, context))

    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        HANDLED.append((type(self).__name__, task_info, data_points))


class OtherKeeper(Keeper):
    pass


class NotAConsumer:
    pass


@pytest.fixture(autouse=True)
def _clear() -> None:
    PREPARED.clear()
    HANDLED.clear()


@pytest.mark.parametrize(("value", "expected"), [(None, 60.0), (5, 5.0), (0.5, 0.5)])
def test_the_interval_is_the_bucket_size(value: Any, expected: float) -> None:
    conf = {} if value is None else {"topology.builtin.metrics.bucket.size.secs": value}
    assert feed_interval(conf) == expected


@pytest.mark.parametrize("bad", [0, -1, True, "10"])
def test_a_bad_bucket_size_is_refused_naming_the_key(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"topology.builtin.metrics.bucket.size.secs must be a number > 0"):
        feed_interval({"topology.builtin.metrics.bucket.size.secs": bad})


def test_data_points_round_the_complete_latency_to_microseconds() -> None:
    doc = {"component": "c", "task": 3, "executed": 7, "latency_sum": 0.0123456789, "latency_count": 10}
    points = data_points(doc)
    assert points == {"emitted": {}, "executed": 7, "latency_sum": 0.0123456789, "latency_count": 10,
                      "complete_latency_ms": 1.235}


def feed(consumers: list[dict[str, Any]], source: Any = lambda: []) -> MetricsFeed:
    return MetricsFeed({"topology.metrics.consumer.register": consumers, "marker": "m"}, CONTEXT, source)


def test_consumers_are_prepared_by_class_or_path_and_a_broken_one_is_left_out() -> None:
    mf = feed([{"class": f"{__name__}:NotAConsumer"}, {"class": Keeper, "argument": {"a": 1}},
               {"class": f"{__name__}:OtherKeeper", "argument": 2}])
    assert mf.deliveries == 0 and mf.consumers == []
    mf._prepare()
    assert [type(c).__name__ for c in mf.consumers] == ["Keeper", "OtherKeeper"]
    assert PREPARED == [("Keeper", "m", {"a": 1}, CONTEXT), ("OtherKeeper", "m", 2, CONTEXT)]


def test_a_non_consumer_is_named_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    mf = feed([{"class": NotAConsumer}])
    mf._prepare()
    assert mf.consumers == []
    assert "is not an IMetricsConsumer" in caplog.text and "topo-1" in caplog.text


def test_each_round_hands_every_task_to_every_consumer_and_is_counted() -> None:
    docs = [{"component": "split", "task": 3, "acked": 2, "emitted": {"default": 5}},
            {"component": "count", "task": 4, "executed": 9}]
    mf = feed([{"class": Keeper}, {"class": OtherKeeper}], lambda: docs)
    mf._prepare()
    mf.deliver()
    mf.deliver()
    assert mf.deliveries == 2
    assert len(HANDLED) == 8
    name, info, points = HANDLED[0]
    assert (name, info.component, info.task, info.host, info.port) == ("Keeper", "split", 3, "host-a", 6701)
    assert points == {"emitted": {"default": 5}, "acked": 2}
    assert HANDLED[1][1].task == 4 and HANDLED[1][2] == {"emitted": {}, "executed": 9}


def test_a_round_without_statistics_is_not_counted() -> None:
    mf = feed([{"class": Keeper}], lambda: None)
    mf._prepare()
    mf.deliver()
    assert mf.deliveries == 0 and HANDLED == []


def test_the_feed_thread_is_a_named_daemon_and_stop_joins_it() -> None:
    mf = feed([{"class": Keeper}]).start()
    thread = wait_for(lambda: next((t for t in threading.enumerate()
                                    if t.name == "stormpy-metrics-consumers"), None),
                      30, "the feed's thread")
    assert thread.daemon
    mf.stop()
    assert not thread.is_alive() and threading.current_thread() is not thread
