"""Failures on real processes: a worker killed with SIGKILL is restarted by its supervisor and no
spout message is lost; a restarted Nimbus resumes managing a running topology; a stopped
supervisor's executors move to the other supervisor. One cluster shared by the module."""

from __future__ import annotations

import os
import signal
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
    submit,
    wait_for,
)

from stormpy.testing import stays_unchanged
from stormpy.testing._cluster import ProcessCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.zookeeper, pytest.mark.cluster]


def port_of(argv: list[str]) -> int:
    return int(argv[argv.index("--port") + 1])


def test_kill9_worker_is_restarted_and_nothing_is_lost(cluster: ProcessCluster, tmp_path: Path,
                                                       bundle_path: Path) -> None:
    out = tmp_path / "out"
    count = 300
    tid = submit(cluster, bundle_path, "durable", out, count=count, rate=25, workers=2)
    wait_for(lambda: len(filewc.acked_ids(out)) >= 30, 60, "the first acks", cluster)
    workers = wait_for(lambda: cluster.worker_processes(tid) if len(cluster.worker_processes(tid)) == 2
                       else None, 30, "two worker processes", cluster)
    victim_pid, argv = workers[0]
    port = port_of(argv)
    node = next(n for n, p in cluster.state.assignment(tid).workers() if p == port)  # type: ignore[union-attr]
    killed_at = time.time()
    os.kill(victim_pid, signal.SIGKILL)

    def replacement() -> int | None:
        for pid, args in cluster.worker_processes(tid):
            if pid != victim_pid and port_of(args) == port:
                return pid
        return None

    wait_for(replacement, 60, f"the supervisor to restart the worker on port {port}", cluster)

    def restarted_heartbeat() -> bool:
        beat = cluster.worker_heartbeat(tid, node, port)
        return beat is not None and beat.time > killed_at and beat.uptime < time.time() - killed_at

    wait_for(restarted_heartbeat, 60, "the restarted worker's first heartbeat", cluster, interval=0.05)
    record_timing("worker restart after kill -9 (kill -> first heartbeat of the new worker)",
                  time.time() - killed_at)
    wait_for(lambda: filewc.acked_ids(out) == set(range(count)), 120,
             "every spout message id to be acked after the restart", cluster)
    kill_and_check_gone(cluster, "durable", tid)


def test_restarted_nimbus_resumes_and_can_kill(cluster: ProcessCluster, tmp_path: Path,
                                               bundle_path: Path) -> None:
    out = tmp_path / "out"
    tid = submit(cluster, bundle_path, "survivor", out, count=0, rate=15, workers=2)
    wait_for(lambda: len(filewc.acked_ids(out)) >= 10, 60, "the first acks", cluster)
    before = cluster.state.assignment(tid)
    assert cluster.stop_nimbus() == 0, "Nimbus did not exit cleanly on SIGTERM"

    acked = len(filewc.acked_ids(out))
    wait_for(lambda: len(filewc.acked_ids(out)) >= acked + 10, 30, "processing while Nimbus is down")

    cluster.start_nimbus()
    client = cluster.client()
    info = client.topology_info("survivor")
    assert info["id"] == tid and info["status"] == "active" and info["num_workers"] == 2
    # a few monitor rounds: the new Nimbus must not reshuffle healthy workers
    assert stays_unchanged(lambda: cluster.state.assignment(tid), 3,
                           "the assignment of the healthy workers under the new Nimbus") == before
    acked = len(filewc.acked_ids(out))
    wait_for(lambda: len(filewc.acked_ids(out)) >= acked + 10, 30, "processing under the new Nimbus", cluster)
    kill_and_check_gone(cluster, "survivor", tid)


def test_stopped_supervisor_executors_move_to_the_other(cluster: ProcessCluster, tmp_path: Path,
                                                        bundle_path: Path) -> None:
    out = tmp_path / "out"
    tid = submit(cluster, bundle_path, "mover", out, count=0, rate=15, workers=2)
    wait_for(lambda: len(filewc.acked_ids(out)) >= 10, 60, "the first acks", cluster)
    ids = cluster.supervisor_ids()
    nodes = {n for n, _ in cluster.state.assignment(tid).workers()}  # type: ignore[union-attr]
    assert nodes == set(ids.values())
    gone = ids[1]
    stopped_at = time.time()
    cluster.stop_supervisor(1)
    try:
        def moved() -> bool:
            a = cluster.state.assignment(tid)
            return a is not None and gone not in {n for n, _ in a.workers()} and len(a.workers()) == 2

        wait_for(moved, 40, "the executors to leave the stopped supervisor", cluster)
        record_timing("supervisor stopped -> executors reassigned", time.time() - stopped_at)
        wait_for(lambda: len(cluster.worker_processes(tid)) == 2, 60,
                 "two workers on the remaining supervisor", cluster)
        acked = len(filewc.acked_ids(out))
        wait_for(lambda: len(filewc.acked_ids(out)) >= acked + 15, 60, "processing after the move", cluster)
    finally:
        cluster.start_supervisor(1)
    kill_and_check_gone(cluster, "mover", tid)
