"""ZkState's own logic without a ZooKeeper: where its documents live (the znode root it derives
from the configuration), and that it keeps the exactly-once contract of TransactionalState on
top of its store. The store (``open_zk_store`` of the state layer) is replaced by an in-memory
stand-in that records how it was opened; the real ZooKeeper behaviour is covered by the
integration tests."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.state import MemoryBackend, MemoryStore
from stormpy.transactional import OpaqueValue, TransactionalValue, ZkState


class DocsStandIn(MemoryStore):
    """What ``open_zk_store`` returns, in memory: the arguments it was opened with, its
    documents (a store of the state layer) and its closes."""

    def __init__(self, hosts: str, root: str, location: str | None = None, *,
                 operation_timeout_secs: float, **timeouts: Any) -> None:
        backend = MemoryBackend()
        super().__init__(backend, ("zk",), "memory:zk")
        self.hosts, self.root, self.timeout = hosts, location or root, operation_timeout_secs
        self.closed = 0
        OPENED.append(self)

    def close(self) -> None:
        self.closed += 1


OPENED: list[DocsStandIn] = []


@pytest.fixture(autouse=True)
def docs(monkeypatch: pytest.MonkeyPatch) -> Any:
    OPENED.clear()
    monkeypatch.setattr("stormpy.transactional._state.open_zk_store", DocsStandIn)
    return OPENED


def test_root_loses_trailing_slashes_and_the_default_operation_timeout_is_10s(docs: Any) -> None:
    state = ZkState("zk1:2181,zk2:2181", "/apps/counts//")
    assert state.root == "/apps/counts"
    assert (docs[0].hosts, docs[0].root, docs[0].timeout) == ("zk1:2181,zk2:2181", "/apps/counts",
                                                              10.0)
    ZkState("zk:2181", "/r", operation_timeout_secs=2.5)
    assert docs[1].timeout == 2.5
    assert ZkState("zk:2181", "/apps/tX/").root == "/apps/tX"  # only slashes are stripped


@pytest.mark.parametrize(("conf", "hosts", "root"), [
    ({"storm.zookeeper.servers": ["a", "b"], "storm.zookeeper.port": 2000},
     "a:2000,b:2000", "/stormpy/transactional/state:counts"),
    ({"storm.zookeeper.servers": ["a"], "storm.zookeeper.root": "/app"},
     "a:2181", "/app/transactional/state:counts"),
    ({"transactional.zookeeper.servers": ["t"], "transactional.zookeeper.port": 3000,
      "storm.zookeeper.servers": ["a"], "transactional.zookeeper.root": "/tx/"},
     "t:3000", "/tx/state/counts"),
    ({"storm.zookeeper.servers": ["a"], "transactional.zookeeper.root": "/rootX//"},
     "a:2181", "/rootX/state/counts"),
])
def test_from_config_puts_the_state_under_the_transactional_root(docs: Any, conf: dict[str, Any],
                                                                 hosts: str, root: str) -> None:
    state = ZkState.from_config(conf, "counts")
    assert state.root == root
    assert (docs[0].hosts, docs[0].root, docs[0].timeout) == (hosts, root, 10.0)


@pytest.mark.parametrize("name", ["a/b", ""])
def test_from_config_refuses_a_state_name_that_is_not_one_znode(docs: Any, name: str) -> None:
    with pytest.raises(ValueError, match="state keys are non-empty strings without '/'"):
        ZkState.from_config({"storm.zookeeper.servers": ["a"]}, name)
    assert docs == []  # nothing was opened


@pytest.mark.parametrize("root", ["", "relative", "/"])
def test_from_config_refuses_a_transactional_root_that_is_not_absolute(docs: Any,
                                                                      root: str) -> None:
    with pytest.raises(SettingError, match="absolute") as err:
        ZkState.from_config({"transactional.zookeeper.root": root}, "counts")
    assert err.value.setting == "transactional.zookeeper.root" and docs == []


def test_updates_apply_once_per_txid_and_keys_and_close_reach_the_store(docs: Any) -> None:
    state = ZkState("zk:2181", "/s")
    assert state.get("count") is None and state.get_opaque("count") is None
    assert state.update("count", 1, lambda v: (v or 0) + 5) == TransactionalValue(1, 5)
    assert state.update("count", 1, lambda v: (v or 0) + 5) == TransactionalValue(1, 5)  # replay
    assert state.update("count", 2, lambda v: v + 3) == TransactionalValue(2, 8)
    assert docs[0].get("count") == [2, None, 8]
    doc = state._read("count")
    assert doc == [2, None, 8] and isinstance(doc, list)
    assert state.update_opaque("n", 1, lambda v: (v or 0) + 10) == OpaqueValue(1, None, 10)
    assert state.update_opaque("n", 1, lambda v: (v or 0) + 7) == OpaqueValue(1, None, 7)
    assert state.get_opaque("n") == OpaqueValue(1, None, 7)
    assert list(state.keys()) == ["count", "n"]
    state.close()
    assert docs[0].closed == 1
