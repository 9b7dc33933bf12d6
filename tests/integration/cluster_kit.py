"""Test kit for the end-to-end cluster tests: a module-scoped ProcessCluster (real Nimbus and
supervisor processes on the session's ZooKeeper) and the file-observable word count
(``nimbus_topologies/filewc.py``). Import ``cluster_fixture``, ``bundle_path_fixture`` and
``attach_cluster_logs`` into a test module (fixtures ``cluster`` and ``bundle_path``); a failed
test gets every daemon and worker log attached to its report."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import filewc
import pytest

from stormpy.bundle import build_bundle
from stormpy.cluster import Assignment
from stormpy.testing import wait_for as kit_wait_for
from stormpy.testing._cluster import FAST_TIMEOUTS, ProcessCluster

HERE = Path(__file__).resolve().parent
TOPOLOGIES = HERE / "nimbus_topologies"


TIMINGS: dict[str, float] = {}


def wait_for(condition: Callable[[], Any], timeout: float, what: str, cluster: ProcessCluster | None = None,
             interval: float = 0.2) -> Any:
    """Poll until ``condition()`` is truthy; fail naming ``what`` (and Nimbus's exit) otherwise."""
    if cluster is not None:
        return cluster.wait_for(condition, timeout, what, interval=interval)
    return kit_wait_for(condition, timeout, what, interval=interval)


_CLUSTER_KEY = pytest.StashKey[ProcessCluster]()


class _LogDump:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        cluster = item.stash.get(_CLUSTER_KEY, None)
        if cluster is not None and report.failed and call.when == "call":
            report.sections.append(("stormpy cluster logs", cluster.dump_logs(60)))
        return report

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if TIMINGS:
            terminalreporter.section("stormpy cluster timings")
            for name, secs in TIMINGS.items():
                terminalreporter.write_line(f"{name}: {secs:.2f} s")


@contextlib.contextmanager
def running_cluster(zookeeper: Any, base: Path, name: str, *, supervisors: int = 2,
                    slots: int = 2, nimbuses: int = 1, conf: Mapping[str, Any] | None = None,
                    ui: bool = False) -> Iterator[ProcessCluster]:
    """A started ProcessCluster (``nimbuses`` + ``supervisors`` with ``slots`` each,
    FAST_TIMEOUTS under ``conf``, the UI too when ``ui``) in ``base`` on a fresh ZooKeeper root
    named after ``name``; stopped on exit, when no worker process may be left. The one way every
    test directory (integration, kafka...) starts a process cluster."""
    c = ProcessCluster(zookeeper.connect_string, supervisors=supervisors, slots_per_supervisor=slots,
                       nimbuses=nimbuses, base_dir=base,
                       zk_root=f"/stormpy-tests/{name}-{uuid.uuid4().hex[:8]}",
                       conf={**FAST_TIMEOUTS, **(conf or {})}, ui=ui)
    c.start(timeout_secs=90)
    try:
        yield c
    finally:
        c.stop()
        leftovers = c.worker_processes()
        assert leftovers == [], f"stray worker processes: {leftovers}"


@pytest.fixture(scope="module", name="cluster")
def cluster_fixture(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nimbus + two supervisors (two slots each) with short timeouts, shared by a test module."""
    with running_cluster(zookeeper, tmp_path_factory.mktemp("cluster"), "cluster") as c:
        yield c


@pytest.fixture(autouse=True)
def attach_cluster_logs(request: pytest.FixtureRequest) -> Iterator[None]:
    """Attach the cluster's logs to the report of a failed test."""
    if "cluster" in request.fixturenames:
        plugins = request.config.pluginmanager
        if not plugins.has_plugin("stormpy-cluster-kit-logs"):
            plugins.register(_LogDump(), "stormpy-cluster-kit-logs")
        request.node.stash[_CLUSTER_KEY] = request.getfixturevalue("cluster")
    yield


@pytest.fixture(scope="module", name="bundle_path")
def bundle_path_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle of ``nimbus_topologies`` (built once per module)."""
    return build_bundle(TOPOLOGIES, tmp_path_factory.mktemp("bundle") / "filewc.zip").path


def submit(cluster: ProcessCluster, bundle: Path, name: str, out_dir: Path, *, count: int = 100,
           rate: float = 50.0, workers: int = 2, active: bool = True) -> str:
    """Submit the file word count through the NimbusClient; return the topology id."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = filewc.build(str(out_dir), count, rate).to_doc()
    conf = {"topology.workers": workers, "topology.message.timeout.secs": 6}
    return cluster.client().submit(name, bundle, spec, conf, active=active)


def run_cli(cluster: ProcessCluster, *args: str, env: dict[str, str] | None = None,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``stormpy ARGS --nimbus <cluster>`` as a real subprocess."""
    argv = [sys.executable, "-m", "stormpy.cli", *args, "--nimbus", cluster.nimbus_address]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def assignment(cluster: ProcessCluster, topology_id: str) -> Assignment | None:
    return cluster.state.assignment(topology_id)


def worker_count(cluster: ProcessCluster, topology_id: str) -> int:
    a = assignment(cluster, topology_id)
    return len(a.workers()) if a is not None else 0


def task_port(cluster: ProcessCluster, topology_id: str, task: int) -> int | None:
    """The port of the worker running ``task`` in the topology's assignment (None before one)."""
    a = assignment(cluster, topology_id)
    if a is None:
        return None
    for (start, end), (_node, port) in a.executors.items():
        if start <= task <= end:
            return int(port)
    return None


def worker_pids_by_port(cluster: ProcessCluster, topology_id: str, count: int = 2) -> dict[int, int]:
    """Port -> pid of the topology's worker processes, once there are ``count`` of them."""
    workers = wait_for(lambda: cluster.worker_processes(topology_id)
                       if len(cluster.worker_processes(topology_id)) == count else None,
                       60, f"{count} worker processes", cluster)
    return {int(argv[argv.index("--port") + 1]): pid for pid, argv in workers}


def kill_and_check_gone(cluster: ProcessCluster, name: str, topology_id: str, timeout: float = 40) -> None:
    """Kill with no wait, then wait until its workers and its ZooKeeper state are gone."""
    cluster.client().kill(name, 0)
    wait_for(lambda: not cluster.worker_processes(topology_id), timeout,
             f"the workers of {topology_id} to exit", cluster)
    wait_for(lambda: topology_id not in cluster.state.topologies(), timeout,
             f"the ZooKeeper state of {topology_id} to be removed", cluster)


def record_timing(name: str, secs: float) -> None:
    """Keep a measured duration; the terminal summary of the run lists them (no assertion on them)."""
    TIMINGS[name] = secs
