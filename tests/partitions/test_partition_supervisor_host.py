"""A supervisor host cut off from ZooKeeper and both Nimbus hosts (it still reaches the other
supervisor's host) for longer than the supervisor and task timeouts: Nimbus moves its executors
to the other host; when the link heals the old workers stop (within the bound of
docs/operations.md), the final assignment's workers all run, and the ledger shows every id acked
and none doubled beyond at-least-once."""

from __future__ import annotations

import time
from collections.abc import Callable
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
)

from stormpy.testing._cluster import FAST_TIMEOUTS

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.partitions]

SHUTDOWN_GRACE_SECS = 3


def old_worker_stop_bound() -> float:
    """docs/operations.md: after the heal, a worker whose executors moved stops within the ZooKeeper
    session timeout (its client reconnects and finds its session gone), a sync period of its
    link or of its supervisor, and the supervisor's shutdown grace; plus 5 s for slow machines."""
    return (FAST_TIMEOUTS["storm.zookeeper.session.timeout"] / 1000
            + FAST_TIMEOUTS["supervisor.monitor.frequency.secs"] + SHUTDOWN_GRACE_SECS + 5)


def test_supervisor_host_cut_off_moves_executors(netns_cluster: Callable[..., NetnsCluster], tmp_path: Path,
                                                 ledger_bundle: Path) -> None:
    cluster = netns_cluster(**{"supervisor.worker.shutdown.sleep.secs": SHUTDOWN_GRACE_SECS})
    ledger.add_ids(tmp_path, range(100))
    tid = submit_ledger(cluster, ledger_bundle, "hostcut", tmp_path, rate=15)
    cluster.wait_for(lambda: set(worker_hosts(cluster, tid)) == {"sup0", "sup1"}, 60,
                     "one worker on each supervisor host")
    cluster.wait_for(lambda: ledger.acked_count(tmp_path) >= 40, 90, "the first acks")
    ids = cluster.supervisor_ids()
    cut_node = ids[0]
    old_pids = {pid for (node, _), pids in running_workers(cluster, tid).items() if node == cut_node
                for pid in pids}
    assert len(old_pids) == 1

    ledger.add_ids(tmp_path, range(100, 300))
    for host in ("zk", "nimbus0", "nimbus1"):
        cluster.net.cut("sup0", host)
    cut_at = time.monotonic()

    def moved() -> bool:
        hosts = worker_hosts(cluster, tid)
        return set(hosts) == {"sup1"} and sum(len(p) for p in hosts.values()) == 2

    cluster.wait_for(moved, 60, "Nimbus to move the cut-off host's executors to sup1")
    reassigned_secs = time.monotonic() - cut_at
    cluster.wait_for(lambda: len([k for k in running_workers(cluster, tid) if k[0] == ids[1]]) == 2, 60,
                     "two workers running on sup1")
    feed_and_wait(cluster, tmp_path, range(300, 420), 60, "on sup1 while sup0 is cut off")
    old_ran_in_cut = bool(old_pids & {pid for pid, _ in cluster.worker_processes(tid)})

    cluster.net.heal_all()
    healed_at = time.monotonic()
    healed_wall = time.time()
    cluster.wait_for(lambda: not old_pids & {pid for pid, _ in cluster.worker_processes(tid)}, 60,
                     "the cut-off host's old worker to stop after the heal")
    stop_secs = time.monotonic() - healed_at
    ledger.add_ids(tmp_path, range(420, 500))
    result = settle_and_audit(cluster, tid, tmp_path, timeout=120)

    # two workers ran the same executor from the move until the old one stopped: the old
    # worker's last row (emit or sink) must come before the bound after the heal
    last_old = max((at for table in ("processed", "emitted")
                    for at in ledger.rows_of_pids(tmp_path, table, old_pids)), default=0.0)
    bound = old_worker_stop_bound()
    assert last_old <= healed_wall + bound, \
        f"the old worker still ran {last_old - healed_wall:.1f} s after the heal (bound {bound:.0f} s)"
    overlap = max([*ledger.overlaps(tmp_path, "processed").values(),
                   *ledger.overlaps(tmp_path, "emitted").values(), 0.0])
    record("supervisor host cut off", f"{result.summary()}; reassigned after {reassigned_secs:.0f} s, "
                                      f"old worker {'ran through the cut and ' if old_ran_in_cut else ''}"
                                      f"stopped {stop_secs:.0f} s after the heal, longest "
                                      f"double run of a task {overlap:.0f} s")
    cluster.client().kill("hostcut", 0)
    cluster.wait_for(lambda: not cluster.worker_processes(tid), 40, "the workers to exit")
