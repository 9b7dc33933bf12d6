"""The UI's HTTP application (stormpy.ui._app) over a scripted Nimbus: every REST path of Storm's
UI answering its document, each error as ``{"error", "errorMessage"}`` with its status (400
naming the field, 401/403, 404 naming what is missing, 409 for a refused action, 503 when Nimbus
is down), protected GETs, and the actions: POST only, the token and CSRF checks first, their
arguments checked before Nimbus hears of them."""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get("CI", "").lower() != "true":  # in CI the [ui] extra is installed: no skip
    pytest.importorskip("starlette")

from stormpy import __version__  # noqa: E402
from stormpy.rpc.errors import InvalidRequestError, RpcError, UnreachableError  # noqa: E402
from stormpy.ui._app import BadRequest, parse_debug, parse_rebalance  # noqa: E402
from ui_nimbus_kit import CLUSTER, INFO, ui_app  # noqa: E402

AUTH = {"Authorization": "Bearer tok"}
LOCKED = {"ui.auth.token": "tok", "ui.auth.protect.gets": True}
READS = ("get_cluster_info", "get_topology_info", "get_topology_files", "get_nimbus_conf", "get_daemon_stats")
GETS = [
    "/api/v1/cluster/configuration",
    "/api/v1/cluster/summary",
    "/api/v1/nimbus/summary",
    "/api/v1/supervisor/summary",
    "/api/v1/topology/summary",
    "/api/v1/topology/wc-1",
    "/api/v1/topology/wc-1/component/count",
    "/api/v1/topology-workers/wc-1",
    "/api/v1/topology/wc-1/topology-workers",
    "/api/v1/topology/wc-1/visualization",
    "/api/v1/topology/wc-1/graph.svg",
    "/api/v1/topology/wc-1/events",
    "/metrics",
]
ACTIONS = {
    "activate": "activate",
    "deactivate": "deactivate",
    "rebalance/5": "rebalance",
    "kill/5": "kill_topology",
    "debug/enable/20": "debug",
    "component/count/debug/enable/20": "debug",
}


def writes(nimbus: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(m, a) for m, a in nimbus.calls if m not in READS]


@pytest.mark.parametrize("path", GETS)
def test_every_get_needs_the_token_when_gets_are_protected(path: str) -> None:
    client, nimbus, _ = ui_app(LOCKED, {"get_nimbus_conf": {}, "get_daemon_stats": {}})
    refused = client.get(path)
    assert refused.status_code == 401
    assert refused.json() == {
        "error": "Unauthorized",
        "errorMessage": (
            "this GET (ui.auth.protect.gets is on) needs the UI token: send 'Authorization: Bearer <token>' "
            "(ui.auth.token, else nimbus.rpc.auth.token)"
        ),
    }
    wrong = client.get(path, headers={"Authorization": "Bearer no"})
    assert wrong.status_code == 403
    assert wrong.json() == {
        "error": "Forbidden",
        "errorMessage": "wrong UI token in the Authorization header",
    }
    assert nimbus.calls == []
    assert client.get(path, headers=AUTH).status_code == 200


@pytest.mark.parametrize("path", GETS)
def test_every_get_is_503_naming_nimbus_while_it_is_down(path: str) -> None:
    down = UnreachableError("connection refused")
    client, _, _ = ui_app(
        {},
        {
            "get_cluster_info": down,
            "get_topology_info": down,
            "get_nimbus_conf": down,
            "get_daemon_stats": down,
        },
    )
    answer = client.get(path)
    if path == "/metrics":  # the exposition says Nimbus is down instead
        assert answer.status_code == 200 and "stormpy_nimbus_up 0.0" in answer.text
        return
    assert answer.status_code == 503
    assert answer.json() == {
        "error": "Service Unavailable",
        "errorMessage": "Nimbus at 127.0.0.1:6627 is not reachable: connection refused",
    }


def test_the_cluster_documents() -> None:
    client, nimbus, _ = ui_app({}, {"get_nimbus_conf": {"b.password": "x", "a": 1}})
    conf = client.get("/api/v1/cluster/configuration").json()
    assert conf == {"a": 1, "b.password": "*****"} and list(conf) == ["a", "b.password"]
    summary = client.get("/api/v1/cluster/summary").json()
    assert summary["stormVersion"] == __version__ and summary["supervisors"] == 2
    assert summary["slotsTotal"] == 2 and summary["nimbusUptimeSeconds"] == 5
    assert client.get("/api/v1/nimbus/summary").json()["nimbuses"][0]["host"] == "nh"
    sups = client.get("/api/v1/supervisor/summary").json()["supervisors"]
    assert [s["id"] for s in sups] == ["sup-a", "sup-b"]
    assert client.get("/api/v1/topology/summary").json() == {"topologies": []}
    assert nimbus.sent("get_cluster_info") == [{}] * 4


def test_the_topology_document_for_the_window_asked_with_log_links_and_secrets_hidden() -> None:
    client, nimbus, backend = ui_app()
    backend.window("wc-1")  # the window exists before any request
    doc = client.get("/api/v1/topology/wc", params={"window": "10800"}).json()
    assert (doc["id"], doc["name"], doc["window"], doc["windowHint"]) == ("wc-1", "wc", "10800", "3h 0m 0s")
    assert doc["configuration"]["my.password"] == "*****"
    assert doc["msgTimeout"] == 30
    assert [s["spoutId"] for s in doc["spouts"]] == ["spout"] and [b["boltId"] for b in doc["bolts"]] == [
        "count"
    ]
    assert [w["workerLogLink"] for w in doc["workers"]] == [
        "http://ha:8000/log?file=worker-wc-1-6700.log",
        None,
    ]
    assert nimbus.sent("get_topology_files") == [{"topology_id": "wc-1"}]  # by id, even asked by name
    assert client.get("/api/v1/topology/wc-1").json()["window"] == "600"  # the default window
    bad = client.get("/api/v1/topology/wc-1", params={"window": "5"})
    assert bad.status_code == 400 and bad.json()["error"] == "Bad Request"
    assert "window '5'" in bad.json()["errorMessage"]
    missing = client.get("/api/v1/topology/nope")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Not Found", "errorMessage": "topology 'nope' not found"}


def test_the_component_document_and_its_404s() -> None:
    client, _, _ = ui_app()
    doc = client.get("/api/v1/topology/wc-1/component/count", params={"window": ":all-time"}).json()
    assert (doc["id"], doc["componentType"], doc["topologyId"], doc["window"]) == (
        "count",
        "bolt",
        "wc-1",
        ":all-time",
    )
    assert [r["host"] for r in doc["executorStats"]] == []  # no heartbeat yet: no executor figures
    ghost = client.get("/api/v1/topology/wc-1/component/ghost")
    assert ghost.status_code == 404
    assert ghost.json()["errorMessage"] == "component 'ghost' not found in topology 'wc-1'"
    assert client.get("/api/v1/topology/wc-1/component/count?window=7").status_code == 400
    assert (
        client.get("/api/v1/topology/nope/component/count").json()["errorMessage"]
        == "topology 'nope' not found"
    )


def test_the_workers_the_visualization_and_the_graph() -> None:
    client, _, _ = ui_app()
    hosts = client.get("/api/v1/topology-workers/wc-1").json()["hostPortList"]
    assert hosts == [
        {
            "host": "ha",
            "port": 6700,
            "logviewerPort": 8000,
            "workerLogLink": "http://ha:8000/log?file=worker-wc-1-6700.log",
        },
        {"host": "hb", "port": 6701, "logviewerPort": None, "workerLogLink": None},
    ]
    vis = client.get("/api/v1/topology/wc-1/visualization", params={"window": ":all-time"}).json()
    assert sorted(vis) == ["count", "spout"]
    assert vis["count"][":inputs"][0][":component"] == "spout"
    assert client.get("/api/v1/topology/wc-1/visualization?window=3").status_code == 400
    svg = client.get("/api/v1/topology/wc-1/graph.svg")
    assert svg.headers["content-type"].startswith("image/svg+xml") and svg.text.startswith("<svg")
    assert client.get("/api/v1/topology/nope/graph.svg").status_code == 404


def test_the_events_of_a_topology_or_one_component() -> None:
    class Beat:
        events = (
            {"component": "spout", "ts": 1.0, "values": ["a"]},
            {"component": "count", "ts": 2.0, "values": ["b"]},
        )

    client, _, backend = ui_app()
    backend.latest["wc-1"] = {("sup-a", 6700): Beat()}  # type: ignore[dict-item]
    every = client.get("/api/v1/topology/wc-1/events").json()
    assert [e["component"] for e in every["events"]] == ["count", "spout"]
    assert every["events"][0]["host"] == "ha" and every["topologyId"] == "wc-1"
    only = client.get("/api/v1/topology/wc-1/events", params={"component": "spout"}).json()
    assert [e["values"] for e in only["events"]] == [["a"]]
    blank = client.get("/api/v1/topology/wc-1/events", params={"component": ""}).json()
    assert len(blank["events"]) == 2
    assert client.get("/api/v1/topology/wc/events").json()["events"] == every["events"]


def test_metrics_static_files_and_unknown_paths() -> None:
    client, _, _ = ui_app({}, {"get_daemon_stats": {}})
    metrics = client.get("/metrics")
    assert (
        metrics.headers["content-type"].startswith("text/plain") and "stormpy_nimbus_up 1.0" in metrics.text
    )
    assert client.get("/static/ui.js").status_code == 200
    unknown = client.get("/api/v1/nothing/here")
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "Not Found", "errorMessage": "no such path '/api/v1/nothing/here'"}


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_an_action_is_a_post_with_the_token_and_reaches_nimbus_once(action: str) -> None:
    client, nimbus, _ = ui_app(LOCKED, {ACTIONS[action]: None})
    url = f"/api/v1/topology/wc-1/{action}"
    assert client.get(url, headers=AUTH).status_code in (404, 405)
    assert client.post(url).status_code == 401
    assert client.post(url, headers={"Authorization": "Bearer no"}).status_code == 403
    cross = client.post(url, headers={**AUTH, "Origin": "http://evil"})
    assert (
        cross.status_code == 403
        and cross.json()["errorMessage"] == "cross-origin POST from http://evil refused"
    )
    assert writes(nimbus) == []
    done = client.post(url, headers=AUTH)
    name = {"rebalance/5": "rebalance", "kill/5": "kill"}.get(
        action, "debug" if "debug" in action else action
    )
    assert done.status_code == 200
    assert done.json() == {"topologyOperation": name, "topologyId": "wc-1", "status": "success"}
    assert [m for m, _ in writes(nimbus)] == [ACTIONS[action]]


def test_the_actions_send_their_arguments() -> None:
    client, nimbus, _ = ui_app(
        {}, {"activate": None, "rebalance": None, "kill_topology": None, "debug": None}
    )
    base = "/api/v1/topology/wc-1"
    client.post(f"{base}/activate", content=b"ignored")
    client.post(f"{base}/kill/2.5")
    client.post(
        f"{base}/rebalance/0", json={"rebalanceOptions": {"numWorkers": 3, "executors": {"count": 4}}}
    )
    client.post(f"{base}/rebalance/1")
    client.post(f"{base}/debug/enable/100")
    client.post(f"{base}/component/count/debug/disable/0")
    assert writes(nimbus) == [
        ("activate", {"name": "wc"}),
        ("kill_topology", {"name": "wc", "wait_secs": 2.5}),
        ("rebalance", {"name": "wc", "wait_secs": 0.0, "num_workers": 3, "executors": {"count": 4}}),
        ("rebalance", {"name": "wc", "wait_secs": 1.0, "num_workers": None, "executors": None}),
        ("debug", {"name": "wc", "component": None, "enable": True, "sampling_pct": 100.0}),
        ("debug", {"name": "wc", "component": "count", "enable": False, "sampling_pct": 10.0}),
    ]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("kill/-1", "wait-time must be a number of seconds >= 0, got '-1'"),
        ("kill/soon", "wait-time must be a number of seconds >= 0, got 'soon'"),
        ("kill/nan", "wait-time must be a number of seconds >= 0, got 'nan'"),
        ("rebalance/inf", "wait-time must be a number of seconds >= 0, got 'inf'"),
        ("debug/on/10", "debug action must be 'enable' or 'disable', got 'on'"),
        ("debug/enable/0", "sampling percentage must be a number in (0, 100], got '0'"),
        ("debug/enable/100.5", "sampling percentage must be a number in (0, 100], got '100.5'"),
        ("debug/enable/lots", "sampling percentage must be a number in (0, 100], got 'lots'"),
        ("debug/enable/nan", "sampling percentage must be a number in (0, 100], got 'nan'"),
    ],
)
def test_bad_action_arguments_are_400_naming_them_and_reach_no_nimbus(path: str, message: str) -> None:
    client, nimbus, _ = ui_app({}, {"kill_topology": None, "rebalance": None, "debug": None})
    answer = client.post(f"/api/v1/topology/wc-1/{path}")
    assert answer.status_code == 400
    assert answer.json() == {"error": "Bad Request", "errorMessage": message}
    assert nimbus.calls == []  # checked before the topology is even looked up


def test_an_action_on_an_unknown_topology_is_404() -> None:
    client, nimbus, _ = ui_app({}, {"activate": None})
    missing = client.post("/api/v1/topology/nope/activate")
    assert missing.status_code == 404 and missing.json()["errorMessage"] == "topology 'nope' not found"
    assert writes(nimbus) == []


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (InvalidRequestError("wc is not active"), 400, "InvalidRequestError"),
        (RpcError("busy", remote_type="ConflictError"), 409, "ConflictError"),
        (RpcError("plain"), 409, "RpcError"),
    ],
)
def test_an_action_nimbus_refuses_keeps_its_error_type(error: RpcError, status: int, kind: str) -> None:
    client, _, _ = ui_app({}, {"deactivate": error})
    answer = client.post("/api/v1/topology/wc-1/deactivate")
    assert answer.status_code == status
    assert answer.json() == {"error": kind, "errorMessage": error.message}


def test_an_action_while_nimbus_is_down_is_503() -> None:
    client, _, _ = ui_app({}, {"get_topology_info": UnreachableError("refused")})
    answer = client.post("/api/v1/topology/wc-1/activate")
    assert answer.status_code == 503 and "not reachable: refused" in answer.json()["errorMessage"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"{",
            "rebalance body is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
            "(char 1))",
        ),
        (b"[1]", "rebalance body must be a JSON object"),
        (b'{"rebalanceOptions": []}', "rebalanceOptions must be an object"),
        (
            b'{"rebalanceOptions": {"b": 1, "a": 2}}',
            "rebalanceOptions.a is not a rebalance option (numWorkers, executors)",
        ),
        (
            b'{"rebalanceOptions": {"numWorkers": true}}',
            "rebalanceOptions.numWorkers must be an integer >= 1, got True",
        ),
        (
            b'{"rebalanceOptions": {"numWorkers": 0}}',
            "rebalanceOptions.numWorkers must be an integer >= 1, got 0",
        ),
        (
            b'{"rebalanceOptions": {"numWorkers": 1.0}}',
            "rebalanceOptions.numWorkers must be an integer >= 1, got 1.0",
        ),
        (
            b'{"rebalanceOptions": {"executors": []}}',
            "rebalanceOptions.executors must map component names to integers",
        ),
        (
            b'{"rebalanceOptions": {"executors": {"c": 0}}}',
            "rebalanceOptions.executors.c must be an integer >= 1, got 0",
        ),
        (
            b'{"rebalanceOptions": {"executors": {"c": false}}}',
            "rebalanceOptions.executors.c must be an integer >= 1, got False",
        ),
        (
            b'{"rebalanceOptions": {"executors": {"c": "2"}}}',
            "rebalanceOptions.executors.c must be an integer >= 1, got '2'",
        ),
    ],
)
def test_a_bad_rebalance_body_names_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(BadRequest) as bad:
        parse_rebalance(body)
    assert str(bad.value) == message


def test_rebalance_bodies_storm_s_ui_sends() -> None:
    assert parse_rebalance(b"  \n") == (None, None)
    assert parse_rebalance(b"{}") == (None, None)
    assert parse_rebalance(b'{"rebalanceOptions": {}}') == (None, None)
    assert parse_rebalance(b'{"rebalanceOptions": {"numWorkers": 1, "executors": {}}}') == (1, None)
    assert parse_rebalance(b'{"rebalanceOptions": {"executors": {"c": 1}}}') == (None, {"c": 1})


def test_debug_settings() -> None:
    assert parse_debug("enable", "100") == (True, 100.0)
    assert parse_debug("enable", "0.5") == (True, 0.5)
    assert parse_debug("disable", "35") == (False, 35.0)
    assert parse_debug("disable", "100") == (False, 100.0)
    assert parse_debug("disable", "0.5") == (False, 0.5)
    assert parse_debug("disable", "1") == (False, 1.0)
    for pct in ("0", "-3", "101", "x", "nan"):  # a disable's percentage is not checked
        assert parse_debug("disable", pct) == (False, 10.0)
    with pytest.raises(BadRequest, match="got 'inf'"):
        parse_debug("enable", "inf")


def test_the_cluster_summary_counts_from_nimbus_s_topologies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CLUSTER, "topologies", [{k: v for k, v in INFO.items() if k not in ("workers",)}])
    client, _, _ = ui_app()
    assert client.get("/api/v1/cluster/summary").json()["tasksTotal"] == 3
    row = client.get("/api/v1/topology/summary").json()["topologies"][0]
    assert (row["id"], row["status"], row["uptime"]) == ("wc-1", "ACTIVE", "1m 1s")


def test_a_browser_on_an_open_ui_acts_with_its_csrf_cookie_and_header() -> None:
    client, nimbus, _ = ui_app({}, {"activate": None})
    client.cookies.set("stormpy_csrf", "c0ffee")
    url = "/api/v1/topology/wc-1/activate"
    refused = client.post(url, headers={"X-CSRF-Token": "other"})
    assert refused.status_code == 403 and refused.json()["error"] == "Forbidden"
    assert refused.json()["errorMessage"].startswith("CSRF check failed")
    assert client.post(url).status_code == 403
    assert writes(nimbus) == []
    assert client.post(url, headers={"X-CSRF-Token": "c0ffee"}).status_code == 200
    assert writes(nimbus) == [("activate", {"name": "wc"})]


def test_component_and_graph_documents_read_the_spec_by_topology_id() -> None:
    client, nimbus, _ = ui_app()
    assert client.get("/api/v1/topology/wc/component/count").json()["topologyId"] == "wc-1"
    assert sorted(client.get("/api/v1/topology/wc/visualization").json()) == ["count", "spout"]
    assert nimbus.sent("get_topology_files") == [{"topology_id": "wc-1"}]  # then cached


def test_a_topology_whose_spec_lists_no_components_has_none_to_show() -> None:
    client, _, _ = ui_app({}, {"get_topology_files": {"spec": {}, "conf": {}}})
    missing = client.get("/api/v1/topology/wc-1/component/count")
    assert missing.status_code == 404
    assert missing.json()["errorMessage"] == "component 'count' not found in topology 'wc-1'"


def test_a_bolt_s_capacity_is_its_busiest_executor_s_with_the_executor_s_tasks_summed() -> None:
    from stormpy.cluster import WorkerHeartbeat

    info = {**INFO, "workers": [{**INFO["workers"][0], "executors": [[1, 1], [2, 3]]}]}
    client, _, backend = ui_app({}, {"get_topology_info": info}, clock=lambda: 10.0)

    def bolt_task(task_id: int) -> dict[str, Any]:
        return {
            "task": task_id,
            "component": "count",
            "emitted": {},
            "transferred": 0,
            "acked": 0,
            "failed": 0,
            "executed": 10,
            "execute_latency_sum": 0.1,
            "execute_latency_count": 10,
        }

    beat = WorkerHeartbeat(
        topology_id="wc-1",
        node="sup-a",
        port=6700,
        time=1.0,
        uptime=1.0,
        executors=((1, 1), (2, 3)),
        tasks=(bolt_task(2), bolt_task(3)),
    )
    backend.window("wc-1").observe([beat], 2.0)
    span = backend.window("wc-1").span(":all-time", 10.0)
    doc = client.get("/api/v1/topology/wc-1", params={"window": ":all-time"}).json()
    # one executor ran both tasks: 20 executed at 10 ms each over the span
    assert doc["bolts"][0]["capacity"] == f"{20 * 0.010 / span:.3f}"
