"""ZooKeeper session expiry of a supervisor and of its worker: the supervisor host is cut from
ZooKeeper only (it still reaches Nimbus and the other supervisor) for longer than the session
timeout but shorter than Nimbus's supervisor and task timeouts. Both sessions expire (ZooKeeper
drops them; the supervisor's ephemeral registration vanishes), and after the heal both processes
carry on with new sessions: the registration comes back, the worker's heartbeats resume, nothing
is reassigned or restarted, and the ledger shows nothing lost or doubled."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import ledger
import pytest
from partition_cluster import NetnsCluster
from partition_kit import (
    feed_and_wait,
    record,
    running_workers,
    settle_and_audit,
    submit_ledger,
    worker_hosts,
    zk_sessions,
)

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.partitions]


def test_supervisor_and_worker_sessions_expire_and_recover(netns_cluster: Callable[..., NetnsCluster],
                                                           tmp_path: Path, ledger_bundle: Path) -> None:
    # Nimbus waits longer than the cut before judging the host dead: only the sessions expire
    cluster = netns_cluster(**{"nimbus.supervisor.timeout.secs": 60, "nimbus.task.timeout.secs": 60})
    ledger.add_ids(tmp_path, range(100))
    tid = submit_ledger(cluster, ledger_bundle, "expiry", tmp_path, rate=15)
    cluster.wait_for(lambda: set(worker_hosts(cluster, tid)) == {"sup0", "sup1"}, 60,
                     "one worker on each supervisor host")
    cluster.wait_for(lambda: ledger.acked_count(tmp_path) >= 40, 90, "the first acks")
    node = cluster.supervisor_ids()[0]
    supervisor_pid = cluster.supervisors[0].pid
    assert supervisor_pid is not None
    before = cluster.state.assignment(tid)
    pids = running_workers(cluster, tid)
    (worker_port,) = [port for (n, port) in pids if n == node]
    (worker_pid,) = pids[(node, worker_port)]
    old_sessions = {"supervisor": cluster.wait_for(lambda: zk_sessions(cluster, supervisor_pid), 30,
                                                   "the supervisor's ZooKeeper session"),
                    "worker": cluster.wait_for(lambda: zk_sessions(cluster, worker_pid), 30,
                                               "the worker's ZooKeeper session")}

    ledger.add_ids(tmp_path, range(100, 300))
    cluster.net.cut("sup0", "zk")
    cut_at = time.monotonic()
    cluster.wait_for(lambda: node not in cluster.state.supervisors(), 60,
                     "the cut-off supervisor's ephemeral registration to vanish (session expired)")
    expired_secs = time.monotonic() - cut_at
    feed_and_wait(cluster, tmp_path, range(300, 340), 60, "while the host cannot reach ZooKeeper")
    cluster.net.heal("sup0", "zk")
    healed_wall = time.time()

    cluster.wait_for(lambda: node in cluster.state.supervisors(), 60,
                     "the supervisor's registration to come back")
    for who, pid in (("supervisor", supervisor_pid), ("worker", worker_pid)):
        fresh = cluster.wait_for(partial(zk_sessions, cluster, pid), 60, f"the {who}'s new session")
        assert not fresh & old_sessions[who], f"the {who}'s session should have expired"

    def heartbeat_resumed() -> bool:
        beat = cluster.worker_heartbeat(tid, node, worker_port)
        return beat is not None and beat.time > healed_wall

    cluster.wait_for(heartbeat_resumed, 60, "the worker's heartbeats to resume")
    ledger.add_ids(tmp_path, range(340, 400))
    result = settle_and_audit(cluster, tid, tmp_path, timeout=120)
    assert cluster.state.assignment(tid) == before, "an expired session alone must not reassign"
    assert running_workers(cluster, tid) == pids, "no worker may be restarted for a session expiry"
    assert cluster.supervisors[0].pid == supervisor_pid and cluster.supervisors[0].running
    record("ZooKeeper session expiry (supervisor + worker)",
           f"{result.summary()}; registration vanished {expired_secs:.0f} s after the cut")
    cluster.client().kill("expiry", 0)
    cluster.wait_for(lambda: not cluster.worker_processes(tid), 40, "the workers to exit")
