"""The emitter executors driven by hand (which partitions a task serves, what a partitioned,
opaque or plain emitter is asked on a first attempt and on a replay, what is stored), the
rotating state they keep per transaction, and the memory spout's batches."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from stormpy.state import MemoryBackend
from stormpy.topology._context import TopologyContext
from stormpy.topology._streams import Stream
from stormpy.transactional import (
    MemoryTransactionalSpout,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
    TransactionAttempt,
)
from stormpy.transactional._api import BatchOutputCollector
from stormpy.transactional._emitter import (
    EmitterExecutor,
    OpaqueEmitterExecutor,
    PartitionedEmitterExecutor,
    _Partitions,
    make_executor,
)
from stormpy.transactional._memory import MemoryCoordinator, MemoryEmitter
from stormpy.transactional._store import RotatingState, StoreUnavailable


def new_store(name: str = "t") -> Any:
    return MemoryBackend().named_store("transactional", "tx", name)


def context(index: int = 0, tasks: int = 1) -> TopologyContext:
    return cast(TopologyContext, SimpleNamespace(task_index=index,
                                                 component_tasks=list(range(tasks))))


class Rows:
    """A collector recording the rows emitted (without the attempt)."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self.collector = BatchOutputCollector(self._emit, lambda *_: None, lambda _: None)

    def _emit(self, values: list[Any], stream: str) -> list[int]:
        self.rows.append(values[1:])
        return [1]


# -- the rotating state --------------------------------------------------------------------------

def test_rotating_state_keeps_one_value_per_transaction() -> None:
    store = new_store()
    state = RotatingState(store, "/emitter/0/")
    assert state.key == "emitter/0"
    state.put(3, {"a": 1})
    state.put(5, None)
    assert store.get("emitter/0/3") == {"a": 1} and store.children("emitter/0") == ["3", "5"]
    again = RotatingState(store, "emitter/0")
    assert again.get(3) == {"a": 1} and again.has(5) and not again.has(4)
    assert again.get(4) is None and again.cache == {3: {"a": 1}, 5: None}


def test_rotating_state_keys_lose_only_their_outer_slashes() -> None:
    store = new_store()
    state = RotatingState(store, "/X/eX/")
    assert state.key == "X/eX"
    state.put(1, "one")
    assert store.get("X/eX/1") == "one"


def test_rotating_state_ignores_keys_that_are_not_transactions() -> None:
    store = new_store()
    store.put("k/7", "seven")
    store.put("k/x7", "other")
    store.put("k/meta", "other")
    assert RotatingState(store, "k").cache == {7: "seven"}


def test_last_before_and_last_and_has_later() -> None:
    state = RotatingState(new_store(), "k")
    assert state.last() is None and state.last_before(5) is None and not state.has_later(0)
    for txid, value in ((2, "two"), (4, "four"), (9, "nine")):
        state.put(txid, value)
    assert state.last() == "nine"
    assert state.last_before(4) == "two" and state.last_before(5) == "four"
    assert state.last_before(2) is None and state.last_before(100) == "nine"
    assert state.has_later(8) and not state.has_later(9) and state.has_later(2)


def test_get_or_create_stores_the_new_value_from_the_previous_one() -> None:
    store = new_store()
    state = RotatingState(store, "k")
    state.put(1, 10)
    calls: list[tuple[int, Any]] = []

    def init(txid: int, previous: Any) -> Any:
        calls.append((txid, previous))
        return previous + txid
    assert state.get_or_create(3, init) == (13, True)
    assert state.get_or_create(3, init) == (13, False)
    assert calls == [(3, 10)] and store.get("k/3") == 13


def test_remove_and_cleanup_before_keep_the_rest() -> None:
    store = new_store()
    state = RotatingState(store, "k")
    for txid in (1, 2, 3, 4):
        state.put(txid, txid * 10)
    state.remove(2)
    state.remove(8)  # nothing there
    assert state.cache == {1: 10, 3: 30, 4: 40} and store.children("k") == ["1", "3", "4"]
    state.cleanup_before(4)
    assert state.cache == {4: 40} and store.children("k") == ["4"]
    state.cleanup_before(4)
    assert RotatingState(store, "k").cache == {4: 40}


class FailingStore:
    """Wraps a store; ``fail`` names the next operation that raises (after applying it when
    ``applied``)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.fail: str | None = None
        self.applied = False
        self.reads = 0

    def _maybe(self, op: str, apply: Any) -> Any:
        if self.fail == op:
            self.fail = None
            if self.applied:
                apply()
            raise StoreUnavailable(f"{op} failed")
        return apply()

    def put(self, key: str, value: Any) -> None:
        self._maybe("put", lambda: self.store.put(key, value))

    def delete(self, key: str) -> None:
        self._maybe("delete", lambda: self.store.delete(key))

    def children(self, key: str) -> list[str]:
        self.reads += 1
        return cast(list[str], self._maybe("children", lambda: self.store.children(key)))

    def get(self, key: str) -> Any:
        return self.store.get(key)


@pytest.mark.parametrize("applied", [False, True])
def test_a_failed_write_makes_the_store_the_truth_again(applied: bool) -> None:
    store = FailingStore(new_store())
    state = RotatingState(store, "k")
    state.put(1, "one")
    reads = store.reads
    assert state.get(1) == "one" and store.reads == reads  # served from the cache
    store.fail, store.applied = "put", applied
    with pytest.raises(StoreUnavailable):
        state.put(2, "two")
    assert state.has(2) is applied and store.reads == reads + 1  # reloaded once
    assert state.get(1) == "one" and store.reads == reads + 1


@pytest.mark.parametrize("applied", [False, True])
def test_a_failed_delete_makes_the_store_the_truth_again(applied: bool) -> None:
    store = FailingStore(new_store())
    state = RotatingState(store, "k")
    state.put(1, "one")
    state.put(2, "two")
    store.fail, store.applied = "delete", applied
    with pytest.raises(StoreUnavailable):
        state.cleanup_before(2)
    assert state.has(1) is not applied and state.has(2)


def test_an_unreadable_store_stays_stale_until_it_can_be_read() -> None:
    store = FailingStore(new_store())
    store.store.put("k/4", "four")
    store.fail = "children"
    with pytest.raises(StoreUnavailable):
        RotatingState(store, "k")
    state = RotatingState(store, "k")
    assert state.get(4) == "four"
    state.reload()
    store.store.put("k/5", "five")  # another writer
    assert state.last() == "five"


# -- the partitions of a task ----------------------------------------------------------------------

def test_a_task_serves_every_tasks_th_partition_from_its_index() -> None:
    parts = _Partitions(lambda: new_store(), context(index=1, tasks=3))
    assert list(parts.mine(8)) == [1, 4, 7]
    assert list(parts.mine(1)) == []
    assert list(_Partitions(lambda: new_store(), context(0, 1)).mine(3)) == [0, 1, 2]


def test_partition_states_are_opened_once_under_their_keys() -> None:
    store = new_store()
    opened: list[int] = []

    def open_store() -> Any:
        opened.append(1)
        return store
    parts = _Partitions(open_store, context())
    assert opened == []
    parts.state(2).put(1, "meta")
    parts.batches(2).put(1, {"last": None, "meta": "meta"})
    assert parts.state(2) is parts.state(2) and parts.batches(2) is parts.batches(2)
    assert parts.state(2) is not parts.batches(2)
    assert len(opened) == 2
    assert store.get("emitter/2/1") == "meta"
    assert store.get("emitter-batches/2/1") == {"last": None, "meta": "meta"}
    parts.state(3).put(1, "x")
    parts.cleanup_before(2)
    assert store.children("emitter/2") == [] and store.children("emitter-batches/2") == []
    assert store.children("emitter/3") == []


# -- the executors -------------------------------------------------------------------------------

class PlainEmitter(TransactionalSpout.Emitter):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        self.calls.append(("emit", attempt, metadata, collector))

    def cleanup_before(self, txid: int) -> None:
        self.calls.append(("cleanup", txid))

    def close(self) -> None:
        self.calls.append(("close",))


class PlainSpout(TransactionalSpout):
    def get_emitter(self, conf: Any, context: Any) -> PlainEmitter:
        return PlainEmitter()


def test_a_plain_emitter_is_handed_everything_unchanged() -> None:
    executor = make_executor(PlainSpout(), {}, context(), lambda: new_store())
    assert type(executor) is EmitterExecutor and executor.commits is False
    emitter = cast(PlainEmitter, executor.emitter)
    attempt = TransactionAttempt(3, 1)
    collector = Rows().collector
    executor.emit_batch(attempt, {"m": 1}, collector)
    executor.commit(attempt)
    executor.cleanup_before(3)
    executor.close()
    assert emitter.calls == [("emit", attempt, {"m": 1}, collector), ("cleanup", 3), ("close",)]


def test_make_executor_picks_the_executor_by_spout_kind() -> None:
    spout = MemoryTransactionalSpout([[["a"]]], ["w"], 1)
    part = make_executor(spout, {}, context(), lambda: new_store())
    assert type(part) is PartitionedEmitterExecutor and part.commits is False
    assert type(part.emitter) is MemoryEmitter
    opaque = make_executor(Opaque(), {}, context(), lambda: new_store())
    assert type(opaque) is OpaqueEmitterExecutor and opaque.commits is True


class PartitionedRecorder(PartitionedTransactionalSpout.Emitter):
    """Partition batches of two rows numbered on; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def emit_partition_batch_new(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                 partition: int, last_meta: Any) -> Any:
        self.calls.append(("new", attempt.transaction_id, partition, last_meta))
        start = last_meta["end"] if last_meta else 0
        meta = {"start": start, "end": start + 2}
        self.emit_partition_batch(attempt, collector, partition, meta)
        self.calls.pop()
        return meta

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, meta: Any) -> None:
        self.calls.append(("again", attempt.transaction_id, partition, meta))
        for i in range(meta["start"], meta["end"]):
            collector.emit([attempt, partition, i])


def test_a_partitioned_replay_emits_the_stored_batch_of_its_partitions() -> None:
    store = new_store()
    emitter = PartitionedRecorder()
    executor = PartitionedEmitterExecutor(emitter, _Partitions(lambda: store, context(1, 2)))
    rows = Rows()
    executor.emit_batch(TransactionAttempt(1, 1), 4, rows.collector)
    executor.emit_batch(TransactionAttempt(2, 2), 4, rows.collector)
    assert emitter.calls == [("new", 1, 1, None), ("new", 1, 3, None),
                             ("new", 2, 1, {"start": 0, "end": 2}),
                             ("new", 2, 3, {"start": 0, "end": 2})]
    assert store.get("emitter/3/2") == {"start": 2, "end": 4}
    emitter.calls.clear()
    rows.rows.clear()
    executor.emit_batch(TransactionAttempt(1, 3), 4, rows.collector)
    assert emitter.calls == [("again", 1, 1, {"start": 0, "end": 2}),
                             ("again", 1, 3, {"start": 0, "end": 2})]
    assert rows.rows == [[1, 0], [1, 1], [3, 0], [3, 1]]


def test_a_partition_whose_batch_is_empty_for_good_emits_nothing_on_replay() -> None:
    store = new_store()
    emitter = PartitionedRecorder()
    executor = PartitionedEmitterExecutor(emitter, _Partitions(lambda: store, context()))
    rows = Rows()
    executor.emit_batch(TransactionAttempt(2, 1), 1, rows.collector)
    executor.emit_batch(TransactionAttempt(1, 2), 1, rows.collector)  # 1 came after 2
    assert store.get("emitter/0/1") is None and store.children("emitter/0") == ["1", "2"]
    emitter.calls.clear()
    rows.rows.clear()
    executor.emit_batch(TransactionAttempt(1, 3), 1, rows.collector)
    assert emitter.calls == [] and rows.rows == []


def test_a_partitioned_cleanup_forgets_older_transactions() -> None:
    store = new_store()
    executor = PartitionedEmitterExecutor(PartitionedRecorder(),
                                          _Partitions(lambda: store, context()))
    for txid in (1, 2, 3):
        executor.emit_batch(TransactionAttempt(txid, txid), 2, Rows().collector)
    executor.cleanup_before(3)
    assert store.children("emitter/0") == ["3"] and store.children("emitter/1") == ["3"]


class OpaqueRecorder(OpaquePartitionedTransactionalSpout.Emitter):
    """Opaque batches of ``take`` rows numbered on after ``last_meta``; ``partitions`` of them."""

    def __init__(self, partitions: int = 1, take: int = 2) -> None:
        self.partitions = partitions
        self.take = take
        self.calls: list[tuple[Any, ...]] = []

    def num_partitions(self) -> int:
        return self.partitions

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, last_meta: Any) -> Any:
        self.calls.append(("new", attempt.transaction_id, partition, last_meta))
        start = last_meta["end"] if last_meta else 0
        for i in range(start, start + self.take):
            collector.emit([attempt, partition, i])
        return {"end": start + self.take}

    def emit_partition_batch_again(self, attempt: TransactionAttempt,
                                   collector: BatchOutputCollector, partition: int,
                                   last_meta: Any, meta: Any) -> Any:
        self.calls.append(("again", attempt.transaction_id, partition, last_meta, meta))
        start = last_meta["end"] if last_meta else 0
        for i in range(start, meta["end"]):
            collector.emit([attempt, partition, i])
        return meta


class Opaque(OpaquePartitionedTransactionalSpout):
    def get_emitter(self, conf: Any, context: Any) -> OpaqueRecorder:
        return OpaqueRecorder()


def opaque(store: Any, emitter: OpaqueRecorder, index: int = 0, tasks: int = 1
           ) -> OpaqueEmitterExecutor:
    return OpaqueEmitterExecutor(emitter, _Partitions(lambda: store, context(index, tasks)))


def test_an_opaque_batch_follows_the_previous_transaction_emitted_by_this_task() -> None:
    store = new_store()
    emitter = OpaqueRecorder(partitions=3)
    executor = opaque(store, emitter, index=1, tasks=2)
    rows = Rows()
    executor.emit_batch(TransactionAttempt(1, 1), None, rows.collector)
    executor.emit_batch(TransactionAttempt(2, 2), None, rows.collector)
    assert emitter.calls == [("new", 1, 1, None), ("new", 2, 1, {"end": 2})]
    assert rows.rows == [[1, 0], [1, 1], [1, 2], [1, 3]]
    assert executor.emitted == {1: {1: {"end": 2}}, 2: {1: {"end": 4}}}
    assert store.get("emitter-batches/1/2") == {"last": {"end": 2}, "meta": {"end": 4}}
    assert store.children("emitter/1") == []  # nothing committed yet


def test_an_opaque_batch_follows_the_latest_lower_transaction_not_the_first() -> None:
    store = new_store()
    emitter = OpaqueRecorder()
    executor = opaque(store, emitter)
    for txid in (1, 2, 3):
        executor.emit_batch(TransactionAttempt(txid, txid), None, Rows().collector)
    assert emitter.calls[-1] == ("new", 3, 0, {"end": 4})


def test_a_commit_records_the_committed_metadata_per_partition() -> None:
    store = new_store()
    emitter = OpaqueRecorder(partitions=2)
    executor = opaque(store, emitter)
    executor.emit_batch(TransactionAttempt(1, 1), None, Rows().collector)
    executor.commit(TransactionAttempt(1, 1))
    assert store.get("emitter/0/1") == {"end": 2} and store.get("emitter/1/1") == {"end": 2}
    assert executor.emitted == {}
    executor.commit(TransactionAttempt(1, 1))  # again: nothing left to record
    restarted = opaque(store, OpaqueRecorder(partitions=2))
    restarted.emit_batch(TransactionAttempt(2, 5), None, Rows().collector)
    assert cast(OpaqueRecorder, restarted.emitter).calls == [("new", 2, 0, {"end": 2}),
                                                             ("new", 2, 1, {"end": 2})]


def test_an_opaque_replay_after_the_same_place_emits_the_same_batch_again() -> None:
    store = new_store()
    executor = opaque(store, OpaqueRecorder(take=3))
    executor.emit_batch(TransactionAttempt(1, 1), None, Rows().collector)
    restarted = opaque(store, OpaqueRecorder(take=5))  # would take more now
    rows = Rows()
    restarted.emit_batch(TransactionAttempt(1, 2), None, rows.collector)
    assert cast(OpaqueRecorder, restarted.emitter).calls == [("again", 1, 0, None, {"end": 3})]
    assert rows.rows == [[0, 0], [0, 1], [0, 2]]


def test_an_opaque_replay_of_a_later_transaction_is_told_where_its_batch_started() -> None:
    store = new_store()
    executor = opaque(store, OpaqueRecorder(take=3))
    executor.emit_batch(TransactionAttempt(1, 1), None, Rows().collector)
    executor.emit_batch(TransactionAttempt(2, 2), None, Rows().collector)
    executor.commit(TransactionAttempt(1, 1))
    emitter = OpaqueRecorder(take=5)
    restarted = opaque(store, emitter)
    rows = Rows()
    restarted.emit_batch(TransactionAttempt(2, 3), None, rows.collector)
    assert emitter.calls == [("again", 2, 0, {"end": 3}, {"end": 6})]
    assert rows.rows == [[0, 3], [0, 4], [0, 5]]


def test_an_opaque_replay_after_another_place_emits_a_new_batch() -> None:
    store = new_store()
    executor = opaque(store, OpaqueRecorder())
    executor.emit_batch(TransactionAttempt(1, 1), None, Rows().collector)
    executor.emit_batch(TransactionAttempt(2, 2), None, Rows().collector)
    executor.commit(TransactionAttempt(1, 1))
    executor.cleanup_before(2)
    emitter = OpaqueRecorder(take=1)
    restarted = opaque(store, emitter)
    store.put("emitter/0/1", {"end": 1})  # transaction 1 committed a shorter batch
    restarted.emit_batch(TransactionAttempt(2, 3), None, Rows().collector)
    assert emitter.calls == [("new", 2, 0, {"end": 1})]
    assert store.get("emitter-batches/0/2") == {"last": {"end": 1}, "meta": {"end": 2}}


class EmptyAgain(OpaqueRecorder):
    """An opaque emitter whose batch took nothing (its metadata is the place it started at)."""

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, last_meta: Any) -> Any:
        self.calls.append(("new", attempt.transaction_id, partition, last_meta))
        return last_meta


def test_an_opaque_batch_that_took_nothing_is_asked_anew_on_replay() -> None:
    store = new_store()
    store.put("emitter/0/1", {"end": 4})
    emitter = EmptyAgain()
    executor = opaque(store, emitter)
    executor.emit_batch(TransactionAttempt(2, 1), None, Rows().collector)
    executor.emit_batch(TransactionAttempt(2, 2), None, Rows().collector)
    assert emitter.calls == [("new", 2, 0, {"end": 4}), ("new", 2, 0, {"end": 4})]


def test_an_opaque_batch_with_no_metadata_is_asked_anew_on_replay() -> None:
    class Nothing(OpaqueRecorder):
        def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                 partition: int, last_meta: Any) -> Any:
            self.calls.append(("new", attempt.transaction_id, partition, last_meta))
            return None
    store = new_store()
    emitter = Nothing()
    executor = opaque(store, emitter)
    executor.emit_batch(TransactionAttempt(1, 1), None, Rows().collector)
    executor.emit_batch(TransactionAttempt(1, 2), None, Rows().collector)
    assert emitter.calls == [("new", 1, 0, None), ("new", 1, 0, None)]


def test_an_unchanged_opaque_batch_is_not_written_again() -> None:
    store = FailingStore(new_store())
    executor = opaque(store, OpaqueRecorder())
    executor.emit_batch(TransactionAttempt(1, 1), None, Rows().collector)
    store.fail = "put"  # a second write of the same batch would fail
    executor.emit_batch(TransactionAttempt(1, 2), None, Rows().collector)
    assert store.store.get("emitter-batches/0/1") == {"last": None, "meta": {"end": 2}}


def test_an_opaque_cleanup_forgets_older_uncommitted_batches() -> None:
    store = new_store()
    emitter = OpaqueRecorder()
    executor = opaque(store, emitter)
    for txid in (1, 2, 3):
        executor.emit_batch(TransactionAttempt(txid, txid), None, Rows().collector)
    executor.commit(TransactionAttempt(2, 2))
    executor.cleanup_before(3)
    assert sorted(executor.emitted) == [3]
    assert store.children("emitter-batches/0") == ["3"] and store.children("emitter/0") == []
    executor.emit_batch(TransactionAttempt(4, 4), None, Rows().collector)
    assert emitter.calls[-1] == ("new", 4, 0, {"end": 6})


# -- the memory spout ------------------------------------------------------------------------------

def test_the_memory_spouts_partitions_from_a_list_or_a_map() -> None:
    spout = MemoryTransactionalSpout({"1": [("b",)], 0: [["a"], ["c"]]}, ("w",), 2)
    assert spout.data == [[["a"], ["c"]], [["b"]]]
    assert spout.fields == ["w"] and spout.take == 2
    assert spout.component_class is MemoryTransactionalSpout
    assert spout.component_kwargs == {"data_by_partition": [[["a"], ["c"]], [["b"]]],
                                      "fields": ["w"], "take_per_batch": 2}
    assert MemoryTransactionalSpout([[("a", 1)]], ["w", "n"], 1).data == [[["a", 1]]]
    assert MemoryTransactionalSpout.declare_outputs({"fields": ["w", "n"]}) == {
        "default": Stream(["tx", "w", "n"])}


@pytest.mark.parametrize("data, message", [
    ({0: [], 2: []}, "data_by_partition keys must be the partitions 0..n-1, got [0, 2]"),
    ({1: []}, "data_by_partition keys must be the partitions 0..n-1, got [1]"),
    (5, "data_by_partition must map partition numbers to lists of rows"),
])
def test_bad_memory_data_is_refused(data: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        MemoryTransactionalSpout(data, ["w"], 1)
    assert str(raised.value) == message


@pytest.mark.parametrize("take", [0, -1, 1.5, "2"])
def test_a_bad_take_is_refused(take: Any) -> None:
    with pytest.raises(ValueError) as raised:
        MemoryTransactionalSpout([[]], ["w"], take)
    assert str(raised.value) == f"take_per_batch must be an integer >= 1, got {take!r}"


def test_the_memory_coordinator_is_ready_for_as_many_batches_as_the_longest_partition() -> None:
    spout = MemoryTransactionalSpout([[[i] for i in range(5)], [[9]]], ["n"], 2)
    coordinator = spout.get_coordinator({}, context())
    assert type(coordinator) is MemoryCoordinator
    assert coordinator.number_partitions() == 2
    assert [coordinator.is_ready() for _ in range(5)] == [True, True, True, False, False]
    assert MemoryCoordinator([], 3).is_ready() is False
    assert MemoryCoordinator([[[1]] * 6], 3).remaining == 2


def test_the_memory_emitter_takes_consecutive_rows_and_replays_them() -> None:
    spout = MemoryTransactionalSpout([[[i] for i in range(5)]], ["n"], 2)
    emitter = spout.get_emitter({}, context())
    rows = Rows()
    attempt = TransactionAttempt(1, 1)
    first = emitter.emit_partition_batch_new(attempt, rows.collector, 0, None)
    assert first == {"index": 0, "amount": 2}
    second = emitter.emit_partition_batch_new(attempt, rows.collector, 0, first)
    third = emitter.emit_partition_batch_new(attempt, rows.collector, 0, second)
    fourth = emitter.emit_partition_batch_new(attempt, rows.collector, 0, third)
    assert (second, third, fourth) == ({"index": 2, "amount": 2}, {"index": 4, "amount": 1},
                                       {"index": 5, "amount": 0})
    assert rows.rows == [[0], [1], [2], [3], [4]]
    rows.rows.clear()
    emitter.emit_partition_batch(attempt, rows.collector, 0, second)
    assert rows.rows == [[2], [3]]
    past = MemoryEmitter([[[1]]], 3).emit_partition_batch_new(attempt, rows.collector, 0,
                                                              {"index": 4, "amount": 0})
    assert past == {"index": 4, "amount": 0}
