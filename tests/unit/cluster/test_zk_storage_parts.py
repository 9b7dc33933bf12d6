"""ZkStorage's parts that need no ZooKeeper: the one connect-string builder, reading a kazoo lock's
contenders, the keeper that re-creates ephemeral nodes after a session loss, and the recursive
delete's attempt."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from kazoo.client import KazooState
from kazoo.exceptions import NoNodeError, NotEmptyError

from stormpy.cluster import ClusterStateError, hosts_from_config
from stormpy.cluster.zk_ephemerals import EphemeralKeeper
from stormpy.cluster.zk_locks import lock_contenders
from stormpy.cluster.zk_writes import delete_tree
from stormpy.config import DEFAULTS, SettingError


def test_hosts_default_to_the_configs_servers_and_port() -> None:
    default_port = DEFAULTS["storm.zookeeper.port"]
    assert hosts_from_config({}) == ",".join(f"{h}:{default_port}"
                                             for h in DEFAULTS["storm.zookeeper.servers"])
    assert hosts_from_config({"storm.zookeeper.servers": ["a", "b:2182"],
                              "storm.zookeeper.port": 3000}) == "a:3000,b:2182"


def test_a_callers_own_servers_and_port_come_first_and_a_string_is_split() -> None:
    conf = {"storm.zookeeper.servers": ["cluster-zk"], "storm.zookeeper.port": 3000}
    assert hosts_from_config(conf, servers="x, y:1") == "x:3000,y:1"
    assert hosts_from_config(conf, servers=["x"], port="4000") == "x:4000"
    assert hosts_from_config(conf, servers=None, port=None) == "cluster-zk:3000"


@pytest.mark.parametrize(("kwargs", "setting"), [
    ({"port": "zk"}, "storm.zookeeper.port"),
    ({"port": 0}, "storm.zookeeper.port"),
    ({"port": 70000, "port_setting": "transactional.zookeeper.port"}, "transactional.zookeeper.port"),
    ({"servers": " , ", "servers_setting": "KinesisSpoutConfig.zookeeper_servers"},
     "KinesisSpoutConfig.zookeeper_servers"),
])
def test_bad_servers_or_ports_name_the_setting(kwargs: dict[str, object], setting: str) -> None:
    with pytest.raises(SettingError) as err:
        hosts_from_config({}, **kwargs)  # type: ignore[arg-type]
    assert err.value.setting == setting


class Nodes:
    """A storage stand-in: children and data by path."""

    def __init__(self, nodes: dict[str, bytes | None]) -> None:
        self.nodes = nodes

    def children(self, path: str) -> list[str]:
        return sorted(p[len(path) + 1:] for p in self.nodes if p.startswith(path + "/"))

    def get(self, path: str) -> bytes | None:
        return self.nodes.get(path)


def test_lock_contenders_come_in_sequence_order_without_vanished_nodes() -> None:
    storage = Nodes({"/l/abc__lock__0000000003": b"nimbus-c", "/l/def__lock__0000000001": b"nimbus-a",
                     "/l/gone__lock__0000000002": None, "/l/not-a-contender": b"x"})
    assert lock_contenders(storage, "/l") == ["nimbus-a", "nimbus-c"]
    assert lock_contenders(Nodes({}), "/l") == []


def keeper() -> tuple[EphemeralKeeper, list[tuple[str, bytes]], list[Callable[[], None]]]:
    put: list[tuple[str, bytes]] = []
    spawned: list[Callable[[], None]] = []
    return EphemeralKeeper(lambda p, d: put.append((p, d)), spawned.append), put, spawned


def test_remembered_nodes_are_put_again_after_a_lost_session_reconnects() -> None:
    ephemerals, put, spawned = keeper()
    ephemerals.remember("/r/sup/a", b"1")
    ephemerals.remember("/r/sup/b", b"2")
    ephemerals.remember("/r/other", b"3")
    ephemerals.forget("/r/sup/b")
    ephemerals.on_state(KazooState.SUSPENDED)
    ephemerals.on_state(KazooState.CONNECTED)
    assert spawned == []  # the session survived: nothing to re-create
    ephemerals.on_state(KazooState.LOST)
    ephemerals.on_state(KazooState.CONNECTED)
    assert len(spawned) == 1
    spawned[0]()
    assert sorted(put) == [("/r/other", b"3"), ("/r/sup/a", b"1")]


def test_forgetting_a_path_forgets_what_is_under_it_and_clear_forgets_all() -> None:
    ephemerals, put, spawned = keeper()
    ephemerals.remember("/r/sup", b"0")
    ephemerals.remember("/r/sup/a", b"1")
    ephemerals.remember("/r/super", b"2")
    ephemerals.forget("/r/sup")
    ephemerals.restore()
    assert put == [("/r/super", b"2")]
    ephemerals.clear()
    ephemerals.restore()
    assert put == [("/r/super", b"2")]


def test_a_node_that_cannot_be_put_again_is_logged_and_the_rest_still_are(
        caplog: pytest.LogCaptureFixture) -> None:
    put: list[str] = []

    def flaky(path: str, _data: bytes) -> None:
        if path == "/r/a":
            raise RuntimeError("ZooKeeper said no")
        put.append(path)

    ephemerals = EphemeralKeeper(flaky, lambda fn: fn())
    ephemerals.remember("/r/a", b"")
    ephemerals.remember("/r/b", b"")
    with caplog.at_level(logging.ERROR, logger="stormpy.cluster.zk_ephemerals"):
        ephemerals.restore()
    assert put == ["/r/b"]
    assert any("could not re-create ephemeral node /r/a" in r.getMessage() for r in caplog.records)


class TreeClient:
    """A kazoo stand-in over a dict of paths; its *_async calls return thunks that ``run`` waits
    on. With ``sprouting``, every delete of that path first finds a new child added."""

    def __init__(self, paths: set[str], sprouting: str | None = None) -> None:
        self.paths = paths
        self.sprouting = sprouting
        self.sprouted = 0

    def get_children_async(self, path: str) -> Callable[[], list[str]]:
        def result() -> list[str]:
            if path not in self.paths:
                raise NoNodeError()
            return sorted({p[len(path) + 1:].split("/")[0] for p in self.paths
                           if p.startswith(path + "/")})
        return result

    def delete_async(self, path: str) -> Callable[[], None]:
        def result() -> None:
            if path == self.sprouting:
                self.sprouted += 1
                self.paths.add(f"{path}/new-{self.sprouted}")
            if any(p.startswith(path + "/") for p in self.paths):
                raise NotEmptyError()
            self.paths.discard(path)
        return result


def run(thunk: Callable[[], object]) -> object:
    return thunk()


def test_delete_tree_removes_everything_below_and_says_whether_it_existed() -> None:
    client = TreeClient({"/r", "/r/a", "/r/a/b", "/r/c", "/other"})
    assert delete_tree(client, run, "/r") is True
    assert client.paths == {"/other"}
    assert delete_tree(client, run, "/r") is False


def test_delete_tree_gives_up_naming_the_path_when_children_keep_appearing() -> None:
    client = TreeClient({"/r", "/r/a"}, sprouting="/r")
    with pytest.raises(ClusterStateError, match="/r failed: children kept appearing"):
        delete_tree(client, run, "/r", rounds=3)
    assert client.sprouted == 3
