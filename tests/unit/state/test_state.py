"""Stateful bolts: KeyValueState's prepare/commit/rollback and its recovery from the store, the
checkpoint wiring, and a stateful word count in local mode whose final state is exact although
tuples fail and are replayed; stores that cannot be read stop the bolt with an error naming the
store and the key."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.state import (
    CHECKPOINT_COMPONENT,
    CHECKPOINT_STREAM,
    KeyValueState,
    MemoryBackend,
    SqliteDocStore,
    SqliteStore,
    StatefulBolt,
    open_store,
    open_zk_store,
)
from stormpy.state._settings import state_settings
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import BasicBolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._state import CHECKPOINTS, CorruptStateError, StateUnavailableError
from stormpy.windowing import Duration, Window, WindowedBolt


# -- KeyValueState -----------------------------------------------------------------------------
def test_key_value_state_prepare_commit_rollback(tmp_path: Path) -> None:
    store = SqliteDocStore(tmp_path / "s.sqlite", prefix="t/")
    state = KeyValueState(store)
    state.put("a", 1)
    state.put("b", {"x": [1, 2]})
    assert state.get("a") == 1 and "b" in state and len(state) == 2
    state.prepare_commit(1)
    state.put("a", 2)
    assert state.commit(1) and state.get("a") == 2
    assert dict(KeyValueState(store).items()) == {"a": 1, "b": {"x": [1, 2]}}
    state.delete("b")
    state.prepare_commit(2)
    state.rollback()
    assert dict(state.items()) == {"a": 1, "b": {"x": [1, 2]}}
    assert "p.2" not in store.names()
    state.delete("b")
    state.prepare_commit(3)
    state.commit(3)
    assert dict(KeyValueState(store).items()) == {"a": 1}
    assert not state.commit(3)  # idempotent


def test_recovery_folds_an_interrupted_commit_and_drops_a_later_prepare(tmp_path: Path) -> None:
    store = MemoryBackend().at("test")
    state = KeyValueState(store)
    state.put("w", 5)
    state.prepare_commit(1)
    store.put("meta", {"committed": 1})  # the commit point reached, the crash before the fold
    again = KeyValueState(store)
    assert dict(again.items()) == {"w": 5} and again.committed_txid == 1
    assert "p.1" not in store.names()
    again.put("w", 6)
    again.prepare_commit(2)
    restarted = KeyValueState(store)  # a restarted task: its inputs of 2 are replayed, so...
    assert restarted.get("w") == 5 and "p.2" not in store.names()  # ...their effect is dropped
    assert not restarted.commit(2) and restarted.get("w") == 5
    assert KeyValueState(store).get("w") == 5


def test_unreadable_state_names_the_store_and_the_key(tmp_path: Path) -> None:
    backend = MemoryBackend()
    store = backend.at("corrupt")
    backend.nodes[("corrupt", "meta")] = b"\xc1"  # never valid msgpack
    with pytest.raises(CorruptStateError, match=r"memory:corrupt/meta"):
        KeyValueState(store)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CorruptStateError, match=str(bad)):
        KeyValueState(SqliteDocStore(bad))
    with pytest.raises(StateUnavailableError, match=r"ZooKeeper 127\.0\.0\.1:1/s"):
        open_zk_store("127.0.0.1:1", "/s", connect_timeout_secs=0.5)


# -- topologies --------------------------------------------------------------------------------
class _Log:
    def __init__(self, words: list[str]) -> None:
        self.lock = threading.Lock()
        self.words = words
        self.acked: set[int] = set()
        self.failed = 0


class ReplayingSpout(Spout):
    """Emits ``words`` with their index as message id and replays failed ones."""

    outputs = ["word"]

    def __init__(self, key: str) -> None:
        self.key = key

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.log: _Log = registry.lookup(self.key)
        self.todo = list(range(len(self.log.words)))

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop(0)
            self.emit([self.log.words[i]], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        with self.log.lock:
            self.log.acked.add(msg_id)

    def fail(self, msg_id: Any) -> None:
        with self.log.lock:
            self.log.failed += 1
        self.todo.append(msg_id)


class Lower(BasicBolt):
    """A plain bolt between the spout and the stateful one (its checkpoints are forwarded);
    fails the first sight of every 50th word to force replays."""

    outputs = ["word"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.seen: set[str] = set()

    def process(self, tup: Tuple) -> None:
        word = tup["word"]
        if word.endswith("0") and word not in self.seen:
            self.seen.add(word)
            from stormpy.topology import FailedException
            raise FailedException(word)
        self.emit([word.lower()])


class WordCount(StatefulBolt):
    outputs = ["word", "count"]

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Tuple) -> None:
        word = tup["word"]
        n = self.counts.get(word, 0) + 1
        self.counts.put(word, n)
        self.emit([word, n], anchors=tup)
        self.ack(tup)


def word_count(key: str, parallelism: int = 2) -> Any:
    b = TopologyBuilder()
    b.set_spout("words", ReplayingSpout, kwargs={"key": key})
    b.set_bolt("lower", Lower, 2).shuffle_grouping("words")
    b.set_bolt("count", WordCount, parallelism).fields_grouping("lower", "word")
    return b.create_topology()


def test_builder_wires_the_checkpoint_spout_and_wraps_every_bolt() -> None:
    spec = word_count("unused")
    assert CHECKPOINT_COMPONENT in spec.components
    lower, count = spec.components["lower"], spec.components["count"]
    assert lower.class_path.endswith("CheckpointTupleForwarder")
    assert count.class_path.endswith("StatefulBoltExecutor")
    assert [(i.component, i.stream, i.grouping.type) for i in lower.inputs][1:] == [
        (CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, "all")]
    assert [(i.component, i.stream) for i in count.inputs][1:] == [("lower", CHECKPOINT_STREAM)]
    assert CHECKPOINT_STREAM in count.streams and count.kwargs["_checkpointed"].endswith("WordCount")


def read_counts(db: Path) -> Counter[str]:
    total: Counter[str] = Counter()
    store = SqliteStore(db)
    try:
        for name in store.children():
            for task in store.children(name):
                if task.startswith("count-"):
                    total.update(dict(KeyValueState(store.sub(name, task)).items()))
    finally:
        store.close()
    return total


def memory_state(lc: LocalCluster, topology_id: str, task_key: str) -> Any:
    """The memory provider's store of one task: the LocalCluster's own memory."""
    return lc.state.memory.store(CHECKPOINTS, topology_id).sub("$state", task_key)  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", ["memory", "sqlite"])
def test_stateful_word_count_is_exact_despite_failures_and_replays(tmp_path: Path,
                                                                   provider: str) -> None:
    words = [f"W{i % 37}" for i in range(600)]
    log = _Log(words)
    key = registry.register(log)
    db = tmp_path / "state.sqlite"
    conf = {"topology.state.checkpoint.interval.ms": 50, "topology.message.timeout.secs": 5,
            "topology.state.provider": provider,
            "topology.state.provider.config": {"path": str(db)}}
    try:
        with LocalCluster() as lc:
            worker = lc.submit_topology("wc", conf, word_count(key))
            lc.wait_for(lambda: len(log.acked) == len(words), 60, "every word acked")
            if provider == "memory":
                tid = worker.topology_id
                counts: Counter[str] = Counter()
                for task in lc.workers_of("wc")[0].layout.component_tasks["count"]:
                    store = memory_state(lc, tid, f"count-{task}")
                    lc.wait_for(lambda s=store: s.get("meta") is not None, 30, "a commit")
                    counts.update(dict(KeyValueState(store).items()))
    finally:
        registry.unregister(key)
    if provider == "sqlite":
        counts = read_counts(db)
    assert log.failed > 0  # replays happened
    assert counts == Counter(w.lower() for w in words)


def test_a_stateful_bolt_over_a_corrupt_store_never_runs_and_names_store_and_key(
        tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    store = SqliteDocStore(db, prefix="corrupt/count-3/")
    store.put("meta", {"committed": "not a txid"})
    store.close()
    log = _Log(["a", "b"])
    key = registry.register(log)
    conf = {"topology.state.provider": "sqlite",
            "topology.state.provider.config": f'{{"path": "{db}"}}'}  # JSON, as Storm takes it
    try:
        with LocalCluster() as lc:
            lc.submit_topology("corrupt", conf, word_count(key, parallelism=1))
            with pytest.raises(Exception) as err:
                lc.wait_for(lambda: False, 30, "the bolt to fail")
    finally:
        registry.unregister(key)
    assert str(db) in str(err.value) and "key 'meta'" in str(err.value)
    assert log.acked == set()


@pytest.mark.parametrize(("conf", "setting", "problem"), [
    ({"topology.state.provider": "sqlite"}, "topology.state.provider.config", "needs 'path'"),
    ({"topology.state.provider": "rediss"}, "topology.state.provider", "must be one of"),
    ({"topology.state.provider": "sqlite", "topology.state.provider.config": "{path"},
     "topology.state.provider.config", "not valid JSON"),
    ({"topology.state.provider.config": [1]}, "topology.state.provider.config", "must be a map"),
    ({"topology.state.provider": "sqlite", "topology.state.provider.config":
      {"path": "x", "table": "a b"}}, "topology.state.provider.config", "'table'"),
    ({"topology.state.provider": "zookeeper"}, "topology.state.provider.config", "'servers'"),
    ({"topology.state.provider": "zookeeper", "storm.zookeeper.servers": ["z"],
      "topology.state.provider.config": {"root": "rel"}}, "topology.state.provider.config",
     "absolute"),
    ({"topology.state.checkpoint.interval.ms": -5}, "topology.state.checkpoint.interval.ms",
     "positive"),
    ({"topology.state.checkpoint.interval.ms": "1s"}, "topology.state.checkpoint.interval.ms",
     "positive"),
])
def test_a_misconfigured_provider_is_a_setting_error_naming_the_setting(
        conf: dict[str, Any], setting: str, problem: str) -> None:
    with pytest.raises(SettingError, match=problem) as err:
        state_settings(conf)
    assert err.value.setting == setting and str(err.value).startswith(setting)
    context: Any = type("Ctx", (), {"topology_id": "t-1", "state_backend": MemoryBackend()})()
    with pytest.raises(SettingError):
        open_store(conf, context, "c-1")


class WindowWords(WindowedBolt):
    outputs = ["word"]

    def execute(self, window: Window) -> None:
        for t in window.get_new():
            self.emit([t["word"]])


def test_an_event_time_window_inside_a_stateful_topology() -> None:
    """The windowed bolt is wrapped in a forwarder: checkpoints pass it, and its watermark only
    waits for its data stream."""
    feeder = FeederSpout(["word", "ts"])
    b = TopologyBuilder()
    b.set_spout("words", feeder)
    b.set_bolt("window", WindowWords.with_tumbling_window(Duration(seconds=1))
               .with_timestamp_field("ts").with_watermark_interval(Duration(ms=50))
               ).shuffle_grouping("words")
    b.set_bolt("count", WordCount).fields_grouping("window", "word")
    spec = b.create_topology()
    assert spec.components["window"].class_path.endswith("CheckpointTupleForwarder")
    words = [f"w{i % 5}" for i in range(40)]
    for i, w in enumerate(words):
        feeder.feed([w, 100 * i + 1], msg_id=i)
    feeder.feed(["end", 100_000], msg_id="end")
    conf = {"topology.state.checkpoint.interval.ms": 50}
    with LocalCluster() as lc:
        worker = lc.submit_topology("wwc", conf, spec)
        lc.wait_for(lambda: len(feeder.acked) == len(words), 30, "every word acked")
        task = worker.layout.component_tasks["count"][0]
        state = KeyValueState(memory_state(lc, worker.topology_id, f"count-{task}"))
        assert dict(state.items()) == dict(Counter(words))  # read through, while it exists
