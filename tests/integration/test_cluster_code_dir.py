"""Workers run in their topology's code dir, and a crash-looping worker is visible.

A real cluster (Nimbus, one supervisor, the UI as processes): a spout opening a file shipped in
the bundle by its relative path runs (and ``context.code_dir`` names the same directory); a spout
whose file is missing makes its worker exit at once, again and again, and `stormpy list`,
`stormpy info`, the REST API and the UI's index page say so: restarts, the last exit's reason,
"degraded"."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from cluster_kit import running_cluster, wait_for
from ui_kit import UI_CONF, chrome_driver, need_ui_stack

from stormpy.cli.main import cli
from stormpy.testing._cluster import ProcessCluster

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster]

PROJECT = '''
"""Reads data/lines.txt, shipped in the bundle, by its relative path."""
import os
from stormpy import Bolt, Spout, TopologyBuilder


class LinesSpout(Spout):
    outputs = ["line"]

    def __init__(self, path):
        self.path = path

    def open(self, conf, context):
        with open(self.path) as f:  # relative: the worker runs in the code dir
            self.lines = f.read().splitlines()
        assert (context.code_dir / self.path).read_text().splitlines() == self.lines
        assert os.path.samefile(context.code_dir, os.getcwd())
        self.next = 0

    def next_tuple(self):
        if self.next < len(self.lines):
            self.emit([self.lines[self.next]], msg_id=self.next)
            self.next += 1


class FileSink(Bolt):
    outputs = []

    def __init__(self, out):
        self.out = out

    def prepare(self, conf, context):
        self.file = open(self.out, "a", buffering=1)

    def execute(self, tup):
        self.file.write(tup.values[0] + "\\n")
        self.ack(tup)


def build(path):
    builder = TopologyBuilder()
    builder.set_spout("lines", LinesSpout, 1, kwargs={"path": path})
    out = os.environ.get("SHIPPED_OUT", "")  # set where the topology is submitted
    builder.set_bolt("sink", FileSink, 1, kwargs={"out": out}).shuffle_grouping("lines")
    return builder.create_topology()


good = build("data/lines.txt")
missing = build("data/missing.txt")
'''


def cli_run(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, env=env)


@pytest.fixture(name="cluster", scope="module")
def cluster_fixture(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    need_ui_stack()
    with running_cluster(zookeeper, tmp_path_factory.mktemp("code-dir-cluster"), "code-dir",
                         supervisors=1, conf=UI_CONF, ui=True) as c:
        yield c


@pytest.fixture(name="project")
def project_fixture(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "shipped.py").write_text(PROJECT)
    (project / "data" / "lines.txt").write_text("".join(f"line {i}\n" for i in range(50)))
    return project


def test_a_spout_opens_a_file_shipped_in_the_bundle_by_its_relative_path(
        cluster: ProcessCluster, project: Path, tmp_path: Path) -> None:
    out = tmp_path / "sink.txt"
    env = {"SHIPPED_OUT": str(out)}
    submitted = cli_run("jar", str(project), "shipped:good", "--name", "good",
                        "--nimbus", cluster.nimbus_address, env=env)
    assert submitted.exit_code == 0, submitted.output
    wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 50, 90,
             "the sink to write every shipped line", cluster)
    assert sorted(out.read_text().splitlines()) == sorted(f"line {i}" for i in range(50))
    info = cluster.client().topology_info("good")
    assert [w["restarts"] for w in info["workers"]] == [0] and not info["degraded"]
    cluster.client().kill("good", 0)
    wait_for(lambda: not cluster.worker_processes(), 60, "the workers of 'good' to exit", cluster)


def test_a_crash_looping_worker_shows_in_list_info_and_the_ui(
        cluster: ProcessCluster, project: Path, tmp_path: Path) -> None:
    env = {"SHIPPED_OUT": str(tmp_path / "never.txt")}
    addr = cluster.nimbus_address
    submitted = cli_run("jar", str(project), "shipped:missing", "--name", "crashy", "--nimbus", addr, env=env)
    assert submitted.exit_code == 0, submitted.output

    def listed() -> str | None:
        out = cli_run("list", "--nimbus", addr).output
        return out if "keeps exiting" in out else None
    out = wait_for(listed, 120, "`stormpy list` to show the crash loop", cluster)
    assert "active (degraded)" in out
    assert "exit code 1" in out and "data/missing.txt" in out, out

    info = cli_run("info", "crashy", "--nimbus", addr)
    assert info.exit_code == 0
    assert "degraded:" in info.output and "keeps exiting" in info.output
    assert "restarts" in info.output and "last exit" in info.output
    doc = cluster.client().topology_info("crashy")
    worker = doc["workers"][0]
    assert worker["restarts"] >= 2 and worker["crash_looping"]
    assert "data/missing.txt" in worker["last_exit"] and "FileNotFoundError" in worker["last_exit"]

    def ui_row() -> dict[str, Any] | None:
        rows = httpx.get(f"{cluster.ui_url}/api/v1/topology/summary", timeout=30).json()["topologies"]
        row = next((r for r in rows if r["name"] == "crashy"), None)
        return row if row and row["degraded"] and row["workerRestarts"] >= 2 else None
    row = wait_for(ui_row, 60, "the UI's topology summary to show the crash loop", cluster)
    assert "keeps exiting" in row["degraded"]
    rest = httpx.get(f"{cluster.ui_url}/api/v1/topology/{row['id']}", timeout=30).json()
    assert rest["workers"][0]["restarts"] >= 2 and "missing.txt" in rest["workers"][0]["lastExit"]

    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    driver = chrome_driver(tmp_path)
    try:
        wait = WebDriverWait(driver, 60, poll_frequency=0.3,
                             ignored_exceptions=[StaleElementReferenceException])
        driver.get(f"{cluster.ui_url}/index.html")
        wait.until(lambda d: "keeps exiting" in d.find_element(By.ID, "topology-summary").text)
        driver.get(f"{cluster.ui_url}/topology.html?id={row['id']}")
        wait.until(lambda d: "missing.txt" in d.find_element(By.ID, "workers-table").text)
    finally:
        driver.quit()
    cluster.client().kill("crashy", 0)
    wait_for(lambda: not cluster.worker_processes(), 60, "the workers of 'crashy' to exit", cluster)
    assert os.environ.get("SHIPPED_OUT") is None
