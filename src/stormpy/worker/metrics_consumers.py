"""Running a worker's metrics consumers (``topology.metrics.consumer.register``) off the loop.

:class:`MetricsFeed` contract: it owns one side thread. That thread imports and instantiates
the registered consumers, calls their ``prepare``, then every ``interval`` seconds asks
``source()`` for the worker's task statistics (``Worker.task_stats()`` form; None when there are
none yet) and hands each task's data points (:func:`data_points`) to every consumer. ``stop``
calls ``cleanup`` on each consumer (on the same thread) and joins. A consumer whose class cannot
be loaded or whose ``prepare`` raises is logged and left out; one that raises in
``handle_data_points`` is logged (at most once per interval and consumer) and called again next
time. The executor loop never waits for this thread; ``source`` decides where the figures come
from (the cluster link's latest heartbeat statistics, or a request to the loop in local mode).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stormpy.host.service import Service
from stormpy.topology._imports import import_object
from stormpy.topology._metrics_consumer import (
    REGISTER_KEY,
    ConsumerContext,
    IMetricsConsumer,
    TaskInfo,
    parse_consumer_register,
)

__all__ = ["MetricsFeed", "data_points", "feed_interval"]

log = logging.getLogger(__name__)

_NUMERIC_SKIP = ("task", "component", "emitted", "metrics")


def feed_interval(conf: Mapping[str, Any]) -> float:
    """Seconds between deliveries: ``topology.builtin.metrics.bucket.size.secs`` (> 0)."""
    value = conf.get("topology.builtin.metrics.bucket.size.secs")
    if value is None:
        return 60.0
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"topology.builtin.metrics.bucket.size.secs must be a number > 0, "
                         f"got {value!r}")
    return float(value)


def data_points(doc: Mapping[str, Any]) -> dict[str, Any]:
    """One task's data points from its ``task_stats()`` doc: its numeric counters, ``emitted``
    per stream, ``complete_latency_ms`` when measured, and its registered metrics by name."""
    out: dict[str, Any] = {"emitted": {str(s): n for s, n in doc.get("emitted", {}).items()}}
    for key, value in doc.items():
        if key not in _NUMERIC_SKIP and isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value
    if doc.get("latency_count"):
        out["complete_latency_ms"] = round(1000.0 * doc["latency_sum"] / doc["latency_count"], 3)
    for name, value in (doc.get("metrics") or {}).items():
        out[str(name)] = value
    return out


class MetricsFeed:
    """Delivers the data points of one worker's tasks to the topology's metrics consumers."""

    def __init__(self, conf: Mapping[str, Any], context: ConsumerContext,
                 source: Callable[[], Iterable[Mapping[str, Any]] | None]) -> None:
        self.specs = parse_consumer_register(conf.get(REGISTER_KEY))
        self.interval = feed_interval(conf)
        self.conf = dict(conf)
        self.context = context
        self.source = source
        self.deliveries = 0
        self.consumers: list[IMetricsConsumer] = []
        #: the side thread: prepare, then a delivery every interval, then cleanup
        self.service = Service("stormpy-metrics-consumers", self.deliver, interval=self.interval,
                               first_delay=self.interval, on_start=self._prepare,
                               on_stop=self._cleanup, log=log)

    @staticmethod
    def wanted(conf: Mapping[str, Any]) -> bool:
        """True when the topology registers at least one consumer."""
        return bool(conf.get(REGISTER_KEY))

    def start(self) -> MetricsFeed:
        self.service.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop delivering, ``cleanup`` the consumers and join the thread; idempotent."""
        self.service.stop(timeout)

    def _prepare(self) -> None:
        for spec in self.specs:
            try:
                cls = import_object(spec.cls) if isinstance(spec.cls, str) else spec.cls
                consumer = cls()
                if not isinstance(consumer, IMetricsConsumer):
                    raise TypeError(f"{cls!r} is not an IMetricsConsumer")
                consumer.prepare(self.conf, spec.argument, self.context)
            except Exception:  # noqa: BLE001 - a broken consumer must not stop the worker
                log.exception("metrics consumer %r of %s could not be prepared; it is left out",
                              spec.cls, self.context.topology_id)
                continue
            self.consumers.append(consumer)

    def _cleanup(self) -> None:
        for consumer in self.consumers:
            try:
                consumer.cleanup()
            except Exception:  # noqa: BLE001
                log.exception("metrics consumer %r failed in cleanup", consumer)

    def deliver(self) -> None:
        """One round: take the statistics from ``source`` and hand them to every consumer."""
        try:
            docs = self.source()
        except Exception:  # noqa: BLE001 - e.g. the loop did not answer: try next round
            log.warning("no statistics for the metrics consumers this round", exc_info=True)
            return
        if docs is None:
            return
        now = time.time()
        points = [(TaskInfo(str(d["component"]), int(d["task"]), self.context.host,
                            self.context.port, now), data_points(d)) for d in docs]
        for consumer in self.consumers:
            try:
                for info, values in points:
                    consumer.handle_data_points(info, values)
            except Exception:  # noqa: BLE001
                log.exception("metrics consumer %r failed in handle_data_points", consumer)
        self.deliveries += 1
