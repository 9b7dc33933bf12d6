"""On-call operations on a real cluster (ZooKeeper, Nimbus, two supervisors): worker logs through
the log servers and ``stormpy logs``, a path outside the log directory refused, rotation of a log
written fast, a run-time log level applied and reverted, a stack dump of a worker whose bolt spins
in user code."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import opstopo
import pytest
from cluster_kit import attach_cluster_logs, kill_and_check_gone, run_cli, running_cluster, wait_for

from stormpy.bundle import build_bundle
from stormpy.testing._cluster import ProcessCluster

__all__ = ["attach_cluster_logs"]

TOPOLOGIES = Path(__file__).resolve().parent / "ops_topologies"


CAP_BYTES = 64 * 1024


@pytest.fixture(scope="module", name="cluster")
def cluster_fixture(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    conf = {"worker.log.max.size.mb": CAP_BYTES / (1024 * 1024), "worker.log.backups": 2,
            # the busy bolt's worker must live long enough to be dumped
            "supervisor.worker.timeout.secs": 60, "nimbus.task.timeout.secs": 90,
            "supervisor.worker.shutdown.sleep.secs": 2}
    with running_cluster(zookeeper, tmp_path_factory.mktemp("ops"), "ops", conf=conf) as c:
        yield c


@pytest.fixture(scope="module", name="bundle")
def bundle_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(TOPOLOGIES, tmp_path_factory.mktemp("bundle") / "ops.zip").path


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def submit(cluster: ProcessCluster, bundle: Path, name: str, kind: str) -> str:
    spec = opstopo.build(kind).to_doc()
    return cluster.client().submit(name, bundle, spec, {"topology.workers": 1,
                                                        "topology.acker.executors": 0})


def worker_of(cluster: ProcessCluster, topology_id: str) -> tuple[str, int, str, str]:
    """``(host, port, node, log server url)`` of the topology's one worker once it heartbeats."""
    def found() -> Any:
        beats = cluster.worker_heartbeats(topology_id)
        a = cluster.state.assignment(topology_id)
        return bool(beats) and a is not None and next(iter(beats))
    node, port = wait_for(found, 60, f"a heartbeat of {topology_id}", cluster)
    a = cluster.state.assignment(topology_id)
    assert a is not None
    info = cluster.state.supervisor(node)
    assert info is not None and info.logviewer_port, "the supervisor publishes its log server"
    host = a.node_host[node]
    return host, port, node, f"http://{host}:{info.logviewer_port}"


def test_logs_levels_and_refusals(cluster: ProcessCluster, bundle: Path) -> None:
    tid = submit(cluster, bundle, "chatty", "chatty")
    host, port, _node, lv = worker_of(cluster, tid)
    log_file = f"worker-{tid}-{port}.log"
    query = urllib.parse.urlencode({"topoId": tid, "search-string": "chatty-bolt saw"})
    status, doc = wait_for(lambda: (lambda r: r if r[1].get("results") else None)(
        get(f"{lv}/api/v1/searchLogs?{query}")), 60, "the bolt's line in the log server", cluster)
    assert status == 200 and doc["results"][0]["fileName"] == log_file
    assert "chatty-bolt saw" in doc["results"][0]["matches"][0]["line"]

    out = run_cli(cluster, "logs", "chatty", "-c", "chatty", "--grep", "chatty-bolt saw")
    assert out.returncode == 0, out.stderr
    assert f"{host}:{port} " in out.stdout and "chatty-bolt saw" in out.stdout

    # outside the log directory: refused
    logs_dir = Path(cluster.supervisors[0].workdir / "logs")
    for logs in (Path(s.workdir / "logs") for s in cluster.supervisors):
        (logs / "escape.log").unlink(missing_ok=True)
        (logs / "escape.log").symlink_to("/etc/hostname")
    assert logs_dir.is_dir()
    for bad, code in (("../../etc/passwd", 400), ("/etc/passwd", 400), ("escape.log", 403)):
        status, doc = get(f"{lv}/api/v1/log?" + urllib.parse.urlencode({"file": bad}))
        assert status == code, (bad, status, doc)
        assert doc["errorMessage"]

    # a level change takes effect, then reverts after its timeout
    debug_q = urllib.parse.urlencode({"file": log_file, "search-string": "chatty-debug"})
    assert get(f"{lv}/api/v1/search?{debug_q}")[1]["matches"] == []
    out = run_cli(cluster, "set-log-level", "chatty", "-l", "opstopo.chatty=DEBUG:6")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["namedLoggerLevels"]["opstopo.chatty"]["target_level"] == "DEBUG"
    wait_for(lambda: get(f"{lv}/api/v1/search?{debug_q}")[1]["matches"], 90,
             "DEBUG lines after set-log-level", cluster)
    changed_q = urllib.parse.urlencode({"file": log_file, "search-string": "log levels changed",
                                        "num-matches": 5})
    reverted = wait_for(lambda: (lambda m: m[1] if len(m) >= 2 else None)(
        get(f"{lv}/api/v1/search?{changed_q}")[1]["matches"]), 120, "the level's revert", cluster)
    after = reverted["byteOffset"]
    later_info = urllib.parse.urlencode({"file": log_file, "search-string": "chatty-bolt saw",
                                         "start-byte-offset": after + 200})
    wait_for(lambda: get(f"{lv}/api/v1/search?{later_info}")[1]["matches"], 90,
             "INFO lines after the revert", cluster)
    late_debug = urllib.parse.urlencode({"file": log_file, "search-string": "chatty-debug",
                                         "start-byte-offset": after + 200})
    assert get(f"{lv}/api/v1/search?{late_debug}")[1]["matches"] == []

    # --follow prints what the worker logs from now on
    argv = [sys.executable, "-m", "stormpy.cli", "logs", "chatty", "--follow", "-n", "0",
            "--nimbus", cluster.nimbus_address]
    follow = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, text=True)
    assert follow.stdout is not None
    out_stream = follow.stdout
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(out_stream.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any(line.startswith(f"{host}:{port} ") and "chatty-bolt saw" in line
                             for line in list(lines)), 30, "followed log lines", cluster)
    finally:
        follow.terminate()
        follow.wait(30)
        reader.join(10)
    kill_and_check_gone(cluster, "chatty", tid)


def test_worker_log_rotates_at_its_cap(cluster: ProcessCluster, bundle: Path) -> None:
    tid = submit(cluster, bundle, "noisy", "noisy")
    _host, port, node, lv = worker_of(cluster, tid)
    index = next(i for i, sid in cluster.supervisor_ids().items() if sid == node)
    logs = Path(cluster.supervisors[index].workdir / "logs")
    current = logs / f"worker-{tid}-{port}.log"
    wait_for(lambda: (logs / f"{current.name}.2").exists(), 60, "two rotations of the noisy log", cluster)
    sizes = [p.stat().st_size for p in logs.glob(f"{current.name}*")]
    assert len(sizes) <= 3 and max(sizes) <= CAP_BYTES + 64 * 1024, sizes
    status, doc = get(f"{lv}/api/v1/listLogs?topoId={tid}")
    assert status == 200 and current.name in doc["logs"]
    kill_and_check_gone(cluster, "noisy", tid)


def test_stack_dump_of_a_worker_busy_in_user_code(cluster: ProcessCluster, bundle: Path) -> None:
    tid = submit(cluster, bundle, "busy", "busy")
    host, port, _node, _lv = worker_of(cluster, tid)
    out = run_cli(cluster, "profile", "busy", "--worker", f"{host}:{port}", "--action", "jstack")
    assert out.returncode == 0, out.stderr
    assert "spin_in_user_code" in out.stdout and "opstopo.py" in out.stdout
    assert "workers-artifacts" in out.stderr
    out = run_cli(cluster, "profile", "busy", "--worker", f"{host}:{port}", "--action", "cpu",
                  "--seconds", "1")
    assert out.returncode == 0, out.stderr
    assert "self samples" in out.stdout and "spin_in_user_code" in out.stdout
    out = run_cli(cluster, "profile", "busy", "--worker", f"{host}:{port}", "--action", "heap")
    assert out.returncode == 0, out.stderr
    assert "tracemalloc was off" in out.stdout and "live objects" in out.stdout
    out = run_cli(cluster, "profile", "busy", "--worker", f"{host}:1", "--action", "jstack")
    assert out.returncode != 0 and "no worker" in out.stderr
    kill_and_check_gone(cluster, "busy", tid, timeout=60)
