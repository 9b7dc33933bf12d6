"""ZooKeeper ACLs of a secured cluster (cluster/zk_acls.py through ZkStorage), on a real server:
a client without the daemons' identity (none, or a wrong payload) cannot change or remove the
cluster's nodes, a worker writes only where workers write, the daemons can clean up after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl

from stormpy.cluster import ClusterStateError, ZkStorage
from stormpy.cluster.zk_acls import DAEMON_DIGEST_ID_KEY, daemon_digest_id, zk_identity
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.config import SettingError

pytestmark = [pytest.mark.timeout(90), pytest.mark.zookeeper]

DAEMONS = {"storm.zookeeper.auth.payload": "stormpy:cluster-secret"}
TOPOLOGY_A = {"storm.zookeeper.topology.auth.payload": "wc-1:topology-secret",
              DAEMON_DIGEST_ID_KEY: daemon_digest_id(DAEMONS)}
TOPOLOGY_B = {"storm.zookeeper.topology.auth.payload": "wc-2:other-secret",
              DAEMON_DIGEST_ID_KEY: daemon_digest_id(DAEMONS)}


@pytest.fixture
def daemon(zookeeper: ZooKeeperServer, zk_root: str) -> Iterator[ZkStorage]:
    storage = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30,
                        identity=zk_identity(DAEMONS)).start()
    try:
        yield storage
    finally:
        try:
            storage.delete(zk_root)  # the test fixture's own client may not remove secured nodes
        finally:
            storage.close()


def storage_as(zookeeper: ZooKeeperServer, root: str, conf: dict[str, str]) -> ZkStorage:
    return ZkStorage(zookeeper.connect_string, root, connect_timeout_secs=30,
                     operation_timeout_secs=5, identity=zk_identity(conf)).start()


@pytest.fixture
def anonymous(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper.connect_string, timeout=10.0)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def test_a_client_without_the_daemons_identity_cannot_write_the_cluster(
        daemon: ZkStorage, anonymous: KazooClient, zk_root: str) -> None:
    daemon.set(f"{zk_root}/assignments/wc-1", b"assignment")
    daemon.set(f"{zk_root}/storms/wc-1", b"base")
    assert anonymous.get(f"{zk_root}/assignments/wc-1")[0] == b"assignment"  # readable, as in Storm
    with pytest.raises(NoAuthError):
        anonymous.set(f"{zk_root}/assignments/wc-1", b"forged")
    with pytest.raises(NoAuthError):
        anonymous.delete(f"{zk_root}/storms/wc-1")
    with pytest.raises(NoAuthError):
        anonymous.create(f"{zk_root}/assignments/forged", b"x")
    with pytest.raises(NoAuthError):
        anonymous.set_acls(f"{zk_root}/assignments/wc-1", [make_acl("world", "anyone", all=True)])
    assert daemon.get(f"{zk_root}/assignments/wc-1") == b"assignment"


def test_a_wrong_payload_is_refused_and_the_daemon_keeps_working(
        daemon: ZkStorage, zookeeper: ZooKeeperServer, zk_root: str) -> None:
    daemon.set(f"{zk_root}/assignments/wc-1", b"assignment")
    impostor = storage_as(zookeeper, zk_root, {"storm.zookeeper.auth.payload": "stormpy:guess"})
    try:
        with pytest.raises(ClusterStateError, match="NoAuth"):
            impostor.set(f"{zk_root}/assignments/wc-1", b"forged")
    finally:
        impostor.close()
    daemon.set(f"{zk_root}/assignments/wc-1", b"still mine")
    assert daemon.get(f"{zk_root}/assignments/wc-1") == b"still mine"


def test_workers_write_their_own_nodes_only_and_daemons_clean_up(
        daemon: ZkStorage, zookeeper: ZooKeeperServer, zk_root: str) -> None:
    daemon.set(f"{zk_root}/assignments/wc-1", b"assignment")
    worker_a = storage_as(zookeeper, zk_root, TOPOLOGY_A)
    worker_b = storage_as(zookeeper, zk_root, TOPOLOGY_B)
    try:
        beat = f"{zk_root}/workerbeats/wc-1/node-6700"
        worker_a.set(beat, b"heartbeat")
        worker_a.create(f"{zk_root}/errors/wc-1/count/e1", b"error")
        with pytest.raises(ClusterStateError, match="NoAuth"):
            worker_a.set(f"{zk_root}/assignments/wc-1", b"forged")
        with pytest.raises(ClusterStateError, match="NoAuth"):
            worker_b.set(beat, b"another topology's forgery")
        assert worker_b.get(beat) == b"heartbeat"
    finally:
        worker_a.close()
        worker_b.close()
    assert daemon.delete(f"{zk_root}/workerbeats/wc-1")
    assert daemon.delete(f"{zk_root}/errors/wc-1")


def test_the_roots_ancestors_stay_open(zookeeper: ZooKeeperServer, zk_root: str,
                                        anonymous: KazooClient) -> None:
    """They belong to no cluster (a nested root, the test kit's shared parent): only the root and
    what lies under it carry the cluster's ACLs."""
    daemon = storage_as(zookeeper, f"{zk_root}/nested/cluster", DAEMONS)
    try:
        anonymous.create(f"{zk_root}/nested/other-app", b"x")
        anonymous.delete(f"{zk_root}/nested/other-app")
        with pytest.raises(NoAuthError):
            anonymous.delete(f"{zk_root}/nested/cluster/workerbeats")
    finally:
        daemon.delete(f"{zk_root}/nested/cluster")
        daemon.close()


def test_identities_are_checked() -> None:
    assert zk_identity({}) is None
    with pytest.raises(SettingError, match="storm.zookeeper.auth.payload"):
        zk_identity({"storm.zookeeper.auth.payload": "no-colon"})
    with pytest.raises(SettingError, match="storm.zookeeper.auth.scheme"):
        zk_identity({**DAEMONS, "storm.zookeeper.auth.scheme": "sasl"})
    assert "cluster-secret" not in repr(zk_identity(DAEMONS))
