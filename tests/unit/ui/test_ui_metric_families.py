"""``/metrics`` exactly as Prometheus reads it (``stormpy.ui._metrics``): every family, its help,
type, labels and values, from the workers' latest heartbeats and Nimbus's figures, and what is
left out when Nimbus cannot answer or a heartbeat carries malformed users' metrics."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("prometheus_client")
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402

from stormpy.cluster import WorkerHeartbeat  # noqa: E402
from stormpy.rpc.errors import RpcError  # noqa: E402
from stormpy.ui._metrics import StormCollector, make_registry  # noqa: E402
from stormpy.ui._source import BackendUnavailable, NotFound  # noqa: E402


class FakeBackend:
    """What the collector reads of a ``UiBackend``."""

    def __init__(self, latest: dict[str, dict[tuple[str, int], WorkerHeartbeat]],
                 cluster: Callable[[], dict[str, Any]], stats: Callable[[], dict[str, Any]]) -> None:
        self.latest = latest
        self.hosts = {"sup-a": "10.0.0.1"}
        self.samples = 12
        self._cluster = cluster
        self._stats = stats

    def clock(self) -> float:
        return 1000.0

    def cluster_info(self) -> dict[str, Any]:
        return self._cluster()

    def daemon_stats(self) -> dict[str, Any]:
        return self._stats()


def raising(error: Exception) -> Callable[[], dict[str, Any]]:
    def call() -> dict[str, Any]:
        raise error
    return call


def exposition(backend: FakeBackend) -> list[str]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StormCollector(backend))  # type: ignore[arg-type]
    return generate_latest(registry).decode().splitlines()


def sample(line: str) -> tuple[str, tuple[tuple[str, str], ...], float]:
    """A sample line as (name, labels in name order, value): Prometheus orders labels by name."""
    match = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
    assert match is not None, line
    labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match[2] or "")))
    return match[1], labels, float(match[3])


def samples(lines: list[str]) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    return [sample(line) for line in lines if not line.startswith("#")]


TASKS = ({"task": 1, "component": "spout", "emitted": {"default": 7, "__ack_init": 2}, "transferred": 9,
          "executed": 0, "acked": 5, "failed": 1, "latency_sum": 0.5, "latency_count": 5,
          "receive_queue": 3, "receive_queue_full": 4},
         {"task": 2, "component": "count", "executed": 6, "execute_latency_count": 2,
          "execute_latency_sum": 0.25, "process_latency_count": 1})
PROCESS = {"cpu_user_secs": 1.5, "cpu_system_secs": 0.5, "rss_bytes": 2048, "threads": 7,
           "gc_collections_0": 11, "gc_collections_2": 1, "frames_refused": 2, "frames_held": 3,
           "backpressure_rounds": 4, "backpressure_secs": 0.75}
USER = {"count": {"2": {
    "hits": {"type": "counter", "count": 4}, "level": {"type": "gauge", "value": 2.5},
    "name": {"type": "gauge", "value": "text"}, "flag": {"type": "counter", "count": True},
    "events": {"type": "meter", "count": 9, "m1_rate": 0.5, "m5_rate": 0.25, "m15_rate": 0.125,
               "mean_rate": 1.0},
    "sizes": {"type": "histogram", "count": 3, "sum": 12.0, "p50": 4.0, "p999": 6.0},
    "took": {"type": "timer", "count": 2, "sum": 500.0, "p75": 300.0, "m1_rate": 2.0},
    "odd": {"type": "histogram"}, "free": 5}}, "broken": ["not", "a", "mapping"]}
CLUSTER = {"nimbus": {"uptime_secs": 99.0},
           "supervisors": [{"id": "sup-a", "host": "10.0.0.1", "slots_total": 4, "slots_used": 1,
                            "stats": {"worker_launches": 3, "worker_restarts": 2}},
                           {"id": "sup-b", "host": "10.0.0.2", "slots_total": 2, "slots_used": 2}],
           "topologies": [{"id": "t-1", "name": "wc", "status": "ACTIVE", "num_workers": 1}]}
STATS = {"host": "nimbus-1", "port": 6627, "uploads": {"finished": 2, "bytes": 2048},
         "rpc": {"calls": {"submit": 1, "info": 7}, "errors": {"submit": 1}, "refused": 4}}


def heartbeats() -> dict[str, dict[tuple[str, int], WorkerHeartbeat]]:
    beat = WorkerHeartbeat(topology_id="t-1", node="sup-a", port=6700, time=990.0, uptime=30.0,
                           tasks=TASKS, process=PROCESS, metrics=USER)
    quiet = WorkerHeartbeat(topology_id="t-1", node="sup-z", port=6701, time=1001.0, uptime=3.0)
    return {"t-1": {("sup-a", 6700): beat, ("sup-z", 6701): quiet}}


T1 = 'topology="t-1",component="spout",task="1",host="10.0.0.1",port="6700"'
T2 = 'topology="t-1",component="count",task="2",host="10.0.0.1",port="6700"'
W = 'topology="t-1",host="10.0.0.1",port="6700"'
WZ = 'topology="t-1",host="sup-z",port="6701"'
U = 'topology="t-1",component="count",task="2",worker="10.0.0.1:6700"'


def test_task_worker_user_and_daemon_families_exactly() -> None:
    lines = exposition(FakeBackend(heartbeats(), lambda: CLUSTER, lambda: STATS))
    assert samples(lines) == samples([
        f'stormpy_task_emitted_total{{{T1},stream="__ack_init"}} 2.0',
        f'stormpy_task_emitted_total{{{T1},stream="default"}} 7.0',
        f"stormpy_task_transferred_total{{{T1}}} 9.0", f"stormpy_task_transferred_total{{{T2}}} 0.0",
        f"stormpy_task_executed_total{{{T1}}} 0.0", f"stormpy_task_executed_total{{{T2}}} 6.0",
        f"stormpy_task_acked_total{{{T1}}} 5.0", f"stormpy_task_acked_total{{{T2}}} 0.0",
        f"stormpy_task_failed_total{{{T1}}} 1.0", f"stormpy_task_failed_total{{{T2}}} 0.0",
        f"stormpy_task_complete_latency_seconds_count{{{T1}}} 5.0",
        f"stormpy_task_complete_latency_seconds_sum{{{T1}}} 0.5",
        f"stormpy_task_execute_latency_seconds_count{{{T2}}} 2.0",
        f"stormpy_task_execute_latency_seconds_sum{{{T2}}} 0.25",
        f"stormpy_task_process_latency_seconds_count{{{T2}}} 1.0",
        f"stormpy_task_process_latency_seconds_sum{{{T2}}} 0.0",
        f"stormpy_task_receive_queue{{{T1}}} 3.0",
        f"stormpy_task_receive_queue_full_total{{{T1}}} 4.0",
        f'stormpy_user_counter{{{U},metric="hits"}} 4.0',
        f'stormpy_user_gauge{{{U},metric="level"}} 2.5',
        f'stormpy_user_meter_total{{{U},metric="events"}} 9.0',
        f'stormpy_user_meter_rate{{{U},metric="events",window="1m"}} 0.5',
        f'stormpy_user_meter_rate{{{U},metric="events",window="5m"}} 0.25',
        f'stormpy_user_meter_rate{{{U},metric="events",window="15m"}} 0.125',
        f'stormpy_user_meter_rate{{{U},metric="events",window="mean"}} 1.0',
        f'stormpy_user_meter_rate{{{U},metric="took",window="1m"}} 2.0',
        f'stormpy_user_histogram{{{U},metric="sizes",quantile="0.5"}} 4.0',
        f'stormpy_user_histogram{{{U},metric="sizes",quantile="0.999"}} 6.0',
        f'stormpy_user_histogram_count{{{U},metric="sizes"}} 3.0',
        f'stormpy_user_histogram_sum{{{U},metric="sizes"}} 12.0',
        f'stormpy_user_timer_seconds{{{U},metric="took",quantile="0.75"}} 0.3',
        f'stormpy_user_timer_seconds_count{{{U},metric="took"}} 2.0',
        f'stormpy_user_timer_seconds_sum{{{U},metric="took"}} 0.5',
        f'stormpy_worker_cpu_seconds_total{{{W},mode="user"}} 1.5',
        f'stormpy_worker_cpu_seconds_total{{{W},mode="system"}} 0.5',
        f"stormpy_worker_resident_memory_bytes{{{W}}} 2048.0",
        f"stormpy_worker_threads{{{W}}} 7.0",
        f'stormpy_worker_gc_collections_total{{{W},generation="0"}} 11.0',
        f'stormpy_worker_gc_collections_total{{{W},generation="2"}} 1.0',
        f"stormpy_worker_uptime_seconds{{{W}}} 30.0", f"stormpy_worker_uptime_seconds{{{WZ}}} 3.0",
        f"stormpy_worker_heartbeat_age_seconds{{{W}}} 10.0",
        f"stormpy_worker_heartbeat_age_seconds{{{WZ}}} 0.0",  # stamped ahead of the UI's clock
        f"stormpy_worker_frames_refused_total{{{W}}} 2.0",
        f"stormpy_worker_frames_held{{{W}}} 3.0",
        f"stormpy_worker_backpressure_rounds_total{{{W}}} 4.0",
        f"stormpy_worker_backpressure_seconds_total{{{W}}} 0.75",
        "stormpy_nimbus_up 1.0",
        "stormpy_ui_heartbeat_samples_total 12.0",
        "stormpy_nimbus_uptime_seconds 99.0",
        'stormpy_supervisor_slots{supervisor="sup-a",host="10.0.0.1",state="used"} 1.0',
        'stormpy_supervisor_slots{supervisor="sup-a",host="10.0.0.1",state="free"} 3.0',
        'stormpy_supervisor_slots{supervisor="sup-b",host="10.0.0.2",state="used"} 2.0',
        'stormpy_supervisor_slots{supervisor="sup-b",host="10.0.0.2",state="free"} 0.0',
        'stormpy_topology_info{topology="t-1",name="wc",status="ACTIVE"} 1.0',
        'stormpy_topology_workers{topology="t-1"} 1.0',
        'stormpy_supervisor_worker_launches_total{supervisor="sup-a",host="10.0.0.1"} 3.0',
        'stormpy_supervisor_worker_restarts_total{supervisor="sup-a",host="10.0.0.1"} 2.0',
        'stormpy_nimbus_uploads_total{host="nimbus-1",port="6627"} 2.0',
        'stormpy_nimbus_upload_bytes_total{host="nimbus-1",port="6627"} 2048.0',
        'stormpy_nimbus_uploads_failed_total{host="nimbus-1",port="6627"} 0.0',
        'stormpy_nimbus_rpc_calls_total{host="nimbus-1",port="6627",method="info"} 7.0',
        'stormpy_nimbus_rpc_calls_total{host="nimbus-1",port="6627",method="submit"} 1.0',
        'stormpy_nimbus_rpc_errors_total{host="nimbus-1",port="6627",method="submit"} 1.0',
        'stormpy_nimbus_rpc_refused_total{host="nimbus-1",port="6627"} 4.0'])


HELP = {
    "stormpy_task_emitted_total": ("counter", "Tuples a task emitted, per stream"),
    "stormpy_task_acked_total": ("counter", "Tuples a task acked"),
    "stormpy_task_complete_latency_seconds": ("summary", "Time from a spout's emit to its tuple tree's ack"),
    "stormpy_task_execute_latency_seconds": ("summary", "Time a bolt spends in execute() (sampled tuples)"),
    "stormpy_task_process_latency_seconds": ("summary",
                                             "Time from a bolt's execute() to its ack (sampled tuples)"),
    "stormpy_task_receive_queue": ("gauge", "Tuples waiting in a task's queue"),
    "stormpy_task_receive_queue_full_total": (
        "counter", "Loop rounds the spouts were held because the task's queue was full"),
    "stormpy_user_counter": ("gauge", "A task's counter (register_counter)"),
    "stormpy_user_gauge": ("gauge", "A task's gauge (register_gauge)"),
    "stormpy_user_meter_total": ("counter", "Events a task's meter marked (register_meter)"),
    "stormpy_user_meter_rate": ("gauge", "A task's meter or timer rate, per second"),
    "stormpy_user_histogram": ("summary", "A task's histogram (register_histogram)"),
    "stormpy_user_timer_seconds": ("summary", "A task's timer (register_timer)"),
    "stormpy_worker_cpu_seconds_total": ("counter", "CPU time of the worker process"),
    "stormpy_worker_resident_memory_bytes": ("gauge", "Resident memory of the worker"),
    "stormpy_worker_threads": ("gauge", "Threads of the worker process"),
    "stormpy_worker_gc_collections_total": ("counter", "Garbage collections in the worker"),
    "stormpy_worker_uptime_seconds": ("gauge", "Seconds since the worker started"),
    "stormpy_worker_heartbeat_age_seconds": ("gauge", "Seconds since the worker's last heartbeat"),
    "stormpy_worker_frames_refused_total": ("counter",
                                            "Frames the transport refused (each failed retry counts)"),
    "stormpy_worker_frames_held": ("gauge", "Frames waiting for their peer worker"),
    "stormpy_worker_backpressure_rounds_total": (
        "counter", "Loop rounds the spouts were held (a full task queue or held frames)"),
    "stormpy_worker_backpressure_seconds_total": ("counter", "Time the spouts were held (spells that ended)"),
    "stormpy_nimbus_up": ("gauge", "1 when Nimbus answered this scrape"),
    "stormpy_ui_heartbeat_samples_total": ("counter", "Heartbeat reads of the UI sampler"),
    "stormpy_nimbus_uptime_seconds": ("gauge", "Seconds since Nimbus started"),
    "stormpy_supervisor_slots": ("gauge", "Worker slots of a supervisor"),
    "stormpy_topology_info": ("gauge", "A running topology (value 1)"),
    "stormpy_topology_workers": ("gauge", "Workers assigned to a topology"),
    "stormpy_supervisor_worker_launches_total": ("counter",
                                                 "Workers a supervisor launched since it started"),
    "stormpy_supervisor_worker_restarts_total": (
        "counter", "Workers a supervisor found dead or silent, or whose executors changed, and "
                   "restarted, since it started"),
    "stormpy_nimbus_uploads_total": ("counter", "Bundle uploads Nimbus accepted"),
    "stormpy_nimbus_upload_bytes_total": ("counter", "Bytes of accepted uploads"),
    "stormpy_nimbus_uploads_failed_total": (
        "counter", "Uploads Nimbus aborted (bad chunk, checksum or bundle, or expired)"),
    "stormpy_nimbus_rpc_calls_total": ("counter", "RPC calls Nimbus executed"),
    "stormpy_nimbus_rpc_errors_total": ("counter", "RPC calls that answered an error"),
    "stormpy_nimbus_rpc_refused_total": ("counter",
                                         "Requests refused (malformed, unauthorised, unknown method)")}


def test_every_family_says_what_it_counts_and_its_type() -> None:
    lines = exposition(FakeBackend(heartbeats(), lambda: CLUSTER, lambda: STATS))
    for name, (kind, text) in HELP.items():
        assert f"# HELP {name} {text}" in lines, name
        assert f"# TYPE {name} {kind}" in lines, name
    for counter in ("transferred", "executed", "failed"):
        assert f"# HELP stormpy_task_{counter}_total Tuples a task {counter}" in lines


@pytest.mark.parametrize("error", [NotFound("method", "get_daemon_stats"), RpcError("refused"),
                                   BackendUnavailable("down")])
def test_nimbus_counters_are_left_out_when_nimbus_cannot_tell(error: Exception) -> None:
    lines = samples(exposition(FakeBackend({}, lambda: CLUSTER, raising(error))))
    assert lines[-1] == sample(
        'stormpy_supervisor_worker_restarts_total{supervisor="sup-a",host="10.0.0.1"} 2.0')
    assert sample("stormpy_nimbus_up 1.0") in lines
    nimbus_counters = ("stormpy_nimbus_upload", "stormpy_nimbus_rpc")
    assert [name for name, _, _ in lines if name.startswith(nimbus_counters)] == []


def test_a_nimbus_that_does_not_answer_leaves_only_its_up_and_the_samples() -> None:
    backend = FakeBackend({}, raising(BackendUnavailable("down")), lambda: STATS)
    assert samples(exposition(backend)) == samples(["stormpy_nimbus_up 0.0",
                                                    "stormpy_ui_heartbeat_samples_total 12.0"])


def test_nimbus_counters_with_no_traffic_yet_are_zeros() -> None:
    lines = samples(exposition(FakeBackend({}, lambda: {}, lambda: {"host": "n", "port": 1})))
    assert lines == samples(["stormpy_nimbus_up 1.0", "stormpy_ui_heartbeat_samples_total 12.0",
                     "stormpy_nimbus_uptime_seconds 0.0",
                     'stormpy_nimbus_uploads_total{host="n",port="1"} 0.0',
                     'stormpy_nimbus_upload_bytes_total{host="n",port="1"} 0.0',
                     'stormpy_nimbus_uploads_failed_total{host="n",port="1"} 0.0',
                     'stormpy_nimbus_rpc_refused_total{host="n",port="1"} 0.0'])


def test_the_registry_adds_the_uis_own_process() -> None:
    backend = FakeBackend({}, raising(BackendUnavailable("down")), lambda: STATS)
    text = generate_latest(make_registry(backend)).decode()  # type: ignore[arg-type]
    assert "stormpy_nimbus_up 0.0" in text
    if os.path.exists("/proc/self/stat"):
        assert "\nstormpy_ui_process_resident_memory_bytes " in text


def user_samples(metrics: object) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    beat = WorkerHeartbeat(topology_id="t-1", node="sup-a", port=6700, time=990.0, uptime=30.0,
                           metrics=metrics)  # type: ignore[arg-type]
    backend = FakeBackend({"t-1": {("sup-a", 6700): beat}}, raising(BackendUnavailable("down")),
                          lambda: {})
    return [s for s in samples(exposition(backend)) if s[0].startswith("stormpy_user_")]


def test_users_metrics_of_another_shape_are_skipped_and_a_summary_without_a_sum_sums_to_zero() -> None:
    assert user_samples(["not", "a", "mapping"]) == []
    task_3 = 'topology="t-1",component="count",task="3",worker="10.0.0.1:6700"'
    malformed_task = {"count": {"2": ["hits"], "3": {"hits": {"type": "counter", "count": 1}}}}
    assert user_samples(malformed_task) == samples([f'stormpy_user_counter{{{task_3},metric="hits"}} 1.0'])
    assert user_samples({"count": {"2": {"sizes": {"type": "histogram", "count": 3},
                                         "took": {"type": "timer", "count": 2}}}}) == samples([
        f'stormpy_user_histogram_count{{{U},metric="sizes"}} 3.0',
        f'stormpy_user_histogram_sum{{{U},metric="sizes"}} 0.0',
        f'stormpy_user_timer_seconds_count{{{U},metric="took"}} 2.0',
        f'stormpy_user_timer_seconds_sum{{{U},metric="took"}} 0.0'])


def test_a_worker_without_system_cpu_time_reports_zero_system_seconds() -> None:
    beat = WorkerHeartbeat(topology_id="t-1", node="sup-a", port=6700, time=990.0, uptime=30.0,
                           process={"cpu_user_secs": 2.0})
    backend = FakeBackend({"t-1": {("sup-a", 6700): beat}}, raising(BackendUnavailable("down")),
                          lambda: {})
    cpu = [s for s in samples(exposition(backend)) if s[0] == "stormpy_worker_cpu_seconds_total"]
    assert cpu == samples([f'stormpy_worker_cpu_seconds_total{{{W},mode="user"}} 2.0',
                           f'stormpy_worker_cpu_seconds_total{{{W},mode="system"}} 0.0'])


def test_building_the_registry_asks_nimbus_nothing_until_a_scrape() -> None:
    calls: list[str] = []

    def cluster() -> dict[str, Any]:
        calls.append("cluster_info")
        raise BackendUnavailable("down")
    registry = make_registry(FakeBackend({}, cluster, lambda: {}))  # type: ignore[arg-type]
    assert calls == []
    generate_latest(registry)
    assert calls == ["cluster_info"]
