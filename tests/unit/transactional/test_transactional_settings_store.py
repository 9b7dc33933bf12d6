"""The ``transactional.*`` settings (every bad value refused naming its setting, what implies a
ZooKeeper of its own) and where :func:`open_store` keeps a transactional topology's state."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from stormpy.cluster.paths import encode_segment
from stormpy.config import SettingError
from stormpy.state import MemoryBackend
from stormpy.transactional import _store
from stormpy.transactional._settings import STORES, TransactionalSettings, transactional_settings
from stormpy.transactional._store import (
    StoreUnavailable,
    available,
    close,
    open_store,
    zookeeper_hosts,
)
from stormpy.transactional._streams import coordinator_id


def test_defaults_use_the_topologys_state_backend() -> None:
    assert transactional_settings({}) == TransactionalSettings(None, None, None, None, 2.0)
    assert TransactionalSettings() == TransactionalSettings(None, None, None, None, 2.0)
    assert STORES == ("memory", "zookeeper", "redis")


@pytest.mark.parametrize("store", ["memory", "zookeeper", "redis"])
def test_each_store_is_accepted(store: str) -> None:
    assert transactional_settings({"transactional.store": store}).store == store


def test_every_setting_is_read() -> None:
    conf = {"transactional.store": "zookeeper", "transactional.zookeeper.servers": ["a", "b"],
            "transactional.zookeeper.port": 2181, "transactional.zookeeper.root": "/tx/",
            "transactional.zookeeper.operation.timeout.secs": 7}
    assert transactional_settings(conf) == TransactionalSettings("zookeeper", ["a", "b"], 2181,
                                                                 "/tx", 7.0)
    assert transactional_settings({"transactional.zookeeper.servers": "zk"}).servers == "zk"
    assert transactional_settings({"transactional.zookeeper.port": 65535}).port == 65535
    assert transactional_settings({"transactional.zookeeper.port": 1}).port == 1


@pytest.mark.parametrize("conf", [{"transactional.zookeeper.servers": "zk"},
                                  {"transactional.zookeeper.servers": ("zk1", "zk2")},
                                  {"transactional.zookeeper.root": "/mine"}])
def test_servers_or_a_root_imply_a_zookeeper_of_its_own(conf: dict[str, Any]) -> None:
    assert transactional_settings(conf).store == "zookeeper"


@pytest.mark.parametrize("root, kept", [("/X", "/X"), ("/tx/X/", "/tx/X"), ("/a//", "/a")])
def test_a_root_is_kept_without_its_trailing_slashes(root: str, kept: str) -> None:
    assert transactional_settings({"transactional.zookeeper.root": root}).root == kept


def test_a_port_alone_keeps_the_topologys_state_backend() -> None:
    assert transactional_settings({"transactional.zookeeper.port": 2182}).store is None


def test_a_redis_store_keeps_its_choice_beside_a_root() -> None:
    conf = {"transactional.store": "redis", "transactional.zookeeper.root": "/r"}
    assert transactional_settings(conf).store == "redis"


@pytest.mark.parametrize("conf, message", [
    ({"transactional.store": "disk"},
     "transactional.store: must be one of memory, zookeeper, redis or None (the topology's state "
     "backend), got 'disk'"),
    ({"transactional.store": ""},
     "transactional.store: must be one of memory, zookeeper, redis or None (the topology's state "
     "backend), got ''"),
    ({"transactional.zookeeper.servers": []},
     "transactional.zookeeper.servers: must be a host name or a list of them, got []"),
    ({"transactional.zookeeper.servers": ["zk", ""]},
     "transactional.zookeeper.servers: must be a host name or a list of them, got ['zk', '']"),
    ({"transactional.zookeeper.servers": ["zk", 3]},
     "transactional.zookeeper.servers: must be a host name or a list of them, got ['zk', 3]"),
    ({"transactional.zookeeper.servers": 3},
     "transactional.zookeeper.servers: must be a host name or a list of them, got 3"),
    ({"transactional.zookeeper.servers": {"zk": 1}},
     "transactional.zookeeper.servers: must be a host name or a list of them, got {'zk': 1}"),
    ({"transactional.zookeeper.port": 0},
     "transactional.zookeeper.port: must be a TCP port, got 0"),
    ({"transactional.zookeeper.port": 65536},
     "transactional.zookeeper.port: must be a TCP port, got 65536"),
    ({"transactional.zookeeper.port": True},
     "transactional.zookeeper.port: must be a TCP port, got True"),
    ({"transactional.zookeeper.port": "2181"},
     "transactional.zookeeper.port: must be a TCP port, got '2181'"),
    ({"transactional.zookeeper.root": "tx"},
     "transactional.zookeeper.root: must be an absolute znode path below '/', got 'tx'"),
    ({"transactional.zookeeper.root": "/"},
     "transactional.zookeeper.root: must be an absolute znode path below '/', got '/'"),
    ({"transactional.zookeeper.root": "//"},
     "transactional.zookeeper.root: must be an absolute znode path below '/', got '//'"),
    ({"transactional.zookeeper.root": 5},
     "transactional.zookeeper.root: must be an absolute znode path below '/', got 5"),
    ({"transactional.zookeeper.operation.timeout.secs": -1},
     "transactional.zookeeper.operation.timeout.secs: must be a positive number, got -1"),
    ({"transactional.store": "memory", "transactional.zookeeper.servers": "zk"},
     "transactional.store: is 'memory' but transactional.zookeeper.servers or .root is set too; "
     "drop one"),
    ({"transactional.store": "memory", "transactional.zookeeper.root": "/tx"},
     "transactional.store: is 'memory' but transactional.zookeeper.servers or .root is set too; "
     "drop one"),
])
def test_bad_values_are_refused_naming_the_setting(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingError) as raised:
        transactional_settings(conf)
    assert str(raised.value) == message


def test_an_unset_timeout_is_two_seconds() -> None:
    for unset in (None, 0, ""):
        conf = {"transactional.zookeeper.operation.timeout.secs": unset}
        assert transactional_settings(conf).operation_timeout_secs == 2.0


def test_the_coordinator_is_named_after_the_spout() -> None:
    assert coordinator_id("words") == "words-coordinator"


# -- where the store is -------------------------------------------------------------------------

class Recorded:
    """Stands for a state backend: the named stores asked for."""

    def __init__(self, kind: str, asked: list[tuple[str, ...]]) -> None:
        self.kind = kind
        self.asked = asked

    def named_store(self, area: str, owner: str, name: str) -> str:
        self.asked.append((self.kind, area, owner, name))
        return f"{self.kind} store"


def context() -> tuple[Any, list[tuple[str, ...]]]:
    asked: list[tuple[str, ...]] = []
    backend = Recorded("topology", asked)
    backend.memory = Recorded("memory", asked)  # type: ignore[attr-defined]
    return SimpleNamespace(state_backend=backend), asked


def test_by_default_the_store_is_the_topologys_state_backend() -> None:
    ctx, asked = context()
    assert open_store({}, ctx, "tx-1") == "topology store"
    assert asked == [("topology", "transactional", "tx", "tx-1")]


def test_a_memory_store_is_the_memory_of_the_cluster() -> None:
    ctx, asked = context()
    assert open_store({"transactional.store": "memory"}, ctx, "tx-1") == "memory store"
    assert asked == [("memory", "transactional", "tx", "tx-1")]


def test_the_default_store_of_a_memory_backend_is_found_again_by_id() -> None:
    backend = MemoryBackend()
    ctx = SimpleNamespace(state_backend=backend)
    open_store({}, ctx, "tx-2").put("coordinator/next", 5)
    assert open_store({"transactional.store": "memory"}, ctx, "tx-2").get("coordinator/next") == 5
    assert open_store({}, ctx, "tx-3").get("coordinator/next") is None


def test_a_redis_store_is_its_own_hash_under_the_providers_prefix() -> None:
    conf = {"transactional.store": "redis",
            "topology.state.provider.config": {"keyPrefix": "p",
                                               "jedisPoolConfig": {"host": "redis.example",
                                                                   "port": 6380}}}
    store = open_store(conf, context()[0], "tx-1")
    try:
        assert store.location == "redis redis.example:6380 db 0 at p/transactional/tx:tx-1"
    finally:
        close(store)


@pytest.fixture
def zk_opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    opened: list[tuple[Any, ...]] = []

    def fake_open(hosts: str, root: str, location: str | None = None, **kwargs: Any) -> str:
        opened.append((hosts, root, location, kwargs))
        return "zk store"
    monkeypatch.setattr(_store, "open_zk_store", fake_open)
    return opened


def test_a_zookeeper_store_of_its_own_at_the_default_place(zk_opened: list[Any]) -> None:
    conf = {"transactional.store": "zookeeper", "storm.zookeeper.servers": ["zk1", "zk2"],
            "storm.zookeeper.port": 2182, "storm.zookeeper.root": "/team",
            "storm.zookeeper.connection.timeout": 3000, "storm.zookeeper.session.timeout": 8000}
    assert open_store(conf, context()[0], "a/b") == "zk store"
    assert zk_opened == [("zk1:2182,zk2:2182", "/team", f"/team/transactional/tx:{encode_segment('a/b')}",
                          {"operation_timeout_secs": 2.0, "connect_timeout_secs": 3.0,
                           "session_timeout_secs": 8.0})]


def test_a_zookeeper_store_under_its_own_root_and_servers(zk_opened: list[Any]) -> None:
    conf = {"transactional.zookeeper.servers": ["tz"], "transactional.zookeeper.port": 2190,
            "transactional.zookeeper.root": "/txs/",
            "transactional.zookeeper.operation.timeout.secs": 4,
            "storm.zookeeper.servers": ["zk1"]}
    open_store(conf, context()[0], "a/b")
    hosts, root, location, kwargs = zk_opened[0]
    assert (hosts, root, location) == ("tz:2190", "/txs", f"/txs/{encode_segment('a/b')}")
    assert kwargs["operation_timeout_secs"] == 4.0


def test_the_default_root_is_the_storm_root(zk_opened: list[Any]) -> None:
    open_store({"transactional.store": "zookeeper"}, context()[0], "t")
    assert zk_opened[0][:3] == ("127.0.0.1:2181", "/stormpy", "/stormpy/transactional/tx:t")


def test_zookeeper_hosts_fall_back_to_storms() -> None:
    assert zookeeper_hosts({"storm.zookeeper.servers": ["a", "b"], "storm.zookeeper.port": 2}) \
        == "a:2,b:2"
    assert zookeeper_hosts({"storm.zookeeper.servers": ["a"], "storm.zookeeper.port": 2,
                            "transactional.zookeeper.port": 3}) == "a:3"
    assert zookeeper_hosts({"transactional.zookeeper.servers": "x,y",
                            "storm.zookeeper.port": 4}) == "x:4,y:4"


@pytest.mark.parametrize("conf, message", [
    ({"transactional.zookeeper.servers": ["a"], "transactional.zookeeper.port": "x"},
     "transactional.zookeeper.port: must be a port number in 1..65535, got 'x'"),
    ({"transactional.zookeeper.servers": " , "},
     "transactional.zookeeper.servers: names no ZooKeeper server: ' , '"),
])
def test_zookeeper_hosts_name_the_transactional_setting(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingError) as raised:
        zookeeper_hosts(conf)
    assert str(raised.value) == message


def test_availability_and_closing_of_stores() -> None:
    class Plain:
        """A store outside the state layer (a user's own): always available, nothing to close."""

        closed = False

        def close(self) -> None:
            self.closed = True

    plain = Plain()
    assert available(plain) is True  # type: ignore[arg-type]
    close(plain)  # type: ignore[arg-type]
    assert not plain.closed
    close(None)
    store = MemoryBackend().named_store("transactional", "tx", "t")
    assert available(store) == store.available()


def test_an_unavailable_store_error_names_the_problem() -> None:
    assert str(StoreUnavailable("no quorum")) == "state transactional store: no quorum"
    assert str(StoreUnavailable("lost", "zk:/x")) == "state zk:/x: lost"
