"""`stormpy ui` against a real cluster (Nimbus, two supervisors and the UI as processes) running
the word count: every REST path answers with Storm's field names and figures that agree with
`stormpy info` (its RPC, ``get_topology_info``); /metrics parses and grows; the pages work in a
headless Chromium (deactivate by clicking); actions change the topology; auth, 404, 400 and 503."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    bundle_path_fixture,
    wait_for,
)
from ui_kit import (  # noqa: F401 - fixtures
    UI_CONF,
    Topology,
    chrome_driver,
    png_is_not_blank,
    ui_cluster_fixture,
    wordcount_fixture,
)

from stormpy.testing._cluster import ProcessCluster, free_ports
from stormpy.ui._server import UiServer

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]

WINDOWS = ["600", "10800", "86400", ":all-time"]


def get(cluster: ProcessCluster, path: str, **kwargs: Any) -> Any:
    response = httpx.get(f"{cluster.ui_url}{path}", timeout=30, **kwargs)
    assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
    return response.json()


def post(cluster: ProcessCluster, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{cluster.ui_url}{path}", timeout=30, **kwargs)


def spout_acked(cluster: ProcessCluster, topology_id: str, window: str = ":all-time") -> int:
    doc = get(cluster, f"/api/v1/topology/{topology_id}?window={window}")
    return int(doc["spouts"][0]["acked"])


def test_every_get_path_answers_with_storms_fields(wordcount: Topology) -> None:
    c, tid = wordcount.cluster, wordcount.id
    wait_for(lambda: spout_acked(c, tid) > 0, 90, "acked tuples in the UI", c)

    conf = get(c, "/api/v1/cluster/configuration")
    assert conf["nimbus.thrift.port"] == c.nimbus_port
    # Nimbus's own configuration (its local dir), not the UI process's
    assert c.nimbus.conf["storm.local.dir"] != c.ui.conf["storm.local.dir"]  # type: ignore[union-attr]
    assert conf["storm.local.dir"] == c.nimbus.conf["storm.local.dir"]
    summary = get(c, "/api/v1/cluster/summary")
    assert {"stormVersion", "supervisors", "topologies", "slotsTotal", "slotsUsed", "slotsFree",
            "executorsTotal", "tasksTotal"} <= set(summary)
    assert summary["supervisors"] == 2 and summary["slotsTotal"] == 4 and summary["slotsUsed"] == 2
    nimbus = get(c, "/api/v1/nimbus/summary")["nimbuses"][0]
    assert nimbus["port"] == c.nimbus_port and nimbus["status"] == "Leader" and "nimbusUpTime" in nimbus
    sups = get(c, "/api/v1/supervisor/summary")["supervisors"]
    assert sorted(s["id"] for s in sups) == sorted(c.supervisor_ids().values())
    assert all({"host", "uptime", "uptimeSeconds", "slotsTotal", "slotsUsed"} <= set(s) for s in sups)
    topo = get(c, "/api/v1/topology/summary")["topologies"][0]
    assert topo["id"] == tid and topo["name"] == "wordcount" and topo["status"] == "ACTIVE"
    listed = c.client().cluster_info()["topologies"][0]  # what `stormpy list` prints
    assert topo["workersTotal"] == 2 == listed["num_workers"]
    # ackers included, as in Storm: the user's 6 tasks and one acker per worker
    assert topo["executorsTotal"] == listed["num_executors"]
    assert topo["tasksTotal"] == listed["num_tasks"] == 6 + 2
    assert {"uptime", "uptimeSeconds", "owner"} <= set(topo)

    for window in WINDOWS:
        doc = get(c, f"/api/v1/topology/{tid}?window={window}")
        assert doc["window"] == window and [r["window"] for r in doc["topologyStats"]] == WINDOWS
        spout = doc["spouts"][0]
        assert spout["spoutId"] == "sentences" and spout["tasks"] == 2 and spout["executors"] == 2
        assert {"emitted", "transferred", "acked", "failed", "completeLatency", "lastError"} <= set(spout)
        assert {b["boltId"] for b in doc["bolts"]} == {"split", "count"}
        for bolt in doc["bolts"]:
            assert {"emitted", "transferred", "executed", "acked", "failed", "lastError"} <= set(bolt)
    doc = get(c, f"/api/v1/topology/{tid}?window=:all-time")
    assert doc["spouts"][0]["acked"] > 0 and float(doc["spouts"][0]["completeLatency"]) > 0

    def split_on_both_workers() -> dict[str, Any] | None:
        # each worker's figures arrive with its own heartbeat: wait for both, not just the first
        doc = get(c, f"/api/v1/topology/{tid}/component/split?window=:all-time")
        stats = doc["executorStats"]
        return doc if len(stats) == 2 and all(e["executed"] > 0 for e in stats) else None
    comp = wait_for(split_on_both_workers, 90, "both split executors with executed tuples", c)
    assert comp["componentType"] == "bolt" and comp["topologyId"] == tid and comp["id"] == "split"
    assert [r["window"] for r in comp["boltStats"]] == WINDOWS
    assert comp["inputStats"] == [{"component": "sentences", "encodedComponent": "sentences",
                                   "stream": "default", "grouping": "shuffle"}]
    assert comp["outputStats"][0]["stream"] == "default" and comp["outputStats"][0]["emitted"] > 0
    spout_comp = get(c, f"/api/v1/topology/{tid}/component/sentences")
    assert spout_comp["componentType"] == "spout" and len(spout_comp["spoutSummary"]) == 4

    workers = get(c, f"/api/v1/topology-workers/{tid}")["hostPortList"]
    assert sorted((w["host"], w["port"]) for w in workers) == \
        sorted((w["host"], w["port"]) for w in doc["workers"])

    def visualization_with_count_rate() -> dict[str, Any] | None:
        vis = get(c, f"/api/v1/topology/{tid}/visualization?window=:all-time")
        edges = vis.get("count", {}).get(":inputs", [])
        return vis if edges and edges[0][":rate"] > 0 else None
    vis = wait_for(visualization_with_count_rate, 90, "a rate on the split -> count edge", c)
    assert set(vis) == {"sentences", "split", "count"}
    edge = vis["count"][":inputs"][0]
    assert edge[":component"] == "split" and edge[":stream"] == "default"
    svg = httpx.get(f"{c.ui_url}/api/v1/topology/{tid}/graph.svg", timeout=30)
    assert svg.headers["content-type"].startswith("image/svg+xml") and 'class="edge"' in svg.text


def plausible_latency(row: dict[str, Any]) -> bool:
    """The row has executeLatency, processLatency and capacity, and they are plausible (no timing
    asserted beyond that: the machine may be loaded)."""
    if not {"executeLatency", "processLatency", "capacity"} <= set(row):
        return False
    assert float(row["executeLatency"]) >= 0 and float(row["processLatency"]) >= 0, row
    assert 0 <= float(row["capacity"]) <= 1.5, row
    return True


def test_bolts_have_sampled_latencies_and_capacity(wordcount: Topology) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    c, tid = wordcount.cluster, wordcount.id

    def bolts() -> list[dict[str, Any]] | None:
        rows = get(c, f"/api/v1/topology/{tid}?window=600")["bolts"]
        executors = [e for name in ("split", "count") for e in
                     get(c, f"/api/v1/topology/{tid}/component/{name}?window=600")["executorStats"]]
        return rows if all(plausible_latency(r) for r in [*rows, *executors]) else None
    rows = wait_for(bolts, 90, "sampled latencies of both bolts and each of their executors", c)
    assert {b["boltId"] for b in rows} == {"split", "count"}
    for window in WINDOWS:
        comp = get(c, f"/api/v1/topology/{tid}/component/count?window={window}")
        assert all(plausible_latency(e) for e in comp["executorStats"]), comp["executorStats"]
        assert comp["boltStats"][0]["window"] == "600" and plausible_latency(comp["boltStats"][0])
    vis = get(c, f"/api/v1/topology/{tid}/visualization")
    assert 0 <= float(vis["count"][":capacity"]) <= 1.5
    spout = get(c, f"/api/v1/topology/{tid}?window=600")["spouts"][0]
    assert "capacity" not in spout and "executeLatency" not in spout
    text = httpx.get(f"{c.ui_url}/metrics", timeout=30).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    timed = [s for s in families["stormpy_task_execute_latency_seconds"].samples
             if s.labels["topology"] == tid and s.name.endswith("_count")]
    assert {s.labels["component"] for s in timed if s.value > 0} >= {"split", "count"}
    queues = [s for s in families["stormpy_task_receive_queue"].samples if s.labels["topology"] == tid]
    assert queues and all(s.value >= 0 for s in queues)
    held = [s for s in families["stormpy_worker_backpressure_rounds"].samples
            if s.labels["topology"] == tid]
    assert len(held) == 2 and all(s.value >= 0 for s in held)


def test_metrics_parse_and_counters_grow(wordcount: Topology) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    c, tid = wordcount.cluster, wordcount.id

    def acked() -> float:
        text = httpx.get(f"{c.ui_url}/metrics", timeout=30).text
        families = {f.name: f for f in text_string_to_metric_families(text)}
        samples = [s for s in families["stormpy_task_acked"].samples
                   if s.labels["topology"] == tid and s.labels["component"] == "sentences"
                   and s.name.endswith("_total")]
        assert samples and {"task", "host", "port"} <= set(samples[0].labels)
        assert families["stormpy_nimbus_up"].samples[0].value == 1
        rss = [s for s in families["stormpy_worker_resident_memory_bytes"].samples
               if s.labels["topology"] == tid]
        assert len(rss) == 2 and all(s.value > 0 for s in rss)
        assert any(s.labels["topology"] == tid for s in families["stormpy_task_emitted"].samples)
        assert families["stormpy_task_complete_latency_seconds"].samples
        return sum(s.value for s in samples)

    first = wait_for(acked, 60, "acked counters in /metrics", c)
    wait_for(lambda: acked() > first, 60, "the acked counters to grow", c)


def test_pages_in_a_headless_browser(wordcount: Topology, tmp_path: Path) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    c, tid = wordcount.cluster, wordcount.id
    driver = chrome_driver(tmp_path)
    try:
        # the page re-renders its tables every second: a row read mid-refresh is read again
        wait = WebDriverWait(driver, 60, poll_frequency=0.3,
                             ignored_exceptions=[StaleElementReferenceException, ValueError, IndexError])
        driver.get(f"{c.ui_url}/index.html?refresh=1")
        wait.until(lambda d: "wordcount" in d.find_element(By.ID, "topology-summary").text)
        wait.until(lambda d: "Leader" in d.find_element(By.ID, "nimbus-summary").text)
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#supervisor-summary tr")) == 3)

        driver.get(f"{c.ui_url}/topology.html?id={tid}&window=:all-time&refresh=1")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#topology-graph svg g.edge"))

        def graph_nodes(d: Any) -> dict[str, Any] | None:  # name → data-capacity, read again if stale
            found = {n.get_attribute("data-component"): n.get_attribute("data-capacity")
                     for n in d.find_elements(By.CSS_SELECTOR, "#topology-graph g.node")}
            return found if all(found.get(b) for b in ("split", "count")) else None
        nodes = wait.until(graph_nodes)  # bolts coloured by their (sampled) capacity
        assert set(nodes) == {"sentences", "split", "count"}
        assert 0 <= float(nodes["count"]) <= 1.5
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#bolts-table td.cap")) == 2)

        def acked_column(table: str) -> list[int]:
            rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tr")
            header = [th.text for th in rows[0].find_elements(By.TAG_NAME, "th")]
            col = header.index("Acked")
            return [int(r.find_elements(By.TAG_NAME, "td")[col].text) for r in rows[1:]]
        for table, rows in (("spouts-table", 1), ("bolts-table", 2)):
            wait.until(lambda d, t=table, n=rows: len(acked_column(t)) == n
                       and all(v > 0 for v in acked_column(t)))
        driver.save_screenshot(str(tmp_path / "topology-active.png"))

        driver.find_element(By.CSS_SELECTOR, 'button[data-action="deactivate"]').click()
        wait.until(expected_conditions.alert_is_present()).accept()
        wait.until(lambda d: "INACTIVE" in d.find_element(By.ID, "topology-info").text)
        wait.until(lambda d: "deactivate: done" in d.find_element(By.ID, "action-result").text)
        shot = tmp_path / "topology.png"
        assert driver.save_screenshot(str(shot))
        assert png_is_not_blank(shot.read_bytes()), "the topology page screenshot is blank"

        def columns(table: str) -> dict[str, list[str]]:  # header → cells, read in one render
            rows = driver.find_elements(By.CSS_SELECTOR, f"#{table} tr")
            header = [th.text for th in rows[0].find_elements(By.TAG_NAME, "th")]
            cells = [[td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows[1:]]
            return {h: [row[i] for row in cells] for i, h in enumerate(header)}

        def number(text: str) -> int:
            return int("".join(ch for ch in text if ch.isdigit()))
        # a UI started after the topology counted tuples: the topology is younger than every
        # window, so each window row equals "All time", and its spout acked no more than it emitted
        assert get(c, f"/api/v1/topology/{tid}")["uptimeSeconds"] < 600
        late = UiServer({**c.ui.conf, "ui.port": 0}, nimbus_address=c.nimbus_address).start()  # type: ignore[union-attr]
        try:
            wait_for(lambda: late.backend.samples >= 2, 60, "the late UI to sample the heartbeats", c)
            driver.get(f"{late.url}/topology.html?id={tid}&window=600")
            by_window = wait.until(lambda d: (cols := columns("topology-stats"))
                                   and len(cols.get("Window", [])) == 4 and cols)
            for key in ("Emitted", "Transferred", "Acked", "Failed"):
                assert len(set(by_window[key])) == 1, (key, by_window)
            assert number(by_window["Acked"][0]) > 0, by_window
            spout = wait.until(lambda d: (cols := columns("spouts-table")) and cols.get("Acked") and cols)
            assert 0 < number(spout["Acked"][0]) <= number(spout["Emitted"][0]), spout
        finally:
            late.stop()

        driver.get(f"{c.ui_url}/component.html?topology_id={tid}&id=count&window=:all-time")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#executor-stats tr")) == 3)
        driver.get(f"{c.ui_url}/supervisor.html")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#supervisor-workers tr")) == 3)
    finally:
        driver.quit()
    assert c.state.storm_base(tid).status == "inactive"  # type: ignore[union-attr]


def test_actions_figures_agree_with_info_and_survive_restarts(wordcount: Topology) -> None:
    c, tid = wordcount.cluster, wordcount.id
    client = c.client()
    assert post(c, f"/api/v1/topology/{tid}/deactivate").json()["status"] == "success"
    wait_for(lambda: get(c, f"/api/v1/topology/{tid}")["status"] == "INACTIVE", 30, "INACTIVE", c)

    def settled() -> dict[str, Any] | None:  # in-flight tuples done: two equal readings
        first = client.topology_info("wordcount")["stats"]
        # several heartbeat periods apart (task.heartbeat.frequency.secs = 0.5: the worker's
        # publication, then its supervisor's relay to Nimbus)
        time.sleep(3.0)
        second = client.topology_info("wordcount")["stats"]
        return second if first == second and second["sentences"]["acked"] > 0 else None
    wait_for(settled, 60, "the counters to settle while inactive", c)

    def agrees() -> bool:  # `stormpy info` read again each time: a late heartbeat moves both
        info = client.topology_info("wordcount")["stats"]
        doc = get(c, f"/api/v1/topology/{tid}?window=:all-time")
        rows = {r.get("spoutId") or r.get("boltId"): r for r in [*doc["spouts"], *doc["bolts"]]}
        return all(rows[comp][key] == info[comp][key] for comp in ("sentences", "split", "count")
                   for key in ("emitted", "transferred", "acked", "failed"))
    wait_for(agrees, 30, "the UI's all-time figures to equal `stormpy info`'s", c)
    before = spout_acked(c, tid)

    assert post(c, f"/api/v1/topology/{tid}/activate").status_code == 200
    wait_for(lambda: spout_acked(c, tid) > before, 60, "acks to resume after activate", c)

    moved = post(c, f"/api/v1/topology/{tid}/rebalance/0", json={"rebalanceOptions": {"numWorkers": 1}})
    assert moved.status_code == 200, moved.text
    wait_for(lambda: get(c, f"/api/v1/topology/{tid}")["workersTotal"] == 1
             and get(c, f"/api/v1/topology/{tid}")["status"] == "ACTIVE", 90, "one worker after rebalance", c)
    at_restart = spout_acked(c, tid)
    wait_for(lambda: client.topology_info("wordcount")["stats"].get("sentences", {}).get("acked", 0) > 0,
             60, "the new worker to ack", c)
    # the UI's all-time figure keeps what the old workers counted
    wait_for(lambda: spout_acked(c, tid) > at_restart, 60, "all-time acks to keep growing", c)
    # all time never falls below what the live workers count: a worker restarted in its own
    # slot carries its counters on (then both are equal), one restarted elsewhere counts from
    # zero under the kept total; compared once the counters stand still (inactive), until the
    # UI's sample (every ui.poll.secs) has caught up with what `stormpy info` reads from Nimbus
    assert post(c, f"/api/v1/topology/{tid}/deactivate").json()["status"] == "success"
    wait_for(settled, 60, "the counters to settle while inactive after the restart", c)
    wait_for(lambda: spout_acked(c, tid)
             >= client.topology_info("wordcount")["stats"]["sentences"]["acked"], 60,
             "the UI's all-time acks to reach the live workers' own", c)

    assert post(c, f"/api/v1/topology/{tid}/kill/0").json()["topologyOperation"] == "kill"
    wait_for(lambda: httpx.get(f"{c.ui_url}/api/v1/topology/{tid}", timeout=30).status_code == 404, 60,
             "the killed topology to answer 404", c)
    wait_for(lambda: not c.worker_processes(tid), 60, "the workers to exit", c)


def daemon_counters(c: ProcessCluster) -> dict[str, float]:
    """Nimbus's upload and RPC counters and the supervisors' worker launches and restarts, read
    from /metrics (summed over labels)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{c.ui_url}/metrics", timeout=30).text
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return {"uploads": totals["stormpy_nimbus_uploads_total"],
            "upload_bytes": totals["stormpy_nimbus_upload_bytes_total"],
            "rpc_calls": totals["stormpy_nimbus_rpc_calls_total"],
            "launches": totals["stormpy_supervisor_worker_launches_total"],
            "restarts": totals.get("stormpy_supervisor_worker_restarts_total", 0.0)}


def test_metrics_consumer_and_daemon_counters_on_the_cluster(ui_cluster: ProcessCluster, bundle_path: Path,
                                                              tmp_path: Path) -> None:
    """A consumer named in ``topology.metrics.consumer.register`` runs in the worker and receives
    its tasks' data points (with acked counts) and their task info; Nimbus's upload and RPC
    counters and the supervisors' worker launches and restarts appear in /metrics and grow."""
    import filewc

    c = ui_cluster
    points = tmp_path / "points.jsonl"
    out = tmp_path / "out"
    out.mkdir()
    conf = {"topology.workers": 1, "topology.message.timeout.secs": 6,
            "topology.builtin.metrics.bucket.size.secs": 0.5,
            "topology.metrics.consumer.register": [
                {"class": "points:FileConsumer", "argument": str(points), "parallelism.hint": 1}]}
    client = c.client()
    before = daemon_counters(c)
    tid = client.submit("consumed", bundle_path, filewc.build(str(out), 0, 40.0).to_doc(), conf)

    def acked_point() -> dict[str, Any] | None:
        if not points.exists():
            return None
        lines = [json.loads(line) for line in points.read_text().splitlines() if line.strip()]
        return next((p for p in reversed(lines) if p["component"] == "sentences"
                     and p["points"]["acked"] > 0), None)
    try:
        point = wait_for(acked_point, 90, "a data point with acked tuples in the consumer's file", c)
        workers = c.state.assignment(tid).workers()  # type: ignore[union-attr]
        assert point["port"] in {port for _, port in workers}
        assert point["task"] in point["worker_tasks"] and point["timestamp"] > 0
        assert point["points"]["emitted"] and "transferred" in point["points"]

        # daemon counters: the submit uploaded a bundle and made RPCs (Nimbus answers at once);
        # the launch reaches /metrics with the supervisor's next heartbeat, which on a fast
        # machine can come after the worker's first data point
        after = daemon_counters(c)
        assert after["uploads"] == before["uploads"] + 1 and after["upload_bytes"] > before["upload_bytes"]
        assert after["rpc_calls"] > before["rpc_calls"]
        wait_for(lambda: daemon_counters(c)["launches"] > before["launches"], 30,
                 "the supervisor's worker launches to grow in /metrics", c)
        [(pid, _argv)] = c.worker_processes(tid)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: daemon_counters(c)["restarts"] > before["restarts"], 90,
                 "the supervisor's worker restarts to grow in /metrics", c)
    finally:
        client.kill("consumed", 0)
        wait_for(lambda: not c.worker_processes(tid), 60, "the workers to exit", c)


def test_auth_not_found_bad_input_and_nimbus_down(ui_cluster: ProcessCluster) -> None:
    from stormpy.ui._server import UiServer

    c = ui_cluster
    conf = {**UI_CONF, "storm.zookeeper.servers": [h.split(":")[0] for h in c.zk_connect.split(",")],
            "storm.zookeeper.port": int(c.zk_connect.split(",")[0].split(":")[1]),
            "storm.zookeeper.root": c.zk_root, "ui.auth.token": "s3cret", "ui.host": "127.0.0.1"}
    with UiServer(conf, nimbus_address=c.nimbus_address, port=0) as locked:
        url = locked.url
        assert httpx.get(f"{url}/api/v1/topology/summary", timeout=30).status_code == 200  # GETs open
        missing = httpx.post(f"{url}/api/v1/topology/nope/activate", timeout=30)
        assert missing.status_code == 401 and "Authorization" in missing.json()["errorMessage"]
        wrong = httpx.post(f"{url}/api/v1/topology/nope/activate", headers={"Authorization": "Bearer x"})
        assert wrong.status_code == 403
        auth = {"Authorization": "Bearer s3cret"}
        nope = httpx.post(f"{url}/api/v1/topology/nope/activate", headers=auth, timeout=30)
        assert nope.status_code == 404 and "'nope'" in nope.json()["errorMessage"]
        bad = httpx.post(f"{url}/api/v1/topology/nope/rebalance/0", headers=auth, timeout=30,
                         json={"rebalanceOptions": {"executors": {"split": 0}}})
        assert bad.status_code == 400 and "executors.split" in bad.json()["errorMessage"]
        forged = httpx.post(f"{url}/api/v1/topology/nope/activate", timeout=30,
                            headers={"Origin": "http://evil.example", "Authorization": "Bearer s3cret"})
        assert forged.status_code == 403 and "cross-origin" in forged.json()["errorMessage"]
    assert httpx.get(f"{c.ui_url}/api/v1/topology/nope", timeout=30).status_code == 404
    assert httpx.get(f"{c.ui_url}/api/v1/topology/x?window=1h", timeout=30).status_code == 400
    browser_post = httpx.post(f"{c.ui_url}/api/v1/topology/x/activate", cookies={"stormpy_csrf": "a"},
                              timeout=30)
    assert browser_post.status_code == 403 and "CSRF" in browser_post.json()["errorMessage"]

    dead = f"127.0.0.1:{free_ports(1)[0]}"
    with UiServer({**conf, "ui.nimbus.timeout.secs": 2}, nimbus_address=dead, port=0) as orphan:
        for path in ("/api/v1/cluster/summary", "/api/v1/topology/x", "/api/v1/nimbus/summary"):
            down = httpx.get(f"{orphan.url}{path}", timeout=30)
            assert down.status_code == 503 and dead in down.json()["errorMessage"]
        assert httpx.get(f"{orphan.url}/index.html", timeout=30).status_code == 200  # still serving
        metrics = httpx.get(f"{orphan.url}/metrics", timeout=30)
        assert metrics.status_code == 200 and "stormpy_nimbus_up 0.0" in metrics.text
