"""KeyValueState on every backend of the state layer (memory, SQLite, Redis; ZooKeeper in
tests/integration/test_state_zk.py): a crash at any write of the checkpoint protocol is repaired by
loading and replaying; checkpoints larger than any one document commit in chunks; reads go through
to the store with a cache that stays within its bound; iteration streams from the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from test_state import ReplayingSpout, _Log

from parts_kit import fresh_redis_store
from stormpy.state import KeyValueState, MemoryBackend, SqliteStore, StatefulBolt, Store
from stormpy.state import _kv as kv_module
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import TopologyBuilder, Tuple
from stormpy.topology._state import StateUnavailableError

BACKENDS = ["memory", "sqlite", "redis"]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """A function giving a fresh, empty store of the backend each call; all closed at the end."""
    opened: list[Store] = []
    counter = iter(range(1_000_000))

    def make() -> Store:
        n = next(counter)
        if request.param == "memory":
            store: Store = MemoryBackend().at(f"kv-{n}")
        elif request.param == "sqlite":
            store = SqliteStore(tmp_path / f"kv-{n}.sqlite")
        else:
            store = fresh_redis_store(request.getfixturevalue("redis_server"), f"kv-{n}")
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


class Crash(Exception):
    """The task died at this write."""


class CrashingStore(Store):
    """``inner`` seen by a task that dies at its ``crash_at``-th write (every key of a batch is a
    write of its own, so a crash lands inside batches too)."""

    def __init__(self, inner: Store, crash_at: int | None) -> None:
        self.inner, self.crash_at, self.writes = inner, crash_at, 0
        self.location = inner.location

    def _write(self) -> None:
        self.writes += 1
        if self.crash_at is not None and self.writes >= self.crash_at:
            raise Crash(self.writes)

    def get(self, key: str, default: Any = None) -> Any:
        return self.inner.get(key, default)

    def children(self, key: str = "") -> list[str]:
        return self.inner.children(key)

    def scan(self, key: str = "", *, prefix: str = "", page: int = 1000
             ) -> Iterator[tuple[str, Any]]:
        return self.inner.scan(key, prefix=prefix, page=page)

    def put(self, key: str, value: Any) -> None:
        self._write()
        self.inner.put(key, value)

    def delete(self, key: str) -> bool:
        self._write()
        return self.inner.delete(key)

    def put_many(self, items: Mapping[str, Any]) -> None:
        for key, value in items.items():  # in order, as ZooKeeper's
            self.put(key, value)

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.delete(key)


def _checkpoints() -> list[dict[Any, Any]]:
    """Six checkpoints' changes (None: delete), over keys that come and go."""
    return [{f"k{(t * 3 + i) % 7}": (None if (t + i) % 5 == 0 else t * 10 + i) for i in range(4)}
            for t in range(6)]


def _apply(model: dict[Any, Any], changes: dict[Any, Any]) -> None:
    for key, value in changes.items():
        if value is None:
            model.pop(key, None)
        else:
            model[key] = value


def _run(state: KeyValueState, checkpoints: list[dict[Any, Any]], start: int) -> None:
    for txid in range(start, len(checkpoints) + 1):
        for key, value in checkpoints[txid - 1].items():
            if value is None:
                state.delete(key)
            else:
                state.put(key, value)
        state.prepare_commit(txid)
        assert state.commit(txid)


def test_a_crash_at_any_write_is_repaired_by_loading_and_replaying(
        make_store: Callable[[], Store], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kv_module, "FOLD_BATCH", 2)  # folds in several slices
    checkpoints = _checkpoints()
    models = [{}]
    for changes in checkpoints:
        models.append(dict(models[-1]))
        _apply(models[-1], changes)
    clean = CrashingStore(make_store(), None)
    _run(KeyValueState(clean, chunk_bytes=16), checkpoints, 1)  # several chunks per checkpoint
    assert dict(KeyValueState(clean.inner).items()) == models[-1]
    for crash_at in range(1, clean.writes + 1):
        store = make_store()
        crashing = CrashingStore(store, crash_at)
        with pytest.raises(Crash):
            _run(KeyValueState(crashing, chunk_bytes=16), checkpoints, 1)
        restarted = KeyValueState(store, chunk_bytes=16)
        committed = restarted.committed_txid
        assert dict(restarted.items()) == models[committed], f"crash at write {crash_at}"
        assert not [n for n in store.names() if n.startswith("p.")], "prepares left behind"
        # the inputs of the checkpoints after the commit point were never acked: replayed
        _run(restarted, checkpoints, committed + 1)
        assert dict(KeyValueState(store).items()) == models[-1], f"crash at write {crash_at}"


def test_a_checkpoint_larger_than_any_document_commits_in_chunks(
        make_store: Callable[[], Store]) -> None:
    store = make_store()
    state = KeyValueState(store, cache_max_keys=100)
    keys = 20_000
    for i in range(keys):
        state.put(f"key-{i}", "v" * 40)  # about 1.1 MB of changes: ZooKeeper's limit is 512 KiB
    state.prepare_commit(1)
    header = store.get("p.1")
    assert header == {"chunks": header["chunks"], "changes": keys} and header["chunks"] >= 4
    assert all(len(store.get(f"p.1/{i}")) <= kv_module.CHUNK_BYTES
               for i in range(header["chunks"]))
    assert state.commit(1)
    assert store.get("p.1") is None and store.count() == keys + 1  # the rows and meta
    again = KeyValueState(store, cache_max_keys=100)
    assert len(again) == keys and again.get("key-19999") == "v" * 40


def test_reads_go_through_to_the_store_and_the_cache_keeps_its_bound(
        make_store: Callable[[], Store]) -> None:
    store = make_store()
    writer = KeyValueState(store)
    for i in range(500):
        writer.put(i, i * 2)
    writer.prepare_commit(1)
    writer.commit(1)
    state = KeyValueState(store, cache_max_keys=50)
    assert sum(state.get(i) for i in range(500)) == sum(i * 2 for i in range(500))
    assert len(state._cache) == 50  # noqa: SLF001 - the bound is the point
    assert state.get(1000, "absent") == "absent" and 1000 not in state
    # the most recently read are the ones kept
    assert list(state._cache)[-1] == 1000 and 499 in state._cache  # noqa: SLF001
    # a key written by another state after this one cached it is read fresh after a load
    writer.put(499, "new")
    writer.prepare_commit(2)
    writer.commit(2)
    state.load()
    assert state.get(499) == "new"
    zero = KeyValueState(store, cache_max_keys=0)
    assert zero.get(3) == 6 and not zero._cache  # noqa: SLF001


def test_iteration_merges_the_stored_map_with_the_changes_not_committed(
        make_store: Callable[[], Store]) -> None:
    store = make_store()
    state = KeyValueState(store, cache_max_keys=3)
    for i in range(10):
        state.put(i, i)
    state.prepare_commit(1)
    state.commit(1)
    state.put(3, "three")
    state.delete(4)
    state.put(10, 10)
    state.prepare_commit(2)
    state.delete(5)
    assert dict(state.items()) == {0: 0, 1: 1, 2: 2, 3: "three", 6: 6, 7: 7, 8: 8, 9: 9, 10: 10}
    assert len(state) == 9 and sorted(state.keys()) == [0, 1, 2, 3, 6, 7, 8, 9, 10]
    state.commit(2)
    state.rollback()  # forgets the delete of 5
    assert len(KeyValueState(store)) == 10 and KeyValueState(store).get(5) == 5


def test_a_commit_whose_fold_fails_is_committed_and_folded_by_the_next_prepare(
        make_store: Callable[[], Store], monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.topology._state import StateUnavailableError

    store = make_store()
    state = KeyValueState(store)
    state.put("a", 1)
    state.prepare_commit(1)
    real = store.write_encoded

    def down(puts: Iterable[tuple[str, bytes]], deletes: Iterable[str] = ()) -> None:
        raise StateUnavailableError(store.location, "gone")

    monkeypatch.setattr(store, "write_encoded", down)
    assert state.commit(1)  # the commit point is written: committed
    assert state.get("a") == 1 and dict(state.items()) == {"a": 1}
    monkeypatch.setattr(store, "write_encoded", real)
    state.put("b", 2)
    state.prepare_commit(2)  # folds 1 first
    assert store.get("p.1") is None and KeyValueState(store).get("a") == 1


# -- a store failing under a running bolt ----------------------------------------------------------
FLAKY = MemoryBackend()
FLAKY_FAILS: dict[str, int] = {}


class FlakyStore(Store):
    """A memory store whose reads of a key in FLAKY_FAILS fail that many times."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.location = inner, inner.location

    def get(self, key: str, default: Any = None) -> Any:
        from stormpy.state._kv import _dec

        if key.startswith("d.") and FLAKY_FAILS.get(_dec(key), 0) > 0:
            FLAKY_FAILS[_dec(key)] -= 1
            raise StateUnavailableError(self.where(key), "the store went away (test)")
        return self.inner.get(key, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, key: str, value: Any) -> None:
        self.inner.put(key, value)

    def put_many(self, items: Mapping[str, Any]) -> None:
        self.inner.put_many(items)

    def delete(self, key: str) -> bool:
        return self.inner.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        self.inner.delete_many(keys)

    def children(self, key: str = "") -> list[str]:
        return self.inner.children(key)

    def write_batch(self, puts: Mapping[str, Any], deletes: Iterable[str] = ()) -> None:
        self.inner.write_batch(puts, deletes)

    def scan(self, key: str = "", *, prefix: str = "", page: int = 1000
             ) -> Iterator[tuple[str, Any]]:
        return self.inner.scan(key, prefix=prefix, page=page)


def flaky_store(conf: Mapping[str, Any], namespace: str) -> Store:
    return FlakyStore(FLAKY.at("flaky", *namespace.split("/")))


class TwoKeys(StatefulBolt):
    """Counts each word, then reads the word's "seen" key: a failure there comes after the
    count's change, which must not be committed for the failed input."""

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.state.put(word + "!", self.state.get(word + "!", 0) + 1)
        self.ack(tup)


def test_an_input_that_meets_a_failing_store_is_failed_and_its_partial_changes_dropped() -> None:
    words = [f"w{i % 5}" for i in range(200)]
    FLAKY.remove(("flaky",))  # what an earlier run in this process committed
    FLAKY_FAILS.clear()
    FLAKY_FAILS.update({f"w{i}!": 3 for i in range(5)})
    log = _Log(words)
    key = registry.register(log)
    b = TopologyBuilder()
    b.set_spout("words", ReplayingSpout, kwargs={"key": key})
    b.set_bolt("count", TwoKeys).fields_grouping("words", "word")
    conf = {"topology.state.provider": f"{__name__}:flaky_store",
            "topology.state.checkpoint.interval.ms": 50, "topology.state.cache.max.keys": 0,
            "topology.message.timeout.secs": 30}
    try:
        with LocalCluster() as lc:
            lc.submit_topology("flaky", conf, b.create_topology())
            lc.wait_for(lambda: len(log.acked) == len(words), 60, "every word acked")
            task = lc.workers_of("flaky")[0].layout.component_tasks["count"][0]
            state = KeyValueState(FLAKY.at("flaky", "flaky", f"count-{task}"))
            counts = dict(state.items())
    finally:
        registry.unregister(key)
    assert log.failed >= 15, "every failing read failed its input"
    expected = {w: words.count(w) for w in set(words)}
    assert counts == {**expected, **{f"{w}!": n for w, n in expected.items()}}
