"""Test kit for the cluster tests that kill a worker mid-stream (test_state_cluster.py,
test_window_state_cluster.py, test_join_cluster.py) over the topologies of
``durable_topologies/``: their durable spout's ack and fail log read back from SQLite, and the
kill itself.

Contract: :func:`kill_a_worker_mid_stream` waits for the first ``first`` acked ids, then for
``FLOWING`` more (acks flowing right before the kill), kills with SIGKILL a worker that runs one
of ``tasks`` but not the spout (the test fails when every such task shares the spout's worker),
then waits for progress after the kill and for all ``n`` ids to be acked, and kills the
topology, checking that its workers and its ZooKeeper state are gone. With ``until_a_fail``
it kills again (at most ``MAX_KILLS`` times) while no id has failed ``fail_within`` seconds
after a kill: on a loaded machine a stalled worker can be killed holding nothing (tuples queued
for it wait in their sender and reach its restarted successor), so that kill tests nothing."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from cluster_kit import kill_and_check_gone, task_port, wait_for, worker_pids_by_port

from stormpy.testing import WaitTimeout
from stormpy.testing._cluster import ProcessCluster

#: acks seen just before the kill, so it lands while the stream flows
FLOWING = 10

#: kills at most, with ``until_a_fail``
MAX_KILLS = 3

#: the folder bundled for the topologies (statecount, wincount, joinpairs and their spout)
TOPOLOGIES = Path(__file__).resolve().parent / "durable_topologies"


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` on the SQLite file ``db`` (none before the file or its table exist)."""
    if not db.exists():
        return []
    conn = sqlite3.connect(db, timeout=30)
    try:
        return list(conn.execute(sql))
    except sqlite3.OperationalError:  # table not created yet
        return []
    finally:
        conn.close()


def acked(db: Path) -> int:
    """How many ids the durable spout saw acked."""
    rows = query(db, "SELECT count(*) FROM acked")
    return int(rows[0][0]) if rows else 0


def failed_ids(db: Path) -> Counter[int]:
    """How often the durable spout saw each id fail (each replay follows one fail)."""
    return Counter(r[0] for r in query(db, "SELECT id FROM failed"))


def kill_a_worker_mid_stream(cluster: ProcessCluster, name: str, topology_id: str, *,
                             tasks: list[int], spout_task: int, db: Path, n: int, first: int,
                             what: str, until_a_fail: bool = False,
                             fail_within: float = 30) -> None:
    """Kill the worker of one of ``tasks`` (not the spout's) once ``first`` of ``what`` are
    acked (again while no id failed, with ``until_a_fail``); return when all ``n`` are acked and
    the topology is gone."""
    wait_for(lambda: acked(db) > first, 90, f"the first {what}", cluster)
    for _kill in range(MAX_KILLS if until_a_fail else 1):
        _kill_while_flowing(cluster, topology_id, tasks=tasks, spout_task=spout_task, db=db, n=n,
                            what=what)
        if not until_a_fail or _a_fail_within(db, n, fail_within):
            break
    wait_for(lambda: acked(db) >= n, 180, f"all {n} {what} acked", cluster)
    kill_and_check_gone(cluster, name, topology_id)


def _kill_while_flowing(cluster: ProcessCluster, topology_id: str, *, tasks: list[int],
                        spout_task: int, db: Path, n: int, what: str) -> None:
    """One kill of a worker of ``tasks`` while acks flow, and progress after it."""
    # kill while acks flow: a worker stalled by a loaded machine holds the stream back upstream
    # (queued for the target, which then holds nothing), and the kill would lose nothing
    flowing = acked(db)
    wait_for(lambda: acked(db) >= min(flowing + FLOWING, n), 90, f"{what} acked again", cluster)
    progress = acked(db)
    assert progress < n, "the stream ended before the kill"
    # the target is looked up right before the kill, and again when its supervisor restarted or
    # Nimbus moved it meanwhile (a loaded machine misses heartbeats)
    wait_for(lambda: _kill_target(cluster, topology_id, tasks, spout_task), 60,
             f"a worker of tasks {tasks} (not the spout's) killed", cluster)
    wait_for(lambda: acked(db) > progress + 100 or acked(db) >= n, 120,
             "progress after the kill", cluster)


def _a_fail_within(db: Path, n: int, secs: float) -> bool:
    """Whether an id fails within ``secs`` (False at once when all ``n`` are acked)."""
    try:
        wait_for(lambda: failed_ids(db) or acked(db) >= n, secs, "an id to fail")
    except WaitTimeout:
        return False
    return bool(failed_ids(db))


def _kill_target(cluster: ProcessCluster, topology_id: str, tasks: list[int],
                 spout_task: int) -> bool:
    """SIGKILL the worker of one of ``tasks`` that does not run the spout; False when the
    assignment or the processes changed under the lookup (try again)."""
    spout_port = task_port(cluster, topology_id, spout_task)
    candidates = sorted(p for p in {task_port(cluster, topology_id, t) for t in tasks}
                        if p is not None and p != spout_port)
    assert candidates, f"every task of {tasks} shares the spout's worker"
    pid = worker_pids_by_port(cluster, topology_id).get(candidates[0])
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True
