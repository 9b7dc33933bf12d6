"""A cut between the two supervisor hosts while both still reach ZooKeeper and Nimbus: frames for
the unreachable peer pile up to the transfer buffer and hold the spouts (backpressure), tuples
across the link time out, nothing is reassigned or restarted, and after healing the held frames
drain, the flow resumes, the timed-out ids are replayed from the ledger and every id is acked with
no tuple doubled beyond at-least-once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import ledger
import pytest
from partition_cluster import NetnsCluster
from partition_kit import record, running_workers, settle_and_audit, submit_ledger, worker_hosts

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.partitions]

#: frames a worker queues for one peer before the transport refuses more (small: the cut fills it)
TRANSFER_BUFFER = 16
#: padding per spout tuple: the traffic across the cut fills the kernel's socket buffers quickly
PAD = 8192


def process_figure(cluster: NetnsCluster, topology_id: str, name: str) -> float:
    """Sum of one ``process`` figure over the topology's latest worker heartbeats."""
    return sum(b.process.get(name, 0.0) for b in cluster.worker_heartbeats(topology_id).values())


def spout_failed(cluster: NetnsCluster, topology_id: str) -> float:
    return sum(b.stats.get("source", {}).get("failed", 0.0)
               for b in cluster.worker_heartbeats(topology_id).values())


def test_worker_link_cut_replays_and_resumes(netns_cluster: Callable[..., NetnsCluster], tmp_path: Path,
                                             ledger_bundle: Path) -> None:
    cluster = netns_cluster()
    ledger.add_ids(tmp_path, range(100))
    tid = submit_ledger(cluster, ledger_bundle, "linkcut", tmp_path, rate=15, pad=PAD,
                        conf={"topology.transfer.buffer.size": TRANSFER_BUFFER})
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
    cluster.wait_for(lambda: process_figure(cluster, tid, "frames_held") > 0
                     and process_figure(cluster, tid, "backpressure_rounds") > 0, 60,
                     "frames for the unreachable peer to be held and the spouts to wait")
    cluster.wait_for(lambda: spout_failed(cluster, tid) > 0, 60, "tuples across the cut to time out")
    acked_in_cut = ledger.acked_count(tmp_path)
    cluster.net.heal("sup0", "sup1")
    cut_secs = time.monotonic() - cut_at

    ledger.add_ids(tmp_path, range(700, 800))  # the spouts take new ids after the heal
    result = settle_and_audit(cluster, tid, tmp_path, timeout=120)
    cluster.wait_for(lambda: process_figure(cluster, tid, "frames_held") == 0, 30, "the held frames to drain")
    assert cluster.state.assignment(tid) == before, "a cut between workers must not reassign"
    assert running_workers(cluster, tid) == pids, "no worker may be restarted for a cut between workers"
    assert result.replayed > 0, "the timed-out ids must have been emitted again"
    record("worker-to-worker link cut", f"{result.summary()}; cut {cut_secs:.0f} s, acked when healed "
                                        f"{acked_in_cut}, frames refused "
                                        f"{process_figure(cluster, tid, 'frames_refused'):.0f}, backpressure "
                                        f"rounds {process_figure(cluster, tid, 'backpressure_rounds'):.0f}")
    cluster.client().kill("linkcut", 0)
    cluster.wait_for(lambda: not cluster.worker_processes(tid), 40, "the workers to exit")
