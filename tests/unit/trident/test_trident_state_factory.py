"""Where a Trident state lives (Storm's ``StateFactory``): each backend's factory, its defaults and
checks, the document a topology carries it in, its identity, the store it opens for a task (the
stores of the state layer; ZooKeeper and Redis seen through what they are asked to open) and the
map state over it: what a user reads back with ``read_state``, ``MapGet`` and
``TupleCollectionGet``."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import msgpack
import pytest

from stormpy.cluster.paths import encode_segment
from stormpy.config import SettingError
from stormpy.state import MemoryBackend, SqliteStore
from stormpy.trident import (
    NON_TRANSACTIONAL,
    OPAQUE,
    TRANSACTIONAL,
    MapGet,
    MapPutUpdater,
    MapState,
    ParquetWrite,
    StateFactory,
    TridentCollector,
    TridentTuple,
    TupleCollectionGet,
    read_state,
)
from stormpy.trident import _state as state_module
from stormpy.trident._parquet import ParquetState


def task(backend: Any = None, index: int = 0) -> Any:
    """What a factory reads of a task's context: its state backend and its index."""
    return SimpleNamespace(state_backend=backend or MemoryBackend(), task_index=index)


def write(state: MapState, txid: int, entries: dict[tuple[Any, ...], Any]) -> None:
    state.begin_commit(txid)
    state.multi_put([list(k) for k in entries], list(entries.values()))
    state.commit(txid)


@pytest.mark.parametrize("make, message", [
    (lambda: StateFactory("cassandra", "s"), "trident state backend: 'cassandra' is not one of "
                                             "memory, default, sqlite, zookeeper, redis, parquet, "
                                             "external$"),
    (lambda: StateFactory.memory("s", "exactly"), "trident state kind: 'exactly' is not one of "
                                                  "non_transactional, transactional, opaque$"),
    (lambda: StateFactory.memory(""), "trident state name: a non-empty string, got ''$"),
    (lambda: StateFactory("memory", 5), "trident state name: a non-empty string, got 5$"),  # type: ignore[arg-type]
    (lambda: StateFactory("sqlite", "s"), "trident state path: a sqlite state needs its path$"),
    (lambda: StateFactory("parquet", "s", path=""), "trident state path: a parquet state needs "
                                                    "its path$"),
    (lambda: StateFactory.redis("s", config={"jedisClusterConfig": {}}),
     "trident state config: jedisClusterConfig"),
])
def test_a_factory_names_what_is_wrong(make: Any, message: str) -> None:
    with pytest.raises(SettingError, match="^" + message):
        make()


def test_map_state_names_a_kind_it_does_not_know() -> None:
    with pytest.raises(SettingError, match="^trident state kind: 'twice' is not one of "
                                           "non_transactional, transactional, opaque$"):
        MapState(MemoryBackend().at("s"), "twice")


def test_a_map_state_is_written_only_inside_a_commit_with_one_value_per_key() -> None:
    state = MapState(MemoryBackend().at("s"), TRANSACTIONAL)
    outside = r"^map state written outside a commit \(begin_commit not called\)$"
    with pytest.raises(RuntimeError, match=outside):
        state.multi_put([["a"]], [1])  # never begun
    state.begin_commit(1)
    with pytest.raises(ValueError, match="shorter"):
        state.multi_put([["a"], ["b"]], [1])  # a value missing: refused, not half written
    assert state.multi_get([["a"], ["b"]]) == [None, None]


@pytest.mark.parametrize("kind", [OPAQUE, NON_TRANSACTIONAL])
def test_every_factory_keeps_the_kind_it_is_given(kind: str) -> None:
    factories = [StateFactory.memory("m", kind), StateFactory.default("d", kind),
                 StateFactory.sqlite("/tmp/x", "s", kind), StateFactory.zookeeper("z", kind),
                 StateFactory.redis("r", kind)]
    assert [f.kind for f in factories] == [kind] * 5


def test_each_backend_has_its_defaults() -> None:
    sqlite = StateFactory.sqlite("/tmp/x.sqlite")
    assert (sqlite.backend, sqlite.name, sqlite.kind, sqlite.path, sqlite.table) == \
        ("sqlite", "state", TRANSACTIONAL, "/tmp/x.sqlite", "trident_state")
    assert (StateFactory.memory("m").kind, StateFactory.default("d").kind) == \
        (TRANSACTIONAL, TRANSACTIONAL)
    assert StateFactory.default("d").backend == "default"
    parquet = StateFactory.parquet("/tmp/t")
    assert (parquet.backend, parquet.name, parquet.kind, parquet.path) == \
        ("parquet", "parquet", TRANSACTIONAL, "/tmp/t")
    zk = StateFactory.zookeeper("z")
    assert (zk.backend, zk.kind, zk.servers, zk.root) == ("zookeeper", TRANSACTIONAL, None, None)
    redis = StateFactory.redis("r")
    assert (redis.backend, redis.kind, redis.config) == ("redis", TRANSACTIONAL, None)
    assert StateFactory("memory", "m").kind == TRANSACTIONAL
    assert StateFactory("sqlite", "s", path="/tmp/x.sqlite").key == StateFactory.sqlite(
        "/tmp/x.sqlite", "s").key  # the same table by default


@pytest.mark.parametrize("factory", [
    StateFactory.memory("m", OPAQUE), StateFactory.default("d", NON_TRANSACTIONAL),
    StateFactory.sqlite("/tmp/a.sqlite", "n", OPAQUE, table="t2"),
    StateFactory.zookeeper("z", OPAQUE, servers="h1:2181", root="/r"),
    StateFactory.redis("r", NON_TRANSACTIONAL, config={"keyPrefix": "p"}),
    StateFactory.parquet("/tmp/pq", "pq"),
])
def test_a_factory_travels_in_its_document_unchanged(factory: StateFactory) -> None:
    again = StateFactory.from_doc(factory.doc())
    assert type(again) is StateFactory
    assert (again.kind, again.key) == (factory.kind, factory.key)
    assert again.doc() == factory.doc()


def test_a_document_without_a_table_gets_the_default_table() -> None:
    doc = StateFactory.sqlite("/tmp/a.sqlite", "n").doc()
    doc["table"] = None
    assert StateFactory.from_doc(doc).table == "trident_state"


class OwnFactory(StateFactory):
    """A factory of one's own (backend ``external``), found again by its import path."""

    def __init__(self, name: str, extra: str) -> None:
        super().__init__("external", name)
        self.extra = extra

    def doc(self) -> dict[str, Any]:
        return {**super().doc(), "extra": self.extra, "factory": f"{__name__}:OwnFactory"}

    @classmethod
    def from_doc(cls, doc: Any) -> StateFactory:
        return cls(doc["name"], doc["extra"])


def test_a_factory_of_ones_own_is_rebuilt_by_its_class() -> None:
    again = StateFactory.from_doc(OwnFactory("own", "x").doc())
    assert isinstance(again, OwnFactory) and (again.name, again.extra) == ("own", "x")
    doc = {**StateFactory.memory("m").doc(), "factory": "collections:OrderedDict"}
    with pytest.raises(SettingError, match="^trident state factory: 'collections:OrderedDict' is "
                                           "not a StateFactory subclass"):
        StateFactory.from_doc(doc)


def test_factories_are_the_same_state_when_everything_but_the_kind_agrees() -> None:
    assert StateFactory.memory("a").key == StateFactory.memory("a", OPAQUE).key
    assert StateFactory.memory("a").key != StateFactory.memory("b").key
    assert StateFactory.memory("a").key != StateFactory.default("a").key
    assert StateFactory.sqlite("/x", "a").key != StateFactory.sqlite("/x", "a", table="u").key
    assert StateFactory.sqlite("/x", "a").key != StateFactory.sqlite("/y", "a").key
    assert StateFactory.zookeeper("a", servers="h:1").key != StateFactory.zookeeper("a").key
    assert StateFactory.zookeeper("a", root="/r").key != StateFactory.zookeeper("a").key
    one = StateFactory.redis("a", config={"keyPrefix": "p", "jedisPoolConfig": {"host": "h"}})
    same = StateFactory.redis("a", config={"jedisPoolConfig": {"host": "h"}, "keyPrefix": "p"})
    assert one.key == same.key
    assert one.key != StateFactory.redis("a", config={"keyPrefix": "q"}).key
    assert one.key != StateFactory.redis("a").key


def test_memory_and_default_states_of_one_name_share_the_tasks_backend() -> None:
    backend = MemoryBackend()
    for factory in (StateFactory.memory, StateFactory.default):
        writer = factory("shared", OPAQUE).make_state({}, task(backend))
        assert isinstance(writer, MapState) and writer.kind == OPAQUE
        write(writer, 1, {("a",): 1})
        reader = factory("shared", OPAQUE).make_state({}, task(backend))
        assert reader.multi_get([["a"]]) == [1]
        other = factory("other", OPAQUE).make_state({}, task(backend))
        assert other.multi_get([["a"]]) == [None]
    memory = StateFactory.memory("m").open_store({}, task(backend))
    default = StateFactory.default("m").open_store({}, task(backend))
    assert memory.location == default.location  # the memory backend is its own memory


def test_a_sqlite_state_is_the_named_part_of_its_table(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    write(StateFactory.sqlite(db, "counts", table="t1").make_state({}, task()), 3, {("w",): 2})
    write(StateFactory.sqlite(db, "other", table="t1").make_state({}, task()), 3, {("w",): 9})
    assert read_state(StateFactory.sqlite(db, "counts", table="t1")) == {("w",): 2}
    assert read_state(StateFactory.sqlite(db, "other", table="t1")) == {("w",): 9}
    assert read_state(StateFactory.sqlite(db, "counts", table="t2")) == {}
    store = SqliteStore(db, "t1", segments=("counts",))
    try:
        assert MapState(store, TRANSACTIONAL).get_transactional(["w"]) is not None
    finally:
        store.close()


def test_a_zookeeper_state_lives_at_its_root_and_encoded_name(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[Any, ...]] = []

    def fake_open(hosts: str, root: str, location: str) -> Any:
        opened.append((hosts, root, location))
        return MemoryBackend().at("zk")
    monkeypatch.setattr(state_module, "open_zk_store", fake_open)
    conf = {"storm.zookeeper.servers": ["zk1", "zk2"], "storm.zookeeper.port": 2182}
    StateFactory.zookeeper("a/b").open_store(conf, None)
    StateFactory.zookeeper("c", servers="h:1", root="/mine/").open_store(conf, None)
    StateFactory.zookeeper("d", root="/").open_store(conf, None)
    StateFactory.zookeeper("e", root="/team/X/").open_store(conf, None)
    assert opened == [
        ("zk1:2182,zk2:2182", "/stormpy/trident", f"/stormpy/trident/{encode_segment('a/b')}"),
        ("h:1", "/mine", "/mine/c"),
        ("zk1:2182,zk2:2182", "/", "/d"),
        ("zk1:2182,zk2:2182", "/team/X", "/team/X/e")]


def test_a_tasks_zookeeper_state_is_on_the_servers_its_conf_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    def fake_open(hosts: str, root: str, location: str) -> Any:
        opened.append(hosts)
        return MemoryBackend().at("zk")
    monkeypatch.setattr(state_module, "open_zk_store", fake_open)
    conf = {"storm.zookeeper.servers": ["zk7"], "storm.zookeeper.port": 2777}
    state = StateFactory.zookeeper("f", OPAQUE).make_state(conf, None)
    assert isinstance(state, MapState) and state.kind == OPAQUE and opened == ["zk7:2777"]


def test_a_redis_state_is_its_own_hash_under_the_configs_prefix() -> None:
    config = {"keyPrefix": "p", "jedisPoolConfig": {"host": "redis.example", "port": 6380}}
    store = StateFactory.redis("counts", config=config).open_store({}, None)
    try:
        assert store.location == "redis redis.example:6380 db 0 at p/counts"
    finally:
        store.close()
    topology_conf = {"topology.state.provider": "redis",
                     "topology.state.provider.config": {"keyPrefix": "q"}}
    store = StateFactory.redis("counts").open_store(topology_conf, None)
    try:
        assert store.location.endswith(" at q/counts")  # the topology's provider config
    finally:
        store.close()


def test_a_redis_state_names_a_bad_topology_provider_config() -> None:
    conf: dict[str, Any] = {"topology.state.provider.config": {"jedisClusterConfig": {}}}
    with pytest.raises(SettingError, match="^trident state config: jedisClusterConfig: Redis "
                                           "Cluster is not supported"):
        StateFactory.redis("r").open_store(conf, None)


def test_a_store_that_is_not_the_state_layers_is_refused() -> None:
    class Backend:
        def named_store(self, *args: Any) -> object:
            return {}
    with pytest.raises(SettingError, match="^trident state backend: default: the runtime's store is not "
                                           "one of the "
                                           "state layer's"):
        StateFactory.default("x").open_store({}, task(Backend()))


def test_a_parquet_factory_makes_the_tasks_parquet_state(tmp_path: Path) -> None:
    state = StateFactory.parquet(str(tmp_path / "t")).make_state({}, task(index=3))
    assert isinstance(state, ParquetState) and (state.path, state.task) == (str(tmp_path / "t"), 3)


def test_get_transactional_and_items_read_what_was_written() -> None:
    state = MapState(MemoryBackend().at("s"), TRANSACTIONAL)
    write(state, 4, {("a", 1): "x", ("b", 2): "y"})
    value = state.get_transactional(["a", 1])
    assert value is not None and (value.txid, value.value) == (4, "x")
    assert state.get_transactional(["c"]) is None and state.get_opaque(["c"]) is None
    assert sorted(state.items()) == [(["a", 1], "x"), (["b", 2], "y")]
    with pytest.raises(RuntimeError, match="outside a commit"):
        state.multi_put([["a", 1]], ["z"])  # committed: the next write needs its begin_commit


def test_a_non_transactional_state_replaces_the_value_and_keeps_no_previous() -> None:
    state = MapState(MemoryBackend().at("s"), NON_TRANSACTIONAL)
    write(state, 1, {("a",): 1})
    write(state, 1, {("a",): 5})
    opaque = state.get_opaque(["a"])
    assert opaque is not None and (opaque.txid, opaque.previous, opaque.current) == (1, None, 5)


def collect(fn: Any, state: Any, tuples: list[TridentTuple]) -> list[list[Any]]:
    out: list[list[Any]] = []
    results = fn.batch_retrieve(state, tuples)
    for t, r in zip(tuples, results, strict=True):
        fn.execute(t, r, TridentCollector(lambda v: out.append(list(v))))
    return out


def test_the_query_functions_read_the_map() -> None:
    state = MapState(MemoryBackend().at("q"), TRANSACTIONAL)
    write(state, 1, {("b", 2): 20, ("a", 10): 10, ("a", 9): 9})
    queries = [TridentTuple(["a", 9], ["k", "n"]), TridentTuple(["z", 0], ["k", "n"])]
    assert collect(MapGet(), state, queries) == [[9], [None]]
    every = collect(TupleCollectionGet(), state, [TridentTuple(["go"], ["q"])])
    assert every == [["a", 9, 9], ["a", 10, 10], ["b", 2, 20]]  # by packed key


def test_tuple_collection_get_orders_entries_by_packed_key_whatever_the_store_scans() -> None:
    """The order is the msgpack bytes of the keys: the same on every backend, and defined for
    keys of any types (an int and a string key are not comparable in Python)."""
    state = MapState(MemoryBackend().at("q"), TRANSACTIONAL)
    write(state, 1, {("x",): 2, ("abcdefghijklm",): 1, (7,): 3})
    every = collect(TupleCollectionGet(), state, [TridentTuple(["go"], ["q"])])
    assert every == [[7, 3], ["x", 2], ["abcdefghijklm", 1]]


def test_map_put_updater_puts_the_last_field_under_the_others_and_emits_the_tuples() -> None:
    state = MapState(MemoryBackend().at("u"), OPAQUE)
    out: list[list[Any]] = []
    tuples = [TridentTuple(["a", 1, "x"], ["k1", "k2", "v"]), TridentTuple(["b", 2, "y"], ["k1", "k2", "v"])]
    state.begin_commit(1)
    MapPutUpdater().update_state(state, tuples, TridentCollector(lambda v: out.append(list(v))))
    state.commit(1)
    assert out == [["a", 1, "x"], ["b", 2, "y"]]
    assert state.multi_get([["a", 1], ["b", 2]]) == ["x", "y"]


def test_parquet_write_needs_a_parquet_state_and_writes_nothing_for_an_empty_batch(
        tmp_path: Path) -> None:
    out: list[list[Any]] = []
    with pytest.raises(TypeError, match=r"^ParquetWrite needs a StateFactory\.parquet state$"):
        ParquetWrite().update_state(MapState(MemoryBackend().at("p"), TRANSACTIONAL), [],
                                    TridentCollector(lambda v: out.append(list(v))))
    state = ParquetState(str(tmp_path / "t"), 0)
    state.begin_commit(1)
    ParquetWrite().update_state(state, [], TridentCollector(lambda v: out.append(list(v))))
    assert out == [[0]] and not (tmp_path / "t").exists()


class ParquetRows(ParquetState):
    """A Parquet state that keeps what it is asked to write."""

    def write(self, rows: Any, columns: Any) -> bool:
        self.written = (rows, columns)
        return True


def test_parquet_write_hands_the_state_the_batchs_rows_and_their_fields() -> None:
    state = ParquetRows("/nonexistent", 0)
    out: list[list[Any]] = []
    ParquetWrite().update_state(state, [TridentTuple(["w", 1], ["word", "n"])],
                                TridentCollector(lambda v: out.append(list(v))))
    assert state.written == ([["w", 1]], ["word", "n"]) and out == [[1]]


def test_read_state_reads_a_zookeeper_state_from_the_servers_conf_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stored = MemoryBackend().at("zk")
    write(MapState(stored, OPAQUE), 2, {("w",): 5})
    opened: list[str] = []

    def fake_open(hosts: str, root: str, location: str) -> Any:
        opened.append(hosts)
        return stored
    monkeypatch.setattr(state_module, "open_zk_store", fake_open)
    conf = {"storm.zookeeper.servers": ["zk9"], "storm.zookeeper.port": 2999}
    assert read_state(StateFactory.zookeeper("counts", OPAQUE), conf) == {("w",): 5}
    assert opened == ["zk9:2999"]


def test_read_state_names_the_backends_it_cannot_read_and_a_missing_file(tmp_path: Path) -> None:
    for factory in (StateFactory.memory("m"), StateFactory.default("d"), StateFactory.redis("r"),
                    StateFactory.parquet(str(tmp_path / "t"))):
        with pytest.raises(SettingError) as refused:
            read_state(factory)
        assert str(refused.value) == (
            f"trident state backend: read_state reads sqlite and zookeeper states, not "
            f"{factory.backend!r} (memory/default states live in the running cluster; read "
            "Parquet with pyarrow)")
    missing = str(tmp_path / "typo.sqlite")
    with pytest.raises(SettingError) as no_file:
        read_state(StateFactory.sqlite(missing, "counts"))
    assert str(no_file.value) == f"trident state path: no SQLite file {missing!r}"


def test_a_key_is_stored_under_the_name_earlier_versions_wrote() -> None:
    """The stored layout outlives a version: a key's document is named ``k`` + the URL-safe
    base64 of the msgpack of the key's values, so a state written before an upgrade is read."""
    store = MemoryBackend().at("s")
    name = "k" + base64.urlsafe_b64encode(msgpack.packb(["the", 1])).decode()
    store.put_many({name: [3, None, 42]})
    state = MapState(store, TRANSACTIONAL)
    assert state.multi_get([["the", 1]]) == [42]
    assert list(state.items()) == [(["the", 1], 42)]
