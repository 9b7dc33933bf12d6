"""A topology whose code no Nimbus holds any more, against a real ZooKeeper: the leader says so
(``degraded`` in list/info), asks the supervisors for it, and a supervisor's copy sent back is
checked against the sha256 recorded at submit, installed and registered; the default replication
count follows the number of Nimbus seeds."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
from click.testing import CliRunner

from stormpy.bundle import build_bundle
from stormpy.cli.main import cli
from stormpy.cli.topology_loader import load_topology
from stormpy.client import NimbusClient
from stormpy.cluster import ClusterState, SupervisorInfo
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.config import DEFAULTS
from stormpy.nimbus import Nimbus
from stormpy.nimbus.recovery import NO_CODE
from stormpy.nimbus.replication import replication_target
from stormpy.rpc.errors import InvalidRequestError
from stormpy.supervisor.bundle_return import BundleReturner
from stormpy.testing import wait_for

pytestmark = [pytest.mark.timeout(120), pytest.mark.zookeeper]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class OneNimbus:
    """One Nimbus (restartable on its port), a supervisor record in ZooKeeper, a bundle."""

    def __init__(self, zk: str, root: str, tmp: Path, **extra: Any) -> None:
        self.conf = {"storm.zookeeper.servers": [zk], "storm.zookeeper.root": root,
                     "storm.local.dir": str(tmp / "nimbus"), "nimbus.thrift.port": 0,
                     "nimbus.monitor.freq.secs": 0.2, "nimbus.task.launch.secs": 60,
                     "storm.zookeeper.session.timeout": 4000, **extra}
        self.nimbus = Nimbus(self.conf).start()
        self.conf["nimbus.thrift.port"] = self.nimbus.port
        self.state = ClusterState.connect(zk, root)
        self.state.register_supervisor(SupervisorInfo("sup-a", "127.0.0.1", [6700, 6701], time.time(), "t"))
        src = tmp / "src"
        src.mkdir()
        shutil.copy(EXAMPLES / "wordcount.py", src / "wordcount.py")
        self.bundle = build_bundle(src, tmp / "wc.zip")
        self.spec = load_topology(src, "wordcount:topology").spec.to_doc()
        self.tmp = tmp

    def client(self) -> NimbusClient:
        return NimbusClient("127.0.0.1", self.nimbus.port, timeout_secs=10, retries=0)

    def restart(self) -> None:
        self.nimbus.stop()
        self.nimbus = Nimbus(self.conf).start()
        wait_for(self.nimbus.is_leader, 30, "the restarted Nimbus to lead")

    def supervisor_copy(self, topology_id: str, bundle: Path) -> SupervisorDirs:
        """What a supervisor that ran the topology keeps (``stormdist/<id>``)."""
        dirs = SupervisorDirs(self.tmp / "supervisor", "sup-a", self.tmp / "supervisor-logs")
        dirs.code_dir(topology_id).mkdir(parents=True)
        shutil.copy(bundle, dirs.bundle_file(topology_id))
        conf = {"topology.workers": 1, "topology.name": "wc"}
        dirs.topology_file(topology_id).write_bytes(msgpack.packb({"spec": self.spec, "conf": conf}))
        return dirs

    def close(self) -> None:
        self.nimbus.stop()
        self.state.close()


@pytest.fixture
def one(zookeeper: Any, zk_root: str, tmp_path: Path) -> Iterator[OneNimbus]:
    env = OneNimbus(zookeeper.connect_string, zk_root, tmp_path)
    try:
        wait_for(env.nimbus.is_leader, 30, "the Nimbus to lead")
        yield env
    finally:
        env.close()


def test_lost_code_is_reported_and_taken_back_from_a_supervisor(one: OneNimbus) -> None:
    with one.client() as client:
        tid = client.submit("wc", one.bundle.path, one.spec, {"topology.workers": 1})
        assert client.cluster_info()["topologies"][0]["degraded"] is None
    recorded = one.state.storage.get(one.state.paths.blobstore(tid))
    assert recorded is not None and recorded.decode() == one.nimbus.manager.store.load(tid).bundle_sha256  # type: ignore[union-attr]
    saved = one.tmp / "saved.zip"
    shutil.copy(one.nimbus.manager.store.load(tid).bundle_path, saved)  # type: ignore[union-attr]

    one.nimbus.stop()  # the code is lost from every Nimbus (here: the only one)
    shutil.rmtree(Path(one.conf["storm.local.dir"]) / "nimbus" / "stormdist" / tid)
    one.restart()
    wanted = one.state.paths.bundle_wanted(tid)
    wait_for(lambda: one.state.storage.exists(wanted), 20, "the leader to ask for the lost code")
    with one.client() as client:
        summary = client.cluster_info()["topologies"][0]
        assert summary["degraded"] == NO_CODE
        assert client.topology_info("wc")["degraded"] == NO_CODE
    runner = CliRunner()
    for args in (["list"], ["info", "wc"]):
        shown = runner.invoke(cli, [*args, "--nimbus", one.nimbus.address], terminal_width=400)
        assert shown.exit_code == 0, shown.output
        assert "degraded" in shown.output and "no Nimbus holds its code" in " ".join(shown.output.split())

    # A supervisor copy whose sha256 differs from the submitted one is refused.
    bad = one.tmp / "bad.zip"
    src = one.tmp / "other"
    src.mkdir()
    (src / "wordcount.py").write_text((EXAMPLES / "wordcount.py").read_text() + "\n# changed\n")
    build_bundle(src, bad)
    other = OneNimbus.supervisor_copy(one, tid, bad)
    with pytest.raises(InvalidRequestError, match="sha256"):
        BundleReturner({**DEFAULTS, **one.conf}, other, one.state).send(tid)
    assert not one.nimbus.manager.store.exists(tid)  # type: ignore[union-attr]
    shutil.rmtree(other.root)

    dirs = one.supervisor_copy(tid, saved)
    returner = BundleReturner({**DEFAULTS, **one.conf}, dirs, one.state)
    returner.poll()  # what the supervisor's sync round does
    wait_for(lambda: one.nimbus.manager.store.exists(tid), 30,  # type: ignore[union-attr]
             "the supervisor's copy to be installed")
    wait_for(lambda: not one.state.storage.exists(wanted), 10, "the request to be removed")
    assert set(one.state.storage.children(one.state.paths.blobstore(tid))) == {one.nimbus.nimbus_id}
    with one.client() as client:
        assert client.cluster_info()["topologies"][0]["degraded"] is None
        assert client.topology_files(tid)["bundle_sha256"] == recorded.decode()
    assert returner.send(tid) is False  # nothing asked any more
    assert returner.stop()


def test_the_default_replication_count_follows_the_nimbus_seeds() -> None:
    assert replication_target({"nimbus.seeds": ["a", "b"]}, {}) == (2, False)
    assert replication_target({"nimbus.seeds": ["a:6627", "a"], "nimbus.thrift.port": 6627}, {}) == (1, False)
    assert replication_target({"nimbus.seeds": ["a"], "nimbus.host": "b"}, {}) == (1, False)
    key = "topology.min.replication.count"
    assert replication_target({"nimbus.seeds": ["a", "b"], key: 1}, {}) == (1, True)
    assert replication_target({"nimbus.seeds": ["a", "b"]}, {key: 3}) == (3, True)
    with pytest.raises(ValueError, match=r"topology\.min\.replication\.count"):
        replication_target({}, {"topology.min.replication.count": 0})


def test_the_default_count_not_met_is_a_warning_not_a_refusal(zookeeper: Any, zk_root: str,
                                                                tmp_path: Path) -> None:
    """Two Nimbus seeds configured (so the default count is 2) but only one Nimbus running: the
    submit is accepted at once, and its answer warns that the code is on one host only."""
    env = OneNimbus(zookeeper.connect_string, zk_root, tmp_path,
                    **{"nimbus.seeds": ["127.0.0.1:1", "127.0.0.1:2"]})
    try:
        wait_for(env.nimbus.is_leader, 30, "the Nimbus to lead")
        with env.client() as client:
            tid = client.submit("wc", env.bundle.path, env.spec, {"topology.workers": 1})
            assert len(client.warnings) == 1
            assert "only 1 of 2 Nimbus hosts hold its code" in client.warnings[0]
            assert "only 1 Nimbus host is running" in client.warnings[0]
        assert env.state.storm_base(tid).status == "active"  # type: ignore[union-attr]
    finally:
        env.close()
