"""The state layer's stores (memory, SQLite; ZooKeeper in tests/integration/test_state_store_zk.py)
against the StateStore contract, and what the layer adds: namespaces (``sub``), the store's own
node, several keys at once, compare-and-set (``update``) under concurrent writers, watches, and
the Kinesis checkpoint store on it (forwards-only)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from parts_kit import fresh_redis_store
from stormpy.connectors.kinesis import Checkpoint, CheckpointError, ShardInfo
from stormpy.connectors.kinesis._checkpoints import StateCheckpointStore
from stormpy.state import MemoryBackend, SqliteStore, Store
from stormpy.testing._state import check_state_store
from stormpy.topology._state import CHECKPOINTS, TRANSACTIONAL, StateKeyError


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "redis":
        r = fresh_redis_store(request.getfixturevalue("redis_server"), "layer")
        yield r
        r.close()
        return
    if request.param == "memory":
        yield MemoryBackend().named_store(TRANSACTIONAL, "tx", "layer")
        return
    s = SqliteStore(tmp_path / "layer.sqlite")
    yield s
    s.close()


def test_every_store_keeps_the_contract_and_so_do_its_namespaces(store: Store) -> None:
    check_state_store(store)
    check_state_store(store.sub("a/b", "c d"))  # one segment may hold a '/'


def test_namespaces_share_the_data_of_their_store(store: Store) -> None:
    inner = store.sub("my/stream")
    inner.put("", {"shards": 2})  # the namespace's own node
    inner.put("shard-0", 5)
    assert store.children() == ["my/stream"]
    assert inner.get("") == {"shards": 2} and inner.children() == ["shard-0"]
    assert store.sub("my/stream").get("shard-0") == 5
    assert store.get("my/stream") is None  # a key of two segments, not the namespace
    assert inner.delete("") is True and inner.get("shard-0") is None and store.children() == []
    with pytest.raises(StateKeyError):
        store.sub("")


def test_several_keys_at_once(store: Store) -> None:
    store.put_many({"a": 1, "b/c": 2, "d": 3})
    assert store.names() == ["a", "b", "d"] and store.get("b/c") == 2
    store.delete_many(["a", "b", "nothing"])
    assert store.names() == ["d"]


def test_update_writes_only_what_the_function_returns(store: Store) -> None:
    assert store.update("n", lambda old: None) is False and store.get("n") is None
    assert store.update("n", lambda old: (old or 0) + 1) is True
    assert store.update("n", lambda old: (old or 0) + 1) is True
    assert store.get("n") == 2
    assert store.update("n", lambda old: None if old >= 2 else old + 1) is False
    assert store.get("n") == 2


def test_update_is_a_compare_and_set_under_concurrent_writers(store: Store) -> None:
    def bump() -> None:
        for _ in range(50):
            store.update("count", lambda old: (old or 0) + 1)

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get("count") == 200


def test_a_memory_watch_sees_the_value_now_and_every_change() -> None:
    store = MemoryBackend().at("w")
    seen: list[Any] = []
    store.put("k", 1)
    cancel = store.watch("k", seen.append)
    store.put("k", 2)
    store.update("k", lambda old: old + 1)
    store.delete("k")
    store.put("other", 0)
    assert seen == [1, 2, 3, None]
    cancel()
    store.put("k", 4)
    assert seen == [1, 2, 3, None]


def test_a_watch_callback_may_use_the_store() -> None:
    store = MemoryBackend().at("w")
    store.watch("k", lambda value: store.put("copy", value) if value is not None else None)
    store.put("k", 7)
    assert store.get("copy") == 7


def test_a_sqlite_store_refuses_to_watch(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "w.sqlite")
    try:
        with pytest.raises(Exception, match="cannot watch"):
            s.watch("k", print)
    finally:
        s.close()


def test_a_sqlite_namespace_survives_reopening_and_closing_it_keeps_the_file_open(
        tmp_path: Path) -> None:
    path = tmp_path / "ns.sqlite"
    s = SqliteStore(path)
    s.sub("topo", "count-3").put("meta", {"committed": 4})
    s.sub("topo").close()  # a namespace does not own the file
    assert s.get("topo/count-3/meta") == {"committed": 4}
    s.close()
    again = SqliteStore(path, base="topo/count-3")
    try:
        assert again.get("meta") == {"committed": 4}
        assert SqliteStore(path, prefix="topo/count-3/").get("meta") == {"committed": 4}
    finally:
        again.close()


def test_memory_backends_share_nothing_and_drop_a_topology_whole() -> None:
    a, b = MemoryBackend(), MemoryBackend()
    a.store(CHECKPOINTS, "t-1").put("s/0", 1)
    a.named_store(TRANSACTIONAL, "tx", "t-1").put("coordinator/current", 3)
    assert b.store(CHECKPOINTS, "t-1").get("s/0") is None
    assert b.named_store(TRANSACTIONAL, "tx", "t-1").children() == []
    a.drop("t-1")
    assert a.store(CHECKPOINTS, "t-1").children() == []
    assert a.named_store(TRANSACTIONAL, "tx", "t-1").get("coordinator/current") == 3  # named
    assert a.memory is a
    with pytest.raises(ValueError, match="lowercase word"):
        a.named_store(TRANSACTIONAL, "Tx", "t-1")


def test_kinesis_checkpoints_on_the_layer_only_move_forwards() -> None:
    backend = MemoryBackend()
    a = StateCheckpointStore.on_backend(backend, "clicks", "my/stream")
    b = StateCheckpointStore.on_backend(backend, "clicks", "my/stream")
    assert a.read("shardId-0") is None and a.client is None
    assert a.write("shardId-0", Checkpoint("9"))
    assert b.write("shardId-0", Checkpoint("10"))
    assert not a.write("shardId-0", Checkpoint("9"))
    assert not a.write("shardId-0", Checkpoint("10"))
    assert a.write("shardId-0", Checkpoint("10", shard_end=True))
    assert b.read("shardId-0") == Checkpoint("10", shard_end=True)
    assert a.path("shardId-0") == "memory:checkpoints/kinesis:clicks/my/stream/shardId-0"
    seen: list[Any] = []
    a.watch_shard_list(seen.append)
    shards = [ShardInfo("shardId-0", (), True), ShardInfo("shardId-1", ("shardId-0",))]
    b.write_shard_list(shards)
    assert a.read_shard_list() == shards and seen == [None, shards]
    a.close()  # its watch ends with it
    b.write_shard_list(shards[:1])
    assert seen == [None, shards]
    backend.named_store(CHECKPOINTS, "kinesis", "clicks").sub("my/stream").put("bad", {"x": 1})
    with pytest.raises(CheckpointError, match="corrupt Kinesis checkpoint .*bad"):
        a.read("bad")


def test_named_state_sits_apart_from_every_topology_id_and_survives_its_kill() -> None:
    from stormpy.cluster.paths import ZkPaths

    p = ZkPaths("/stormpy")
    tx = p.named_state("transactional", "tx", "global/count")
    assert tx == "/stormpy/transactional/tx:global%2Fcount"
    assert not any(tx == path or tx.startswith(path + "/")
                   for path in p.topology_paths("global-count-1-2"))
    assert p.named_state("checkpoints", "kinesis", "c", "s") == p.connector_checkpoints(
        "kinesis", "c", "s")
    with pytest.raises(ValueError, match="area"):
        p.named_state("storms", "tx", "a")
    with pytest.raises(ValueError, match="lowercase word"):
        p.named_state("transactional", "t:x", "a")
