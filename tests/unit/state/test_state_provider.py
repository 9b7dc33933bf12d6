"""Opening a stateful task's store from the topology's settings (``stormpy.state._provider``) and
reading those settings (``stormpy.state._settings``): which backend each provider gives, where in
it the task's keys go (the topology's name and the task's key), the provider's own settings and
their defaults, and each misconfiguration as a SettingError naming the setting, with the value it
was given. ZooKeeper is replaced by a recorder of what the provider asks of it (the real one is
tested in tests/integration)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.state import MemoryBackend, SqliteStore, Store
from stormpy.state import _provider as provider_module
from stormpy.state._provider import open_store
from stormpy.state._settings import StateSettings, positive_number, state_settings
from stormpy.topology._state import CHECKPOINTS, StateStoreError

PROVIDER = "topology.state.provider"
CONFIG = "topology.state.provider.config"
INTERVAL = "topology.state.checkpoint.interval.ms"


class Context:
    """What the provider reads of a task's context: the topology id and the runtime's backend."""

    def __init__(self, backend: Any = None, topology_id: str = "wc-1-17") -> None:
        self.topology_id = topology_id
        self.state_backend = backend if backend is not None else MemoryBackend()


def setting_error(conf: dict[str, Any]) -> SettingError:
    with pytest.raises(SettingError) as err:
        state_settings(conf)
    return err.value


# -- the settings -------------------------------------------------------------------------------

def test_the_defaults_are_memory_no_provider_config_and_a_checkpoint_every_second() -> None:
    assert state_settings({}) == StateSettings("memory", {}, 1.0)
    unset = {PROVIDER: None, CONFIG: None, INTERVAL: None}
    assert state_settings(unset) == StateSettings("memory", {}, 1.0)
    assert state_settings({PROVIDER: "", CONFIG: "", INTERVAL: ""}) == StateSettings("memory", {}, 1.0)
    assert state_settings({INTERVAL: 0}) == StateSettings("memory", {}, 1.0)  # 0: unset, as Storm
    assert StateSettings() == StateSettings("memory", {}, 1.0)


def test_the_checkpoint_interval_is_read_in_milliseconds() -> None:
    assert state_settings({INTERVAL: 250}).checkpoint_interval_secs == 0.25
    assert state_settings({INTERVAL: 2500.0}).checkpoint_interval_secs == 2.5
    assert state_settings({INTERVAL: 1}).checkpoint_interval_secs == 0.001


@pytest.mark.parametrize("value", [-5, -0.5, "1s", "500", True, False, [500], float("nan")])
def test_a_checkpoint_interval_that_is_not_a_positive_number_names_the_setting_and_value(
        value: Any) -> None:
    err = setting_error({INTERVAL: value})
    assert err.setting == INTERVAL
    assert err.problem == f"must be a positive number, got {value!r}"


def test_positive_number_gives_floats_and_its_default_for_unset_values() -> None:
    for unset in (None, "", 0, 0.0):
        assert positive_number("s", unset, 7.5) == 7.5
    assert positive_number("s", 3, 7.5) == 3.0 and isinstance(positive_number("s", 3, 7.5), float)
    assert positive_number("s", 0.25, 7.5) == 0.25
    for bad in (True, False, -1, "3", [1]):
        with pytest.raises(SettingError) as err:
            positive_number("my.setting", bad, 7.5)
        assert err.value.setting == "my.setting"
        assert str(err.value) == f"my.setting: must be a positive number, got {bad!r}"


def test_the_provider_is_a_known_name_or_an_import_path() -> None:
    for name in ("memory", "sqlite", "zookeeper"):
        conf: dict[str, Any] = {PROVIDER: name, CONFIG: {"path": "x.db", "servers": ["zk"]}}
        assert state_settings(conf).provider == name
    assert state_settings({PROVIDER: "my.module:factory"}).provider == "my.module:factory"
    assert state_settings({PROVIDER: "my.factory"}).provider == "my.factory"
    # a top-level module's factory ("module:name") is an import path too
    assert state_settings({PROVIDER: "factories:make_store"}).provider == "factories:make_store"
    # Storm's class names stand for the providers they name
    assert state_settings({PROVIDER: "redis"}).provider == "redis"
    assert state_settings({PROVIDER: "org.apache.storm.redis.state.RedisKeyValueStateProvider"}
                          ).provider == "redis"
    assert state_settings({PROVIDER: "org.apache.storm.state.InMemoryKeyValueStateProvider"}
                          ).provider == "memory"
    for bad in ("rediss", "Memory", 3, ["memory"]):
        err = setting_error({PROVIDER: bad})
        assert err.setting == PROVIDER
        assert err.problem == ("must be one of memory, sqlite, zookeeper, redis or the import path "
                               "of a "
                               f"factory (conf, namespace) -> store, got {bad!r}")


def test_the_provider_config_is_a_map_or_its_json() -> None:
    conf = {PROVIDER: "sqlite", CONFIG: '{"path": "/tmp/s.db", "table": "t_1"}'}
    assert state_settings(conf).config == {"path": "/tmp/s.db", "table": "t_1"}
    given = MappingProxyType({"path": "/tmp/s.db"})
    config = state_settings({PROVIDER: "sqlite", CONFIG: given}).config
    assert type(config) is dict and config == {"path": "/tmp/s.db"}
    mine = {"path": "/tmp/s.db"}
    state_settings({PROVIDER: "sqlite", CONFIG: mine}).config["path"] = "changed"
    assert mine == {"path": "/tmp/s.db"}, "the settings keep a copy of the provider's config"


def test_a_provider_config_that_is_not_a_map_names_the_setting_and_value() -> None:
    err = setting_error({CONFIG: [1]})
    assert (err.setting, err.problem) == (CONFIG, "must be a map, got [1]")
    err = setting_error({CONFIG: "[1, 2]"})  # JSON, but not of a map
    assert (err.setting, err.problem) == (CONFIG, "must be a map, got [1, 2]")
    err = setting_error({CONFIG: "{path"})
    assert err.setting == CONFIG and err.problem.startswith("is not valid JSON: Expecting")


@pytest.mark.parametrize("config", [{}, {"path": ""}, {"path": 3}, {"path": None}])
def test_sqlite_needs_the_files_path(config: dict[str, Any]) -> None:
    err = setting_error({PROVIDER: "sqlite", CONFIG: config})
    assert err.setting == CONFIG
    assert err.problem == f"provider 'sqlite' needs 'path' (the SQLite file), got {config!r}"


def test_sqlite_table_names_are_letters_digits_and_underscores_not_starting_with_a_digit() -> None:
    for name in ("my_state_2", "_", "order", "\u00e9tat"):
        ok = state_settings({PROVIDER: "sqlite", CONFIG: {"path": "s.db", "table": name}})
        assert ok.config["table"] == name
    for bad in ("a b", "a-b", "", "2nd", 'x"y', 5, None):
        err = setting_error({PROVIDER: "sqlite", CONFIG: {"path": "s.db", "table": bad}})
        assert err.setting == CONFIG
        assert err.problem == ("'table' must be letters, digits and '_', not starting with a digit, "
                               f"got {bad!r}")


def test_zookeeper_needs_servers_in_its_config_or_the_clusters() -> None:
    for config, conf in (({"servers": ["zk1"]}, {}), ({}, {"storm.zookeeper.servers": ["zk1"]})):
        settings = state_settings({PROVIDER: "zookeeper", CONFIG: config, **conf})
        assert settings.provider == "zookeeper" and settings.config == config
    for conf in ({}, {"storm.zookeeper.servers": []}):
        err = setting_error({PROVIDER: "zookeeper", CONFIG: {"servers": []}, **conf})
        assert err.setting == CONFIG
        assert err.problem == "provider 'zookeeper' needs 'servers' (or storm.zookeeper.servers)"


def test_zookeepers_root_is_an_absolute_znode_path_and_its_timeout_positive() -> None:
    base = {PROVIDER: "zookeeper", "storm.zookeeper.servers": ["zk1"]}
    assert state_settings({**base, CONFIG: {"root": "/my/state"}}).config == {"root": "/my/state"}
    for bad in ("rel/path", "", 7, None):
        err = setting_error({**base, CONFIG: {"root": bad}})
        assert err.setting == CONFIG
        assert err.problem == f"'root' must be an absolute znode path, got {bad!r}"
    err = setting_error({**base, CONFIG: {"timeout.secs": -1}})
    assert err.setting == f"{CONFIG} timeout.secs"
    assert err.problem == "must be a positive number, got -1"
    assert state_settings({**base, CONFIG: {"timeout.secs": 2}}).config == {"timeout.secs": 2}


def test_provider_checks_apply_only_to_their_provider() -> None:
    # a sqlite-looking config under the memory provider, a zookeeper one under sqlite: not checked
    assert state_settings({CONFIG: {"table": "a b", "root": "rel"}}).provider == "memory"
    sqlite = state_settings({PROVIDER: "sqlite", CONFIG: {"path": "s.db", "root": "rel"}})
    assert sqlite.config == {"path": "s.db", "root": "rel"}
    zk = state_settings({PROVIDER: "zookeeper", CONFIG: {"servers": "zk", "table": "a b"}})
    assert zk.config == {"servers": "zk", "table": "a b"}


def test_an_entry_no_provider_reads_is_refused_with_the_entries_they_take() -> None:
    # a misspelt entry would otherwise be ignored and the provider run on its defaults
    for provider in ("redis", "sqlite", "zookeeper", "memory"):
        err = setting_error({PROVIDER: provider,
                             CONFIG: {"jedisPool": {"host": "r1"}, "path": "s.db", "servers": "zk"}})
        assert err.setting == CONFIG
        assert err.problem.startswith("unknown entries ['jedisPool'] (the providers take sqlite: "
                                      "path, table; zookeeper: servers, port, root, timeout.secs; "
                                      "redis: jedisClusterConfig, jedisPoolConfig, keyClass, ")
    # one config may serve the stateful bolts' provider and a Redis (Trident, transactional), and
    # Storm's serialisation entries of a Redis config are accepted (and ignored)
    shared = {"path": "s.db", "jedisPoolConfig": {"host": "r1"}, "keyClass": "java.lang.String",
              "valueSerializerClass": "org.apache.storm.state.DefaultStateSerializer"}
    assert state_settings({PROVIDER: "sqlite", CONFIG: shared}).config == shared
    # an import-path provider's config is its own
    own = {"anything": 1}
    assert state_settings({PROVIDER: "my.stores:factory", CONFIG: own}).config == own


# -- opening a task's store ------------------------------------------------------------------------

def test_the_memory_provider_keeps_a_tasks_state_in_the_runtimes_checkpoints_area() -> None:
    backend = MemoryBackend()
    store = open_store({}, Context(backend), "count-3")
    assert isinstance(store, Store)
    assert store.location == "memory:checkpoints/wc-1-17/$state/count-3"
    store.put("meta", {"committed": 1})
    area = backend.store(CHECKPOINTS, "wc-1-17")
    assert area.sub("$state", "count-3").get("meta") == {"committed": 1}
    assert area.children() == ["$state"] and area.children("$state") == ["count-3"]
    # a named topology's memory state still sits under its id: it ends with the topology
    again = open_store({"topology.name": "wc", PROVIDER: "memory"}, Context(backend), "count-3")
    assert again.get("meta") == {"committed": 1}


def test_the_memory_provider_refuses_a_runtime_memory_that_is_not_the_layers() -> None:
    class ForeignArea:
        location = "foreign:checkpoints/wc-1-17"

    class ForeignMemory:
        def store(self, area: str, topology_id: str) -> ForeignArea:
            assert (area, topology_id) == (CHECKPOINTS, "wc-1-17")
            return ForeignArea()

    class ForeignBackend:
        memory = ForeignMemory()

    with pytest.raises(StateStoreError) as err:
        open_store({}, Context(ForeignBackend()), "count-3")
    assert str(err.value) == ("state foreign:checkpoints/wc-1-17: the runtime's memory backend is "
                              "not one of the state layer's")


def test_the_sqlite_provider_names_a_tasks_keys_by_topology_name_and_task(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    conf = {"topology.name": "wc", PROVIDER: "sqlite", CONFIG: {"path": str(db)}}
    store = open_store(conf, Context(), "count-3")
    try:
        assert isinstance(store, SqliteStore)
        assert (store.file, store.table) == (str(db), "stormpy_state")
        assert store.location == f"sqlite {db} table stormpy_state at wc/count-3"
        store.put("meta", {"committed": 4})
    finally:
        store.close()
    # a redeployed topology (new id, same name) continues from its state
    again = open_store(conf, Context(topology_id="wc-2-99"), "count-3")
    whole = SqliteStore(db)
    try:
        assert again.get("meta") == {"committed": 4}
        assert whole.get("wc/count-3/meta") == {"committed": 4}
    finally:
        again.close()
        whole.close()


def test_the_sqlite_provider_takes_its_table_and_falls_back_to_the_topology_id(tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    conf = {PROVIDER: "sqlite", CONFIG: {"path": str(db), "table": "my_table"}}
    store = open_store(conf, Context(), "count-3")
    try:
        assert store.location == f"sqlite {db} table my_table at wc-1-17/count-3"
        store.put("k", 1)
    finally:
        store.close()
    mine = SqliteStore(db, "my_table", segments=("wc-1-17", "count-3"))
    try:
        assert mine.get("k") == 1
    finally:
        mine.close()


class ZkRecorder:
    """Stands in for ``open_zk_store``: records what the provider asks for."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.store = MemoryBackend().at("zk")

    def __call__(self, *args: Any, **kwargs: Any) -> Store:
        self.calls.append((args, kwargs))
        return self.store


@pytest.fixture
def zk(monkeypatch: pytest.MonkeyPatch) -> ZkRecorder:
    recorder = ZkRecorder()
    monkeypatch.setattr(provider_module, "open_zk_store", recorder)
    return recorder


def test_the_zookeeper_provider_defaults_to_the_clusters_servers_and_its_own_root(zk: ZkRecorder) -> None:
    conf = {"topology.name": "word count", PROVIDER: "zookeeper",
            "storm.zookeeper.servers": ["zk1", "zk2"], "storm.zookeeper.port": 2182}
    assert open_store(conf, Context(), "count/3") is zk.store
    [(args, kwargs)] = zk.calls
    assert args == ("zk1:2182,zk2:2182", "/stormpy/state", "/stormpy/state/word%20count/count%2F3")
    assert kwargs == {"operation_timeout_secs": 10.0, "connect_timeout_secs": 15.0,
                      "session_timeout_secs": 20.0}


def test_the_zookeeper_provider_takes_its_own_settings(zk: ZkRecorder) -> None:
    conf = {PROVIDER: "zookeeper", "storm.zookeeper.servers": ["cluster-zk"],
            "storm.zookeeper.connection.timeout": 3000, "storm.zookeeper.session.timeout": 9000,
            CONFIG: {"servers": "a,b:2190", "port": 2200, "root": "/my/state/",
                     "timeout.secs": 4}}
    open_store(conf, Context(), "count-3")
    [(args, kwargs)] = zk.calls
    assert args == ("a:2200,b:2190", "/my/state", "/my/state/wc-1-17/count-3")
    assert kwargs == {"operation_timeout_secs": 4.0, "connect_timeout_secs": 3.0,
                      "session_timeout_secs": 9.0}
    assert type(kwargs["operation_timeout_secs"]) is float


def test_the_zookeeper_provider_at_the_root_znode(zk: ZkRecorder) -> None:
    conf = {PROVIDER: "zookeeper", CONFIG: {"servers": ["zk"], "root": "/"}}
    open_store(conf, Context(), "count-3")
    [(args, _)] = zk.calls
    assert args == ("zk:2181", "/", "/wc-1-17/count-3")
    conf = {PROVIDER: "zookeeper", CONFIG: {"servers": ["zk"], "root": "/in/a/BOX//"}}
    open_store(conf, Context(), "count-3")
    assert zk.calls[1][0] == ("zk:2181", "/in/a/BOX", "/in/a/BOX/wc-1-17/count-3")


def test_the_zookeeper_providers_bad_servers_and_port_name_its_config(zk: ZkRecorder) -> None:
    conf = {PROVIDER: "zookeeper", CONFIG: {"servers": ["zk"], "port": "nope"}}
    with pytest.raises(SettingError) as err:
        open_store(conf, Context(), "c")
    assert err.value.setting == f"{CONFIG} port"
    conf = {PROVIDER: "zookeeper", "storm.zookeeper.servers": ["zk"], CONFIG: {"servers": " , "}}
    with pytest.raises(SettingError) as err:
        open_store(conf, Context(), "c")
    assert err.value.setting == f"{CONFIG} servers"
    assert zk.calls == []


made: list[tuple[Any, str]] = []


def store_factory(conf: Any, namespace: str) -> Store:
    made.append((conf, namespace))
    return MemoryBackend().at("made")


def not_a_store_factory(conf: Any, namespace: str) -> object:
    return {"not": "a store"}


def test_an_import_path_provider_is_called_with_the_conf_and_the_tasks_namespace() -> None:
    made.clear()
    conf = {"topology.name": "wc", PROVIDER: f"{__name__}:store_factory"}
    store = open_store(conf, Context(), "count-3")
    assert store.location == "memory:made"
    assert made == [(conf, "wc/count-3")]
    open_store({PROVIDER: f"{__name__}.store_factory"}, Context(), "count-4")
    assert made[1][1] == "wc-1-17/count-4"


def test_an_import_path_provider_that_returns_no_store_is_a_setting_error() -> None:
    path = f"{__name__}:not_a_store_factory"
    with pytest.raises(SettingError) as err:
        open_store({PROVIDER: path}, Context(), "count-3")
    assert err.value.setting == PROVIDER
    assert err.value.problem == f"{path!r} returned {{'not': 'a store'}}, not a stormpy.state.Store"


def test_redis_takes_storms_jedis_pool_config_and_a_key_prefix() -> None:
    from stormpy.state._redis_store import RedisConfig, redis_config

    assert redis_config({}) == RedisConfig()
    config = {"jedisPoolConfig": {"host": "r1", "port": 6380, "timeout": 500, "password": "pw",
                                  "database": 3}, "keyPrefix": "wc"}
    assert state_settings({PROVIDER: "redis", CONFIG: config}).config == config
    assert redis_config(config) == RedisConfig("r1", 6380, 500, "pw", 3, "wc")
    for bad, problem in (
            ({"jedisPoolConfig": {"port": 0}}, "jedisPoolConfig.port must be a TCP port, got 0"),
            ({"jedisPoolConfig": {"host": ""}}, "jedisPoolConfig.host must be a host name, got ''"),
            ({"jedisPoolConfig": {"timeout": -1}},
             "jedisPoolConfig.timeout must be a positive number of ms, got -1"),
            ({"jedisPoolConfig": {"database": "1"}},
             "jedisPoolConfig.database must be an index >= 0, got '1'"),
            ({"jedisPoolConfig": {"hots": "r1"}},
             "jedisPoolConfig: unknown entries ['hots'] (host, port, timeout, password, database)"),
            ({"jedisPoolConfig": [1]}, "jedisPoolConfig must be a map, got [1]"),
            ({"keyPrefix": ""}, "keyPrefix must be a non-empty string, got ''"),
            ({"jedisClusterConfig": {"nodes": ["r1:6379"]}},
             "jedisClusterConfig: Redis Cluster is not supported by the redis provider; give "
             "jedisPoolConfig (one Redis server)")):
        err = setting_error({PROVIDER: "redis", CONFIG: bad})
        assert (err.setting, err.problem) == (CONFIG, problem)


def test_the_cache_bound_is_a_number_of_keys() -> None:
    assert state_settings({}).cache_max_keys == 100_000
    assert state_settings({"topology.state.cache.max.keys": 5}).cache_max_keys == 5
    assert state_settings({"topology.state.cache.max.keys": 0}).cache_max_keys == 0
    for bad in (-1, "5", 1.5, True):
        err = setting_error({"topology.state.cache.max.keys": bad})
        assert (err.setting, err.problem) == ("topology.state.cache.max.keys",
                                              f"must be a number of keys >= 0, got {bad!r}")


def test_the_memory_provider_warns_once_per_topology_how_to_keep_stateful_bolts_state(
        caplog: pytest.LogCaptureFixture) -> None:
    # on a cluster the runtime's backend is ZooKeeper, but the memory provider's state still
    # lives in the worker: the warning names the provider setting, not storm.zookeeper.servers
    backend = MemoryBackend()
    with caplog.at_level(logging.WARNING, logger="stormpy.state"):
        open_store({}, Context(backend), "count-3")
        open_store({}, Context(backend), "count-4")
        open_store({}, Context(backend, topology_id="other-2-9"), "count-3")
    assert [r.getMessage() for r in caplog.records] == [
        f"topology {tid}: stateful bolts' state (checkpoints area) is kept in this process's "
        "memory (topology.state.provider: memory, the default) and lost when the process ends; "
        "set topology.state.provider to redis, zookeeper or sqlite to keep it"
        for tid in ("wc-1-17", "other-2-9")]
    caplog.clear()
    # the runtime's own use of the area (spout positions) still says how a conf keeps it
    with caplog.at_level(logging.WARNING, logger="stormpy.state"):
        backend.store(CHECKPOINTS, "wc-1-17")
        backend.store(CHECKPOINTS, "wc-1-17")
    assert [r.getMessage() for r in caplog.records] == [
        "topology wc-1-17: checkpoints state is kept in memory only and lost when this cluster "
        "or process ends (configure storm.zookeeper.servers to keep it in ZooKeeper)"]
