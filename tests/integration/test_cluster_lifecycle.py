"""End to end on real processes: `stormpy jar` word count over two supervisors with exact counts,
`list`, `kill` (processes and ZooKeeper state gone); deactivate/activate and inactive submission;
rebalance to more workers. One Nimbus + two supervisors shared by the module."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    bundle_path_fixture,
    cluster_fixture,
    filewc,
    kill_and_check_gone,
    record_timing,
    run_cli,
    submit,
    wait_for,
    worker_count,
)

from stormpy.testing import stays_unchanged
from stormpy.testing._cluster import ProcessCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.zookeeper, pytest.mark.cluster]


def test_jar_wordcount_exact_counts_list_and_kill(cluster: ProcessCluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    count = 120
    env = {"FILEWC_OUT": str(out), "FILEWC_COUNT": str(count), "FILEWC_RATE": "200", "FILEWC_WORKERS": "2"}
    started = time.time()
    jar = run_cli(cluster, "jar", str(filewc.Path(filewc.__file__).parent), "filewc:topology",
                  "--name", "wordcount", env=env)
    assert jar.returncode == 0, jar.stderr + jar.stdout
    assert "submitted topology wordcount as wordcount-" in jar.stdout
    topology_id = jar.stdout.split(" as ")[1].split()[0]

    first = wait_for(lambda: filewc.first_count_time(out), 60, "the first counted word", cluster)
    record_timing("stormpy jar -> first processed tuple", first - started)

    a = cluster.state.assignment(topology_id)
    assert a is not None and len(a.workers()) == 2
    assert {node for node, _ in a.workers()} == set(cluster.supervisor_ids().values())  # one per supervisor

    expected = filewc.expected_counts(count)
    wait_for(lambda: filewc.acked_ids(out) == set(range(count)), 90, "every sentence to be acked", cluster)
    wait_for(lambda: filewc.final_counts(out) == expected, 30, "the exact word counts", cluster)

    listed = run_cli(cluster, "list")
    assert listed.returncode == 0, listed.stderr
    assert "wordcount" in listed.stdout and topology_id in listed.stdout and "active" in listed.stdout

    info = run_cli(cluster, "info", "wordcount")
    assert info.returncode == 0, info.stderr
    assert "sentences" in info.stdout and "count" in info.stdout

    killed = run_cli(cluster, "kill", "wordcount", "-w", "0")
    assert killed.returncode == 0, killed.stderr
    wait_for(lambda: not cluster.worker_processes(topology_id), 40, "the workers to exit", cluster)
    wait_for(lambda: topology_id not in cluster.state.topologies(), 40, "the ZooKeeper state to go", cluster)
    assert "No topologies running" in run_cli(cluster, "list").stdout
    unknown = run_cli(cluster, "kill", "wordcount")
    assert unknown.returncode == 1 and "NotFoundError" in unknown.stderr


def test_inactive_submit_then_activate_and_deactivate(cluster: ProcessCluster, tmp_path: Path,
                                                      bundle_path: Path) -> None:
    out = tmp_path / "out"
    tid = submit(cluster, bundle_path, "switch", out, count=0, rate=20, workers=1, active=False)
    wait_for(lambda: cluster.worker_processes(tid), 60, "the worker to start", cluster)
    wait_for(lambda: cluster.worker_heartbeats(tid), 60, "the worker's first heartbeat", cluster)
    def lines() -> int:
        return filewc.emitted_lines(out)

    assert stays_unchanged(lines, 2.0, "the lines emitted by the inactive topology") == 0
    # as in Storm, no spout open() and no bolt prepare() before the first activation (both open
    # their output files there)
    def opened_files() -> list[str]:
        return sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert opened_files() == []

    assert run_cli(cluster, "activate", "switch").returncode == 0
    wait_for(lambda: filewc.emitted_lines(out) >= 5, 30, "emission after activate", cluster)
    assert any(n.startswith("emitted-") for n in opened_files())
    assert any(n.startswith("counts-") for n in opened_files())

    assert run_cli(cluster, "deactivate", "switch").returncode == 0

    # the worker follows the status through a ZooKeeper watch; until then stays_unchanged raises
    frozen = wait_for(lambda: stays_unchanged(lines, 1.0, "the emitted lines"), 20,
                      "emission to stop after deactivate", cluster, interval=0)
    assert stays_unchanged(lines, 2.0, "the lines emitted by the deactivated topology") == frozen

    cluster.client().activate("switch")
    wait_for(lambda: filewc.emitted_lines(out) >= frozen + 5, 30, "emission after re-activate", cluster)
    kill_and_check_gone(cluster, "switch", tid)


def test_rebalance_changes_the_worker_count(cluster: ProcessCluster, tmp_path: Path,
                                            bundle_path: Path) -> None:
    out = tmp_path / "out"
    tid = submit(cluster, bundle_path, "grow", out, count=0, rate=30, workers=1)
    wait_for(lambda: filewc.acked_ids(out), 60, "first acks", cluster)
    assert worker_count(cluster, tid) == 1

    result = run_cli(cluster, "rebalance", "grow", "-w", "0", "-n", "3", "-e", "count=1")
    assert result.returncode == 0, result.stderr
    wait_for(lambda: worker_count(cluster, tid) == 3, 30, "three workers in the assignment", cluster)
    wait_for(lambda: len(cluster.worker_processes(tid)) == 3, 60, "three worker processes", cluster)
    info = cluster.client().topology_info("grow")
    assert info["status"] == "active" and info["components"]["count"]["executors"] == 1
    before = len(filewc.acked_ids(out))
    wait_for(lambda: len(filewc.acked_ids(out)) >= before + 20, 60, "processing after the rebalance",
             cluster)
    kill_and_check_gone(cluster, "grow", tid)
