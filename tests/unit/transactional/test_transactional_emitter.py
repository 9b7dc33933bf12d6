"""The partitioned emitter driven by hand: every row of a partition lands in exactly one
transaction's batch, whatever the order batch tuples arrive in and whether storing the metadata
fails (before or after the write reached the store)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from tx_memory import NamedMemoryStore

from stormpy.topology._context import TopologyContext
from stormpy.transactional import MemoryTransactionalSpout, TransactionAttempt
from stormpy.transactional._api import BatchOutputCollector
from stormpy.transactional._emitter import EmitterExecutor, make_executor
from stormpy.transactional._store import StoreUnavailable, TransactionalStore

ROWS = 40  # one partition, 10 rows per batch


class FlakyStore(NamedMemoryStore):
    """A memory store whose next ``put`` fails, before or after writing (a timed-out ZooKeeper
    write that was applied all the same)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.fail_next: str | None = None  # "before" or "after"

    def put(self, key: str, value: Any) -> None:
        mode, self.fail_next = self.fail_next, None
        if mode == "after":
            super().put(key, value)
        if mode is not None:
            raise StoreUnavailable(f"put {key} timed out")
        super().put(key, value)


class Emitter:
    """One emitter task (all partitions) over ``store``; ``batches[txid]`` are the rows of the
    last attempt of ``txid`` that completed."""

    def __init__(self, store: TransactionalStore) -> None:
        spout = MemoryTransactionalSpout([[[i] for i in range(ROWS)]], ["n"], 10)
        context = cast(TopologyContext, SimpleNamespace(task_index=0, component_tasks=[1]))
        self.executor: EmitterExecutor = make_executor(spout, {}, context, lambda: store)
        self.batches: dict[int, list[int]] = {}
        self.attempts = 0

    def emit(self, txid: int) -> None:
        """Emit batch ``txid`` (a new attempt); raises what the executor raised."""
        self.attempts += 1
        attempt = TransactionAttempt(txid, self.attempts)
        rows: list[int] = []

        def emit(values: list[Any], stream: str) -> list[int]:
            rows.append(values[1])
            return [2]
        collector = BatchOutputCollector(emit, lambda *_: None, lambda _: None)
        self.executor.emit_batch(attempt, 1, collector)
        self.batches[txid] = rows

    def committed_rows(self) -> list[int]:
        return sorted(r for rows in self.batches.values() for r in rows)


@pytest.fixture
def store() -> Any:
    name = "emitter-test"
    yield FlakyStore(name)
    NamedMemoryStore.forget(name)


def test_in_order_batches_take_consecutive_rows(store: FlakyStore) -> None:
    e = Emitter(store)
    for txid in (1, 2, 3, 4):
        e.emit(txid)
    e.emit(3)  # a replay is identical
    assert e.batches[3] == list(range(20, 30))
    assert e.committed_rows() == list(range(ROWS))


def test_a_batch_tuple_lost_before_a_later_one_leaves_its_batch_empty(store: FlakyStore) -> None:
    e = Emitter(store)
    e.emit(1)
    e.emit(3)  # 2's batch tuple was lost (its worker was being restarted)
    e.emit(2)  # the replay of 2 after its timeout, then of 3
    e.emit(3)
    e.emit(4)
    assert e.batches[2] == []
    assert e.committed_rows() == list(range(30))  # no row twice, none skipped


@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_failed_metadata_write_never_emits_a_row_twice(store: FlakyStore, mode: str) -> None:
    e = Emitter(store)
    e.emit(1)
    store.fail_next = mode
    with pytest.raises(StoreUnavailable):
        e.emit(2)  # 2 fails on this task; 3 was already sent and arrives next
    e.emit(3)
    e.emit(2)  # 2 and 3 replayed
    e.emit(3)
    e.emit(4)
    assert e.committed_rows() == sorted(set(e.committed_rows()))
    assert e.committed_rows() == list(range(len(e.committed_rows())))
    restarted = Emitter(store)  # a restarted task replays from the store: the same batches
    for txid in (2, 3, 4):
        restarted.emit(txid)
        assert restarted.batches[txid] == e.batches[txid]


def test_an_unreadable_store_fails_the_batch_until_it_returns(store: FlakyStore,
                                                                monkeypatch: Any) -> None:
    e = Emitter(store)
    e.emit(1)
    store.fail_next = "after"
    with pytest.raises(StoreUnavailable):
        e.emit(2)

    def down(key: str) -> list[str]:
        raise StoreUnavailable("no connection")
    monkeypatch.setattr(store, "children", down)
    with pytest.raises(StoreUnavailable):
        e.emit(3)
    monkeypatch.undo()
    e.emit(2)
    e.emit(3)
    assert e.committed_rows() == list(range(30))
