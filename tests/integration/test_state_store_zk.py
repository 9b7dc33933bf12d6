"""Component state in a real ZooKeeper: the StateStore contract, the znode layout of
cluster/paths.py, corrupt nodes and lost connections named by path, and a LocalCluster configured
with ZooKeeper whose components read back what they stored."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from state_store_kit import counting_topology
from stormpy.cluster import ZkStorage
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.state import ZkBackend
from stormpy.testing import Capture, LocalCluster
from stormpy.testing._state import check_state_store
from stormpy.topology._state import (
    CHECKPOINTS,
    TRANSACTIONAL,
    CorruptStateError,
    StateUnavailableError,
)

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]

TID = "wc-1-1700000000"


def test_the_zookeeper_store_keeps_the_contract(zk_storage: ZkStorage) -> None:
    backend = ZkBackend(zk_storage)
    check_state_store(backend.store(CHECKPOINTS, TID))
    check_state_store(backend.store(TRANSACTIONAL, TID))


def test_the_layers_additions_on_zookeeper(zk_storage: ZkStorage) -> None:
    """Namespaces, the store's own node, compare-and-set under concurrent writers, watches and
    named state, on the real server (memory and SQLite: tests/unit/state/test_state_layer.py)."""
    import threading

    backend = ZkBackend(zk_storage)
    named = backend.named_store(TRANSACTIONAL, "tx", "my/tx")
    assert named.location == ZkPaths(zk_storage.root).named_state("transactional", "tx", "my/tx")
    check_state_store(named.sub("a/b"))
    inner = named.sub("stream/1")
    inner.put("", {"shards": 1})
    assert inner.get("") == {"shards": 1} and named.children() == ["a/b", "stream/1"]
    seen: list[Any] = []
    changed = threading.Event()

    def on_change(value: Any) -> None:
        seen.append(value)
        if value == {"shards": 2}:
            changed.set()
    cancel = inner.watch("", on_change)
    inner.put("", {"shards": 2})
    assert changed.wait(10) and seen[0] == {"shards": 1}
    cancel()

    def bump() -> None:
        for _ in range(25):
            named.update("count", lambda old: (old or 0) + 1)
    threads = [threading.Thread(target=bump) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert named.get("count") == 75
    assert named.update("count", lambda old: None) is False
    backend.drop("my-topology")  # a kill never touches named state
    assert named.get("count") == 75


def test_keys_live_on_the_cluster_layout(zk_storage: ZkStorage) -> None:
    backend = ZkBackend(zk_storage)
    store = backend.store(CHECKPOINTS, TID)
    store.put("kafka spout/topic-0", {"offset": 42})
    backend.store(TRANSACTIONAL, TID).put("coordinator/txid", 7)
    znode = ZkPaths(zk_storage.root).checkpoint(TID, "kafka spout", "topic-0")
    assert store.location == ZkPaths(zk_storage.root).checkpoints(TID)
    data = zk_storage.get(znode)
    assert data is not None and msgpack.unpackb(data)["value"] == {"offset": 42}
    assert zk_storage.get(ZkPaths(zk_storage.root).transactional(TID, "coordinator", "txid"))
    backend.drop(TID)
    assert zk_storage.children(ZkPaths(zk_storage.root).checkpoints_root()) == []
    assert zk_storage.children(ZkPaths(zk_storage.root).transactional_root()) == []


def test_a_corrupt_node_is_named(zk_storage: ZkStorage) -> None:
    store = ZkBackend(zk_storage).store(CHECKPOINTS, TID)
    znode = ZkPaths(zk_storage.root).checkpoint(TID, "spout", "0")
    zk_storage.set(znode, b"\xc1garbage")
    with pytest.raises(CorruptStateError, match=f"state {znode}: not a msgpack document"):
        store.get("spout/0")
    assert store.children("spout") == ["0"]
    assert store.delete("spout/0") is True


def test_a_lost_connection_is_named_not_waited_on(zookeeper: ZooKeeperServer, zk_root: str) -> None:
    storage = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    store = ZkBackend(storage).store(CHECKPOINTS, TID)
    store.put("spout/0", 1)
    storage.close()
    znode = ZkPaths(zk_root).checkpoint(TID, "spout", "0")
    with pytest.raises(StateUnavailableError, match=f"state {znode}: ZooKeeper unreachable"):
        store.get("spout/0")


def test_a_local_cluster_with_zookeeper_keeps_component_state_there(
        zookeeper: ZooKeeperServer, zk_storage: ZkStorage) -> None:
    capture = Capture()
    conf = {"storm.zookeeper.servers": [zookeeper.connect_string],
            "storm.zookeeper.root": zk_storage.root}
    with LocalCluster(conf=conf) as cluster:
        assert isinstance(cluster.state, ZkBackend)
        worker = cluster.submit_topology("t", {}, counting_topology(capture))
        cluster.wait_for(lambda: len(capture.values) == 2, 30, "both spout tasks to report")
        assert sorted(v[1] for v in capture.values) == [1, 1]  # read back from ZooKeeper
        for index in ("0", "1"):
            data = zk_storage.get(ZkPaths(zk_storage.root).checkpoint(worker.topology_id, "counter", index))
            assert data is not None and msgpack.unpackb(data)["value"] == {"opens": 1}
        seen = zk_storage.children(ZkPaths(zk_storage.root).transactional(worker.topology_id, "seen"))
        assert len(seen) == 2
    # shutting down removes the topology's state, as Nimbus's kill does
    assert zk_storage.children(ZkPaths(zk_storage.root).checkpoints_root()) == []
