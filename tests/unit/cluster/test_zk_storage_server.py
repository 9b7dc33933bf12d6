"""ZkStorage and ClusterState on the session's real ZooKeeper (one server for the module's tests):
the exact znodes and data their writes leave, the ACLs a secured storage applies, ephemeral nodes
taken over and re-created after a session loss, recursive deletes, reads of many nodes at once,
watches, kazoo's lock read back, and errors naming the path."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import SessionExpiredError
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions

from stormpy.cluster import ZkStorage
from stormpy.cluster.errors import ClusterStateError, MalformedStateError, ZkConnectionError
from stormpy.cluster.records import encode, encode_value
from stormpy.cluster.state import (
    MAX_ERRORS_PER_COMPONENT,
    Assignment,
    ClusterState,
    ErrorInfo,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
)
from stormpy.cluster.zk_acls import WORKER_DIRECTORIES, zk_identity
from stormpy.cluster.zkserver import ZooKeeperServer, four_letter_word
from stormpy.testing import wait_for

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def storage(zk_storage: ZkStorage) -> ZkStorage:
    return zk_storage


@pytest.fixture
def admin(_zk_admin: KazooClient) -> KazooClient:
    return _zk_admin


def test_set_writes_the_data_creating_parents_and_rewrites_it(storage: ZkStorage, admin: KazooClient) -> None:
    root = storage.root
    assert admin.exists(root) is not None
    storage.set(f"{root}/a/b", b"one")
    assert admin.get(f"{root}/a/b")[0] == b"one"
    assert admin.get(f"{root}/a")[0] == b""
    storage.set(f"{root}/a/b", b"two")
    assert admin.get(f"{root}/a/b")[0] == b"two"
    assert storage.get(f"{root}/a/b") == b"two"
    assert type(storage.get(f"{root}/a/b")) is bytes


def test_reads_of_missing_nodes_are_none_and_empty(storage: ZkStorage) -> None:
    root = storage.root
    assert storage.get(f"{root}/none") is None
    assert storage.children(f"{root}/none") == []
    assert storage.exists(f"{root}/none") is False
    assert storage.exists(root) is True
    assert storage.delete(f"{root}/none") is False
    assert storage.delete(f"{root}/none", recursive=False) is False


def test_children_come_sorted_and_many_reads_keep_the_order_asked(storage: ZkStorage) -> None:
    root = storage.root
    for name, data in (("c", b"3"), ("a", b"1"), ("b", b"")):
        storage.set(f"{root}/d/{name}", data)
    storage.set(f"{root}/e/z", b"z")
    storage.set(f"{root}/e/y", b"y")
    assert storage.children(f"{root}/d") == ["a", "b", "c"]
    assert storage.get_many([f"{root}/d/c", f"{root}/d/x", f"{root}/d/b", f"{root}/d/a"]) == [
        b"3", None, b"", b"1"]
    assert storage.children_many([f"{root}/e", f"{root}/none", f"{root}/d"]) == [
        ["y", "z"], [], ["a", "b", "c"]]
    assert storage.get_many([]) == [] and storage.children_many([]) == []
    with pytest.raises(ValueError, match="outside this storage's root"):
        storage.get_many([f"{root}/d/a", "/elsewhere"])
    with pytest.raises(ValueError, match="outside this storage's root"):
        storage.children_many([f"{root}/d", "/elsewhere"])


def test_every_path_must_lie_under_the_root(storage: ZkStorage) -> None:
    root = storage.root
    assert storage.check_path(root) == root
    assert storage.check_path(f"{root}/x") == f"{root}/x"
    for outside in (f"{root}x", "/", root.rsplit("/", 1)[0]):
        with pytest.raises(ValueError) as err:
            storage.get(outside)
        assert str(err.value) == (f"ZooKeeper path {outside!r} is outside this storage's root "
                                  f"{root!r}")
    with pytest.raises(ValueError):
        storage.delete(f"{root}-sibling")
    with pytest.raises(ValueError):
        storage.lock(f"{root}x/lock", "me")
    with pytest.raises(ValueError):
        storage.watch_data(f"{root}x", lambda _d: None)


def test_create_returns_the_path_made_and_refuses_an_existing_node(storage: ZkStorage,
                                                                  admin: KazooClient) -> None:
    root = storage.root
    path = f"{root}/n/m"
    assert storage.create(path, b"x") == path
    assert admin.get(path)[0] == b"x"
    with pytest.raises(ClusterStateError) as err:
        storage.create(path, b"y")
    assert str(err.value) == f"ZooKeeper node {path} already exists"
    made = storage.create(f"{root}/seq/s-", b"1", sequence=True)
    assert made == f"{root}/seq/s-0000000000"
    assert storage.create(f"{root}/seq/s-", sequence=True) == f"{root}/seq/s-0000000001"
    assert admin.get(f"{root}/seq/s-0000000001")[0] == b""
    with pytest.raises(ClusterStateError, match="NoNodeError"):
        storage.create(f"{root}/nowhere/x", makepath=False)
    eph = storage.create(f"{root}/eph", ephemeral=True)
    assert admin.exists(eph).ephemeralOwner == storage.session_id
    assert admin.exists(path).ephemeralOwner == 0
    storage.ensure_path(f"{root}/p/q")
    assert admin.get(f"{root}/p/q")[0] == b""


def test_deletes_remove_whole_trees_or_refuse_a_node_with_children(storage: ZkStorage,
                                                                   admin: KazooClient) -> None:
    root = storage.root
    storage.set(f"{root}/t/a/b", b"1")
    storage.set(f"{root}/t/c", b"2")
    with pytest.raises(ClusterStateError, match=f"ZooKeeper delete {root}/t failed: NotEmptyError"):
        storage.delete(f"{root}/t", recursive=False)
    assert storage.delete(f"{root}/t/c", recursive=False) is True
    assert admin.exists(f"{root}/t/c") is None
    assert storage.delete(f"{root}/t") is True
    assert admin.exists(f"{root}/t") is None and admin.exists(root) is not None


def expire(zookeeper: ZooKeeperServer, storage: ZkStorage) -> None:
    """End the storage's session from another client (what a long partition does)."""
    credentials = storage.session_credentials
    assert credentials is not None
    other = KazooClient(hosts=zookeeper.connect_string, client_id=credentials, timeout=10.0)
    other.start(timeout=30)
    other.stop()
    other.close()


def test_an_ephemeral_node_is_ours_replaces_an_older_sessions_and_comes_back_after_a_loss(
        zookeeper: ZooKeeperServer, storage: ZkStorage, admin: KazooClient) -> None:
    root = storage.root
    path = f"{root}/sup/s1"
    admin.create(path, b"stale", ephemeral=True, makepath=True)  # another session's node
    storage.create_ephemeral(path, b"one")
    data, stat = admin.get(path)
    assert data == b"one" and stat.ephemeralOwner == storage.session_id
    storage.create_ephemeral(path, b"two")
    assert admin.get(path)[0] == b"two"
    states: list[str] = []
    storage.add_listener(states.append)
    old_session = storage.session_id
    expire(zookeeper, storage)
    wait_for(lambda: storage.session_id not in (None, old_session) and admin.exists(path) is not None,
             timeout=60, what="the ephemeral node re-created in a new session")
    data, stat = admin.get(path)
    assert data == b"two" and stat.ephemeralOwner == storage.session_id
    assert "LOST" in states and states[-1] == "CONNECTED"
    assert all(type(s) is str for s in states)
    storage.delete(path)
    expire(zookeeper, storage)
    wait_for(lambda: storage.connected and storage.session_id is not None, timeout=60,
             what="a new session")
    storage.set(f"{root}/after", b"")  # a write in the new session: anything re-created came before
    assert admin.exists(path) is None


def test_a_closed_storage_ends_its_session_and_refuses_work(zookeeper: ZooKeeperServer, zk_root: str,
                                                            admin: KazooClient) -> None:
    s = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30)
    assert s.session_id is None and s.session_credentials is None and not s.connected
    with s as started:
        assert started is s and s.start() is s and s.connected
        assert not s.shutting_down
        credentials = s.session_credentials
        assert credentials is not None and credentials[0] == s.session_id
        assert type(credentials[0]) is int and type(credentials[1]) is bytes and credentials[1]
        s.create_ephemeral(f"{zk_root}/e", b"")
        s.begin_shutdown()
        assert s.shutting_down
        assert s.get(f"{zk_root}/e") == b""  # connected operations still run
    assert admin.exists(f"{zk_root}/e") is None
    s.close()
    with pytest.raises(ZkConnectionError) as err:
        s.start()
    assert str(err.value) == f"ZooKeeper storage for {zookeeper.connect_string} is closed"
    with pytest.raises(ZkConnectionError, match=f"get {zk_root} abandoned: the storage was closed"):
        s.get(zk_root)


def test_a_zookeeper_that_does_not_answer_is_named_with_the_wait() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        hosts = f"127.0.0.1:{sock.getsockname()[1]}"
    s = ZkStorage(hosts, "/r", connect_timeout_secs=0.5, close_timeout_secs=5)
    with pytest.raises(ZkConnectionError) as err:
        s.start()
    assert str(err.value) == f"could not connect to ZooKeeper at {hosts} within 0.5 s"
    assert s.shutting_down
    with pytest.raises(ZkConnectionError, match="is closed"):
        s.start()


def test_timeouts_and_roots_from_the_arguments_and_the_config() -> None:
    s = ZkStorage("h:1", "/r/", session_timeout_secs=4.0, close_timeout_secs=2.0)
    assert (s.root, s.operation_timeout_secs, s.close_timeout_secs, s.connect_timeout_secs) == (
        "/r", 4.0, 2.0, 15.0)
    assert ZkStorage("h:1", operation_timeout_secs=1.5).operation_timeout_secs == 1.5
    assert ZkStorage("h:1").root == "/stormpy"
    for bad in (0, -1):
        with pytest.raises(ValueError, match="operation_timeout_secs must be positive"):
            ZkStorage("h:1", operation_timeout_secs=bad)
    conf = {"storm.zookeeper.servers": ["zk"], "storm.zookeeper.port": 2190,
            "storm.zookeeper.root": "/apps/storm", "storm.zookeeper.connection.timeout": 1500,
            "storm.zookeeper.session.timeout": 4000, "storm.zookeeper.auth.payload": "u:p"}
    made = ZkStorage.from_config(conf)
    assert (made.hosts, made.root, made.connect_timeout_secs, made.operation_timeout_secs) == (
        "zk:2190", "/apps/storm", 1.5, 4.0)
    assert made.identity == zk_identity(conf)
    assert ZkStorage.from_config(conf, "/other").root == "/other"
    defaults = ZkStorage.from_config({"storm.zookeeper.root": None})
    assert (defaults.root, defaults.connect_timeout_secs, defaults.operation_timeout_secs,
            defaults.identity) == ("/stormpy", 15.0, 20.0, None)


def shown(acls: list[ACL]) -> list[tuple[int, str, str]]:
    """ACLs as ZooKeeper shows them to a reader without ADMIN rights (a digest's hash hidden)."""
    return [(a.perms, a.id.scheme, a.id.id.split(":")[0]) for a in acls]


def test_a_secured_storage_applies_its_acls(zookeeper: ZooKeeperServer, zk_root: str,
                                            admin: KazooClient) -> None:
    identity = zk_identity({"storm.zookeeper.auth.payload": "daemon:secret"})
    assert identity is not None
    root = f"{zk_root}/secured"
    s = ZkStorage(zookeeper.connect_string, root, connect_timeout_secs=30, identity=identity).start()
    stranger = ZkStorage(zookeeper.connect_string, root, connect_timeout_secs=30)
    try:
        s.set(f"{root}/assignments/t", b"a")
        assert admin.get_acls(zk_root)[0] == OPEN_ACL_UNSAFE
        shared = [(Permissions.ALL, "digest", "daemon"),
                  (Permissions.READ | Permissions.CREATE, "world", "anyone")]
        own = [(Permissions.ALL, "digest", "daemon"), (Permissions.READ, "world", "anyone")]
        assert shown(admin.get_acls(root)[0]) == shared
        for name in WORKER_DIRECTORIES:
            assert shown(admin.get_acls(f"{root}/{name}")[0]) == shared
        assert shown(admin.get_acls(f"{root}/assignments/t")[0]) == own
        assert shown(admin.get_acls(f"{root}/assignments")[0]) == own
        stranger.start()
        with pytest.raises(ClusterStateError) as err:
            stranger.set(f"{root}/assignments/t", b"x")
        assert str(err.value) == f"ZooKeeper set {root}/assignments/t failed: NoAuthError "
        stranger.create(f"{root}/workerbeats/w", b"beat")  # anyone may create there
        assert admin.get(f"{root}/assignments/t")[0] == b"a"
    finally:
        stranger.close()
        s.delete(root)
        s.close()


def test_watches_call_back_now_and_after_each_change(storage: ZkStorage) -> None:
    root = storage.root
    seen: list[bytes | None] = []
    kids: list[list[str]] = []
    data_watch = storage.watch_data(f"{root}/w", seen.append)
    children_watch = storage.watch_children(f"{root}/dir", kids.append)
    assert seen == [None] and kids == [[]]
    storage.set(f"{root}/w", b"1")
    storage.set(f"{root}/dir/b", b"")
    storage.set(f"{root}/dir/a", b"")
    wait_for(lambda: seen[-1] == b"1" and kids[-1] == ["a", "b"], timeout=30, what="watch callbacks")
    data_watch.cancel()
    children_watch.cancel()


def test_lock_contenders_read_the_lock_in_order(zookeeper: ZooKeeperServer, storage: ZkStorage) -> None:
    path = f"{storage.root}/leader"
    assert storage.lock_contenders(path) == []
    first = storage.lock(path, "nimbus-a")
    assert first.acquire(timeout=30)
    with ZkStorage(zookeeper.connect_string, storage.root, connect_timeout_secs=30) as other:
        second = other.lock(path, "nimbus-b")
        waiter = threading.Thread(target=lambda: second.acquire(timeout=30))
        waiter.start()
        wait_for(lambda: len(storage.lock_contenders(path)) == 2, timeout=30, what="two contenders")
        assert storage.lock_contenders(path) == ["nimbus-a", "nimbus-b"]
        first.release()
        waiter.join(30)
        assert storage.lock_contenders(path) == ["nimbus-b"]
        second.release()


# -- ClusterState over the real server -------------------------------------------------------------
SUP = SupervisorInfo("sup-1", "host-a", [6700, 6701], 1700000000.5, "0.1.0")
SUP2 = SupervisorInfo("sup-2", "host-b", [6700], 1700000001.0, "0.1.0")
STORM = StormBase("wc-1", "wc", "active", 2, 1700000000.0, "alice", {"spout": 2},
                  kill_wait_secs=None, prev_status=None)
ASSIGNMENT = Assignment("wc-1", "stormdist/wc-1/bundle.zip", executors={(1, 1): ("sup-1", 6700)},
                        node_host={"sup-1": "host-a"}, executor_start_times={(1, 1): 1700000001.0})


def beat(topology_id: str, node: str, port: int) -> WorkerHeartbeat:
    return WorkerHeartbeat(topology_id, node, port, 1700000010.0, 9.5, [(1, 1)], {})


def error(n: int, component: str = "count") -> ErrorInfo:
    return ErrorInfo(component, 3, 1700000000.0 + n, f"ValueError: {n}", "host-a", 6700)


@pytest.fixture
def state(storage: ZkStorage) -> Iterator[ClusterState]:
    with ClusterState(storage) as s:
        yield s


def test_supervisors_are_ephemeral_nodes_of_their_info(state: ClusterState, admin: KazooClient) -> None:
    paths = state.paths
    assert paths.root == state.storage.root and state.connected
    state.register_supervisor(SUP)
    data, stat = admin.get(paths.supervisor("sup-1"))
    assert data == encode(SUP) and stat.ephemeralOwner == state.storage.session_id
    state.register_supervisor(SUP2)
    assert state.supervisor("sup-1") == SUP and state.supervisor("none") is None
    assert state.supervisors() == {"sup-1": SUP, "sup-2": SUP2}
    assert state.supervisors_of(["sup-2", "gone", "sup-2"]) == {"sup-2": SUP2}
    assert state.supervisors_of([]) == {}
    bad = state.paths.supervisor("sup-bad")
    admin.create(bad, b"\xc1")
    with pytest.raises(MalformedStateError) as err:
        state.supervisors_of(["sup-bad"])
    assert err.value.path == bad
    admin.delete(bad)
    ids: list[list[str]] = []
    handle = state.watch_supervisor_ids(ids.append)
    assert ids == [["sup-1", "sup-2"]]
    state.unregister_supervisor("sup-2")
    wait_for(lambda: ids[-1] == ["sup-1"], timeout=30, what="the supervisor ids watch")
    handle.cancel()
    assert admin.exists(paths.supervisor("sup-2")) is None and state.supervisors() == {"sup-1": SUP}


def test_watched_reads_call_back_once_and_see_this_clients_own_writes(state: ClusterState,
                                                                     admin: KazooClient) -> None:
    fired: list[str] = []
    assert state.assignments(lambda: fired.append("all")) == {}
    assert state.assignment("wc-1", lambda: fired.append("one")) is None
    assert state.storm_base("wc-1", lambda: fired.append("base")) is None
    assert state.supervisors(lambda: fired.append("sups")) == {}
    state.set_assignment(ASSIGNMENT)
    state.set_storm_base(STORM)
    state.register_supervisor(SUP)
    # the writer's next read sees its write at once, with or without a watch
    assert state.assignment("wc-1", lambda: fired.append("one")) == ASSIGNMENT
    assert state.assignments(lambda: fired.append("all")) == {"wc-1": ASSIGNMENT}
    assert state.storm_base("wc-1", lambda: fired.append("base")) == STORM
    assert state.supervisors(lambda: fired.append("sups")) == {"sup-1": SUP}
    wait_for(lambda: {"all", "one", "base", "sups"} <= set(fired), timeout=30, what="the callbacks")
    first = state.assignment("wc-1", lambda: None)
    assert state.assignment("wc-1", lambda: None) is first  # decoded once while unchanged
    base = state.storm_base("wc-1", lambda: None)
    assert state.assignments(lambda: None) == {"wc-1": ASSIGNMENT}
    assert state.assignment("wc-1", lambda: None) is first  # a listing keeps its nodes' records
    assert state.storm_base("wc-1", lambda: None) is base  # and those of other directories
    rewritten: list[str] = []
    assert state.assignments(lambda: rewritten.append("all")) == {"wc-1": ASSIGNMENT}
    newer = Assignment("wc-1", "stormdist/wc-1/bundle-2.zip", executors={}, node_host={},
                       executor_start_times={})
    admin.set(state.paths.assignment("wc-1"), encode(newer))  # another client rewrites it
    wait_for(lambda: rewritten == ["all"], timeout=30, what="the callback of a rewritten assignment")
    assert state.assignments(lambda: None) == {"wc-1": newer}
    state.remove_assignment("wc-1")
    state.remove_storm_base("wc-1")
    assert state.assignment("wc-1", lambda: None) is None and state.assignments(lambda: None) == {}
    assert state.storm_base("wc-1", lambda: None) is None
    state.unregister_supervisor("sup-1")
    assert state.supervisors(lambda: None) == {}


def test_storm_bases_and_assignments_read_without_watches(state: ClusterState, admin: KazooClient) -> None:
    state.set_storm_base(STORM)
    state.set_assignment(ASSIGNMENT)
    assert admin.get(state.paths.storm("wc-1"))[0] == encode(STORM)
    assert admin.get(state.paths.assignment("wc-1"))[0] == encode(ASSIGNMENT)
    assert state.storm_base("wc-1") == STORM and state.assignment("wc-1") == ASSIGNMENT
    assert state.storm_bases() == {"wc-1": STORM} and state.active_storms() == ["wc-1"]
    assert state.assignments() == {"wc-1": ASSIGNMENT}
    admin.set(state.paths.assignment("wc-1"), b"\xc1")
    with pytest.raises(MalformedStateError) as err:
        state.assignment("wc-1")
    assert err.value.path == state.paths.assignment("wc-1")
    admin.set(state.paths.storm("wc-1"), b"\xc1")
    with pytest.raises(MalformedStateError) as err:
        state.storm_bases()
    assert err.value.path == state.paths.storm("wc-1")
    with pytest.raises(MalformedStateError) as err:
        state.assignment("wc-1", lambda: None)
    assert err.value.path == state.paths.assignment("wc-1")


def test_heartbeats_by_worker_and_in_two_batches(state: ClusterState, admin: KazooClient) -> None:
    state.set_worker_heartbeat(beat("t-1", "sup-1", 6700))
    state.set_worker_heartbeat(beat("t-1", "sup-a-b", 6701))
    state.set_worker_heartbeat(beat("t-2", "sup-2", 6700))
    path = state.paths.workerbeat("t-1", "sup-1", 6700)
    assert admin.get(path)[0] == encode(beat("t-1", "sup-1", 6700))
    assert state.worker_heartbeat("t-1", "sup-1", 6700) == beat("t-1", "sup-1", 6700)
    assert state.worker_heartbeat("t-1", "sup-1", 1) is None
    assert state.worker_heartbeats("t-1") == {("sup-1", 6700): beat("t-1", "sup-1", 6700),
                                              ("sup-a-b", 6701): beat("t-1", "sup-a-b", 6701)}
    assert state.heartbeats_of(["t-2", "none"]) == {"t-2": {("sup-2", 6700): beat("t-2", "sup-2", 6700)},
                                                    "none": {}}
    assert state.heartbeat_topologies() == ["t-1", "t-2"]
    state.remove_worker_heartbeat("t-1", "sup-1", 6700)
    assert list(state.worker_heartbeats("t-1")) == [("sup-a-b", 6701)]
    garbled = state.paths.workerbeat("t-3", "sup-9", 6700)
    admin.create(garbled, b"\xc1", makepath=True)
    with pytest.raises(MalformedStateError) as garbled_err:
        state.heartbeats_of(["t-3"])
    assert garbled_err.value.path == garbled
    bad = f"{state.paths.workerbeats('t-2')}/no-port"
    admin.create(bad, encode(beat("t-2", "x", 1)))
    for read in (lambda: state.worker_heartbeats("t-2"), lambda: state.heartbeats_of(["t-2"])):
        with pytest.raises(MalformedStateError) as err:
            read()
        assert err.value.path == bad
        assert "worker key 'no-port' is not of the form <node>-<port>" in str(err.value)


def test_errors_keep_the_newest_ten_oldest_first(state: ClusterState, admin: KazooClient) -> None:
    assert MAX_ERRORS_PER_COMPONENT == 10
    assert state.last_error("t-1", "count") is None and state.all_errors("t-1") == {}
    for n in range(12):
        state.report_error("t-1", error(n))
    state.report_error("t-1", error(0, "split/x"))
    parent = state.paths.component_errors("t-1", "count")
    assert len(admin.get_children(parent)) == 10
    assert state.errors("t-1", "count") == [error(n) for n in range(2, 12)]
    assert state.last_error("t-1", "count") == error(11)
    assert state.all_errors("t-1") == {"count": [error(n) for n in range(2, 12)],
                                       "split/x": [error(0, "split/x")]}
    admin.ensure_path(state.paths.component_errors("t-1", "quiet"))
    assert set(state.all_errors("t-1")) == {"count", "split/x"}


def test_checkpoints_by_partition(state: ClusterState, admin: KazooClient) -> None:
    state.set_checkpoint("t-1", "spout", "p/0", {"offset": 5})
    state.set_checkpoint("t-1", "spout", "p1", [1, 2])
    assert admin.get(state.paths.checkpoint("t-1", "spout", "p/0"))[0] == encode_value({"offset": 5})
    assert state.checkpoint("t-1", "spout", "p/0") == {"offset": 5}
    assert state.checkpoint("t-1", "spout", "none") is None
    assert state.checkpoints("t-1", "spout") == {"p/0": {"offset": 5}, "p1": [1, 2]}
    assert state.checkpoints("t-1", "other") == {}
    bad = state.paths.checkpoint("t-1", "spout", "p1")
    admin.set(bad, b"\xc1")
    for read in (lambda: state.checkpoint("t-1", "spout", "p1"), lambda: state.checkpoints("t-1", "spout")):
        with pytest.raises(MalformedStateError) as err:
            read()
        assert err.value.path == bad


def test_topologies_submissions_and_their_removal(state: ClusterState, admin: KazooClient) -> None:
    state.ensure_layout()
    for path in state.paths.top_level():
        assert admin.exists(path) is not None
    state.mark_submitting("t-9")
    assert state.submitting() == ["t-9"]
    state.set_storm_base(STORM)
    state.set_assignment(Assignment("t-2", "b", executors={}, node_host={}, executor_start_times={}))
    state.set_worker_heartbeat(beat("t-3", "sup-1", 6700))
    state.report_error("t-4", error(1))
    admin.ensure_path(state.paths.blobstore("t-5"))
    assert state.topologies() == ["t-2", "t-3", "t-4", "t-5", "wc-1"]
    state.clear_submitting("t-9")
    assert state.submitting() == []
    for tid in ("wc-1", "w2"):
        state.set_storm_base(StormBase(tid, "wc", "active", 1, 1.0, "a", {}, kill_wait_secs=None,
                                       prev_status=None))
        state.set_assignment(Assignment(tid, "b", executors={}, node_host={}, executor_start_times={}))
        state.set_checkpoint(tid, "spout", "p", 1)
        state.report_error(tid, error(1))
        state.mark_submitting(tid)
    state.remove_topology("wc-1")
    state.remove_topology("w2", keep_checkpoints=True)
    for tid in ("wc-1", "w2"):
        for path in state.paths.topology_paths(tid):
            if tid == "w2" and path == state.paths.checkpoints(tid):
                continue
            assert admin.exists(path) is None, path
        assert admin.exists(state.paths.submitting(tid)) is None
    assert state.checkpoint("w2", "spout", "p") == 1
    assert state.checkpoint("wc-1", "spout", "p") is None


def test_nimbus_records_leave_out_the_leader_lock_and_unreadable_ones(state: ClusterState,
                                                                      admin: KazooClient) -> None:
    assert state.nimbus_records() == {}
    leader = state.paths.nimbus_leader()
    admin.ensure_path(f"{leader}/x__lock__0000000000")
    admin.create(state.paths.nimbus("n1"), encode_value({"host": "h1", "port": 6627}), makepath=True)
    admin.create(state.paths.nimbus("empty"), b"")
    admin.create(state.paths.nimbus("bad"), b"\xc1")
    admin.create(state.paths.nimbus("list"), encode_value([1]))
    assert state.nimbus_records() == {"n1": {"host": "h1", "port": 6627}}
    admin.set(leader, encode_value({"host": "not-a-nimbus"}))  # whatever the lock node holds
    assert state.nimbus_records() == {"n1": {"host": "h1", "port": 6627}}


def test_a_state_it_connected_closes_its_storage(zookeeper: ZooKeeperServer, zk_root: str) -> None:
    own = ClusterState.connect(zookeeper.connect_string, zk_root, connect_timeout_secs=30,
                               session_timeout_secs=8, operation_timeout_secs=3)
    assert own.storage.root == zk_root and own.storage.operation_timeout_secs == 3
    assert own.storage.connect_timeout_secs == 30
    with ClusterState.connect(zookeeper.connect_string, zk_root, session_timeout_secs=8) as timed:
        assert timed.storage.operation_timeout_secs == 8
    with ClusterState.connect(zookeeper.connect_string, zk_root) as defaults:
        made_storage = defaults.storage
        assert (made_storage.connect_timeout_secs, made_storage.operation_timeout_secs) == (15.0, 20.0)
    own.begin_shutdown()
    assert own.storage.shutting_down
    own.close()
    assert not own.connected
    conf = {"storm.zookeeper.servers": [zookeeper.host], "storm.zookeeper.port": zookeeper.port,
            "storm.zookeeper.root": zk_root, "storm.zookeeper.session.timeout": 9000}
    with ClusterState.from_config(conf) as made:
        assert made.connected and made.storage.operation_timeout_secs == 9
    assert not made.connected
    shared = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    try:
        ClusterState(shared).close()
        assert shared.connected  # not its storage
    finally:
        shared.close()


def test_every_operation_of_a_closed_storage_names_itself_and_its_path(zookeeper: ZooKeeperServer,
                                                                      zk_root: str) -> None:
    s = ZkStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    s.close()
    s.close()  # idempotent
    p = f"{zk_root}/x"
    calls = {
        "exists": lambda: s.exists(p), "get": lambda: s.get(p), "get_children": lambda: s.children(p),
        "ensure_path": lambda: s.ensure_path(p), "set": lambda: s.set(p, b""),
        "create": lambda: s.create(p), "create_ephemeral": lambda: s.create_ephemeral(p, b""),
        "delete": lambda: s.delete(p), "watch_data": lambda: s.watch_data(p, lambda _d: None)}
    for op, call in calls.items():
        with pytest.raises(ZkConnectionError) as err:
            call()
        assert str(err.value) == f"ZooKeeper {op} {p} abandoned: the storage was closed", op
    with pytest.raises(ZkConnectionError) as err:
        s.get_many([p, p, p])
    assert str(err.value) == f"ZooKeeper get {p} (and 2 more) abandoned: the storage was closed"
    with pytest.raises(ZkConnectionError) as err:
        s.children_many([p, p])
    assert str(err.value) == f"ZooKeeper get_children {p} (and 1 more) abandoned: the storage was closed"
    with pytest.raises(ZkConnectionError) as err:
        s.lock_contenders(p)
    assert str(err.value) == f"ZooKeeper get_children {p} abandoned: the storage was closed"


class ClosingAfterEnsure(ZkStorage):
    """A storage closed by another thread right after ``watch_children`` ensured its path."""

    def ensure_path(self, path: str) -> None:
        super().ensure_path(path)
        self.close()


def test_a_children_watch_set_up_while_the_storage_closes_names_the_watch(
        zookeeper: ZooKeeperServer, zk_root: str) -> None:
    s = ClosingAfterEnsure(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    with pytest.raises(ZkConnectionError) as err:
        s.watch_children(f"{zk_root}/dir", lambda _c: None)
    assert str(err.value) == f"ZooKeeper watch_children {zk_root}/dir abandoned: the storage was closed"


class VanishingStorage(ZkStorage):
    """A storage whose batch reads find ``vanish`` deleted between the listing and the read."""

    vanish: str = ""

    def get_many(self, paths: Sequence[str]) -> list[bytes | None]:
        if self.vanish in paths:
            self.delete(self.vanish)
        return super().get_many(paths)


def test_a_heartbeat_gone_between_listing_and_reading_is_left_out_and_the_rest_kept(
        zookeeper: ZooKeeperServer, zk_root: str) -> None:
    storage = VanishingStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    try:
        state = ClusterState(storage)
        for node in ("a", "b", "c"):
            state.set_worker_heartbeat(beat("t-1", node, 6700))
        storage.vanish = state.paths.workerbeat("t-1", "a", 6700)
        assert state.heartbeats_of(["t-1"]) == {"t-1": {("b", 6700): beat("t-1", "b", 6700),
                                                        ("c", 6700): beat("t-1", "c", 6700)}}
        storage.vanish = state.paths.workerbeat("t-1", "b", 6700)
        assert state.worker_heartbeats("t-1") == {("c", 6700): beat("t-1", "c", 6700)}
    finally:
        storage.close()


class CountingStorage(ZkStorage):
    """A storage that counts its single-node reads."""

    gets = 0
    listings = 0

    def get(self, path: str) -> bytes | None:
        self.gets += 1
        return super().get(path)

    def children(self, path: str) -> list[str]:
        self.listings += 1
        return super().children(path)


def test_a_watched_read_is_answered_from_the_watch_and_a_write_is_read_back_before_it_arrives(
        zookeeper: ZooKeeperServer, zk_root: str, admin: KazooClient) -> None:
    storage = CountingStorage(zookeeper.connect_string, zk_root, connect_timeout_secs=30).start()
    release = threading.Event()
    blocking = threading.Event()

    def block_kazoos_callbacks() -> None:
        blocking.set()
        release.wait(60)

    try:
        state = ClusterState(storage)
        state.set_assignment(ASSIGNMENT)
        state.set_storm_base(STORM)
        assert state.assignment("wc-1", lambda: None) == ASSIGNMENT
        reads = storage.gets
        for _ in range(3):
            assert state.assignment("wc-1", lambda: None) == ASSIGNMENT
        assert storage.gets == reads  # answered from what the watch delivered
        assert state.assignments(lambda: None) == {"wc-1": ASSIGNMENT}
        assert state.supervisors(lambda: None) == {}
        listings, reads = storage.listings, storage.gets
        for _ in range(3):
            assert state.assignments(lambda: None) == {"wc-1": ASSIGNMENT}
            assert state.supervisors(lambda: None) == {}
        assert (storage.listings, storage.gets) == (listings, reads)  # the child lists too
        # hold kazoo's callback thread, so the watch cannot deliver the next write
        assert state.storm_base("wc-1", block_kazoos_callbacks) == STORM
        admin.set(state.paths.storm("wc-1"), encode(STORM))
        wait_for(blocking.is_set, timeout=30, what="kazoo's callback thread held")
        newer = Assignment("wc-1", "stormdist/wc-1/bundle-2.zip", executors={},
                           node_host={}, executor_start_times={})
        state.set_assignment(newer)
        assert state.assignment("wc-1", lambda: None) == newer  # from ZooKeeper: its own write
        assert storage.gets == reads + 1
        other = Assignment("t-2", "b", executors={}, node_host={}, executor_start_times={})
        state.set_assignment(other)  # a new node: the parent's child list is read again too
        assert state.assignments(lambda: None) == {"wc-1": newer, "t-2": other}
    finally:
        release.set()
        storage.close()


def test_re_putting_an_ephemeral_node_of_this_storage_is_one_zookeeper_transaction(
        storage: ZkStorage, admin: KazooClient) -> None:
    path = f"{storage.root}/sup/s1"
    storage.create_ephemeral(path, b"0")
    gaps = []
    for n in range(3):  # other sessions' transactions can only widen a gap: the least is ours
        marker = admin.create(f"{storage.root}/marker-", sequence=True)
        storage.create_ephemeral(path, str(n).encode())
        gaps.append(admin.exists(path).mzxid - admin.exists(marker).czxid)
    assert min(gaps) == 1
    assert admin.get(path)[0] == b"2"


def test_a_root_zookeeper_refuses_to_create_names_the_start(zookeeper: ZooKeeperServer, zk_root: str,
                                                           admin: KazooClient) -> None:
    locked = f"{zk_root}/locked"
    admin.ensure_path(zk_root)
    admin.create(locked, b"", acl=[ACL(Permissions.READ, Id("world", "anyone"))])
    s = ZkStorage(zookeeper.connect_string, f"{locked}/storm", connect_timeout_secs=30)
    try:
        with pytest.raises(ClusterStateError) as err:
            s.start()
        assert str(err.value) == f"ZooKeeper ensure_path {locked}/storm failed: NoAuthError "
    finally:
        s.close()


def test_the_session_timeout_is_the_one_zookeeper_gives_the_session(zookeeper: ZooKeeperServer,
                                                                     zk_root: str) -> None:
    """`storm.zookeeper.session.timeout` (the `session_timeout_secs` of a storage) is what ZooKeeper
    negotiates for the session: how long the cluster keeps a disconnected daemon's ephemeral nodes
    (ZooKeeper's `cons` shows each connection's `to=` in ms)."""
    conf = {"storm.zookeeper.servers": [zookeeper.host], "storm.zookeeper.port": zookeeper.port,
            "storm.zookeeper.session.timeout": 13500}
    for storage, negotiated in ((ZkStorage(zookeeper.connect_string, zk_root, session_timeout_secs=12.5,
                                           connect_timeout_secs=30), 12500),
                                (ZkStorage.from_config(conf, zk_root), 13500)):
        try:
            storage.start()
            assert storage.session_id is not None
            session = f"sid=0x{storage.session_id:x},"
            [line] = [c for c in four_letter_word(zookeeper.host, zookeeper.port, "cons").splitlines()
                      if session in c]
            assert f",to={negotiated}," in line
        finally:
            storage.close()


def test_an_operation_whose_session_expired_under_it_is_retried_on_the_new_session(
        storage: ZkStorage, admin: KazooClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that fails because the session expired (a long partition) is sent again once
    a new session is up, within the operation's deadline, not failed with SessionExpiredError."""
    admin.create(f"{storage.root}/n", b"data")
    client = storage._client  # the storage's kazoo client: its first answer stands in for an expiry
    real_get_async = client.get_async
    sent: list[str] = []

    def get_async(path: str, watch: object = None) -> object:
        sent.append(path)
        if len(sent) == 1:
            expired = client.handler.async_result()
            expired.set_exception(SessionExpiredError())
            return expired
        return real_get_async(path, watch)

    monkeypatch.setattr(client, "get_async", get_async)
    assert storage.get(f"{storage.root}/n") == b"data"
    assert sent == [f"{storage.root}/n"] * 2


def test_a_watched_listing_stops_watching_the_children_that_are_gone(state: ClusterState,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The data watch a watched listing set on a child is cancelled at the first listing without
    that child (a Nimbus watching workers come and go keeps no watch per gone worker)."""
    storage = state.storage
    cancelled: list[str] = []
    real_watch_data = storage.watch_data

    def watch_data(path: str, callback: Any) -> Any:
        handle = real_watch_data(path, callback)
        real_cancel = handle.cancel

        def cancel() -> None:
            cancelled.append(path)
            real_cancel()

        monkeypatch.setattr(handle, "cancel", cancel)
        return handle

    monkeypatch.setattr(storage, "watch_data", watch_data)
    state.register_supervisor(SUP)
    state.register_supervisor(SUP2)
    assert state.supervisors(lambda: None) == {"sup-1": SUP, "sup-2": SUP2}
    state.unregister_supervisor("sup-2")
    assert state.supervisors(lambda: None) == {"sup-1": SUP}
    assert cancelled == [state.paths.supervisor("sup-2")]
