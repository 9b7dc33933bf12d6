"""ClusterState and ZkStorage against a real ZooKeeper (one server per session, one root per test)."""

from __future__ import annotations

import socket
import threading

import pytest
from kazoo.client import KazooClient

from stormpy.cluster import (
    MAX_ERRORS_PER_COMPONENT,
    Assignment,
    ClusterState,
    ErrorInfo,
    MalformedStateError,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
    ZkConnectionError,
    ZkStorage,
)
from stormpy.cluster.records import encode
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.testing import wait_for

pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(120)]

TID = "wc-1-1700000000"


def supervisor(sid: str = "sup-1", ports: tuple[int, ...] = (6700, 6701)) -> SupervisorInfo:
    return SupervisorInfo(sid, "127.0.0.1", ports, 1700000000.0, "0.1.0")


def storm_base(tid: str = TID, status: str = "active") -> StormBase:
    return StormBase(tid, "wc", status, 2, 1700000000.0, "alice", {"spout": 1, "count": 2})


def assignment(tid: str = TID, bundle_key: str = "bundle-v1") -> Assignment:
    return Assignment(tid, bundle_key, {(1, 1): ("sup-1", 6700), (2, 3): ("sup-1", 6701)},
                      {"sup-1": "127.0.0.1"}, {(1, 1): 1.0, (2, 3): 2.0})


def heartbeat(tid: str = TID, node: str = "sup-1", port: int = 6700) -> WorkerHeartbeat:
    return WorkerHeartbeat(tid, node, port, 1700000010.0, 10.0, [(1, 1)],
                           {"spout": {"emitted": 5, "acked": 5, "complete_latency_ms": 1.5}})


def test_every_document_round_trips(cluster_state: ClusterState) -> None:
    state = cluster_state
    state.register_supervisor(supervisor())
    assert state.supervisor("sup-1") == supervisor()
    assert state.supervisors() == {"sup-1": supervisor()}

    assert state.supervisors_of(["sup-1", "gone", "sup-1"]) == {"sup-1": supervisor()}

    state.set_storm_base(storm_base())
    assert state.storm_base(TID) == storm_base()
    assert state.storm_bases() == {TID: storm_base()}
    assert state.active_storms() == [TID]

    state.set_assignment(assignment())
    assert state.assignment(TID) == assignment()
    assert state.assignments() == {TID: assignment()}

    state.set_worker_heartbeat(heartbeat())
    state.set_worker_heartbeat(heartbeat(node="node-with-dashes", port=6701))
    assert state.worker_heartbeat(TID, "sup-1", 6700) == heartbeat()
    dashed = heartbeat(node="node-with-dashes", port=6701)
    assert state.worker_heartbeats(TID) == {("sup-1", 6700): heartbeat(), ("node-with-dashes", 6701): dashed}

    error = ErrorInfo("count", 3, 1700000020.0, "ValueError: boom", "127.0.0.1", 6700)
    state.report_error(TID, error)
    assert state.errors(TID, "count") == [error]
    assert state.last_error(TID, "count") == error

    state.set_checkpoint(TID, "kafka", "p-0", {"offset": 42})
    state.set_checkpoint(TID, "kafka", "p-1", {"offset": 7})
    assert state.checkpoint(TID, "kafka", "p-0") == {"offset": 42}
    assert state.checkpoints(TID, "kafka") == {"p-0": {"offset": 42}, "p-1": {"offset": 7}}
    assert state.topologies() == [TID]


def test_missing_state_reads_as_none_or_empty(cluster_state: ClusterState) -> None:
    state = cluster_state
    assert state.supervisor("nope") is None and state.supervisors() == {}
    assert state.storm_base("nope") is None and state.assignment("nope") is None
    assert state.assignments() == {} and state.worker_heartbeats("nope") == {}
    assert state.errors("nope", "c") == [] and state.last_error("nope", "c") is None
    assert state.checkpoint("nope", "s", "0") is None and state.checkpoints("nope", "s") == {}
    state.remove_topology("nope")  # removing nothing is fine


def test_overwrite_and_remove(cluster_state: ClusterState) -> None:
    state = cluster_state
    state.set_storm_base(storm_base())
    state.set_storm_base(storm_base(status="inactive"))
    assert state.storm_base(TID).status == "inactive"  # type: ignore[union-attr]
    state.remove_storm_base(TID)
    assert state.storm_base(TID) is None
    state.set_worker_heartbeat(heartbeat())
    state.remove_worker_heartbeat(TID, "sup-1", 6700)
    assert state.worker_heartbeats(TID) == {}


def test_errors_keep_the_newest_per_component(cluster_state: ClusterState) -> None:
    state = cluster_state
    total = MAX_ERRORS_PER_COMPONENT + 3
    for i in range(total):
        state.report_error(TID, ErrorInfo("count", 1, float(i), f"error {i}", "h", 6700))
    state.report_error(TID, ErrorInfo("odd/name", 2, 0.0, "other", "h", 6700))
    kept = state.errors(TID, "count")
    assert [e.message for e in kept] == [f"error {i}" for i in range(3, total)]
    assert state.last_error(TID, "count").message == f"error {total - 1}"  # type: ignore[union-attr]
    assert sorted(state.all_errors(TID)) == ["count", "odd/name"]


def test_ephemeral_supervisor_disappears_when_its_session_closes(
        zookeeper: ZooKeeperServer, zk_root: str, cluster_state: ClusterState) -> None:
    other = ClusterState.connect(zookeeper.connect_string, zk_root)
    other.register_supervisor(supervisor("sup-2"))
    assert set(cluster_state.supervisors()) == {"sup-2"}
    gone = threading.Event()
    cluster_state.supervisors(callback=gone.set)
    other.close()
    assert gone.wait(20), "no change notification after the supervisor's session closed"
    assert cluster_state.supervisors() == {}


def test_stale_supervisor_node_is_replaced_by_a_new_session(
        zookeeper: ZooKeeperServer, zk_root: str, cluster_state: ClusterState) -> None:
    old = ClusterState.connect(zookeeper.connect_string, zk_root)
    old.register_supervisor(supervisor("sup-1", ports=(1,)))
    with ClusterState.connect(zookeeper.connect_string, zk_root) as new:
        new.register_supervisor(supervisor("sup-1", ports=(2, 3)))
        old.close()  # closing the old session must not remove the new session's node
        assert cluster_state.supervisor("sup-1") == supervisor("sup-1", ports=(2, 3))


def test_a_supervisor_republishing_its_record_rewrites_it_in_one_request(
        zookeeper: ZooKeeperServer, zk_root: str, cluster_state: ClusterState) -> None:
    """Every supervisor re-publishes its record every few seconds: its own node is rewritten (one
    request), with no create refused as existing first; another session's node is still taken
    over, and a node gone with a lost session is created again."""
    with ClusterState.connect(zookeeper.connect_string, zk_root) as sup:
        creates: list[str] = []
        client = sup.storage._client
        real_create = client.create_async
        client.create_async = lambda path, *a, **kw: (creates.append(path), real_create(path, *a, **kw))[1]  # type: ignore[method-assign]
        node = sup.paths.supervisor("sup-1")
        sup.register_supervisor(supervisor("sup-1", ports=(1,)))
        assert creates.count(node) == 1
        sup.register_supervisor(supervisor("sup-1", ports=(2,)))
        assert creates.count(node) == 1
        assert cluster_state.supervisor("sup-1") == supervisor("sup-1", ports=(2,))
        with ClusterState.connect(zookeeper.connect_string, zk_root) as other:
            other.register_supervisor(supervisor("sup-1", ports=(3,)))  # another session takes it over
            sup.register_supervisor(supervisor("sup-1", ports=(4,)))  # and this one takes it back
        assert cluster_state.supervisor("sup-1") == supervisor("sup-1", ports=(4,))  # outlives `other`
        cluster_state.storage.delete(cluster_state.paths.supervisor("sup-1"))  # as a lost session would
        sup.register_supervisor(supervisor("sup-1", ports=(5,)))
        assert cluster_state.supervisor("sup-1") == supervisor("sup-1", ports=(5,))


def test_ephemeral_node_is_recreated_after_session_expiry(
        zookeeper: ZooKeeperServer, zk_root: str, cluster_state: ClusterState) -> None:
    storage = ZkStorage(zookeeper.connect_string, zk_root, session_timeout_secs=10).start()
    try:
        ClusterState(storage).register_supervisor(supervisor("sup-9"))
        old_session = storage.session_id
        credentials = storage.session_credentials
        assert credentials is not None
        session_id, password = credentials
        # Expire the session the documented way: a second client joins it and closes it.
        thief = KazooClient(hosts=zookeeper.connect_string, client_id=(session_id, password))
        thief.start(timeout=20)
        thief.stop()
        thief.close()
        wait_for(lambda: storage.connected and storage.session_id not in (None, old_session), 20,
                 "a new session after expiry")
        wait_for(lambda: cluster_state.supervisor("sup-9") is not None, 20,
                 "the supervisor node to return")
    finally:
        storage.close()
    wait_for(lambda: cluster_state.supervisor("sup-9") is None, 20,
             "the node to vanish with the session")


def test_assignments_callback_fires_on_add_change_and_remove(cluster_state: ClusterState) -> None:
    state = cluster_state
    fired: list[str] = []
    event = threading.Event()

    def arm() -> dict[str, Assignment]:
        event.clear()
        return state.assignments(callback=lambda: (fired.append("x"), event.set()))

    assert arm() == {}
    state.set_assignment(assignment())
    assert event.wait(20), "callback did not fire for a new assignment"

    assert arm() == {TID: assignment()}
    state.set_assignment(assignment(bundle_key="bundle-v2"))
    assert event.wait(20), "callback did not fire for a changed assignment"
    assert state.assignments()[TID].bundle_key == "bundle-v2"

    arm()
    state.remove_assignment(TID)
    assert event.wait(20), "callback did not fire for a removed assignment"
    assert state.assignments() == {}
    assert len(fired) == 3  # one-shot: each registration fired exactly once


def test_single_assignment_callback(cluster_state: ClusterState) -> None:
    state = cluster_state
    state.set_assignment(assignment())
    changed = threading.Event()
    assert state.assignment(TID, callback=changed.set) == assignment()
    state.set_assignment(assignment(bundle_key="bundle-v2"))
    assert changed.wait(20)
    created = threading.Event()
    assert state.assignment("other", callback=created.set) is None
    state.set_assignment(assignment("other"))
    assert created.wait(20), "callback did not fire when the watched assignment was created"
    assert state.assignment("other") == assignment("other")


def test_watched_reads_cost_zookeeper_nothing_until_a_node_changes(
        zookeeper: ZooKeeperServer, zk_root: str, cluster_state: ClusterState) -> None:
    """A supervisor re-reads every assignment at each sync: with a callback, the reads are
    answered from the assignments' watches (one ZooKeeper read per change, not per sync), the
    decoded records are reused, and another client's change is seen once its callback fires."""
    nimbus = cluster_state
    nimbus.set_assignment(assignment())
    nimbus.set_assignment(assignment("other"))
    reader = ClusterState.connect(zookeeper.connect_string, zk_root, connect_timeout_secs=30)
    try:
        gets: list[str] = []
        real_get, real_children = reader.storage.get, reader.storage.children
        reader.storage.get = lambda path: (gets.append(path), real_get(path))[1]  # type: ignore[method-assign]
        reader.storage.children = lambda path: (gets.append(path), real_children(path))[1]  # type: ignore[method-assign]
        changed = threading.Event()
        first = reader.assignments(callback=changed.set)
        assert first == {TID: assignment(), "other": assignment("other")}
        gets.clear()
        again = reader.assignments(callback=changed.set)
        assert again == first and again[TID] is first[TID]  # from the watches, decoded once
        assert gets == []
        nimbus.set_assignment(assignment(bundle_key="bundle-v2"))
        assert changed.wait(20), "callback did not fire for a changed assignment"
        assert reader.assignments(callback=changed.set)[TID].bundle_key == "bundle-v2"
        assert gets == []
        # a client's own write is seen by its next read, before its watch delivers it
        reader.set_assignment(assignment(bundle_key="bundle-v3"))
        assert reader.assignments(callback=changed.set)[TID].bundle_key == "bundle-v3"
        reader.set_assignment(assignment("third"))
        assert "third" in reader.assignments(callback=changed.set)  # a new node too
        nimbus.remove_assignment("other")
        wait_for(lambda: "other" not in reader.assignments(callback=changed.set), 20,
                 "the removed assignment to vanish from the reader's reads")
    finally:
        reader.close()


def test_persistent_storage_watches(zk_storage: ZkStorage) -> None:
    path = f"{zk_storage.root}/watched"
    seen: list[bytes | None] = []
    update = threading.Condition()

    def on_data(data: bytes | None) -> None:
        with update:
            seen.append(data)
            update.notify_all()

    watch = zk_storage.watch_data(path, on_data)
    children: list[list[str]] = []
    child_watch = zk_storage.watch_children(f"{zk_storage.root}/dir", children.append)
    zk_storage.set(path, b"one")
    zk_storage.set(path, b"two")
    zk_storage.set(f"{zk_storage.root}/dir/a", b"")
    with update:
        assert update.wait_for(lambda: seen[-1:] == [b"two"], 20), seen
    wait_for(lambda: children[-1:] == [["a"]], 20, "children watch")
    assert seen[0] is None  # initial call: the node did not exist yet
    watch.cancel()
    child_watch.cancel()
    assert watch.cancelled


def test_remove_topology_removes_everything(cluster_state: ClusterState, zk_storage: ZkStorage) -> None:
    state = cluster_state
    for tid in (TID, "keep-1"):
        state.set_storm_base(storm_base(tid))
        state.set_assignment(assignment(tid))
        state.set_worker_heartbeat(heartbeat(tid))
        state.report_error(tid, ErrorInfo("count", 1, 0.0, "boom", "h", 1))
        state.set_checkpoint(tid, "spout", "0", 5)
        zk_storage.set(state.paths.transactional(tid, "coordinator", "current"), b"\x01")
    state.remove_topology(TID)
    for path in state.paths.topology_paths(TID):
        assert not zk_storage.exists(path), path
    assert state.topologies() == ["keep-1"]
    assert state.assignment("keep-1") == assignment("keep-1")
    assert state.checkpoint("keep-1", "spout", "0") == 5

    state.remove_topology("keep-1", keep_checkpoints=True)
    assert state.topologies() == []
    assert state.checkpoint("keep-1", "spout", "0") == 5


def test_malformed_documents_name_the_path(cluster_state: ClusterState, zk_storage: ZkStorage) -> None:
    path = cluster_state.paths.assignment(TID)
    zk_storage.set(path, b"\xc1 definitely not msgpack")
    with pytest.raises(MalformedStateError) as info:
        cluster_state.assignment(TID)
    assert info.value.path == path and path in str(info.value)
    with pytest.raises(MalformedStateError, match=path):
        cluster_state.assignments()

    beat_dir = cluster_state.paths.workerbeats(TID)
    zk_storage.set(f"{beat_dir}/no_port_here", encode(heartbeat()))
    with pytest.raises(MalformedStateError, match=f"{beat_dir}/no_port_here"):
        cluster_state.worker_heartbeats(TID)


def test_storage_stays_inside_its_root(zk_storage: ZkStorage) -> None:
    with pytest.raises(ValueError, match="outside this storage's root"):
        zk_storage.set("/elsewhere", b"x")
    with pytest.raises(ValueError, match="outside this storage's root"):
        zk_storage.delete(zk_storage.root + "-sibling")
    assert zk_storage.delete(f"{zk_storage.root}/missing") is False
    zk_storage.set(f"{zk_storage.root}/a/b/c", b"deep")
    assert zk_storage.get(f"{zk_storage.root}/a/b/c") == b"deep"
    assert zk_storage.delete(f"{zk_storage.root}/a") is True
    assert not zk_storage.exists(f"{zk_storage.root}/a")


def test_connect_timeout_names_the_hosts() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hosts = f"127.0.0.1:{port}"
    with pytest.raises(ZkConnectionError, match=f"could not connect to ZooKeeper at {hosts} within 1 s"):
        ZkStorage(hosts, "/x", connect_timeout_secs=1).start()


def test_get_many_reads_every_node_in_order_with_missing_ones_as_none(cluster_state: ClusterState) -> None:
    storage = cluster_state.storage
    paths = [f"{storage.root}/many/n{i:03d}" for i in range(300)]
    for i, path in enumerate(paths):
        if i % 7:
            storage.set(path, str(i).encode())
    found = storage.get_many(paths)
    assert found == [None if i % 7 == 0 else str(i).encode() for i in range(300)]
    assert storage.get_many([]) == []
    with pytest.raises(ValueError, match="outside this storage's root"):
        storage.get_many(["/elsewhere"])


def test_every_heartbeat_of_a_topology_is_read_in_one_batch(cluster_state: ClusterState) -> None:
    beats = {(f"sup-{i % 40}", 6700 + i // 40): heartbeat(node=f"sup-{i % 40}", port=6700 + i // 40)
             for i in range(200)}
    for beat in beats.values():
        cluster_state.set_worker_heartbeat(beat)
    assert cluster_state.worker_heartbeats(TID) == beats
    cluster_state.storage.set(cluster_state.paths.workerbeat(TID, "sup-0", 6700), b"\xc1not msgpack")
    with pytest.raises(MalformedStateError, match="sup-0"):
        cluster_state.worker_heartbeats(TID)


def test_heartbeats_of_many_topologies_read_in_two_batches(cluster_state: ClusterState) -> None:
    tids = [f"t{i}-1-1700000000" for i in range(30)]
    for i, tid in enumerate(tids):
        for port in range(6700, 6700 + i % 4):
            cluster_state.set_worker_heartbeat(heartbeat(tid=tid, port=port))
    found = cluster_state.heartbeats_of([*tids, "never-beat-1-1"])
    assert found == {**{tid: cluster_state.worker_heartbeats(tid) for tid in tids}, "never-beat-1-1": {}}
    assert [len(found[tid]) for tid in tids] == [i % 4 for i in range(30)]
    assert cluster_state.storage.children_many([]) == []
