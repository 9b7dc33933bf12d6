"""The ZooKeeper backend: where each area of a topology lives, how a lost write is judged, the
errors it raises naming the znode (no server needed), and on the session's real ZooKeeper the
store contract, a compare-and-set two connections never both win, two topologies' keys never
mixed, a topology's drop leaving named state, watches, and stores on their own connection (the
compare-and-set under lost connections, over a stand-in: test_state_zk_cas.py)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from stormpy.cluster import ZkStorage
from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.state._zookeeper import (
    Contention,
    UnknownOutcome,
    ZkBackend,
    ZkStore,
    _call,
    _lost_write_landed,
    area_path,
    from_settings,
    open_zk_store,
)
from stormpy.testing import wait_for
from stormpy.testing._state import check_state_store
from stormpy.topology._state import (
    CHECKPOINTS,
    TRANSACTIONAL,
    StateStoreError,
    StateUnavailableError,
    encode_state,
)


def test_each_area_of_a_topology_has_its_own_znode() -> None:
    assert area_path(CHECKPOINTS, "t-1", root="/r") == "/r/checkpoints/t-1"
    assert area_path(TRANSACTIONAL, "t-1", root="/r") == "/r/transactional/t-1"


def test_a_lost_write_is_judged_from_the_node_as_reread() -> None:
    assert _lost_write_landed((b"v", 3), b"v", 3) is True
    assert _lost_write_landed((b"v", 3), b"w", 3) is False  # another writer took that version
    assert _lost_write_landed((b"v", 3), b"old", 2) is False  # unchanged since the read
    assert _lost_write_landed((b"v", 0), None, None) is False  # a create that never landed
    with pytest.raises(UnknownOutcome, match="at version 5, the write would have made it 3"):
        _lost_write_landed((b"v", 3), b"x", 5)
    with pytest.raises(UnknownOutcome):
        _lost_write_landed((b"v", 3), None, None)


def test_zookeeper_errors_become_state_errors_naming_the_znode() -> None:
    def fail(exc: Exception) -> None:
        raise exc
    with pytest.raises(StateUnavailableError, match="^state /r/k: ZooKeeper unreachable: gone"):
        _call("/r/k", lambda: fail(ZkConnectionError("gone")))
    with pytest.raises(StateUnavailableError, match="^state /r/k: busy$"):
        _call("/r/k", lambda: fail(Contention("busy")))
    with pytest.raises(StateStoreError, match="^state /r/k: ZooKeeper failed: bad") as err:
        _call("/r/k", lambda: fail(ClusterStateError("bad")))
    assert not isinstance(err.value, StateUnavailableError)
    assert _call("/r/k", lambda: 7) == 7


def test_the_timeouts_come_from_the_storm_settings_in_seconds() -> None:
    assert from_settings({"storm.zookeeper.connection.timeout": 1500,
                          "storm.zookeeper.session.timeout": 4000}) == {
        "connect_timeout_secs": 1.5, "session_timeout_secs": 4.0}


# -- on a real ZooKeeper ---------------------------------------------------------------------------

@pytest.fixture
def storage(zk_storage: ZkStorage) -> ZkStorage:
    return zk_storage


@pytest.mark.zookeeper
def test_every_area_keeps_the_store_contract_and_two_topologies_never_mix(storage: ZkStorage) -> None:
    backend = ZkBackend(storage)
    assert backend.description == f"ZooKeeper {storage.hosts}{storage.root}"
    one, two = backend.store(CHECKPOINTS, "t-1"), backend.store(CHECKPOINTS, "t-2")
    assert one.location == ZkPaths(storage.root).checkpoints("t-1")
    assert backend.store(TRANSACTIONAL, "t-1").location == ZkPaths(storage.root).transactional("t-1")
    check_state_store(backend.store(TRANSACTIONAL, "t-3"))
    one.put("spout/0", 1)
    two.put("spout/0", 2)
    backend.store(TRANSACTIONAL, "t-1").put("coordinator", 9)
    named = backend.named_store(TRANSACTIONAL, "tx", "mine")
    named.put("n", 5)
    assert (one.get("spout/0"), two.get("spout/0")) == (1, 2)
    backend.drop("t-1")  # both areas of t-1 go; t-2 and named state stay
    assert one.get("spout/0") is None and backend.store(TRANSACTIONAL, "t-1").get("coordinator") is None
    assert two.get("spout/0") == 2 and named.get("n") == 5 and named.children() == ["n"]
    assert backend.memory is backend.memory
    backend.memory.store(CHECKPOINTS, "t-2").put("k", 1)
    backend.drop("t-2")
    assert backend.memory.store(CHECKPOINTS, "t-2").get("k") is None and two.get("spout/0") is None


@pytest.mark.zookeeper
def test_two_writers_on_two_connections_never_both_win_and_no_update_is_lost(
        zookeeper: ZooKeeperServer, storage: ZkStorage) -> None:
    other = ZkStorage(zookeeper.connect_string, storage.root, connect_timeout_secs=30).start()
    rounds = 20
    errors: list[BaseException] = []

    def add(s: ZkStorage) -> None:
        store = ZkStore(s, f"{storage.root}/c")
        try:
            for _ in range(rounds):
                assert store.update("n", lambda v: (v or 0) + 1) is True
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    try:
        threads = [threading.Thread(target=add, args=(s,)) for s in (storage, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        store = ZkStore(storage, f"{storage.root}/c")
        assert not errors and store.get("n") == 2 * rounds
        assert store.update("n", lambda v: None) is False and store.get("n") == 2 * rounds
        assert store.update("new/deep", lambda v: [v]) is True and store.get("new/deep") == [None]
    finally:
        other.close()


@pytest.mark.zookeeper
def test_keys_are_znodes_named_by_their_encoded_segments(storage: ZkStorage) -> None:
    store = ZkStore(storage, f"{storage.root}/s")
    store.put("a b/c%d", 1)
    assert storage.get(f"{storage.root}/s/a%20b/c%25d") == encode_state(f"{storage.root}/s/a%20b/c%25d", 1)
    assert store.children() == ["a b"] and store.children("a b") == ["c%d"]
    assert store.where("a b/c%d") == f"{storage.root}/s/a%20b/c%25d"
    assert store.get("a b", "none") == "none"  # a parent with no value of its own
    ns = store.sub("a b")
    assert ns.location == f"{storage.root}/s/a%20b" and ns.get("c%d") == 1
    assert store.delete("a b") is True and store.delete("a b") is False
    assert store.get("a b/c%d") is None and store.available() is True
    store.close()  # not the store's storage: left open
    assert storage.connected


@pytest.mark.zookeeper
def test_a_watch_sees_the_value_and_every_change_skipping_corrupt_nodes(
        storage: ZkStorage, caplog: pytest.LogCaptureFixture) -> None:
    store = ZkStore(storage, f"{storage.root}/w")
    seen: list[Any] = []
    lock = threading.Lock()

    def record(value: Any) -> None:
        with lock:
            seen.append(value)
    store.put("k", 1)
    cancel = store.watch("k", record)
    wait_for(lambda: seen == [1], 30, "the value now")
    store.put("k", 2)
    wait_for(lambda: seen[-1:] == [2], 30, "the change")
    with caplog.at_level(logging.ERROR, logger="stormpy.state"):
        storage.set(f"{storage.root}/w/k", b"\xc1garbage")
        wait_for(lambda: f"{storage.root}/w/k" in caplog.text, 30, "the corrupt node logged")
    store.delete("k")
    wait_for(lambda: seen[-1:] == [None], 30, "the deletion")
    assert seen == [1, 2, None]
    cancel()


@pytest.mark.zookeeper
def test_a_store_on_its_own_connection_is_closed_with_it(zookeeper: ZooKeeperServer,
                                                         zk_root: str) -> None:
    own = open_zk_store(zookeeper.connect_string, zk_root, connect_timeout_secs=30,
                        operation_timeout_secs=7)
    assert own.location == own.storage.root and own.timeout_secs == 7
    at = open_zk_store(zookeeper.connect_string, zk_root, f"{zk_root}/x", connect_timeout_secs=30)
    try:
        own.put("x/k", 1)
        assert at.location == f"{zk_root}/x" and at.get("k") == 1 and at.available() is True
    finally:
        at.close()
        own.close()
    assert at.available() is False and own.available() is False
    with pytest.raises(StateUnavailableError, match="ZooKeeper unreachable"):
        own.get("x/k")


@pytest.mark.zookeeper
def test_an_update_beaten_between_its_read_and_its_write_runs_again_on_the_new_value(
        zookeeper: ZooKeeperServer, storage: ZkStorage) -> None:
    other = ZkStorage(zookeeper.connect_string, storage.root, connect_timeout_secs=30).start()
    store, theirs = ZkStore(storage, f"{storage.root}/u"), ZkStore(other, f"{storage.root}/u")
    try:
        for key, start in (("missing", None), ("there", 1)):  # beaten at the create, at the set
            if start is not None:
                store.put(key, start)
            seen: list[Any] = []

            def fn(v: Any, key: str = key, seen: list[Any] = seen) -> Any:
                seen.append(v)
                if len(seen) == 1:
                    theirs.put(key, 5)  # another writer between our read and our write
                return v + 1 if v is not None else 0
            assert store.update(key, fn) is True
            assert seen == [start, 5] and store.get(key) == 6
        assert store.update("absent", lambda v: None) is False and store.children() == [
            "missing", "there"]
    finally:
        other.close()


@pytest.mark.zookeeper
def test_the_first_store_of_each_area_and_topology_is_logged_once(
        storage: ZkStorage, caplog: pytest.LogCaptureFixture) -> None:
    backend = ZkBackend(storage)
    with caplog.at_level(logging.INFO, logger="stormpy.state"):
        for _ in range(2):
            backend.store(CHECKPOINTS, "t-1")
            backend.store(TRANSACTIONAL, "t-1")
    assert [r.getMessage() for r in caplog.records] == [
        f"topology t-1: checkpoints state in ZooKeeper {storage.hosts} at "
        f"{ZkPaths(storage.root).checkpoints('t-1')}",
        f"topology t-1: transactional state in ZooKeeper {storage.hosts} at "
        f"{ZkPaths(storage.root).transactional('t-1')}"]


@pytest.mark.zookeeper
def test_calls_on_a_closed_connection_are_refused_naming_the_znode(
        zookeeper: ZooKeeperServer, zk_root: str) -> None:
    storage = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    backend = ZkBackend(storage)
    store = backend.store(CHECKPOINTS, "t-1")
    with pytest.raises(StateStoreError) as err:
        store.sub("")
    assert str(err.value) == f"state {store.location}/'': a namespace segment is a non-empty string"
    storage.close()
    with pytest.raises(StateUnavailableError, match=f"^state {store.location}/k: ZooKeeper unreachable"):
        store.watch("k", lambda v: None)
    dropped = f"^state {zk_root}/checkpoints/t-1: ZooKeeper unreachable"
    with pytest.raises(StateUnavailableError, match=dropped):
        backend.drop("t-1")


def test_every_call_a_zookeeper_that_cannot_be_reached_refuses_names_the_znode_and_the_call() -> None:
    storage = ZkStorage("127.0.0.1:1", "/r", connect_timeout_secs=0.3,
                        operation_timeout_secs=0.3)  # never connected
    store = ZkStore(storage, "/r/x")
    try:
        for call, op in ((lambda: store.update("k", lambda v: 1), "compare_and_set"),
                         (lambda: store.get("k"), "get"), (lambda: store.put("k", 1), "set"),
                         (lambda: store.children("k"), "get_children"),
                         (lambda: store.delete("k"), "delete")):
            with pytest.raises(StateUnavailableError) as err:
                call()
            assert str(err.value).startswith(f"state /r/x/k: ZooKeeper unreachable: ZooKeeper {op} "
                                             "/r/x/k failed: ")
    finally:
        storage.close()


def test_a_zookeeper_that_does_not_answer_is_refused_naming_the_servers() -> None:
    with pytest.raises(StateUnavailableError) as err:
        open_zk_store("127.0.0.1:1", "/s", connect_timeout_secs=0.3)
    assert str(err.value).startswith("state ZooKeeper 127.0.0.1:1/s: cannot connect (")
    assert str(err.value).endswith(")") and "127.0.0.1:1" in str(err.value)[40:]


@pytest.mark.zookeeper
def test_a_store_of_its_own_takes_the_given_timeouts_or_the_defaults(zookeeper: ZooKeeperServer,
                                                                     zk_root: str) -> None:
    default = open_zk_store(zookeeper.connect_string, zk_root)
    given = open_zk_store(zookeeper.connect_string, zk_root, connect_timeout_secs=30,
                          session_timeout_secs=9)
    try:
        assert (default.storage.connect_timeout_secs, default.timeout_secs) == (15.0, 20.0)
        assert (given.storage.connect_timeout_secs, given.timeout_secs) == (30, 9.0)
    finally:
        default.close()
        given.close()


@pytest.mark.zookeeper
def test_an_update_beaten_every_round_gives_up_naming_the_znode(
        zookeeper: ZooKeeperServer, storage: ZkStorage, monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.state import _base as base_module

    monkeypatch.setattr(base_module, "contention_pause", lambda backoff: None)
    other = ZkStorage(zookeeper.connect_string, storage.root, connect_timeout_secs=30).start()
    store, theirs = ZkStore(storage, f"{storage.root}/b"), ZkStore(other, f"{storage.root}/b")
    calls = [0]

    def beaten(value: Any) -> Any:
        calls[0] += 1
        theirs.put("n", calls[0])
        return -1
    try:
        store.put("n", 0)
        with pytest.raises(StateUnavailableError) as err:
            store.update("n", beaten)
        path = f"{storage.root}/b/n"
        assert str(err.value) == (f"state {path}: ZooKeeper compare-and-set {path} failed: changed "
                                  f"by others {base_module.MAX_UPDATE_ROUNDS} times in a row")
        assert calls[0] == base_module.MAX_UPDATE_ROUNDS and store.get("n") == calls[0]
    finally:
        other.close()


@pytest.mark.zookeeper
def test_a_node_that_is_not_a_state_document_or_a_value_that_cannot_be_one_is_named(
        storage: ZkStorage) -> None:
    store = ZkStore(storage, f"{storage.root}/c")
    path = f"{storage.root}/c/bad"
    storage.set(path, b"\xc1garbage")
    for call in (lambda: store.get("bad"), lambda: store.update("bad", lambda v: 1),
                 lambda: store.update("ok", lambda v: object())):
        with pytest.raises(StateStoreError, match=f"^state {storage.root}/c/(bad|ok): "):
            call()
    assert store.get("ok") is None
