"""The UI's on-call parts against a real cluster (Nimbus, two supervisors with their log
servers, the UI): log links on worker and executor rows lead to the worker's log, Storm's
logconfig REST sets and shows levels, the profiling REST and the topology page's jstack button
give a stack dump served by the worker's log server (checked in a headless Chromium)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
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

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]


def get(url: str) -> Any:
    response = httpx.get(url, timeout=30)
    assert response.status_code == 200, f"GET {url}: {response.status_code} {response.text}"
    return response.json()


def test_log_links_logconfig_and_profiling_rest(wordcount: Topology) -> None:
    c, tid = wordcount.cluster, wordcount.id
    ui = c.ui_url
    assert ui is not None
    def linked() -> Any:
        d = get(f"{ui}/api/v1/topology/{tid}")
        return d if d["workers"] and all(w.get("workerLogLink") for w in d["workers"]) else None
    doc = wait_for(linked, 60, "workers with log links", c)
    link = doc["workers"][0]["workerLogLink"]
    parts = urlsplit(link)
    assert parts.path == "/log"
    assert parse_qs(parts.query)["file"] == [f"worker-{tid}-{doc['workers'][0]['port']}.log"]
    api = f"{parts.scheme}://{parts.netloc}/api/v1/log?{parts.query}"
    wait_for(lambda: "running executors" in get(api)["content"], 30, "the worker's log through its link", c)
    comp = get(f"{ui}/api/v1/topology/{tid}/component/count")
    assert all(r["workerLogLink"] for r in comp["executorStats"])
    hosts = get(f"{ui}/api/v1/topology-workers/{tid}")["hostPortList"]
    assert all(h["logviewerPort"] for h in hosts)

    body = {"namedLoggerLevels": {"filewc": {"target_level": "debug", "timeout": 300}}}
    answer = httpx.post(f"{ui}/api/v1/topology/{tid}/logconfig", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    shown = get(f"{ui}/api/v1/topology/{tid}/logconfig")["namedLoggerLevels"]["filewc"]
    assert shown["target_level"] == "DEBUG" and shown["timeout"] == 300 and shown["timeout_epoch"] > 0
    bad = httpx.post(f"{ui}/api/v1/topology/{tid}/logconfig",
                     json={"namedLoggerLevels": {"filewc": {"target_level": "LOUD"}}}, timeout=30)
    assert bad.status_code == 400 and "LOUD" in bad.json()["errorMessage"]
    reset = httpx.post(f"{ui}/api/v1/topology/{tid}/logconfig",
                       json={"namedLoggerLevels": {"filewc": {}}}, timeout=30)
    assert reset.status_code == 200

    w = doc["workers"][0]
    dump = httpx.post(f"{ui}/api/v1/topology/{tid}/profiling/dumpjstack/{w['host']}:{w['port']}",
                      timeout=60)
    assert dump.status_code == 200, dump.text
    result = dump.json()
    assert result["status"] == "done" and result["file"].startswith("workers-artifacts/")
    dump_parts = urlsplit(result["logLink"])
    served = f"{dump_parts.scheme}://{dump_parts.netloc}/api/v1/log?{dump_parts.query}&start=0"
    content = get(served)["content"]
    assert "stack dump of pid" in content and "MainThread" in content
    missing = httpx.post(f"{ui}/api/v1/topology/{tid}/profiling/dumpjstack/{w['host']}:1", timeout=30)
    assert missing.status_code == 404


def test_log_link_jstack_and_cpu_buttons_in_a_browser(wordcount: Topology, tmp_path: Path) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    c, tid = wordcount.cluster, wordcount.id
    driver = chrome_driver(tmp_path)
    try:
        wait = WebDriverWait(driver, 60, poll_frequency=0.3,
                             ignored_exceptions=[StaleElementReferenceException, ValueError, IndexError])
        driver.get(f"{c.ui_url}/topology.html?id={tid}&refresh=30")
        jstack = '#workers-table button[data-profile="dumpjstack"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, jstack))
        anchors = driver.find_elements(By.CSS_SELECTOR, "#workers-table a")
        log_links = [a.get_attribute("href") for a in anchors if a.text == "log"]
        assert log_links and all("/log?file=worker-" in h for h in log_links)
        driver.find_element(By.CSS_SELECTOR, jstack).click()
        href = wait.until(lambda d: d.find_element(By.ID, "profile-link").get_attribute("href"))
        driver.get(href)
        wait.until(lambda d: "stack dump of pid" in d.find_element(By.ID, "log").text)
        driver.get(f"{c.ui_url}/topology.html?id={tid}&refresh=30")
        cpu = '#workers-table button[data-profile="cpu"]'
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, cpu))
        driver.find_element(By.CSS_SELECTOR, cpu).click()  # a 10 s profile, its result polled
        href = wait.until(lambda d: d.find_element(By.ID, "profile-link").get_attribute("href"))
        assert "cpu-" in href
        driver.get(href)
        wait.until(lambda d: "samples" in d.find_element(By.ID, "log").text)
        driver.get(log_links[0])
        wait.until(lambda d: "running executors" in d.find_element(By.ID, "log").text)
    finally:
        driver.quit()
