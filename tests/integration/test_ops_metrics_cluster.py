"""Operating a running topology on a real cluster (ZooKeeper, Nimbus, two supervisors and the UI
as processes) running the word count, whose count bolt registers users' metrics of every kind:
the metrics in the UI's /metrics (parsed with prometheus_client's parser), the REST component
document, the component page (Chromium) and a metrics consumer; sampled tuples after
``stormpy debug --enable`` (the UI's Debug button and events page in Chromium, the workers'
events logs) and none after ``--disable``; ``stormpy monitor`` printing rates."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    bundle_path_fixture,
    wait_for,
)
from ui_kit import (  # noqa: F401 - fixtures
    Topology,
    chrome_driver,
    ui_cluster_fixture,
    wordcount_fixture,
)

from stormpy.cli.main import cli
from stormpy.testing._cluster import ProcessCluster

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]


def get(cluster: ProcessCluster, path: str) -> Any:
    response = httpx.get(f"{cluster.ui_url}{path}", timeout=30)
    assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
    return response.json()


def stormpy(cluster: ProcessCluster, *args: str) -> str:
    """``stormpy ARGS --nimbus <cluster>`` in this process (Click's runner); its output."""
    result = CliRunner().invoke(cli, [*args, "--nimbus", cluster.nimbus_address], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def user_samples(cluster: ProcessCluster, topology_id: str) -> dict[tuple[str, ...], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{cluster.ui_url}/metrics", timeout=30).text
    return {(s.name, s.labels["metric"], s.labels["task"], s.labels.get("quantile", ""),
             s.labels["worker"]): s.value
            for f in text_string_to_metric_families(text) if f.name.startswith("stormpy_user_")
            for s in f.samples if s.labels.get("topology") == topology_id}


def test_user_metrics_in_prometheus_and_rest(wordcount: Topology) -> None:
    c, tid = wordcount.cluster, wordcount.id
    def counted() -> dict[tuple[str, ...], float] | None:
        samples = user_samples(c, tid)
        words = {k: v for k, v in samples.items() if k[0] == "stormpy_user_counter" and k[1] == "words"}
        return samples if len(words) == 2 and all(v > 0 for v in words.values()) else None
    samples = wait_for(counted, 90, "both count tasks' words counters in /metrics", c)
    workers = {f"{w['host']}:{w['port']}" for w in get(c, f"/api/v1/topology/{tid}")["workers"]}
    tasks = {k[2] for k in samples if k[1] == "words"}
    assert {k[4] for k in samples} <= workers and len(tasks) == 2
    for task in tasks:
        worker = next(k[4] for k in samples if k[2] == task)
        assert samples[("stormpy_user_gauge", "distinct_words", task, "", worker)] > 0
        assert 1 <= samples[("stormpy_user_histogram", "word_length", task, "0.5", worker)] <= 7
        assert samples[("stormpy_user_histogram_count", "word_length", task, "", worker)] > 0
        assert samples[("stormpy_user_meter_total", "tuples", task, "", worker)] > 0
        assert 0 < samples[("stormpy_user_timer_seconds", "execute", task, "0.99", worker)] < 5

    def rest_rows() -> dict[tuple[int, str], dict[str, Any]] | None:
        rows = get(c, f"/api/v1/topology/{tid}/component/count")["userMetrics"]
        by = {(r["task"], r["name"]): r for r in rows}
        return by if len(by) == 10 else None
    rows = wait_for(rest_rows, 60, "the REST component document to list 5 metrics of 2 tasks", c)
    assert {str(task) for task, _ in rows} == tasks
    for (_task, name), row in rows.items():
        assert row["type"] == {"words": "counter", "distinct_words": "gauge", "word_length": "histogram",
                               "tuples": "meter", "execute": "timer"}[name]
        if name == "execute":
            assert row["count"] > 0 and row["p99"] >= row["p50"] > 0 and "m1_rate" in row


def test_user_metrics_reach_a_metrics_consumer(ui_cluster: ProcessCluster, bundle_path: Path,
                                               tmp_path: Path) -> None:
    import filewc

    c = ui_cluster
    points = tmp_path / "points.jsonl"
    out = tmp_path / "out"
    out.mkdir()
    conf = {"topology.workers": 1, "topology.message.timeout.secs": 6,
            "topology.builtin.metrics.bucket.size.secs": 0.5,
            "topology.metrics.consumer.register": [{"class": "points:FileConsumer", "argument": str(points)}]}
    client = c.client()
    tid = client.submit("consumed-metrics", bundle_path, filewc.build(str(out), 0, 40.0).to_doc(), conf)

    def counted_point() -> dict[str, Any] | None:
        if not points.exists():
            return None
        lines = [json.loads(line) for line in points.read_text().splitlines() if line.strip()]
        return next((p for p in reversed(lines) if p["component"] == "count"
                     and p["points"].get("words", {}).get("count", 0) > 0), None)
    try:
        point = wait_for(counted_point, 90, "a data point with the words counter in the consumer's file", c)
        assert point["points"]["words"]["type"] == "counter"
        assert point["points"]["execute"]["type"] == "timer" and point["points"]["execute"]["count"] > 0
    finally:
        client.kill("consumed-metrics", 0)
        wait_for(lambda: not c.worker_processes(tid), 60, "the workers to exit", c)


def event_lines(c: ProcessCluster, tid: str) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted(c.base_dir.rglob(f"worker-{tid}-*-events.log"))
            for line in path.read_text().splitlines() if line.endswith("}")]


def test_debug_samples_tuples_until_disabled_and_the_ui_shows_them(wordcount: Topology,
                                                                    tmp_path: Path) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    c, tid = wordcount.cluster, wordcount.id
    driver = chrome_driver(tmp_path)
    try:
        wait = WebDriverWait(driver, 60, poll_frequency=0.3,
                             ignored_exceptions=[StaleElementReferenceException, ValueError, IndexError])
        # the component page lists the bolt's metrics
        driver.get(f"{c.ui_url}/component.html?topology_id={tid}&id=count&refresh=1")
        wait.until(lambda d: "word_length" in d.find_element(By.ID, "component-metrics").text
                   and "histogram" in d.find_element(By.ID, "component-metrics").text)
        assert "not sampling" in driver.find_element(By.ID, "debug-state").text
        # the Debug button of the split component's page, 100 percent
        driver.get(f"{c.ui_url}/component.html?topology_id={tid}&id=split&refresh=1")
        # the page has loaded its state (and wired its buttons) once it says it is not sampling
        wait.until(lambda d: "not sampling" in d.find_element(By.ID, "debug-state").text)
        driver.find_element(By.CSS_SELECTOR, 'button[data-debug="enable"]').click()
        prompt = wait.until(expected_conditions.alert_is_present())
        prompt.send_keys("100")
        prompt.accept()
        wait.until(lambda d: "sampling 100" in d.find_element(By.ID, "debug-state").text)
        assert c.state.storm_base(tid).component_debug == {  # type: ignore[union-attr]
            "split": {"enable": True, "samplingpct": 100.0}}
        driver.find_element(By.ID, "events-link").click()
        wait.until(lambda d: "split" in d.find_element(By.ID, "events-table").text
                   and "default" in d.find_element(By.ID, "events-table").text)
        driver.save_screenshot(str(tmp_path / "events.png"))
    finally:
        driver.quit()
    lines = wait_for(lambda: event_lines(c, tid), 60, "sampled tuples in the events logs", c)
    assert {e["component"] for e in lines} == {"split"}
    assert all(e["stream"] == "default" and len(e["values"]) == 1 and e["ts"] > 0 for e in lines)
    rest = get(c, f"/api/v1/topology/{tid}/events?component=split")["events"]
    assert rest and all(e["component"] == "split" and e["port"] for e in rest)

    # the whole topology at 50 percent from the CLI, then off
    assert "sampling 50%" in stormpy(c, "debug", "wordcount", "--enable", "--sampling-pct", "50")
    wait_for(lambda: {"sentences", "count"} <= {e["component"] for e in event_lines(c, tid)}, 60,
             "sampled tuples of every component", c)
    # the CLI reads them through the log servers: with -c only that component's lines
    printed = [json.loads(line) for line in
               stormpy(c, "logs", "wordcount", "--events", "-c", "count", "-n", "65536").splitlines()
               if line.startswith("{")]
    assert printed and {e["component"] for e in printed} == {"count"}
    assert "no longer sampling" in stormpy(c, "debug", "wordcount", "--disable")
    sampling_tasks = 1 + 2 + 2  # sentences, split, count: one per task of the word count

    def stopped() -> bool:
        logs = "".join(p.read_text() for p in c.base_dir.rglob(f"worker-{tid}-*.log")
                       if not p.name.endswith("-events.log"))
        return logs.count("no longer samples its tuples") >= sampling_tasks
    wait_for(stopped, 60, "every task to stop sampling", c)
    stopped_at = time.time()  # every task has logged that it stopped: no emit after is sampled
    acked = get(c, f"/api/v1/topology/{tid}?window=:all-time")["spouts"][0]["acked"]
    wait_for(lambda: get(c, f"/api/v1/topology/{tid}?window=:all-time")["spouts"][0]["acked"] > acked + 40,
             90, "the word count to go on", c)
    late = [e for e in event_lines(c, tid) if e["ts"] > stopped_at]
    assert not late, f"tuples sampled after debug --disable: {late[:3]}"


def test_monitor_prints_rates_of_a_running_component(wordcount: Topology) -> None:
    c = wordcount.cluster
    out = stormpy(c, "monitor", "wordcount", "-m", "split", "-i", "1", "-n", "3")
    lines = out.splitlines()
    assert "component split (2 tasks) stream default" in lines[0]
    rows = [line.split() for line in lines[2:]]
    assert len(rows) == 3 and all(len(r) == 6 for r in rows)
    assert any(float(r[3]) > 0 and float(r[4]) > 0 for r in rows), out
    bad = CliRunner().invoke(cli, ["monitor", "wordcount", "-m", "nope", "--nimbus", c.nimbus_address])
    assert bad.exit_code == 2 and "split" in bad.output
