"""KeyValueState on ZooKeeper (``topology.state.provider: zookeeper``): prepare, commit, rollback
and recovery from a restarted task, on a real server."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.state import KeyValueState, MemoryBackend, open_store

pytestmark = [pytest.mark.zookeeper]

#: A task's context as open_store sees it: topology id and the runtime's state backend.
CONTEXT: Any = type("Context", (), {"topology_id": "wc-1", "state_backend": MemoryBackend()})()


def test_key_value_state_on_zookeeper(zookeeper: Any, zk_root: str) -> None:
    conf = {"topology.state.provider": "zookeeper",
            "topology.state.provider.config": {"servers": ["127.0.0.1"],
                                               "port": zookeeper.port, "root": zk_root}}
    store = open_store({**conf, "topology.name": "wc"}, CONTEXT, "count-3")
    try:
        state = KeyValueState(store)
        state.put("cow", 2)
        state.put(7, [1, "x"])
        state.prepare_commit(1)
        assert state.commit(1)
        state.put("cow", 3)
        state.prepare_commit(2)
        restarted = KeyValueState(open_store({**conf, "topology.name": "wc"}, CONTEXT, "count-3"))
        assert dict(restarted.items()) == {"cow": 2, 7: [1, "x"]}
        restarted.rollback()
        restarted.store.close()
        again = KeyValueState(open_store({**conf, "topology.name": "wc"}, CONTEXT, "count-3"))
        assert dict(again.items()) == {"cow": 2, 7: [1, "x"]}
        again.store.close()
        assert "p.2" not in store.names()
        assert store.location == f"{zk_root}/wc/count-3"
    finally:
        store.close()


def test_a_checkpoint_larger_than_a_znode_commits_in_chunks(zookeeper: Any, zk_root: str) -> None:
    """About 1.2 MB of changes in one checkpoint: more than one znode may hold (512 KiB here,
    jute.maxbuffer's 1 MiB by default), written as chunks and committed."""
    conf = {"topology.state.provider": "zookeeper", "topology.name": "big",
            "topology.state.provider.config": {"servers": ["127.0.0.1"],
                                               "port": zookeeper.port, "root": zk_root}}
    store = open_store(conf, CONTEXT, "count-1")
    try:
        state = KeyValueState(store, cache_max_keys=10)
        for i in range(3000):
            state.put(f"word-{i}", "x" * 400)
        state.prepare_commit(1)
        assert store.get("p.1")["chunks"] >= 5
        assert state.commit(1)
        again = KeyValueState(open_store(conf, CONTEXT, "count-1"), cache_max_keys=10)
        try:
            assert len(again) == 3000 and again.get("word-2999") == "x" * 400
        finally:
            again.store.close()
    finally:
        store.close()
