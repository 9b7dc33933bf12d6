"""ZkCheckpointStore on the real ZooKeeper: the layout of cluster/paths.py, forwards-only writes
from several writers, the shard list and its watch, and errors naming the node or servers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kinesis_kit import free_port

from stormpy.cluster import paths
from stormpy.connectors.kinesis import (
    Checkpoint,
    CheckpointError,
    CheckpointUnavailable,
    ShardInfo,
    ZkCheckpointStore,
)

pytestmark = pytest.mark.zookeeper


def store_for(zookeeper: Any, zk_root: str) -> ZkCheckpointStore:
    return ZkCheckpointStore.connect(zookeeper.connect_string, zk_root, "clicks", "my/stream", 10.0)


def test_checkpoints_live_at_the_paths_layout_and_only_move_forwards(zookeeper: Any,
                                                                      zk_root: str) -> None:
    a, b = store_for(zookeeper, zk_root), store_for(zookeeper, zk_root)
    try:
        assert a.read("shardId-0") is None
        assert a.write("shardId-0", Checkpoint("9"))
        assert b.write("shardId-0", Checkpoint("10"))  # integer order: 10 is after 9
        assert not a.write("shardId-0", Checkpoint("9"))
        assert not a.write("shardId-0", Checkpoint("10"))  # unchanged
        assert a.write("shardId-0", Checkpoint("10", shard_end=True))
        assert b.read("shardId-0") == Checkpoint("10", shard_end=True)
        assert a.path("shardId-0") == paths.ZkPaths(zk_root).connector_checkpoints(
            "kinesis", "clicks", "my/stream", "shardId-0")
        assert a.client.exists(f"{zk_root}/checkpoints/kinesis:clicks/my%2Fstream/shardId-0") is not None
    finally:
        a.close()
        b.close()


def test_concurrent_writers_leave_the_furthest_checkpoint(zookeeper: Any, zk_root: str) -> None:
    stores = [store_for(zookeeper, zk_root) for _ in range(3)]
    try:
        def write(store: ZkCheckpointStore, offset: int) -> None:
            for n in range(offset, 60, 3):
                store.write("s", Checkpoint(str(n)))

        threads = [threading.Thread(target=write, args=(s, i)) for i, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert stores[0].read("s") == Checkpoint("59")
    finally:
        for s in stores:
            s.close()


def test_shard_list_round_trip_and_watch(zookeeper: Any, zk_root: str) -> None:
    store = store_for(zookeeper, zk_root)
    seen: list[list[ShardInfo] | None] = []
    changed = threading.Event()
    try:
        assert store.read_shard_list() is None
        shards = [ShardInfo("shardId-0", (), True), ShardInfo("shardId-1", ("shardId-0",))]
        store.write_shard_list(shards)
        assert store.read_shard_list() == shards

        def on_change(value: list[ShardInfo] | None) -> None:
            seen.append(value)
            if len(seen) >= 2:
                changed.set()

        store.watch_shard_list(on_change)
        store.write_shard_list(shards[:1])
        assert changed.wait(60)
        assert seen == [shards, shards[:1]]
    finally:
        store.close()


def test_corrupt_nodes_and_unreachable_servers_are_named(zookeeper: Any, zk_root: str) -> None:
    store = store_for(zookeeper, zk_root)
    try:
        store.client.create(store.path("bad"), b"\x00garbage", makepath=True)
        with pytest.raises(CheckpointError, match=f"corrupt .* {store.path('bad')}"):
            store.read("bad")
        store.client.set(store.stream_path, b"[1, 2]")
        with pytest.raises(CheckpointError, match="shard list"):
            store.read_shard_list()
    finally:
        store.close()
    with pytest.raises(CheckpointUnavailable):
        store.read("bad")  # closed: not connected
    servers = f"127.0.0.1:{free_port()}"
    with pytest.raises(CheckpointError, match=servers):
        ZkCheckpointStore.connect(servers, zk_root, "clicks", "s", 1.0)
