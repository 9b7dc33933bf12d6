"""``/metrics``: Prometheus exposition of the workers' heartbeats and the daemons' state.

How figures get here: every worker writes a ``WorkerHeartbeat`` to ZooKeeper each
``worker.heartbeat.frequency.secs`` with its per-task counters and process figures (cumulative
since the worker started); the UI's sampler reads them every ``ui.poll.secs``
(:class:`~stormpy.ui._source.UiBackend`) and this collector exposes the latest ones on each scrape.
A restarted worker starts again from zero, which Prometheus counters handle as a reset. No worker
opens a port of its own for metrics, so nothing new needs to be reachable or secured.

Metric names (labels ``topology``, ``component``, ``task``, ``host``, ``port``; emitted also
``stream``): ``stormpy_task_{emitted,transferred,executed,acked,failed}_total``,
``stormpy_task_complete_latency_seconds`` (summary: ``_sum``/``_count``),
``stormpy_task_{execute,process}_latency_seconds`` (bolts; summaries of the *sampled* tuples,
``topology.stats.sample.rate``: ``_count`` is the timed tuples, not all executed ones),
``stormpy_task_receive_queue`` (tuples waiting in the task's queue, a gauge) and
``stormpy_task_receive_queue_full_total`` (loop rounds the spouts were held because that queue
was full); worker process figures (``topology``, ``host``, ``port``):
``stormpy_worker_cpu_seconds_total{mode}``,
``stormpy_worker_resident_memory_bytes``, ``stormpy_worker_threads``,
``stormpy_worker_gc_collections_total{generation}``, ``stormpy_worker_uptime_seconds``,
``stormpy_worker_heartbeat_age_seconds``, and its backpressure:
``stormpy_worker_frames_refused_total`` (frames the transport refused, retries included),
``stormpy_worker_frames_held`` (frames waiting for their peer), ``stormpy_worker_backpressure_rounds_total``
and ``stormpy_worker_backpressure_seconds_total`` (loop rounds and time the spouts were held);
daemons: ``stormpy_nimbus_up``,
``stormpy_nimbus_uptime_seconds``, ``stormpy_supervisor_slots{supervisor,host,state}``,
``stormpy_topology_info{topology,name,status}``, ``stormpy_topology_workers{topology}``,
``stormpy_supervisor_worker_{launches,restarts}_total{supervisor,host}`` (the supervisors'
ZooKeeper records), ``stormpy_nimbus_{uploads,upload_bytes,uploads_failed}_total{host,port}``,
``stormpy_nimbus_rpc_{calls,errors}_total{host,port,method}`` and
``stormpy_nimbus_rpc_refused_total{host,port}`` (Nimbus's ``get_daemon_stats``),
``stormpy_ui_heartbeat_samples_total``. The UI's own process: ``stormpy_ui_process_*``.

Users' metrics (``context.register_counter`` ... ``register_timer``, see
:mod:`stormpy.topology._user_metrics`), one family per kind, labels ``topology``, ``component``,
``task``, ``worker`` (``host:port``) and ``metric`` (the registered name):
``stormpy_user_counter`` (a gauge: a counter may go down), ``stormpy_user_gauge`` (numeric
values only), ``stormpy_user_histogram`` (a summary: quantiles 0.5 ... 0.999 of the latest
updates, ``_sum`` and ``_count`` of all), ``stormpy_user_meter_total`` (events) with
``stormpy_user_meter_rate{window="1m|5m|15m|mean"}`` (events per second) and
``stormpy_user_timer_seconds`` (a summary of durations). ``context.register_metric`` values are
not exported (they are free-form).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from stormpy.rpc.errors import RpcError
from stormpy.ui._source import BackendUnavailable, NotFound, UiBackend

__all__ = ["StormCollector", "make_registry"]

_TASK_LABELS = ["topology", "component", "task", "host", "port"]
_WORKER_LABELS = ["topology", "host", "port"]
_COUNTERS = ("transferred", "executed", "acked", "failed")
_USER_LABELS = ["topology", "component", "task", "worker"]
_QUANTILE_KEYS = (("p50", "0.5"), ("p75", "0.75"), ("p95", "0.95"), ("p98", "0.98"), ("p99", "0.99"),
                  ("p999", "0.999"))


class StormCollector(Collector):
    """Reads the backend's latest heartbeats (and asks Nimbus for the daemon figures) per scrape."""

    def __init__(self, backend: UiBackend) -> None:
        self.backend = backend

    def collect(self) -> Iterator[Metric]:
        yield from self._task_metrics()
        yield from self._user_metrics()
        yield from self._worker_metrics()
        yield from self._daemon_metrics()

    def _beats(self) -> Iterator[tuple[str, str, str, Any]]:
        hosts = dict(self.backend.hosts)
        for topology_id, beats in sorted(dict(self.backend.latest).items()):
            for (node, port), beat in sorted(beats.items()):
                yield topology_id, hosts.get(node, node), str(port), beat

    def _task_metrics(self) -> Iterator[Metric]:
        emitted = CounterMetricFamily("stormpy_task_emitted", "Tuples a task emitted, per stream",
                                      labels=[*_TASK_LABELS, "stream"])
        counters = {name: CounterMetricFamily(f"stormpy_task_{name}", f"Tuples a task {name}",
                                              labels=_TASK_LABELS) for name in _COUNTERS}
        complete = SummaryMetricFamily("stormpy_task_complete_latency_seconds",
                                       "Time from a spout's emit to its tuple tree's ack",
                                       labels=_TASK_LABELS)
        sampled = {name: SummaryMetricFamily(f"stormpy_task_{name}_latency_seconds", doc,
                                             labels=_TASK_LABELS)
                   for name, doc in (("execute", "Time a bolt spends in execute() (sampled tuples)"),
                                     ("process", "Time from a bolt's execute() to its ack (sampled "
                                      "tuples)"))}
        queue = GaugeMetricFamily("stormpy_task_receive_queue", "Tuples waiting in a task's queue",
                                  labels=_TASK_LABELS)
        full = CounterMetricFamily("stormpy_task_receive_queue_full",
                                   "Loop rounds the spouts were held because the task's queue was full",
                                   labels=_TASK_LABELS)
        for topology_id, host, port, beat in self._beats():
            for entry in beat.tasks:
                labels = [topology_id, str(entry["component"]), str(entry["task"]), host, port]
                for stream, n in sorted(entry.get("emitted", {}).items()):
                    emitted.add_metric([*labels, stream], float(n))
                for name, family in counters.items():
                    family.add_metric(labels, float(entry.get(name, 0)))
                if entry.get("latency_count"):
                    complete.add_metric(labels, int(entry["latency_count"]), float(entry["latency_sum"]))
                for name, summary in sampled.items():
                    if f"{name}_latency_count" in entry:
                        summary.add_metric(labels, int(entry[f"{name}_latency_count"]),
                                          float(entry.get(f"{name}_latency_sum", 0.0)))
                if "receive_queue" in entry:
                    queue.add_metric(labels, float(entry["receive_queue"]))
                if "receive_queue_full" in entry:
                    full.add_metric(labels, float(entry["receive_queue_full"]))
        yield emitted
        yield from counters.values()
        yield complete
        yield from sampled.values()
        yield from (queue, full)

    def _user_metrics(self) -> Iterator[Metric]:
        labels = [*_USER_LABELS, "metric"]
        counter = GaugeMetricFamily("stormpy_user_counter", "A task's counter (register_counter)",
                                    labels=labels)
        gauge = GaugeMetricFamily("stormpy_user_gauge", "A task's gauge (register_gauge)", labels=labels)
        meter = CounterMetricFamily("stormpy_user_meter", "Events a task's meter marked (register_meter)",
                                    labels=labels)
        rate = GaugeMetricFamily("stormpy_user_meter_rate", "A task's meter or timer rate, per second",
                                 labels=[*labels, "window"])
        summaries = {"histogram": Metric("stormpy_user_histogram",
                                         "A task's histogram (register_histogram)", "summary"),
                     "timer": Metric("stormpy_user_timer_seconds", "A task's timer (register_timer)",
                                     "summary")}
        for topology_id, host, port, beat in self._beats():
            for component, task, name, value in _named_metrics(beat.metrics):
                kind = value.get("type") if isinstance(value, dict) else None
                values = [topology_id, component, task, f"{host}:{port}", name]
                if kind == "counter" and _is_number(value.get("count")):
                    counter.add_metric(values, float(value["count"]))
                elif kind == "gauge" and _is_number(value.get("value")):
                    gauge.add_metric(values, float(value["value"]))
                elif kind == "meter" and _is_number(value.get("count")):
                    meter.add_metric(values, float(value["count"]))
                    _add_rates(rate, values, value)
                elif kind in summaries and _is_number(value.get("count")):
                    scale = 0.001 if kind == "timer" else 1.0  # timers report milliseconds
                    _add_summary(summaries[kind], dict(zip(labels, values)), value, scale)
                    if kind == "timer":
                        _add_rates(rate, values, value)
        yield from (counter, gauge, meter, rate, *summaries.values())

    def _worker_metrics(self) -> Iterator[Metric]:
        cpu = CounterMetricFamily("stormpy_worker_cpu_seconds", "CPU time of the worker process",
                                  labels=[*_WORKER_LABELS, "mode"])
        rss = GaugeMetricFamily("stormpy_worker_resident_memory_bytes", "Resident memory of the worker",
                                labels=_WORKER_LABELS)
        threads = GaugeMetricFamily("stormpy_worker_threads", "Threads of the worker process",
                                    labels=_WORKER_LABELS)
        gc = CounterMetricFamily("stormpy_worker_gc_collections", "Garbage collections in the worker",
                                 labels=[*_WORKER_LABELS, "generation"])
        uptime = GaugeMetricFamily("stormpy_worker_uptime_seconds", "Seconds since the worker started",
                                   labels=_WORKER_LABELS)
        age = GaugeMetricFamily("stormpy_worker_heartbeat_age_seconds",
                                "Seconds since the worker's last heartbeat", labels=_WORKER_LABELS)
        pressure = [(key, family(name, doc, labels=_WORKER_LABELS)) for key, family, name, doc in (
            ("frames_refused", CounterMetricFamily, "stormpy_worker_frames_refused",
             "Frames the transport refused (each failed retry counts)"),
            ("frames_held", GaugeMetricFamily, "stormpy_worker_frames_held",
             "Frames waiting for their peer worker"),
            ("backpressure_rounds", CounterMetricFamily, "stormpy_worker_backpressure_rounds",
             "Loop rounds the spouts were held (a full task queue or held frames)"),
            ("backpressure_secs", CounterMetricFamily, "stormpy_worker_backpressure_seconds",
             "Time the spouts were held (spells that ended)"))]
        now = self.backend.clock()
        for topology_id, host, port, beat in self._beats():
            labels = [topology_id, host, port]
            uptime.add_metric(labels, beat.uptime)
            age.add_metric(labels, max(0.0, now - beat.time))
            p = beat.process
            if "cpu_user_secs" in p:
                cpu.add_metric([*labels, "user"], p["cpu_user_secs"])
                cpu.add_metric([*labels, "system"], p.get("cpu_system_secs", 0.0))
            if "rss_bytes" in p:
                rss.add_metric(labels, p["rss_bytes"])
            if "threads" in p:
                threads.add_metric(labels, p["threads"])
            for key, value in sorted(p.items()):
                if key.startswith("gc_collections_"):
                    gc.add_metric([*labels, key.rsplit("_", 1)[1]], value)
            for key, metric in pressure:
                if key in p:
                    metric.add_metric(labels, float(p[key]))
        yield from (cpu, rss, threads, gc, uptime, age)
        yield from (metric for _key, metric in pressure)

    def _daemon_metrics(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("stormpy_nimbus_up", "1 when Nimbus answered this scrape")
        samples = CounterMetricFamily("stormpy_ui_heartbeat_samples", "Heartbeat reads of the UI sampler")
        samples.add_metric([], float(self.backend.samples))
        try:
            cluster = self.backend.cluster_info()
        except BackendUnavailable:
            up.add_metric([], 0.0)
            yield from (up, samples)
            return
        up.add_metric([], 1.0)
        nimbus = GaugeMetricFamily("stormpy_nimbus_uptime_seconds", "Seconds since Nimbus started")
        nimbus.add_metric([], float(cluster.get("nimbus", {}).get("uptime_secs") or 0))
        slots = GaugeMetricFamily("stormpy_supervisor_slots", "Worker slots of a supervisor",
                                  labels=["supervisor", "host", "state"])
        for s in cluster.get("supervisors", []):
            slots.add_metric([s["id"], s["host"], "used"], s["slots_used"])
            slots.add_metric([s["id"], s["host"], "free"], s["slots_total"] - s["slots_used"])
        info = GaugeMetricFamily("stormpy_topology_info", "A running topology (value 1)",
                                 labels=["topology", "name", "status"])
        workers = GaugeMetricFamily("stormpy_topology_workers", "Workers assigned to a topology",
                                    labels=["topology"])
        launches = CounterMetricFamily("stormpy_supervisor_worker_launches",
                                       "Workers a supervisor launched since it started",
                                       labels=["supervisor", "host"])
        restarts = CounterMetricFamily("stormpy_supervisor_worker_restarts",
                                       "Workers a supervisor found dead or silent, or whose "
                                       "executors changed, and restarted, since it started",
                                       labels=["supervisor", "host"])
        for s in cluster.get("supervisors", []):
            stats = s.get("stats") or {}
            if "worker_launches" in stats:
                launches.add_metric([s["id"], s["host"]], float(stats["worker_launches"]))
            if "worker_restarts" in stats:
                restarts.add_metric([s["id"], s["host"]], float(stats["worker_restarts"]))
        for t in cluster.get("topologies", []):
            info.add_metric([t["id"], t["name"], t["status"]], 1.0)
            workers.add_metric([t["id"]], t["num_workers"])
        yield from (up, samples, nimbus, slots, info, workers, launches, restarts)
        yield from self._nimbus_counters()

    def _nimbus_counters(self) -> Iterator[Metric]:
        """Uploads and RPCs of the Nimbus the UI talks to; nothing when it cannot tell (down,
        or a Nimbus without ``get_daemon_stats``)."""
        try:
            stats = self.backend.daemon_stats()
        except (BackendUnavailable, NotFound, RpcError):
            return
        labels = ["host", "port"]
        where = [str(stats.get("host")), str(stats.get("port"))]
        uploads = stats.get("uploads") or {}
        for key, name, doc in (("finished", "stormpy_nimbus_uploads", "Bundle uploads Nimbus accepted"),
                               ("bytes", "stormpy_nimbus_upload_bytes", "Bytes of accepted uploads"),
                               ("failed", "stormpy_nimbus_uploads_failed",
                                "Uploads Nimbus aborted (bad chunk, checksum or bundle, or expired)")):
            family = CounterMetricFamily(name, doc, labels=labels)
            family.add_metric(where, float(uploads.get(key, 0)))
            yield family
        rpc = stats.get("rpc") or {}
        calls = CounterMetricFamily("stormpy_nimbus_rpc_calls", "RPC calls Nimbus executed",
                                    labels=[*labels, "method"])
        errors = CounterMetricFamily("stormpy_nimbus_rpc_errors", "RPC calls that answered an error",
                                     labels=[*labels, "method"])
        for method, n in sorted((rpc.get("calls") or {}).items()):
            calls.add_metric([*where, method], float(n))
        for method, n in sorted((rpc.get("errors") or {}).items()):
            errors.add_metric([*where, method], float(n))
        refused = CounterMetricFamily("stormpy_nimbus_rpc_refused",
                                      "Requests refused (malformed, unauthorised, unknown method)",
                                      labels=labels)
        refused.add_metric(where, float(rpc.get("refused", 0)))
        yield from (calls, errors, refused)


def _named_metrics(metrics: Any) -> Iterator[tuple[str, str, str, Any]]:
    """(component, task, name, value) of a heartbeat's ``metrics`` (component → task → name →
    value), skipping what is not of that shape."""
    if not isinstance(metrics, dict):
        return
    for component, by_task in sorted(metrics.items()):
        for task, named in sorted(by_task.items()) if isinstance(by_task, dict) else ():
            for name, value in sorted(named.items()) if isinstance(named, dict) else ():
                yield str(component), str(task), str(name), value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _add_rates(family: GaugeMetricFamily, labels: list[str], value: dict[str, Any]) -> None:
    for window, key in (("1m", "m1_rate"), ("5m", "m5_rate"), ("15m", "m15_rate"), ("mean", "mean_rate")):
        if _is_number(value.get(key)):
            family.add_metric([*labels, window], float(value[key]))


def _add_summary(family: Metric, labels: dict[str, str], value: dict[str, Any], scale: float) -> None:
    for key, quantile in _QUANTILE_KEYS:
        if _is_number(value.get(key)):
            family.add_sample(family.name, {**labels, "quantile": quantile}, float(value[key]) * scale)
    family.add_sample(family.name + "_count", labels, float(value["count"]))
    family.add_sample(family.name + "_sum", labels, float(value.get("sum", 0.0)) * scale)


def make_registry(backend: UiBackend) -> CollectorRegistry:
    """A registry with the stormpy collector and the UI process's own figures."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StormCollector(backend))
    ProcessCollector(namespace="stormpy_ui", registry=registry)
    return registry
