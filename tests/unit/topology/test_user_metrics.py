"""Users' metrics v2 (``context.register_counter`` ... ``register_timer``): what each kind counts,
how its snapshot looks, how the context registers them, and how the UI exports them (Prometheus
text parsed with prometheus_client's parser) and lists them in the REST component document."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import msgpack
import pytest

from stormpy.topology import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._layout import compute_layout
from stormpy.topology._user_metrics import RESERVOIR, Counter, Gauge, Histogram, Meter, Timer


class Source(Spout):
    outputs = ["word"]

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def spec() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", Source)
    builder.set_bolt("count", Sink, 2).shuffle_grouping("words")
    return builder.create_topology()


def context() -> TopologyContext:
    topology = spec()
    return TopologyContext("t-1", topology, compute_layout(topology, {}), 2, [2], {})


def test_each_kind_counts_and_snapshots_plain_data() -> None:
    counter = Counter()
    counter.inc()
    counter.inc(4)
    counter.dec(2)
    assert counter.snapshot() == {"type": "counter", "count": 3}
    histogram = Histogram()
    for v in range(1, 101):
        histogram.update(v)
    snap = histogram.snapshot()
    assert snap["count"] == 100 and snap["sum"] == 5050 and snap["min"] == 1 and snap["max"] == 100
    assert snap["p50"] == 51 and snap["p99"] == 100 and snap["mean"] == pytest.approx(50.5)
    for _ in range(RESERVOIR + 10):  # quantiles over the latest updates only
        histogram.update(1000)
    assert histogram.snapshot()["min"] == 1000 and histogram.snapshot()["count"] == 100 + RESERVOIR + 10
    meter = Meter()
    meter.mark()
    meter.mark(9)
    snap = meter.snapshot()
    assert snap["count"] == 10 and snap["mean_rate"] > 0 and snap["m1_rate"] > 0
    timer = Timer()
    timer.update(0.5)
    with timer.time():
        pass
    snap = timer.snapshot()
    assert snap["type"] == "timer" and snap["count"] == 2 and snap["max"] == 500.0  # milliseconds
    assert snap["duration_units"] == "milliseconds" and snap["m1_rate"] > 0
    assert Gauge(lambda: 7).snapshot() == {"type": "gauge", "value": 7}
    for metric in (counter, histogram, meter, timer):  # they travel in heartbeats
        snap = metric.snapshot()
        assert msgpack.unpackb(msgpack.packb(snap), raw=False) == snap


def test_the_context_registers_metrics_by_name_and_kind() -> None:
    ctx = context()
    words = ctx.register_counter("words")
    assert ctx.register_counter("words") is words  # as Storm's registry: the same one
    with pytest.raises(ValueError, match="'words'.*already a counter"):
        ctx.register_histogram("words")
    ctx.register_metric("legacy", lambda: 1)
    with pytest.raises(ValueError, match="'legacy'.*register_metric"):
        ctx.register_meter("legacy")
    with pytest.raises(ValueError, match="metric name"):
        ctx.register_timer("")
    with pytest.raises(TypeError, match="gauge"):
        ctx.register_gauge("g", 5)  # type: ignore[arg-type]
    ctx.register_gauge("size", lambda: 3)
    ctx.register_gauge("broken", lambda: 1 / 0)
    words.inc(2)
    ctx.register_timer("latency").update(0.002)
    values = ctx.metric_values()
    assert values["words"] == {"type": "counter", "count": 2}
    assert values["size"] == {"type": "gauge", "value": 3} and values["legacy"] == 1
    assert values["latency"]["count"] == 1 and "broken" not in values
    assert ctx.failed_metrics == ["broken"]


if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")


def ui_client(metrics: Mapping[str, Any]) -> Any:
    from starlette.testclient import TestClient

    from stormpy.cluster import WorkerHeartbeat
    from stormpy.ui._app import create_app
    from stormpy.ui._source import UiBackend

    class Nimbus:
        address = "127.0.0.1:1"

        def call(self, method: str, **args: Any) -> Any:
            if method == "get_topology_files":
                return {"spec": spec().to_doc(), "conf": {}}
            if method == "get_topology_info":
                return {"id": "wc-1", "name": "wc", "status": "active", "uptime_secs": 5.0,
                        "workers": [], "components": {"words": {"tasks": 1, "executors": 1},
                                                   "count": {"tasks": 2, "executors": 2}},
                        "metrics": metrics, "errors": {}}
            return {}

        def close(self) -> None:
            pass

    backend = UiBackend({}, state_factory=lambda: None)  # type: ignore[arg-type,return-value]
    backend.client = Nimbus()  # type: ignore[assignment]
    backend.latest["wc-1"] = {("sup-a", 6700): WorkerHeartbeat(
        topology_id="wc-1", node="sup-a", port=6700, time=1.0, uptime=1.0, executors=((2, 3),),
        metrics=dict(metrics))}
    backend.hosts["sup-a"] = "host-a"
    return TestClient(create_app(backend, clock=lambda: 10.0))


def snapshots() -> dict[str, Any]:
    ctx = context()
    ctx.register_counter("words").inc(5)
    ctx.register_gauge("distinct", lambda: 4)
    ctx.register_gauge("label", lambda: "not a number")
    for v in (1.0, 2.0, 3.0):
        ctx.register_histogram("length").update(v)
    ctx.register_meter("tuples").mark(3)
    ctx.register_timer("execute").update(0.25)
    ctx.register_metric("legacy", lambda: {"free": "form"})
    return ctx.metric_values()


def test_prometheus_exports_each_kind_with_topology_component_task_worker_labels() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    client = ui_client({"count": {"2": snapshots()}})
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    samples = {(s.name, s.labels.get("metric"), s.labels.get("quantile"), s.labels.get("window")): s
               for name in ("stormpy_user_counter", "stormpy_user_gauge", "stormpy_user_meter",
                            "stormpy_user_meter_rate", "stormpy_user_histogram",
                            "stormpy_user_timer_seconds")
               for s in families[name].samples}
    words = samples[("stormpy_user_counter", "words", None, None)]
    assert words.value == 5
    assert words.labels == {"topology": "wc-1", "component": "count", "task": "2",
                            "worker": "host-a:6700", "metric": "words"}
    assert samples[("stormpy_user_gauge", "distinct", None, None)].value == 4
    assert ("stormpy_user_gauge", "label", None, None) not in samples  # not a number
    assert families["stormpy_user_histogram"].type == "summary"
    assert samples[("stormpy_user_histogram", "length", "0.5", None)].value == 2.0
    assert samples[("stormpy_user_histogram_count", "length", None, None)].value == 3
    assert samples[("stormpy_user_histogram_sum", "length", None, None)].value == 6.0
    assert samples[("stormpy_user_meter_total", "tuples", None, None)].value == 3
    assert samples[("stormpy_user_meter_rate", "tuples", None, "mean")].value > 0
    assert samples[("stormpy_user_timer_seconds", "execute", "0.99", None)].value == pytest.approx(0.25)
    assert samples[("stormpy_user_timer_seconds_sum", "execute", None, None)].value == pytest.approx(0.25)
    assert not any(key[1] == "legacy" for key in samples)


def test_rest_component_document_lists_metrics_per_task() -> None:
    client = ui_client({"count": {"3": {"words": {"type": "counter", "count": 1}},
                                  "2": snapshots()}})
    rows = client.get("/api/v1/topology/wc-1/component/count?window=:all-time").json()["userMetrics"]
    assert [(r["task"], r["name"]) for r in rows][:3] == [(2, "distinct"), (2, "execute"), (2, "label")]
    by_name = {(r["task"], r["name"]): r for r in rows}
    assert by_name[(2, "words")] == {"task": 2, "name": "words", "type": "counter", "count": 5}
    assert by_name[(3, "words")]["count"] == 1
    assert by_name[(2, "length")]["p50"] == 2.0 and by_name[(2, "length")]["type"] == "histogram"
    assert by_name[(2, "execute")]["duration_units"] == "milliseconds"
    assert by_name[(2, "legacy")] == {"task": 2, "name": "legacy", "type": "metric",
                                      "value": {"free": "form"}}
