"""The UI's parts without a cluster: heartbeat task/process fields, windowed counters across worker
restarts, the rebalance body, the token and CSRF rules, the SVG graph and the REST documents over
a fake Nimbus (Starlette's TestClient)."""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from stormpy.cluster import WorkerHeartbeat  # noqa: E402
from stormpy.cluster.records import DocumentError  # noqa: E402
from stormpy.config import DEFAULTS  # noqa: E402
from stormpy.nimbus.handler import NimbusHandler  # noqa: E402
from stormpy.rpc.errors import NotFoundError, RpcError, UnreachableError  # noqa: E402
from stormpy.ui._app import BadRequest, create_app, parse_rebalance  # noqa: E402
from stormpy.ui._graph import render_svg  # noqa: E402
from stormpy.ui._security import CSRF_COOKIE, Denied, UiAuth  # noqa: E402
from stormpy.ui._source import UiBackend  # noqa: E402
from stormpy.ui._windows import ALL_TIME, TopologyWindows, parse_window  # noqa: E402
from stormpy.worker.heartbeats import process_stats, task_entries  # noqa: E402


def task(task_id: int, component: str, acked: int, emitted: int = 0, **extra: Any) -> dict[str, Any]:
    return {"task": task_id, "component": component, "emitted": {"default": emitted, "__ack_init": 1},
            "transferred": emitted, "executed": 0, "acked": acked, "failed": 0, "latency_sum": 0.5,
            "latency_count": acked, **extra}


def beat(time: float, uptime: float, tasks: list[dict[str, Any]], port: int = 6700) -> WorkerHeartbeat:
    return WorkerHeartbeat(topology_id="wc-1", node="sup-a", port=port, time=time, uptime=uptime,
                           executors=((1, 1), (2, 2)), tasks=tuple(tasks))


def test_heartbeat_tasks_and_process_round_trip_and_are_checked() -> None:
    entries = task_entries([task(1, "spout", 3, emitted=5)])
    assert entries[0]["emitted"] == {"default": 5, "__ack_init": 1}
    proc = process_stats()
    assert proc["rss_bytes"] > 0 and "gc_collections_0" in proc
    b = WorkerHeartbeat(topology_id="t", node="n", port=1, time=1.0, uptime=1.0, tasks=tuple(entries),
                        process=proc)
    assert WorkerHeartbeat.from_doc(b.to_doc()) == b
    old = b.to_doc()
    del old["tasks"], old["process"]
    assert WorkerHeartbeat.from_doc(old).tasks == ()
    bad = {**b.to_doc(), "tasks": [{"task": "x", "component": "c"}]}
    with pytest.raises(DocumentError, match="tasks"):
        WorkerHeartbeat.from_doc(bad)


def test_windows_survive_worker_restarts_and_skip_repeated_beats() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([beat(1001, 0.5, [task(1, "spout", 10, emitted=10)])], 1001)  # started after the tracker
    w.observe([beat(1001, 0.5, [task(1, "spout", 10, emitted=10)])], 1002)  # same beat again
    w.observe([beat(1003, 2.5, [task(1, "spout", 25, emitted=25)])], 1003)
    w.observe([beat(1005, 1, [task(1, "spout", 4, emitted=4)])], 1005)  # restarted: from zero
    totals = w.totals(ALL_TIME, 1005)[("spout", 1)]
    assert totals["acked"] == 29 and totals["emitted:default"] == 29
    assert w.totals("600", 1005)[("spout", 1)]["acked"] == 29
    assert w.totals("600", 1005 + 700) == {}  # gone from the 10-minute window
    assert w.totals("10800", 1005 + 700)[("spout", 1)]["acked"] == 29


def test_windows_do_not_count_carried_counters_twice() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([beat(1001, 0.5, [task(1, "spout", 10, emitted=10)])], 1001)
    carried = WorkerHeartbeat(topology_id="wc-1", node="sup-a", port=6700, time=1003, uptime=1,
                              tasks=(task(1, "spout", 14, emitted=14),),
                              process={"counters_carried": 1.0})
    w.observe([carried], 1003)  # restarted, but its counters continue the old ones: +4
    moved = WorkerHeartbeat(topology_id="wc-1", node="sup-b", port=6701, time=1005, uptime=1,
                            tasks=(task(1, "spout", 20, emitted=20),),
                            process={"counters_carried": 1.0})
    w.observe([moved], 1005)  # the task moved to another slot, counters carried: +6
    assert w.totals(ALL_TIME, 1005)[("spout", 1)]["acked"] == 20
    assert w.totals("600", 1005)[("spout", 1)]["emitted:default"] == 20


def test_windows_do_not_count_older_figures_in_recent_windows() -> None:
    w = TopologyWindows(now=10000.0)
    w.observe([beat(10001, 5000, [task(1, "spout", 100)])], 10001)  # running long before the UI
    assert w.totals(ALL_TIME, 10001)[("spout", 1)]["acked"] == 100
    assert w.totals("600", 10001) == {}  # when in its 5000 s they accrued is unknown
    assert w.totals("10800", 10001)[("spout", 1)]["acked"] == 100  # but all within 3 hours
    w.observe([beat(10002, 5001, [task(1, "spout", 130)])], 10002)
    assert w.totals("600", 10002)[("spout", 1)]["acked"] == 30
    assert w.span("600", 10002) == 600 and w.span("10800", 10002) == 5001


def test_windows_of_a_topology_younger_than_the_window_equal_all_time() -> None:
    """The tracker is created by the sample that brings the first heartbeats (as UiBackend does),
    of workers already running: their first figures belong to every window they fit in."""
    w = TopologyWindows(now=1054.0, launched=1000.0)
    spout_a = [task(1, "spout", 0, emitted=400)]  # emitted, not acked yet
    w.observe([beat(1053.5, 53, spout_a), beat(1053.8, 53, [task(2, "spout", 380, emitted=419)], port=6701)],
              1054.0)
    w.observe([beat(1055, 54.5, [task(1, "spout", 400, emitted=430)])], 1055.0)
    # a restarted worker whose counters continue its predecessor's, on a slot not seen before
    carried = WorkerHeartbeat(topology_id="wc-1", node="sup-b", port=6702, time=1056, uptime=0.5,
                              tasks=(task(3, "count", 50, executed=50),), process={"counters_carried": 1.0})
    w.observe([carried], 1056.0)
    for window in ("600", "10800", "86400"):
        assert w.totals(window, 1056.0) == w.totals(ALL_TIME, 1056.0), window
    spouts = w.totals("600", 1056.0)
    emitted = sum(c["emitted:default"] for (comp, _t), c in spouts.items() if comp == "spout")
    acked = sum(c["acked"] for (comp, _t), c in spouts.items() if comp == "spout")
    assert (emitted, acked) == (849, 780)
    assert w.span("600", 1056.0) == 56.0  # rates over the topology's age, not the tracker's


def test_parse_window() -> None:
    assert parse_window(None) == "600" and parse_window(":all-time") == ALL_TIME
    with pytest.raises(ValueError, match="window '7'"):
        parse_window("7")


@pytest.mark.parametrize(("body", "field"), [
    (b"{", "not JSON"), (b"[]", "JSON object"), (b'{"rebalanceOptions": 3}', "rebalanceOptions"),
    (b'{"rebalanceOptions": {"numWorkers": 0}}', "numWorkers"),
    (b'{"rebalanceOptions": {"numWorkers": "2"}}', "numWorkers"),
    (b'{"rebalanceOptions": {"executors": {"count": -1}}}', "executors.count"),
    (b'{"rebalanceOptions": {"workers": 2}}', "rebalanceOptions.workers"),
])
def test_parse_rebalance_names_the_bad_field(body: bytes, field: str) -> None:
    with pytest.raises(BadRequest, match=field):
        parse_rebalance(body)


def test_parse_rebalance_accepts_storms_body() -> None:
    assert parse_rebalance(b"") == (None, None)
    assert parse_rebalance(b'{"rebalanceOptions": {"numWorkers": 3, "executors": {"count": 2}}}') == \
        (3, {"count": 2})


def test_token_and_csrf_rules() -> None:
    open_ui = UiAuth({})
    open_ui.check_post({}, {}, "http")  # a script, no auth configured
    with pytest.raises(Denied, match="CSRF"):
        open_ui.check_post({"cookie": "x=1"}, {}, "http")
    open_ui.check_post({"cookie": "x", "x-csrf-token": "abc", "host": "h:1", "origin": "http://h:1"},
                       {CSRF_COOKIE: "abc"}, "http")
    with pytest.raises(Denied, match="cross-origin"):
        open_ui.check_post({"origin": "http://evil", "host": "h:1"}, {}, "http")
    locked = UiAuth({"nimbus.rpc.auth.token": "s3cret", "ui.auth.protect.gets": True})
    with pytest.raises(Denied) as missing:
        locked.check_post({}, {}, "http")
    assert missing.value.status == 401
    with pytest.raises(Denied) as wrong:
        locked.check_post({"authorization": "Bearer nope"}, {}, "http")
    assert wrong.value.status == 403
    locked.check_post({"authorization": "Bearer s3cret"}, {}, "http")
    with pytest.raises(Denied):
        locked.check_get({})
    assert UiAuth({"ui.auth.token": "a", "nimbus.rpc.auth.token": "b"}).token == "a"


def test_svg_graph_escapes_and_colours_by_capacity() -> None:
    vis = {"spout<x>": {":type": "spout", ":inputs": [], ":link": "#"},
           "count": {":type": "bolt", ":capacity": "0.900", ":inputs": [
               {":component": "spout<x>", ":stream": "default", ":rate": 12.5}], ":link": "#"}}
    svg = render_svg(vis)
    assert svg.startswith("<svg") and "spout&lt;x&gt;" in svg and "spout<x>" not in svg
    assert 'data-rate="12.5"' in svg and "#fca5a5" in svg


# -- the REST layer over a fake Nimbus -------------------------------------------------------------
SPEC = {"version": 1, "components": {
    "spout": {"kind": "spout", "tasks": 1, "inputs": []},
    "count": {"kind": "bolt", "tasks": 2, "inputs": [
        {"component": "spout", "stream": "default", "grouping": {"type": "fields", "fields": ["w"]}}]}}}
# as Nimbus counts them: the acker's executor and task (3) included, as in Storm
TOPOLOGY = {"id": "wc-1", "name": "wc", "status": "active", "num_workers": 1, "requested_workers": 1,
            "num_executors": 4, "num_tasks": 4, "uptime_secs": 3700.0, "owner": "me",
            "workers": [{"node": "sup-a", "host": "127.0.0.1", "port": 6700,
                         "executors": [[1, 1], [2, 2], [3, 3], [4, 4]], "uptime_secs": 20.0,
                         "heartbeat_age_secs": 0.1}],
            "components": {"__acker": {"tasks": 1, "executors": 1}, "spout": {"tasks": 1, "executors": 1},
                           "count": {"tasks": 2, "executors": 2}},
            "errors": {"count": [{"time": 5.0, "task": 2, "host": "h", "port": 6700, "message": "boom"}]}}
CLUSTER = {"nimbus": {"host": "127.0.0.1", "port": 6627, "version": "0.1.0", "uptime_secs": 99.0},
           "supervisors": [{"id": "sup-a", "host": "127.0.0.1", "ports": [6700, 6701], "slots_total": 2,
                            "slots_used": 1, "uptime_secs": 50.0, "version": "0.1.0",
                            "stats": {"worker_launches": 3.0, "worker_restarts": 2.0}}],
           "topologies": [{k: v for k, v in TOPOLOGY.items()
                           if k not in ("workers", "components", "errors")}]}

DAEMON_STATS = {"host": "127.0.0.1", "port": 6627, "is_leader": True,
                "uploads": {"finished": 2, "bytes": 2048, "failed": 1},
                "rpc": {"calls": {"get_cluster_info": 7, "submit_topology": 1},
                        "errors": {"submit_topology": 1}, "refused": 4}}


NIMBUS_CONF = {"nimbus.seeds": ["n1", "n2"], "nimbus.thrift.port": 6627,
               "nimbus.rpc.auth.token": "*****"}


class FakeClient:
    address = "127.0.0.1:1"

    def __init__(self) -> None:
        self.down = False
        self.old_nimbus = False
        self.calls: list[tuple[str, dict[str, Any]]] = []
        #: what ``get_worker_heartbeats`` answers (the leader's heartbeats of a topology)
        self.heartbeats: Any = lambda topology_id: {}

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        if self.down:
            raise UnreachableError("connection refused")
        return dict(self.heartbeats(topology_id))

    def call(self, method: str, **args: Any) -> Any:
        if self.down:
            raise UnreachableError("connection refused")
        self.calls.append((method, args))
        if method == "get_cluster_info":
            return CLUSTER
        if method == "get_daemon_stats":
            return DAEMON_STATS
        if method == "get_nimbus_conf":
            if self.old_nimbus:
                raise RpcError("unknown method 'get_nimbus_conf'")
            return NIMBUS_CONF
        if method == "get_topology_files":
            return {"spec": SPEC, "conf": {"topology.message.timeout.secs": 30, "x.auth.token": "t"}}
        if args.get("name") not in ("wc", "wc-1"):
            raise NotFoundError(f"no topology {args.get('name')!r}")
        return TOPOLOGY if method == "get_topology_info" else {}

    def close(self) -> None:
        pass


Ui = tuple[TestClient, UiBackend, FakeClient]


@pytest.fixture(name="ui")
def ui_fixture() -> Ui:
    backend = UiBackend({"nimbus.rpc.auth.token": "tok"}, state_factory=lambda: None)  # type: ignore
    fake = FakeClient()
    backend.client = fake  # type: ignore[assignment]
    backend.window("wc-1").observe([beat(1.0, 1.0, [task(1, "spout", 40, emitted=40),
                                                    task(2, "count", 20, executed=20),
                                                    task(3, "count", 20, executed=20)])], 2.0)
    return TestClient(create_app(backend, clock=lambda: 10.0)), backend, fake


def test_task_and_executor_totals_count_the_ackers_as_storms_ui_does(
        ui: Ui, monkeypatch: pytest.MonkeyPatch) -> None:
    """Storm's UI counts every task the topology runs (system ones such as ackers too) in
    tasksTotal, as in executorsTotal; the summary, the topology page and the cluster summary
    agree, and the ones of an older Nimbus that sends no num_tasks are left out, not guessed."""
    client, _backend, _fake = ui
    summary = client.get("/api/v1/topology/summary").json()["topologies"][0]
    assert (summary["tasksTotal"], summary["executorsTotal"]) == (4, 4)
    page = client.get("/api/v1/topology/wc-1").json()
    assert (page["tasksTotal"], page["executorsTotal"]) == (4, 4)
    assert sum(r["tasks"] for r in page["spouts"] + page["bolts"]) == 3  # the user's components
    cluster = client.get("/api/v1/cluster/summary").json()
    assert (cluster["tasksTotal"], cluster["executorsTotal"]) == (4, 4)
    old = {k: v for k, v in CLUSTER["topologies"][0].items() if k != "num_tasks"}
    monkeypatch.setitem(CLUSTER, "topologies", [old])
    assert "tasksTotal" not in client.get("/api/v1/topology/summary").json()["topologies"][0]


def test_rest_documents_have_storms_field_names(ui: Ui) -> None:
    client, _backend, _fake = ui
    summary = client.get("/api/v1/topology/summary").json()["topologies"][0]
    assert summary["id"] == "wc-1" and summary["uptime"] == "1h 1m 40s"
    doc = client.get("/api/v1/topology/wc-1", params={"window": ":all-time"}).json()
    assert doc["spouts"][0]["spoutId"] == "spout" and doc["spouts"][0]["acked"] == 40
    assert doc["spouts"][0]["completeLatency"] == "12.500"
    bolt = doc["bolts"][0]
    assert bolt["boltId"] == "count" and bolt["executed"] == 40 and bolt["lastError"] == "boom"
    assert "capacity" not in bolt and "executeLatency" not in bolt  # not measured: left out
    assert doc["configuration"]["x.auth.token"] == "*****"
    assert [r["window"] for r in doc["topologyStats"]] == ["600", "10800", "86400", ":all-time"]
    comp = client.get("/api/v1/topology/wc-1/component/count?window=:all-time").json()
    assert comp["componentType"] == "bolt" and len(comp["executorStats"]) == 2
    assert comp["componentErrors"][0]["error"] == "boom"
    vis = client.get("/api/v1/topology/wc-1/visualization?window=:all-time").json()
    assert vis["count"][":inputs"][0][":emitted"] == 40
    assert client.get("/api/v1/nimbus/summary").json()["nimbuses"][0]["port"] == 6627
    assert client.get("/api/v1/cluster/summary").json()["slotsFree"] == 1


def test_rest_errors(ui: Ui) -> None:
    client, _backend, fake = ui
    missing = client.get("/api/v1/topology/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["errorMessage"]
    assert "ghost" in client.get("/api/v1/topology/wc-1/component/ghost").json()["errorMessage"]
    assert client.get("/api/v1/topology/wc-1?window=5").status_code == 400
    auth = {"Authorization": "Bearer tok"}
    assert client.post("/api/v1/topology/wc-1/activate").status_code == 401
    bad = client.post("/api/v1/topology/wc-1/rebalance/0", headers=auth,
                      content=b'{"rebalanceOptions": {"numWorkers": -2}}')
    assert bad.status_code == 400 and "numWorkers" in bad.json()["errorMessage"]
    assert client.post("/api/v1/topology/wc-1/kill/-1", headers=auth).status_code == 400
    ok = client.post("/api/v1/topology/wc-1/rebalance/5", headers=auth,
                     content=b'{"rebalanceOptions": {"numWorkers": 2}}')
    assert ok.json() == {"topologyOperation": "rebalance", "topologyId": "wc-1", "status": "success"}
    assert ("rebalance", {"name": "wc", "wait_secs": 5.0, "num_workers": 2, "executors": None}) in fake.calls
    fake.down = True
    down = client.get("/api/v1/cluster/summary")
    assert down.status_code == 503 and "not reachable" in down.json()["errorMessage"]


def test_pages_set_the_csrf_cookie_and_ship_their_assets(ui: Ui) -> None:
    client, _backend, _fake = ui
    page = client.get("/topology.html?id=wc-1")
    assert page.status_code == 200 and CSRF_COOKIE in page.cookies
    assert page.cookies[CSRF_COOKIE] in page.text and "http" not in page.text.split("<body")[0].replace(
        "http-equiv", "")
    assert "confirm(" in client.get("/static/ui.js").text
    assert client.get("/static/ui.css").status_code == 200


def test_metrics_export_the_daemons_counters(ui: Ui) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    client, _backend, fake = ui
    text = client.get("/metrics").text
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    nimbus = (("host", "127.0.0.1"), ("port", "6627"))
    sup = (("host", "127.0.0.1"), ("supervisor", "sup-a"))

    def method(name: str) -> tuple[tuple[str, str], ...]:
        return tuple(sorted([*nimbus, ("method", name)]))
    assert samples[("stormpy_supervisor_worker_restarts_total", sup)] == 2
    assert samples[("stormpy_supervisor_worker_launches_total", sup)] == 3
    assert samples[("stormpy_nimbus_uploads_total", nimbus)] == 2
    assert samples[("stormpy_nimbus_upload_bytes_total", nimbus)] == 2048
    assert samples[("stormpy_nimbus_uploads_failed_total", nimbus)] == 1
    assert samples[("stormpy_nimbus_rpc_calls_total", method("get_cluster_info"))] == 7
    assert samples[("stormpy_nimbus_rpc_errors_total", method("submit_topology"))] == 1
    assert samples[("stormpy_nimbus_rpc_refused_total", nimbus)] == 4
    fake.down = True  # Nimbus unreachable: the daemon counters are left out, the scrape answers
    text = client.get("/metrics").text
    assert "stormpy_nimbus_up 0.0" in text and "stormpy_nimbus_rpc_calls_total" not in text


# -- latency, capacity, queues and backpressure ----------------------------------------------------
def sampled(task_id: int, executed: int, lat_sum: float, lat_n: int, **extra: Any) -> dict[str, Any]:
    return task(task_id, "count", executed, executed=executed, execute_latency_sum=lat_sum,
                execute_latency_count=lat_n, **extra)


def test_windows_take_sampled_latencies_as_counters_and_skip_the_queue_level() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([beat(1001, 0.5, [sampled(2, 10, 0.01, 2, receive_queue=9)])], 1001)
    w.observe([beat(1003, 2.5, [sampled(2, 30, 0.03, 6, receive_queue=4)])], 1003)
    w.observe([beat(1005, 1, [sampled(2, 5, 0.005, 1, receive_queue=2)])], 1005)  # restarted
    totals = w.totals("600", 1005)[("count", 2)]
    assert totals["executed"] == 35 and totals["execute_latency_count"] == 7
    assert totals["execute_latency_sum"] == pytest.approx(0.035)
    assert "receive_queue" not in totals


@pytest.fixture(name="timed")
def timed_fixture() -> Ui:
    backend = UiBackend({"nimbus.rpc.auth.token": "tok"}, state_factory=lambda: None)  # type: ignore
    fake = FakeClient()
    backend.client = fake  # type: ignore[assignment]
    tasks = [task(1, "spout", 40, emitted=40),
             sampled(2, 20, 0.010, 2, process_latency_sum=0.012, process_latency_count=2,
                     receive_queue=7, receive_queue_full=3),
             sampled(3, 20, 0.004, 2)]
    b = WorkerHeartbeat(topology_id="wc-1", node="sup-a", port=6700, time=1.0, uptime=1.0,
                        executors=((1, 1), (2, 2), (3, 3)), tasks=tuple(tasks),
                        process={"frames_refused": 5.0, "frames_held": 1.0,
                                 "backpressure_rounds": 8.0, "backpressure_secs": 0.25})
    backend.window("wc-1").observe([b], 2.0)
    backend.latest["wc-1"] = {("sup-a", 6700): b}
    return TestClient(create_app(backend, clock=lambda: 10.0)), backend, fake


def test_rest_has_execute_and_process_latency_and_capacity(timed: Ui) -> None:
    client, backend, _fake = timed
    span = backend.window("wc-1").span(":all-time", 10.0)
    doc = client.get("/api/v1/topology/wc-1", params={"window": ":all-time"}).json()
    bolt = doc["bolts"][0]
    # sampled means: (10 + 4) ms over 4 timed tuples; process 12 ms over 2
    assert bolt["executeLatency"] == "3.500" and bolt["processLatency"] == "6.000"
    # capacity: the busiest executor, task 2: 20 executed * 5 ms over the span
    assert bolt["capacity"] == f"{20 * 0.005 / span:.3f}"
    assert "capacity" not in doc["spouts"][0] and "executeLatency" not in doc["spouts"][0]
    comp = client.get("/api/v1/topology/wc-1/component/count?window=:all-time").json()
    rows = {r["id"]: r for r in comp["executorStats"]}
    assert rows["[2-2]"]["executeLatency"] == "5.000" and rows["[3-3]"]["executeLatency"] == "2.000"
    assert rows["[2-2]"]["capacity"] == f"{20 * 0.005 / span:.3f}"
    assert rows["[3-3]"]["capacity"] == f"{20 * 0.002 / span:.3f}"
    assert "processLatency" not in rows["[3-3]"]  # no timed tuple acked: left out
    stats = {r["window"]: r for r in comp["boltStats"]}
    assert stats[":all-time"]["capacity"] == bolt["capacity"]
    vis = client.get("/api/v1/topology/wc-1/visualization?window=:all-time").json()
    assert vis["count"][":capacity"] == bolt["capacity"] and vis["count"][":latency"] == "3.500"


def test_metrics_export_latency_summaries_queues_and_backpressure(timed: Ui) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    client, _backend, _fake = timed
    samples = {(s.name, s.labels.get("task")): s.value
               for f in text_string_to_metric_families(client.get("/metrics").text)
               for s in f.samples}
    assert samples[("stormpy_task_execute_latency_seconds_count", "2")] == 2
    assert samples[("stormpy_task_execute_latency_seconds_sum", "2")] == pytest.approx(0.01)
    assert samples[("stormpy_task_process_latency_seconds_count", "2")] == 2
    assert ("stormpy_task_process_latency_seconds_count", "1") not in samples  # a spout
    assert samples[("stormpy_task_receive_queue", "2")] == 7
    assert samples[("stormpy_task_receive_queue_full_total", "2")] == 3
    assert samples[("stormpy_worker_frames_refused_total", None)] == 5
    assert samples[("stormpy_worker_frames_held", None)] == 1
    assert samples[("stormpy_worker_backpressure_rounds_total", None)] == 8
    assert samples[("stormpy_worker_backpressure_seconds_total", None)] == 0.25


def test_topology_workers_at_storms_path(ui: Ui) -> None:
    client, _backend, _fake = ui
    for path in ("/api/v1/topology-workers/wc-1", "/api/v1/topology/wc-1/topology-workers"):
        # the fake Nimbus's supervisors publish no log server: no port, no link
        assert client.get(path).json() == {"hostPortList": [{"host": "127.0.0.1", "port": 6700,
                                                             "logviewerPort": None, "workerLogLink": None}]}
    missing = client.get("/api/v1/topology-workers/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["errorMessage"]


def test_cluster_configuration_is_nimbus_s(ui: Ui) -> None:
    client, _backend, fake = ui
    conf = client.get("/api/v1/cluster/configuration").json()
    assert conf == NIMBUS_CONF  # Nimbus's own map, not the UI process's (which holds "tok")
    assert ("get_nimbus_conf", {}) in fake.calls
    fake.old_nimbus = True
    old = client.get("/api/v1/cluster/configuration")
    assert old.status_code == 503 and "configuration" in old.json()["errorMessage"]
    fake.down = True
    assert client.get("/api/v1/cluster/configuration").status_code == 503


def test_nimbus_gives_its_configuration_without_secrets() -> None:
    handler = NimbusHandler(None, None, None, nimbus_info=dict,  # type: ignore[arg-type]
                            conf={"nimbus.rpc.auth.token": "s3cret", "nimbus.thrift.port": 6627,
                                  "x.password": None})
    conf = handler.get_nimbus_conf()
    assert conf == {"nimbus.rpc.auth.token": "*****", "nimbus.thrift.port": 6627, "x.password": None}


def test_topology_configuration_is_the_effective_one(ui: Ui) -> None:
    """The REST topology document merges the defaults under the topology's own settings, so
    msgTimeout is the timeout in force even when the topology did not set one."""
    client, backend, _fake = ui
    backend._specs["wc-1"] = (SPEC, {"topology.workers": 1})  # no message timeout of its own
    doc = client.get("/api/v1/topology/wc-1", params={"window": ":all-time"}).json()
    assert doc["msgTimeout"] == DEFAULTS["topology.message.timeout.secs"]
    assert doc["configuration"]["topology.message.timeout.secs"] == DEFAULTS["topology.message.timeout.secs"]
    assert doc["configuration"]["topology.max.spout.pending"] == DEFAULTS["topology.max.spout.pending"]
    assert doc["configuration"]["topology.workers"] == 1
    backend._specs["wc-1"] = (SPEC, {"topology.message.timeout.secs": 7})
    assert client.get("/api/v1/topology/wc-1").json()["msgTimeout"] == 7


def test_a_degraded_topology_says_why(ui: Ui) -> None:
    client, _backend, _fake = ui
    summary = client.get("/api/v1/topology/summary").json()["topologies"][0]
    assert summary["degraded"] is None
    reason = "no Nimbus holds its code"
    CLUSTER["topologies"][0]["degraded"] = reason  # type: ignore[index]
    TOPOLOGY["degraded"] = reason
    try:
        summary = client.get("/api/v1/topology/summary").json()["topologies"][0]
        assert summary["degraded"] == reason
        assert client.get("/api/v1/topology/wc-1").json()["degraded"] == reason
    finally:
        CLUSTER["topologies"][0].pop("degraded")  # type: ignore[attr-defined]
        TOPOLOGY.pop("degraded")


@pytest.mark.parametrize("action", ["activate", "deactivate", "rebalance/0", "kill/0"])
def test_every_ui_action_needs_the_token(ui: Ui, action: str) -> None:
    client, _backend, fake = ui
    url = f"/api/v1/topology/wc-1/{action}"
    reads = ("get_cluster_info", "get_daemon_stats", "get_nimbus_conf", "get_topology_files",
             "get_topology_info")

    def writes() -> list[str]:
        return [method for method, _ in fake.calls if method not in reads]

    assert client.post(url).status_code == 401
    assert client.post(url, headers={"Authorization": "Bearer nope"}).status_code == 403
    assert writes() == []  # nothing reached Nimbus
    assert client.post(url, headers={"Authorization": "Bearer tok"}).status_code == 200
    assert len(writes()) == 1


class SampledState:
    """What UiBackend.sample reads: one topology launched at 1000 (ZooKeeper) and its beats (the
    leader, through the fake client)."""

    def __init__(self, beats: list[WorkerHeartbeat]) -> None:
        self.beats = {(b.node, b.port): b for b in beats}

    def supervisors(self) -> dict[str, Any]:
        return {}

    def topologies(self) -> list[str]:
        return ["wc-1"]

    def storm_base(self, topology_id: str) -> Any:
        from stormpy.cluster import StormBase
        return StormBase(topology_id, "wc", "active", 1, 1000.0, "me")

    def close(self) -> None:
        pass


def test_rest_windows_of_a_young_topology_equal_all_time_and_spouts_ack_no_more_than_emitted() -> None:
    """A 54 s old topology whose first heartbeats the UI samples after the worker ran a while: the
    10-minute, 3-hour and 1-day rows equal all time; the spout's acks never exceed its emits."""
    now = [1054.0]
    state = SampledState([beat(1053.5, 53, [task(1, "spout", 0, emitted=400),
                                            task(2, "count", 0, executed=0)])])
    backend = UiBackend({}, state_factory=lambda: state, clock=lambda: now[0])  # type: ignore[arg-type,return-value]
    fake = FakeClient()
    fake.heartbeats = lambda topology_id: state.beats
    backend.client = fake  # type: ignore[assignment]
    backend.sample()
    now[0] = 1055.0
    later = beat(1055, 54.5, [task(1, "spout", 400, emitted=430), task(2, "count", 400, executed=400)])
    state.beats = {(later.node, later.port): later}
    backend.sample()
    client = TestClient(create_app(backend, clock=lambda: now[0]))
    doc = client.get("/api/v1/topology/wc-1", params={"window": "600"}).json()
    rows = {r["window"]: {k: v for k, v in r.items() if k not in ("window", "windowPretty")}
            for r in doc["topologyStats"]}
    assert rows["600"] == rows["10800"] == rows["86400"] == rows[":all-time"]
    assert rows["600"]["emitted"] == 430
    spout = doc["spouts"][0]
    assert (spout["emitted"], spout["acked"]) == (430, 400)
    backend.close()


def test_stormpy_ui_prints_the_address_it_binds() -> None:
    """`stormpy ui` with ui.host=0.0.0.0 says 0.0.0.0 (and where a browser on this host goes),
    not 127.0.0.1; SIGTERM stops it."""
    import signal
    import socket
    import threading

    from click.testing import CliRunner

    from stormpy.cli.main import cli
    from stormpy.testing import wait_for
    from stormpy.testing._cluster import free_ports

    port, dead = free_ports(2)

    def stop_when_serving() -> None:
        def accepts() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(accepts, 60, "the UI to accept connections")
        os.kill(os.getpid(), signal.SIGTERM)  # the command's handler stops it
    stopper = threading.Thread(target=stop_when_serving, daemon=True)
    stopper.start()
    result = CliRunner().invoke(cli, ["ui", "-c", "ui.host=0.0.0.0", "-c", f"ui.port={port}",
                                      "-c", f"storm.zookeeper.servers=['127.0.0.1:{dead}']",
                                      "-c", "storm.zookeeper.connection.timeout=500",
                                      "--nimbus", f"127.0.0.1:{dead}"])
    stopper.join(timeout=60)
    assert result.exit_code == 0, result.output
    assert f"serving on 0.0.0.0:{port} (every interface; http://127.0.0.1:{port} from this host)" \
        in result.output
