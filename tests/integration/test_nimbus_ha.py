"""Nimbus high availability in this process against a real ZooKeeper: one leader among several
Nimbus daemons, standbys refusing writes and replicating bundles, clients following the leader,
and a takeover that resumes the topologies and rolls back a half-written submission."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from stormpy.bundle import build_bundle
from stormpy.cli.topology_loader import load_topology
from stormpy.client import NimbusClient
from stormpy.cluster import ClusterState, StormBase, SupervisorInfo
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.config import DEFAULTS
from stormpy.nimbus import Nimbus
from stormpy.rpc.errors import InvalidRequestError, NotLeaderError
from stormpy.supervisor.bundle_return import BundleReturner

pytestmark = [pytest.mark.timeout(120), pytest.mark.zookeeper]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def wait_until(cond: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class HA:
    """Two Nimbus daemons on one cluster, a supervisor registered in ZooKeeper, a bundle."""

    def __init__(self, zk: str, root: str, tmp: Path, **extra: Any) -> None:
        self.zk, self.root, self.tmp = zk, root, tmp
        self.extra = extra
        self.nimbuses = [self.start(i) for i in range(2)]
        self.state = ClusterState.connect(zk, root)
        self.state.register_supervisor(SupervisorInfo("sup-a", "127.0.0.1", [6700, 6701], time.time(), "t"))
        src = tmp / "src"
        src.mkdir()
        shutil.copy(EXAMPLES / "wordcount.py", src / "wordcount.py")
        self.bundle = build_bundle(src, tmp / "wc.zip")
        self.spec = load_topology(src, "wordcount:topology").spec.to_doc()

    def start(self, i: int) -> Nimbus:
        conf = {"storm.zookeeper.servers": [self.zk], "storm.zookeeper.root": self.root,
                "storm.local.dir": str(self.tmp / f"nimbus-{i}"), "nimbus.thrift.port": 0,
                "nimbus.monitor.freq.secs": 0.2, "nimbus.task.launch.secs": 60,
                "storm.zookeeper.session.timeout": 4000, **self.extra}
        return Nimbus(conf).start()

    def leader(self) -> Nimbus:
        return wait_until(lambda: next((n for n in self.nimbuses if n.is_leader()), None), what="a leader")

    def standby(self) -> Nimbus:
        return next(n for n in self.nimbuses if n is not self.leader())

    def client(self, first: Nimbus) -> NimbusClient:
        seeds = [n.address for n in self.nimbuses]
        return NimbusClient("127.0.0.1", first.port, timeout_secs=5, retries=0, seeds=seeds,
                            leader_wait_secs=30)

    def close(self) -> None:
        for n in self.nimbuses:
            n.stop()
        self.state.close()


@pytest.fixture
def ha(zookeeper: Any, zk_root: str, tmp_path: Path) -> Iterator[HA]:
    env = HA(zookeeper.connect_string, zk_root, tmp_path, **{"topology.min.replication.count": 2})
    try:
        yield env
    finally:
        env.close()


def test_one_leader_standby_refuses_writes_naming_it(ha: HA) -> None:
    leader, standby = ha.leader(), ha.standby()
    assert sum(n.is_leader() for n in ha.nimbuses) == 1
    assert standby.leader_address() == leader.address
    plain = NimbusClient("127.0.0.1", standby.port, timeout_secs=5, leader_wait_secs=0)
    try:
        with pytest.raises(NotLeaderError, match=f"not the leader, leader is {leader.address}") as err:
            plain.rpc.call("kill_topology", name="wc")
        assert err.value.leader == leader.address
        assert plain.rpc.call("get_leader")["leader"] == leader.address
        assert "supervisors" in plain.cluster_info()  # reads are served by a standby
    finally:
        plain.close()


def test_submit_through_a_standby_is_replicated_before_it_is_acknowledged(ha: HA) -> None:
    leader, standby = ha.leader(), ha.standby()
    with ha.client(standby) as client:  # starts at the standby, follows it to the leader
        tid = client.submit("wc", ha.bundle.path, ha.spec, {"topology.workers": 1})
        assert client.address == leader.address
    for nimbus in (leader, standby):  # min.replication.count = 2: both held it before the answer
        assert nimbus.manager is not None and nimbus.manager.store.exists(tid)
    assert set(ha.state.storage.children(ha.state.paths.blobstore(tid))) == {leader.nimbus_id,
                                                                              standby.nimbus_id}
    assert ha.state.submitting() == []
    assert ha.state.storm_base(tid).status == "active"  # type: ignore[union-attr]


def test_submit_without_enough_replicas_is_rolled_back(zookeeper: Any, zk_root: str, tmp_path: Path) -> None:
    env = HA(zookeeper.connect_string, zk_root, tmp_path, **{"topology.min.replication.count": 3,
                                                             "topology.max.replication.wait.time.sec": 1})
    try:
        leader = env.leader()
        with env.client(leader) as client, pytest.raises(InvalidRequestError, match="only 2 of the 3"):
            client.submit("wc", env.bundle.path, env.spec, {"topology.workers": 1})
        # the leader removed everything before answering; a standby that registered its copy of
        # the bundle meanwhile finds no StormBase after writing its replica node and removes it
        assert env.state.storm_bases() == {} and env.state.submitting() == []
        wait_until(lambda: env.state.topologies() == [], timeout=10,
                   what="a standby's late replica registration to be undone")
        assert leader.manager is not None and leader.manager.store.topology_ids() == []
    finally:
        env.close()


def test_standby_takes_over_resumes_topologies_and_rolls_back_half_submissions(ha: HA) -> None:
    leader, standby = ha.leader(), ha.standby()
    with ha.client(leader) as client:
        tid = client.submit("wc", ha.bundle.path, ha.spec, {"topology.workers": 1})
        # a submission the leader began and never committed (as if it died in the middle)
        ha.state.mark_submitting("half-1-aa")
        ha.state.set_storm_base(StormBase(topology_id="half-1-aa", name="half", status="inactive",
                                          num_workers=1, launch_time=time.time(), owner=""))
        leader.stop()
        wait_until(standby.is_leader, what="the standby to take over")
        assert ha.state.storm_base("half-1-aa") is None and ha.state.submitting() == []
        info = client.topology_info("wc")  # the client follows the new leader
        assert info["id"] == tid and info["status"] == "active"
        client.kill("wc", wait_secs=0)
        assert client.address == standby.address
    wait_until(lambda: tid not in ha.state.topologies(), what="the topology to be removed")
    assert standby.manager is not None and not standby.manager.store.exists(tid)


def test_a_bundle_sent_back_goes_to_the_leader_when_the_first_seed_is_a_standby(ha: HA) -> None:
    """A supervisor whose first seed is a standby still sends a lost bundle to the leader: only
    the leader takes bundles back (a standby refuses ``restore_bundle`` with NotLeaderError)."""
    leader, standby = ha.leader(), ha.standby()
    with ha.client(leader) as client:
        tid = client.submit("wc", ha.bundle.path, ha.spec, {"topology.workers": 1})
    dirs = SupervisorDirs(ha.tmp / "supervisor", "sup-a", ha.tmp / "supervisor-logs")
    dirs.code_dir(tid).mkdir(parents=True)
    shutil.copy(ha.bundle.path, dirs.bundle_file(tid))
    dirs.topology_file(tid).write_bytes(msgpack.packb({"spec": ha.spec, "conf": {"topology.workers": 1}}))
    wanted = ha.state.paths.bundle_wanted(tid)
    ha.state.storage.ensure_path(wanted)  # the leader asks for the code back
    conf = {**DEFAULTS, "storm.zookeeper.servers": [ha.zk], "storm.zookeeper.root": ha.root,
            "nimbus.host": None, "nimbus.seeds": [standby.address, leader.address],
            "nimbus.rpc.timeout.secs": 10, "nimbus.rpc.retries": 0}
    returner = BundleReturner(conf, dirs, ha.state)
    # the leader still holds the code, so it takes the copy without installing it (False) and
    # withdraws its request; sent to the standby, the call would raise NotLeaderError
    assert returner.send(tid) is False
    assert not ha.state.storage.exists(wanted)
