"""The ZooKeeper side of the cluster state, exactly, without a server: the connect string each
setting gives, the identities and ACLs of a secured cluster, the paths a storage ensures at start,
the compound writes' requests over a stand-in of kazoo's client, the bounded operation runner's
errors (each naming the operation, the path and the hosts), the ephemeral nodes' take-over, and
the errors' messages."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooState
from kazoo.exceptions import ConnectionClosedError, NoAuthError, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.retry import InterruptedError as RetryInterrupted
from kazoo.retry import KazooRetry, RetryFailedError
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id, Permissions, make_digest_acl_credential

from stormpy.cluster import ZkStorage, zk_operations
from stormpy.cluster.errors import ClusterStateError, MalformedStateError, ZkConnectionError
from stormpy.cluster.zk_acls import (
    DAEMON_DIGEST_ID_KEY,
    WORKER_DIRECTORIES,
    daemon_digest_id,
    start_paths,
    worker_zk_identity,
    zk_identity,
)
from stormpy.cluster.zk_ephemerals import EphemeralKeeper, put_ephemeral
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.cluster.zk_operations import SLICE_SECS, ZkOperations
from stormpy.cluster.zk_writes import DELETE_ROUNDS, delete_tree, ensure_path, set_or_create
from stormpy.config import SettingError
from stormpy.testing import wait_for

WORLD = Id("world", "anyone")


# -- the connect string ----------------------------------------------------------------------------
def test_the_configs_own_servers_and_port_are_used_when_the_caller_gives_none() -> None:
    conf = {"storm.zookeeper.servers": "zk1, zk2:2182,", "storm.zookeeper.port": "2190"}
    assert hosts_from_config(conf) == "zk1:2190,zk2:2182"
    assert hosts_from_config(conf, servers="", port="") == "zk1:2190,zk2:2182"
    assert hosts_from_config(None, servers=("a",), port=1) == "a:1"
    assert hosts_from_config({}, servers=["a"], port=65535) == "a:65535"


@pytest.mark.parametrize("port", [True, "12 3", "1.5", 2181.5, "02181", "None", 65536, -1, None, "0"])
def test_a_port_that_is_not_one_is_refused_naming_the_setting_and_the_value(port: Any) -> None:
    conf = {"storm.zookeeper.servers": ["zk"], "storm.zookeeper.port": port}
    if port is None:  # the key unset: its default
        assert hosts_from_config(conf).startswith("zk:")
        return
    with pytest.raises(SettingError) as err:
        hosts_from_config(conf)
    assert err.value.setting == "storm.zookeeper.port"
    assert str(err.value) == f"storm.zookeeper.port: must be a port number in 1..65535, got {port!r}"


def test_a_callers_port_is_refused_under_the_callers_setting_name() -> None:
    with pytest.raises(SettingError) as err:
        hosts_from_config({}, servers=["zk"], port="x", port_setting="my.port")
    assert err.value.setting == "my.port"
    with pytest.raises(SettingError) as err:
        hosts_from_config({}, servers=["zk"], port="x")
    assert err.value.setting == "storm.zookeeper.port"


def test_no_server_is_refused_naming_the_setting_and_what_it_held() -> None:
    with pytest.raises(SettingError) as err:
        hosts_from_config({"storm.zookeeper.servers": [" ", ""]})
    assert err.value.setting == "storm.zookeeper.servers"
    with pytest.raises(SettingError) as err:
        hosts_from_config({}, servers=[" "])
    assert err.value.setting == "storm.zookeeper.servers"
    assert str(err.value) == "storm.zookeeper.servers: names no ZooKeeper server: [' ']"


# -- identities and ACLs ---------------------------------------------------------------------------
DAEMONS = {"storm.zookeeper.auth.payload": "stormpy:secret"}
TOPOLOGY = {"storm.zookeeper.topology.auth.payload": "wc-1:pw"}


def digest(user: str, password: str) -> Id:
    return Id("digest", make_digest_acl_credential(user, password))


def test_daemons_own_their_nodes_and_let_anyone_read_and_create_in_the_shared_ones() -> None:
    identity = zk_identity({**DAEMONS, "storm.zookeeper.auth.scheme": "digest"})
    assert identity is not None
    owner = ACL(Permissions.ALL, digest("stormpy", "secret"))
    assert identity.scheme == "digest" and identity.payload == "stormpy:secret"
    assert identity.auth_data == [("digest", "stormpy:secret")]
    assert identity.acl == (owner, ACL(Permissions.READ, WORLD))
    assert identity.shared_acl == (owner, ACL(Permissions.READ | Permissions.CREATE, WORLD))
    assert repr(identity) == "ZkIdentity(scheme='digest', user='stormpy')"
    assert "secret" not in repr(identity)


def test_a_worker_writes_as_its_topology_with_the_daemons_allowed_too() -> None:
    daemon_id = daemon_digest_id(DAEMONS)
    assert daemon_id == make_digest_acl_credential("stormpy", "secret")
    identity = zk_identity({**TOPOLOGY, DAEMON_DIGEST_ID_KEY: daemon_id})
    assert identity is not None
    acl = (ACL(Permissions.ALL, digest("wc-1", "pw")), ACL(Permissions.READ, WORLD),
           ACL(Permissions.ALL, Id("digest", daemon_id)))
    assert identity.payload == "wc-1:pw" and identity.acl == acl and identity.shared_acl == acl
    assert identity.scheme == "digest" and identity.auth_data == [("digest", "wc-1:pw")]
    alone = zk_identity(TOPOLOGY)
    assert alone is not None and alone.acl == acl[:2]


def test_the_daemons_payload_wins_over_a_topologys() -> None:
    identity = zk_identity({**DAEMONS, **TOPOLOGY})
    assert identity is not None and identity.payload == "stormpy:secret"


@pytest.mark.parametrize("conf", [{}, {"storm.zookeeper.auth.payload": ""},
                                  {"storm.zookeeper.auth.payload": None,
                                   "storm.zookeeper.topology.auth.payload": ""}])
def test_no_payload_is_an_open_cluster(conf: dict[str, Any]) -> None:
    assert zk_identity(conf) is None
    assert daemon_digest_id(conf) is None


@pytest.mark.parametrize(("conf", "setting", "message"), [
    ({**DAEMONS, "storm.zookeeper.auth.scheme": "sasl"}, "storm.zookeeper.auth.scheme",
     "only 'digest' is supported, got 'sasl'"),
    ({**TOPOLOGY, "storm.zookeeper.topology.auth.scheme": "ip"}, "storm.zookeeper.topology.auth.scheme",
     "only 'digest' is supported, got 'ip'"),
    ({"storm.zookeeper.auth.payload": "nopassword"}, "storm.zookeeper.auth.payload",
     "must be user:password (digest)"),
    ({"storm.zookeeper.auth.payload": ":pw"}, "storm.zookeeper.auth.payload",
     "must be user:password (digest)"),
    ({"storm.zookeeper.auth.payload": "user:"}, "storm.zookeeper.auth.payload",
     "must be user:password (digest)"),
    ({"storm.zookeeper.topology.auth.payload": "x"}, "storm.zookeeper.topology.auth.payload",
     "must be user:password (digest)"),
])
def test_a_bad_scheme_or_payload_names_its_setting(conf: dict[str, Any], setting: str, message: str) -> None:
    with pytest.raises(SettingError) as err:
        zk_identity(conf)
    assert err.value.setting == setting
    assert str(err.value) == f"{setting}: {message}"


def test_a_password_may_hold_colons_and_is_never_shown() -> None:
    identity = zk_identity({"storm.zookeeper.auth.payload": "u:p:q"})
    assert identity is not None and identity.acl[0].id == digest("u", "p:q")
    assert repr(identity) == "ZkIdentity(scheme='digest', user='u')"


def test_the_daemons_acl_id_checks_the_daemons_scheme() -> None:
    with pytest.raises(SettingError) as err:
        daemon_digest_id({**DAEMONS, "storm.zookeeper.auth.scheme": "sasl"})
    assert err.value.setting == "storm.zookeeper.auth.scheme"


def test_the_roots_parent_is_found_by_its_last_slash_whatever_the_names() -> None:
    identity = zk_identity(DAEMONS)
    assert identity is not None
    shared = list(identity.shared_acl)
    assert start_paths("/apps/X", identity)[:3] == [
        ("/apps", list(OPEN_ACL_UNSAFE)), ("/apps/X", shared), ("/apps/X/workerbeats", shared)]


def test_a_storage_starts_with_the_root_alone_when_open() -> None:
    assert start_paths("/storm", None) == [("/storm", None)]


def test_a_secured_storage_opens_the_roots_ancestors_and_shares_the_workers_directories() -> None:
    identity = zk_identity(DAEMONS)
    assert identity is not None
    shared = list(identity.shared_acl)
    assert start_paths("/apps/storm/", identity) == [
        ("/apps", list(OPEN_ACL_UNSAFE)), ("/apps/storm/", shared),
        *((f"/apps/storm/{name}", shared) for name in WORKER_DIRECTORIES)]
    assert WORKER_DIRECTORIES == ("workerbeats", "errors", "checkpoints", "transactional", "workercontrol")
    assert start_paths("/storm", identity)[0] == ("/storm", shared)


def test_a_worker_takes_the_topologys_identity_and_never_the_daemons_payload() -> None:
    topology = {**TOPOLOGY, "storm.zookeeper.topology.auth.scheme": "digest"}
    assert worker_zk_identity(DAEMONS, topology) == {
        "storm.zookeeper.topology.auth.scheme": "digest",
        "storm.zookeeper.topology.auth.payload": "wc-1:pw",
        "storm.zookeeper.auth.payload": None,
        DAEMON_DIGEST_ID_KEY: make_digest_acl_credential("stormpy", "secret")}
    assert worker_zk_identity(DAEMONS, TOPOLOGY)["storm.zookeeper.topology.auth.scheme"] == "digest"
    assert worker_zk_identity(DAEMONS, {}) == {}
    assert worker_zk_identity(DAEMONS, {"storm.zookeeper.topology.auth.payload": ""}) == {}


# -- errors ----------------------------------------------------------------------------------------
def test_a_malformed_document_names_its_znode_and_the_problem() -> None:
    err = MalformedStateError("/storm/assignments/t-1", "field 'executors' missing")
    assert str(err) == "malformed cluster state at /storm/assignments/t-1: field 'executors' missing"
    assert err.path == "/storm/assignments/t-1" and err.problem == "field 'executors' missing"
    assert isinstance(err, ClusterStateError) and isinstance(err, ValueError)
    assert issubclass(ZkConnectionError, ClusterStateError) and issubclass(ClusterStateError, RuntimeError)


# -- stand-ins of kazoo's client -------------------------------------------------------------------
class Stat:
    def __init__(self, version: int = 0, owner: int = 0) -> None:
        self.version = version
        self.ephemeralOwner = owner


class ScriptedClient:
    """A kazoo stand-in whose *_async calls are logged and answered by ``answers`` (a result or an
    exception, per call name, in order)."""

    def __init__(self, answers: dict[str, list[Any]],
                 client_id: tuple[int, bytes] | None = (7, b"pw")) -> None:
        self.answers = answers
        self.calls: list[tuple[Any, ...]] = []
        self.client_id = client_id

    def _answer(self, name: str, *args: Any, **kwargs: Any) -> Callable[[], Any]:
        self.calls.append((name, *args, *sorted(kwargs.items())))
        answer = self.answers[name].pop(0)

        def result() -> Any:
            if isinstance(answer, BaseException):
                raise answer
            return answer
        return result

    def __getattr__(self, name: str) -> Callable[..., Callable[[], Any]]:
        if not name.endswith("_async"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._answer(name[:-len("_async")], *args, **kwargs)


def run(thunk: Callable[[], Any]) -> Any:
    return thunk()


# -- compound writes -------------------------------------------------------------------------------
def test_ensure_path_sends_the_path_and_the_acl_and_returns_the_answer() -> None:
    acl = [ACL(Permissions.READ, WORLD)]
    client = ScriptedClient({"ensure_path": ["/r/a"]})
    assert ensure_path(client, run, "/r/a", acl) == "/r/a"  # type: ignore[arg-type]
    assert client.calls == [("ensure_path", "/r/a", acl)]


def test_set_or_create_sets_an_existing_node_with_one_request() -> None:
    client = ScriptedClient({"set": [Stat()]})
    set_or_create(client, run, "/r/a", b"d")  # type: ignore[arg-type]
    assert client.calls == [("set", "/r/a", b"d")]


def test_set_or_create_creates_a_missing_node_with_its_parents() -> None:
    client = ScriptedClient({"set": [NoNodeError()], "create": ["/r/a"]})
    set_or_create(client, run, "/r/a", b"d")  # type: ignore[arg-type]
    assert client.calls == [("set", "/r/a", b"d"), ("create", "/r/a", b"d", ("makepath", True))]


def test_set_or_create_sets_after_all_when_another_writer_created_the_node() -> None:
    client = ScriptedClient({"set": [NoNodeError(), Stat()], "create": [NodeExistsError()]})
    set_or_create(client, run, "/r/a", b"d")  # type: ignore[arg-type]
    assert client.calls == [("set", "/r/a", b"d"), ("create", "/r/a", b"d", ("makepath", True)),
                            ("set", "/r/a", b"d")]


def test_delete_tree_under_a_root_with_a_trailing_slash_and_a_node_gone_meanwhile() -> None:
    client = ScriptedClient({"get_children": [["c"], [], []],
                             "delete": [None, NoNodeError()]})
    assert delete_tree(client, run, "/r/", rounds=2) is True  # type: ignore[arg-type]
    assert client.calls == [("get_children", "/r/"), ("get_children", "/r/c"), ("delete", "/r/c"),
                            ("delete", "/r/")]


def test_delete_tree_names_children_under_their_parents_path() -> None:
    client = ScriptedClient({"get_children": [["c"], []], "delete": [None, None]})
    assert delete_tree(client, run, "/rX") is True  # type: ignore[arg-type]
    assert client.calls == [("get_children", "/rX"), ("get_children", "/rX/c"), ("delete", "/rX/c"),
                            ("delete", "/rX")]


def test_delete_tree_gives_a_childs_delete_the_same_rounds() -> None:
    client = ScriptedClient({"get_children": [["c"], []], "delete": [NotEmptyError()]})
    with pytest.raises(ClusterStateError) as err:
        delete_tree(client, run, "/r", rounds=1)  # type: ignore[arg-type]
    assert str(err.value) == "ZooKeeper delete /r/c failed: children kept appearing (1 rounds)"
    assert client.calls == [("get_children", "/r"), ("get_children", "/r/c"), ("delete", "/r/c")]


def test_delete_tree_starts_over_when_a_child_appeared() -> None:
    client = ScriptedClient({"get_children": [[], ["new"], []], "delete": [NotEmptyError(), None, None]})
    assert delete_tree(client, run, "/r", rounds=2) is True  # type: ignore[arg-type]
    assert client.calls == [("get_children", "/r"), ("delete", "/r"), ("get_children", "/r"),
                            ("get_children", "/r/new"), ("delete", "/r/new"), ("delete", "/r")]


def test_delete_tree_of_a_node_removed_by_another_writer_meanwhile_says_it_existed() -> None:
    client = ScriptedClient({"get_children": [[], NoNodeError()], "delete": [NotEmptyError()]})
    assert delete_tree(client, run, "/r") is True  # type: ignore[arg-type]


def test_delete_tree_default_rounds() -> None:
    assert DELETE_ROUNDS == 10
    client = ScriptedClient({"get_children": [[]] * 10, "delete": [NotEmptyError()] * 10})
    with pytest.raises(ClusterStateError, match=r"\(10 rounds\)"):
        delete_tree(client, run, "/r")  # type: ignore[arg-type]
    assert len(client.calls) == 20


# -- ephemeral nodes -------------------------------------------------------------------------------
def test_a_node_put_before_is_rewritten_with_one_request_when_the_session_owns_it() -> None:
    client = ScriptedClient({"set": [Stat(3, owner=7)]})
    put_ephemeral(client, run, "/r/e", b"d", ours=True)  # type: ignore[arg-type]
    assert client.calls == [("set", "/r/e", b"d")]


def test_a_node_put_before_but_owned_by_an_older_session_is_replaced() -> None:
    client = ScriptedClient({"set": [Stat(3, owner=99)], "create": [NodeExistsError(), "/r/e"],
                             "get": [(b"old", Stat(4, owner=99))], "delete": [None]})
    put_ephemeral(client, run, "/r/e", b"d", ours=True)  # type: ignore[arg-type]
    assert client.calls == [
        ("set", "/r/e", b"d"),
        ("create", "/r/e", b"d", ("ephemeral", True), ("makepath", True)),
        ("get", "/r/e"),
        ("delete", "/r/e", ("version", 4)),
        ("create", "/r/e", b"d", ("ephemeral", True), ("makepath", True))]


def test_a_node_put_before_and_gone_with_a_lost_session_is_created() -> None:
    client = ScriptedClient({"set": [NoNodeError()], "create": ["/r/e"]})
    put_ephemeral(client, run, "/r/e", b"d", ours=True)  # type: ignore[arg-type]
    assert client.calls == [("set", "/r/e", b"d"),
                            ("create", "/r/e", b"d", ("ephemeral", True), ("makepath", True))]


def test_without_a_session_id_a_rewritten_node_is_not_taken_for_ours() -> None:
    client = ScriptedClient({"set": [Stat(0, owner=0)], "create": ["/r/e"]}, client_id=None)
    put_ephemeral(client, run, "/r/e", b"d", ours=True)  # type: ignore[arg-type]
    assert [c[0] for c in client.calls] == ["set", "create"]


def test_a_new_node_is_created_with_one_request() -> None:
    client = ScriptedClient({"create": ["/r/e"]})
    put_ephemeral(client, run, "/r/e", b"d")  # type: ignore[arg-type]
    assert client.calls == [("create", "/r/e", b"d", ("ephemeral", True), ("makepath", True))]


def test_an_existing_node_of_this_session_gets_the_data_at_its_version() -> None:
    client = ScriptedClient({"create": [NodeExistsError()], "get": [(b"old", Stat(5, owner=7))],
                             "set": [Stat(6, owner=7)]})
    put_ephemeral(client, run, "/r/e", b"d")  # type: ignore[arg-type]
    assert client.calls[1:] == [("get", "/r/e"), ("set", "/r/e", b"d", ("version", 5))]


@pytest.mark.parametrize("client_id", [None, (8, b"pw")])
def test_an_existing_node_of_another_session_is_deleted_at_its_version_and_created(
        client_id: tuple[int, bytes] | None) -> None:
    client = ScriptedClient({"create": [NodeExistsError(), "/r/e"], "get": [(b"old", Stat(5, owner=7))],
                             "delete": [None]}, client_id=client_id)
    put_ephemeral(client, run, "/r/e", b"d")  # type: ignore[arg-type]
    assert client.calls[1:] == [("get", "/r/e"), ("delete", "/r/e", ("version", 5)),
                                ("create", "/r/e", b"d", ("ephemeral", True), ("makepath", True))]


def test_an_existing_node_that_vanishes_while_read_is_created() -> None:
    client = ScriptedClient({"create": [NodeExistsError(), "/r/e"], "get": [NoNodeError()]})
    put_ephemeral(client, run, "/r/e", b"d")  # type: ignore[arg-type]
    assert [c[0] for c in client.calls] == ["create", "get", "create"]


def test_the_keeper_remembers_the_latest_data_until_forgotten() -> None:
    put: list[tuple[str, bytes]] = []
    spawned: list[Callable[[], None]] = []
    keeper = EphemeralKeeper(lambda p, d: put.append((p, d)), spawned.append)
    assert not keeper.remembers("/r/a")
    keeper.remember("/r/a", b"1")
    keeper.remember("/r/a", b"2")
    assert keeper.remembers("/r/a") and not keeper.remembers("/r")
    keeper.on_state(KazooState.CONNECTED)  # no session lost before
    assert spawned == []
    keeper.on_state(KazooState.LOST)
    keeper.on_state(KazooState.SUSPENDED)
    assert spawned == []
    keeper.on_state(KazooState.CONNECTED)
    keeper.on_state(KazooState.CONNECTED)  # the loss was handled once
    assert spawned == [keeper.restore]
    spawned[0]()
    assert put == [("/r/a", b"2")]
    keeper.forget("/r/a")
    assert not keeper.remembers("/r/a")


# -- the bounded operation runner ------------------------------------------------------------------
class Result:
    """An IAsyncResult stand-in: answered once ``ready``; its waits are recorded."""

    def __init__(self, value: Any = None, ready: bool = True) -> None:
        self.value = value
        self.ready = ready
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        if not self.ready:
            time.sleep(min(timeout, 0.01))
        return self.ready

    def get(self, block: bool = True) -> Any:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


class RetryingClient:
    """What ZkOperations uses of kazoo's client: ``connected``, ``retry`` (a fresh KazooRetry per
    call, as kazoo's) and ``handler.spawn``."""

    def __init__(self, ops: ZkOperations, connected: bool = True, deadline: float = 0.3) -> None:
        self.connected = connected
        self.ops = ops
        self.deadline = deadline
        self.spawned: list[Callable[[], None]] = []
        self.handler = self

    def retry(self, fn: Callable[[], Any]) -> Any:
        return KazooRetry(max_tries=-1, delay=0.01, max_delay=0.02, deadline=self.deadline,
                          interrupt=self.ops.interrupted)(fn)

    def spawn(self, fn: Callable[[], None]) -> None:
        self.spawned.append(fn)


def operations(connected: bool = True, timeout: float = 0.3) -> tuple[ZkOperations, RetryingClient]:
    ops = ZkOperations("zk1:2181", timeout)
    client = RetryingClient(ops, connected, deadline=timeout)
    ops.client = client  # type: ignore[assignment]
    return ops, client


def test_an_operation_returns_what_its_attempt_returns_and_waits_in_slices() -> None:
    ops, _ = operations(timeout=5.0)
    result = Result("value")
    assert ops.run("get", "/r/a", lambda wait: wait(result)) == "value"
    assert len(result.waits) == 1 and 0 < result.waits[0] <= SLICE_SECS == 0.1
    assert ops.hosts == "zk1:2181" and ops.timeout_secs == 5.0
    assert not ops.shutting_down and not ops.closing


def test_an_unanswered_request_fails_at_the_deadline_naming_the_operation_path_and_hosts() -> None:
    ops, _ = operations(timeout=0.2)
    result = Result(ready=False)
    with pytest.raises(ZkConnectionError) as err:
        ops.run("get", "/r/a", lambda wait: wait(result))
    assert str(err.value) == ("ZooKeeper get /r/a failed: got no answer from zk1:2181 within 0.2 s "
                              "(no usable connection)")
    assert all(0 <= w <= 0.1 for w in result.waits)


def test_an_operation_without_a_connection_fails_at_its_deadline() -> None:
    ops, _ = operations(connected=False, timeout=0.2)
    attempts: list[int] = []
    with pytest.raises(ZkConnectionError) as err:
        ops.run("set", "/r/a", lambda wait: attempts.append(1))
    assert str(err.value) == ("ZooKeeper set /r/a failed: could not reach zk1:2181 within 0.2 s "
                              "(no usable connection)")
    assert isinstance(err.value.__cause__, RetryFailedError)
    assert attempts == []  # nothing is sent while disconnected


def test_a_closed_storage_abandons_its_operations() -> None:
    ops, _ = operations()
    ops.closing = True
    assert ops.interrupted()
    with pytest.raises(ZkConnectionError) as err:
        ops.run("get", "/r/a", lambda wait: None)
    assert str(err.value) == "ZooKeeper get /r/a abandoned: the storage was closed"


def test_a_stopping_daemon_does_not_wait_for_a_lost_connection_but_still_runs_connected() -> None:
    ops, client = operations(connected=False, timeout=30.0)
    assert not ops.interrupted()
    ops.shutting_down = True
    assert ops.interrupted()
    with pytest.raises(ZkConnectionError) as err:
        ops.run("get", "/r/a", lambda wait: None)
    assert str(err.value) == ("ZooKeeper get /r/a abandoned: no connection to zk1:2181 and the daemon "
                              "is stopping (not waiting for it)")
    client.connected = True
    assert not ops.interrupted()
    assert ops.run("get", "/r/a", lambda wait: "answered") == "answered"


def test_a_connection_lost_while_waiting_is_abandoned_when_the_daemon_stops() -> None:
    ops, client = operations(connected=False, timeout=30.0)

    def stop_later() -> None:
        client.connected = False
        ops.shutting_down = True

    timer = threading.Timer(0.05, stop_later)
    timer.start()
    try:
        with pytest.raises(ZkConnectionError, match="get /r/a abandoned: no connection to zk1:2181"):
            ops.run("get", "/r/a", lambda wait: None)
    finally:
        timer.cancel()


def test_a_retry_interrupted_by_the_close_names_the_close() -> None:
    ops, client = operations(connected=False, timeout=30.0)
    timer = threading.Timer(0.05, lambda: setattr(ops, "closing", True))
    timer.start()
    try:
        with pytest.raises(ZkConnectionError) as err:
            ops.run("get", "/r/a", lambda wait: None)
    finally:
        timer.cancel()
    assert str(err.value) == "ZooKeeper get /r/a abandoned: the storage was closed"


def test_a_retry_interrupted_otherwise_says_the_daemon_is_stopping() -> None:
    ops, client = operations()

    def interrupted(wait: Any) -> None:
        raise RetryInterrupted()

    with pytest.raises(ZkConnectionError) as err:
        ops.run("get", "/r/a", interrupted)
    assert str(err.value) == "ZooKeeper get /r/a abandoned: the daemon is stopping"
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_a_closed_connection_and_other_zookeeper_errors_name_the_operation_and_path() -> None:
    ops, _ = operations()
    with pytest.raises(ZkConnectionError) as err:
        ops.run("get", "/r/a", lambda wait: wait(Result(ConnectionClosedError("closed"))))
    assert str(err.value) == "ZooKeeper get /r/a abandoned: the storage was closed"
    assert isinstance(err.value.__cause__, ConnectionClosedError)
    with pytest.raises(ClusterStateError) as err2:
        ops.run("set", "/r/b", lambda wait: wait(Result(NoAuthError("no"))))
    assert type(err2.value) is ClusterStateError
    assert str(err2.value) == "ZooKeeper set /r/b failed: NoAuthError no"
    assert isinstance(err2.value.__cause__, NoAuthError)


def test_check_abort_past_a_deadline_names_the_problem() -> None:
    ops, _ = operations(timeout=1.5)
    ops.check_abort("get", "/r/a", time.monotonic() + 60)
    ops.check_abort("get", "/r/a")
    with pytest.raises(ZkConnectionError) as err:
        ops.check_abort("get", "/r/a", time.monotonic())
    assert str(err.value) == ("ZooKeeper get /r/a failed: could not reach zk1:2181 within 1.5 s "
                              "(no usable connection)")
    with pytest.raises(ZkConnectionError, match="failed: got no answer from zk1:2181 within 1.5 s"):
        ops.check_abort("get", "/r/a", time.monotonic() - 1, "got no answer from")
    no_client = ZkOperations("zk9:1", 1.0)
    no_client.shutting_down = True
    assert no_client.interrupted()


class Handle:
    """A Watch stand-in whose first callback comes when the test says."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.first_call = threading.Event()
        self.cancelled = 0
        self.waits: list[float] = []

    def run(self) -> None:
        self.first_call.set()

    def cancel(self) -> None:
        self.cancelled += 1


def test_a_watch_is_armed_once_its_first_callback_came() -> None:
    ops, client = operations(timeout=30.0)
    handle = Handle("/r/w")
    waited: list[float] = []
    real_wait = handle.first_call.wait

    def wait(timeout: float) -> bool:
        waited.append(timeout)
        if len(waited) == 2:
            client.spawned[0]()
        return real_wait(0)

    handle.first_call.wait = wait  # type: ignore[method-assign]
    assert ops.arm("watch_data", handle) is handle  # type: ignore[arg-type]
    assert client.spawned == [handle.run] and handle.cancelled == 0
    assert len(waited) == 2 and all(0 < w <= 0.1 for w in waited)


def test_a_watch_without_its_first_callback_in_time_is_cancelled_naming_its_path() -> None:
    ops, client = operations(timeout=0.2)
    handle = Handle("/r/w")
    with pytest.raises(ZkConnectionError) as err:
        ops.arm("watch_children", handle)  # type: ignore[arg-type]
    assert str(err.value) == ("ZooKeeper watch_children /r/w failed: could not reach zk1:2181 within "
                              "0.2 s (no usable connection)")
    assert handle.cancelled == 1
    closed, _ = operations(timeout=30.0)
    closed.closing = True
    with pytest.raises(ZkConnectionError, match="watch_data /r/v abandoned: the storage was closed"):
        closed.arm("watch_data", Handle("/r/v"))  # type: ignore[arg-type]


class SimulatedTime:
    """Stands in for the runner's ``time`` module: ``monotonic`` moves only when a wait sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> SimulatedTime:
    simulated = SimulatedTime()
    monkeypatch.setattr(zk_operations, "time", simulated)
    return simulated


def test_a_request_is_awaited_in_slices_up_to_its_deadline_and_not_longer(clock: SimulatedTime) -> None:
    ops, _ = operations(timeout=0.25)

    class Unanswered(Result):
        def wait(self, timeout: float) -> bool:
            self.waits.append(timeout)
            clock.now += timeout
            return False

    result = Unanswered()
    with pytest.raises(ZkConnectionError, match="got no answer from zk1:2181 within 0.25 s"):
        ops.run("get", "/r/a", lambda wait: wait(result))
    assert result.waits == pytest.approx([0.1, 0.1, 0.05])


def test_a_watch_is_awaited_in_slices_up_to_its_deadline_and_not_longer(clock: SimulatedTime) -> None:
    ops, _ = operations(timeout=0.25)
    handle = Handle("/r/w")
    waits: list[float] = []

    def wait(timeout: float) -> bool:
        waits.append(timeout)
        clock.now += timeout
        return False

    handle.first_call.wait = wait  # type: ignore[method-assign]
    with pytest.raises(ZkConnectionError, match="watch_data /r/w failed: could not reach zk1:2181"):
        ops.arm("watch_data", handle)  # type: ignore[arg-type]
    assert waits == pytest.approx([0.1, 0.1, 0.05]) and handle.cancelled == 1


def test_the_deadline_is_reached_at_its_exact_time(clock: SimulatedTime) -> None:
    ops, _ = operations(timeout=1.0)
    with pytest.raises(ZkConnectionError, match="get /r/a failed"):
        ops.check_abort("get", "/r/a", clock.now)
    ops.check_abort("get", "/r/a", clock.now + 1e-6)


# -- closing a storage whose client does not stop --------------------------------------------------
class StuckClose(ZkStorage):
    """A storage whose kazoo client hangs in ``stop`` until released (an unreachable ZooKeeper)."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1:1", "/r", close_timeout_secs=0.2)
        self.release = threading.Event()

    def _stop_client(self) -> None:
        self.release.wait(60)


def test_close_returns_within_its_timeout_leaving_the_teardown_to_a_daemon_thread() -> None:
    storage = StuckClose()
    closer = threading.Thread(target=storage.close)
    try:
        closer.start()
        wait_for(lambda: not closer.is_alive(), timeout=30, what="close() returned")
        teardown = [t for t in threading.enumerate() if t.name == "zk-close"]
        assert len(teardown) == 1 and teardown[0].daemon and teardown[0].is_alive()
        assert storage.shutting_down
    finally:
        storage.release.set()
        closer.join(30)
    teardown[0].join(30)
    assert not teardown[0].is_alive()


def test_paths_are_checked_against_the_root_as_a_directory() -> None:
    top = ZkStorage("127.0.0.1:1", "/")
    assert top.check_path("/") == "/" and top.check_path("/x/y") == "/x/y"
    named = ZkStorage("127.0.0.1:1", "/apps/stormX")
    assert named.check_path("/apps/stormX/a") == "/apps/stormX/a"
    for outside in ("/apps/storm/a", "/apps/stormXY", "/apps"):
        with pytest.raises(ValueError, match="is outside this storage's root '/apps/stormX'"):
            named.check_path(outside)


def test_a_storages_timeouts_default_to_the_session_and_any_positive_bound_is_taken() -> None:
    default = ZkStorage("127.0.0.1:1")
    assert (default.connect_timeout_secs, default.operation_timeout_secs, default.close_timeout_secs) == (
        15.0, 20.0, 5.0)
    assert ZkStorage("127.0.0.1:1", operation_timeout_secs=0.5).operation_timeout_secs == 0.5
    with pytest.raises(ValueError) as err:
        ZkStorage("127.0.0.1:1", operation_timeout_secs=0)
    assert str(err.value) == "operation_timeout_secs must be positive"


def test_a_stopping_storage_without_a_connection_fails_at_once_naming_its_hosts() -> None:
    storage = ZkStorage("127.0.0.1:1", "/r", close_timeout_secs=5)
    try:
        storage.begin_shutdown()
        assert storage.shutting_down and not storage.connected
        with pytest.raises(ZkConnectionError) as err:
            storage.get("/r/x")
        assert str(err.value) == ("ZooKeeper get /r/x abandoned: no connection to 127.0.0.1:1 and the "
                                  "daemon is stopping (not waiting for it)")
    finally:
        storage.close()


class NotingStorage(ZkStorage):
    """A storage that says when an operation begins (its path is checked first)."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1:1", "/r", operation_timeout_secs=60, close_timeout_secs=5)
        self.began = threading.Event()

    def check_path(self, path: str) -> str:
        self.began.set()
        return super().check_path(path)


def test_an_operation_waiting_for_a_connection_is_woken_by_the_stop() -> None:
    storage = NotingStorage()
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            storage.get("/r/x")
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    reader = threading.Thread(target=read)
    try:
        reader.start()
        assert storage.began.wait(30)
        storage.begin_shutdown()
        reader.join(30)
        assert not reader.is_alive()  # woken, long before its 60 s
        assert len(outcome) == 1 and str(outcome[0]) == (
            "ZooKeeper get /r/x abandoned: no connection to 127.0.0.1:1 and the daemon is stopping "
            "(not waiting for it)")
    finally:
        storage.close()
        reader.join(30)


class RetryWaits:
    """Stands in for the sleeps of a kazoo retry (each wait is recorded and takes 1 ms) and
    records how long the retry had waited in all when each attempt started."""

    def __init__(self) -> None:
        self.slept = 0.0
        self.attempts: list[float] = []

    def sleep(self, secs: float) -> None:
        self.slept += secs
        time.sleep(0.001)

    def attempt(self) -> None:
        self.attempts.append(self.slept)

    def waits(self, count: int) -> list[float]:
        """The first ``count`` waits between attempts."""
        return [round(b - a, 6) for a, b in zip(self.attempts, self.attempts[1:count + 1], strict=False)]


class EnoughAttempts(Exception):
    """Ends an operation's retries once the test has seen enough of them."""


def refused_address() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def test_a_storage_without_zookeeper_tries_again_after_0_1_s_doubling_up_to_1_s() -> None:
    """While ZooKeeper is unreachable (down, restarting, partitioned) a storage tries to connect
    again after 0.1 s, then twice as long each time, never more than 1 s apart: it is connected
    again within about a second of ZooKeeper's return, however long the outage was (kazoo's own
    default lets the wait grow to an hour). Jitter off; the connection's retry sleeps stood in."""
    storage = ZkStorage(refused_address(), "/r")
    waits = RetryWaits()
    connection = storage._client._connection  # kazoo's connection loop and its retry policy
    connection.retry_sleeper.sleep_func = waits.sleep
    connection.retry_sleeper.max_jitter = 0.0
    real_loop = connection._connect_loop

    def connect_loop(retry: Any) -> Any:
        waits.attempt()
        return real_loop(retry)

    connection._connect_loop = connect_loop
    storage._client.start_async()  # what start() waits on, without its connect timeout
    try:
        wait_for(lambda: len(waits.attempts) > 8, timeout=60, what="9 connection attempts")
    finally:
        storage.close()
    assert waits.waits(8) == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]


def test_an_operation_without_a_connection_tries_again_after_0_1_s_doubling_up_to_0_5_s() -> None:
    """An operation that finds no connection tries again after 0.1 s, then twice as long each time,
    never more than 0.5 s apart (within its deadline): it goes on within half a second of the
    connection's return. Jitter off; the operation's retry sleeps stood in."""
    storage = ZkStorage(refused_address(), "/r", operation_timeout_secs=60.0)
    waits = RetryWaits()
    retry = storage._client._retry  # the command retry kazoo copies for each operation
    retry.sleep_func = waits.sleep
    retry.max_jitter = 0.0
    real_check = storage._ops.check_abort

    def check_abort(op: str, path: str, *args: Any) -> None:
        waits.attempt()
        if len(waits.attempts) > 7:
            raise EnoughAttempts
        real_check(op, path, *args)

    storage._ops.check_abort = check_abort  # type: ignore[method-assign]
    try:
        with pytest.raises(EnoughAttempts):
            storage.get("/r/a")
    finally:
        storage.close()
    assert waits.waits(7) == [0.1, 0.2, 0.4, 0.5, 0.5, 0.5, 0.5]
