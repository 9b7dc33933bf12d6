"""A cut between the two supervisor hosts while both still reach ZooKeeper and Nimbus: tuples
across the link time out and are replayed from the ledger, nothing is reassigned or restarted,
the spouts are not wedged by the frames held for the unreachable peer, and after healing every id
is acked with no tuple doubled beyond at-least-once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import ledger
import pytest
from partition_cluster import NetnsCluster
from partition_kit import record, running_workers, settle_and_audit, submit_ledger, worker_hosts

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.partitions]


def test_worker_link_cut_replays_and_resumes(netns_cluster: Callable[..., NetnsCluster], tmp_path: Path,
                                             ledger_bundle: Path) -> None:
    cluster = netns_cluster()
    ledger.add_ids(tmp_path, range(100))
    tid = submit_ledger(cluster, ledger_bundle, "linkcut", tmp_path, rate=15)
    cluster.wait_for(lambda: set(worker_hosts(cluster, tid)) == {"sup0", "sup1"}, 60,
                     "one worker on each supervisor host")
    cluster.wait_for(lambda: ledger.acked_count(tmp_path) >= 40, 90, "the first acks")
    before = cluster.state.assignment(tid)
    pids = running_workers(cluster, tid)

    ledger.add_ids(tmp_path, range(100, 700))
    cluster.net.cut("sup0", "sup1")
    cut_at = time.monotonic()
    assert not cluster.net.reachable("sup0", "sup1", 6702)
    assert cluster.net.reachable("sup0", "zk", 2181) and cluster.net.reachable("sup1", "nimbus0", 6627)
    # tuples sent across the cut time out (topology.message.timeout.secs) and are emitted again
    cluster.wait_for(lambda: ledger.audit(tmp_path).replayed >= 5, 60,
                     "tuples across the cut to time out and be replayed")
    acked_in_cut = ledger.acked_count(tmp_path)
    cluster.net.heal("sup0", "sup1")
    cut_secs = time.monotonic() - cut_at

    ledger.add_ids(tmp_path, range(700, 800))  # the spouts take new ids after the heal
    result = settle_and_audit(cluster, tid, tmp_path, timeout=120)
    assert cluster.state.assignment(tid) == before, "a cut between workers must not reassign"
    assert running_workers(cluster, tid) == pids, "no worker may be restarted for a cut between workers"
    assert result.replayed >= 5
    record("worker-to-worker link cut", f"{result.summary()}; cut {cut_secs:.0f} s, "
                                        f"acked when healed {acked_in_cut}")
    cluster.client().kill("linkcut", 0)
    cluster.wait_for(lambda: not cluster.worker_processes(tid), 40, "the workers to exit")
