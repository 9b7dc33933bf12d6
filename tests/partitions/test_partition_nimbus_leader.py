"""The Nimbus leader cut off from ZooKeeper while the standby, the supervisors and the clients still
reach both: the standby takes over once the leader's session expires, the old leader never says it
leads at the same time (it refuses writes from the moment its connection is suspended), a submit
sent to the old leader during the cut (its writes waiting on ZooKeeper until the cut is noticed,
then refused as NotLeaderError) is taken to the new leader and completes once, as is one sent
once the standby leads, the
running topology loses nothing, and after the heal the old leader stays a standby."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import ledger
import pytest
from partition_cluster import NIMBUS_PORT, NetnsCluster
from partition_kit import feed_and_wait, record, settle_and_audit, submit_ledger

from stormpy.client import NimbusClient
from stormpy.rpc.errors import NotLeaderError

pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.partitions]


class LeaderSampler(threading.Thread):
    """Asks both Nimbus hosts who leads, again and again, until stopped; keeps every answer."""

    def __init__(self, cluster: NetnsCluster) -> None:
        super().__init__(daemon=True)
        self.cluster = cluster
        self.samples: list[tuple[float, bool | None, bool | None]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.samples.append((time.monotonic(), self.cluster.says_leader(0), self.cluster.says_leader(1)))
            self.halt.wait(0.1)

    def first_lead(self, index: int, since: float) -> float:
        """When Nimbus ``index`` first said it leads after ``since`` (now if it has not yet)."""
        return next((t for t, *leads in list(self.samples) if t >= since and leads[index]), time.monotonic())

    def both_led(self) -> list[tuple[float, bool | None, bool | None]]:
        return [s for s in self.samples if s[1] and s[2]]


def test_leader_cut_from_zookeeper_standby_takes_over(netns_cluster: Callable[..., NetnsCluster],
                                                      tmp_path: Path, ledger_bundle: Path) -> None:
    cluster = netns_cluster()
    running_dir, submitted_dir, late_dir = tmp_path / "running", tmp_path / "submitted", tmp_path / "late"
    for d in (running_dir, submitted_dir, late_dir):
        d.mkdir()
    ledger.add_ids(running_dir, range(300))
    ledger.add_ids(submitted_dir, range(100))
    ledger.add_ids(late_dir, range(100))
    tid = submit_ledger(cluster, ledger_bundle, "running", running_dir, rate=10)
    cluster.wait_for(lambda: ledger.acked_count(running_dir) >= 30, 90, "the first acks")
    old = cluster.leader_index()
    assert old is not None
    new = 1 - old
    old_host = cluster.nimbus_hosts[old]

    sampler = LeaderSampler(cluster)
    sampler.start()
    try:
        cluster.net.cut(old_host, "zk")
        cut_at = time.monotonic()
        # a submit sent to the cut-off leader (following the leader as any client does)
        submitter = NimbusClient(cluster.net.address(old_host), NIMBUS_PORT, timeout_secs=10, retries=1,
                                 seeds=cluster.seeds, leader_wait_secs=60)
        outcome: str
        try:
            submitter.submit("submitted", ledger_bundle, ledger.build(str(submitted_dir), 20).to_doc(),
                             {"topology.workers": 1, "topology.message.timeout.secs": 6})
            outcome = "completed"
        except Exception as exc:  # noqa: BLE001 - the test judges the error below
            outcome = f"failed: {type(exc).__name__}: {exc}"
            assert str(exc).strip(), "a failed submit must say why"
        finally:
            submitter.close()
        submit_secs = time.monotonic() - cut_at
        cluster.wait_for(lambda: cluster.says_leader(new), 60, "the standby to take over")
        takeover_secs = sampler.first_lead(new, cut_at) - cut_at
        # the cut-off leader refuses writes (it cannot know who leads: it names no one or the new one)
        direct = NimbusClient(cluster.net.address(old_host), NIMBUS_PORT, timeout_secs=10, retries=0,
                              leader_wait_secs=0)
        try:
            with pytest.raises(NotLeaderError):
                direct.call("deactivate", name="running")
        finally:
            direct.close()
        # a submit sent to the cut-off leader once the standby leads: the old leader refuses it
        # and the client takes it to the new leader, where it completes once
        late = NimbusClient(cluster.net.address(old_host), NIMBUS_PORT, timeout_secs=10, retries=1,
                            seeds=cluster.seeds, leader_wait_secs=60)
        try:
            late_id = late.submit("late", ledger_bundle, ledger.build(str(late_dir), 20).to_doc(),
                                  {"topology.workers": 1, "topology.message.timeout.secs": 6})
            assert late.address == f"{cluster.net.address(cluster.nimbus_hosts[new])}:{NIMBUS_PORT}"
        finally:
            late.close()
        feed_and_wait(cluster, running_dir, range(300, 340), 60, "by the running topology during the cut")
    finally:
        cluster.net.heal_all()
    healed_at = time.monotonic()
    # after the heal the old leader gets its session back as a standby: one leader
    cluster.wait_for(lambda: cluster.says_leader(old) is False and cluster.says_leader(new), 60,
                     "the old leader to answer as a standby after the heal")
    sampler.halt.set()
    sampler.join(10)
    assert sampler.both_led() == [], f"two Nimbus hosts said they lead at once: {sampler.both_led()[:5]}"
    assert cluster.nimbuses[old].running, "the old leader must survive the cut"

    result = settle_and_audit(cluster, tid, running_dir, timeout=120)
    late_result = settle_and_audit(cluster, late_id, late_dir, timeout=120)
    names = [base.name for base in cluster.state.storm_bases().values()]
    assert names.count("running") == 1 and names.count("late") == 1
    assert cluster.state.submitting() == []
    assert outcome == "completed", f"the submit during the cut must reach the new leader: {outcome}"
    assert names.count("submitted") == 1, f"the submit completed, so one topology: {names}"
    sub_id = cluster.client().topology_info("submitted")["id"]
    sub = settle_and_audit(cluster, sub_id, submitted_dir, timeout=120)
    submitted = f"submit during the cut completed once in {submit_secs:.0f} s ({sub.summary()})"
    record("Nimbus leader cut from ZooKeeper", f"{result.summary()}; standby led {takeover_secs:.0f} s after "
                                               f"the cut; {submitted}; a submit to the old leader "
                                               f"after the takeover completed once on the new one "
                                               f"({late_result.summary()}); healed after "
                                               f"{healed_at - cut_at:.0f} s; samples with two leaders: 0 "
                                               f"of {len(sampler.samples)}")
    client = cluster.client()
    for name in ("running", "late", "submitted"):
        client.kill(name, 0)
    cluster.wait_for(lambda: not cluster.worker_processes(), 40, "the workers to exit")
