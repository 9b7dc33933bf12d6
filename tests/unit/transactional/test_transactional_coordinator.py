"""The coordinator spout driven by hand: commit order, replays, restarts and an unreachable store
(in-memory store standing in for ZooKeeper)."""

from __future__ import annotations

from typing import Any

import pytest
from tx_coordinator_kit import EmitRecorder
from tx_memory import NamedMemoryStore

from stormpy.topology._imports import class_path
from stormpy.transactional import MemoryTransactionalSpout, TransactionAttempt
from stormpy.transactional._coordinator import CoordinatorSpout
from stormpy.transactional._store import StoreUnavailable
from stormpy.transactional._streams import BATCH_STREAM, COMMIT_STREAM

DATA = [[[i] for i in range(20)], [[i] for i in range(20)]]


class Harness(EmitRecorder):
    """A coordinator with its emits recorded."""

    def __init__(self, tx_id: str, pending: int = 3, conf: dict[str, Any] | None = None) -> None:
        super().__init__(CoordinatorSpout(tx_id, class_path(MemoryTransactionalSpout),
                                          {"data_by_partition": DATA, "fields": ["n"],
                                           "take_per_batch": 2}),
                         {"topology.max.spout.pending": pending, "transactional.store": "memory",
                          **(conf or {})})

    def batches(self) -> dict[int, tuple[TransactionAttempt, Any]]:
        return {m.transaction_id: (m, v[1]) for s, v, m in self.take() if s == BATCH_STREAM}


@pytest.fixture
def tx_id(request: pytest.FixtureRequest) -> Any:
    name = f"coord-{request.node.name}"
    NamedMemoryStore.forget(name)
    yield name
    NamedMemoryStore.forget(name)


def test_commits_strictly_in_txid_order_when_later_batches_finish_first(tx_id: str) -> None:
    h = Harness(tx_id)
    h.spout.next_tuple()
    first = h.batches()
    assert sorted(first) == [1, 2, 3]  # max pending 3 batches in the processing phase
    h.spout.ack(first[3][0])
    h.spout.ack(first[2][0])
    h.spout.next_tuple()
    assert h.take() == []  # 2 and 3 are processed, but 1 is not: nothing commits
    h.spout.ack(first[1][0])
    assert [(s, m) for s, _v, m in h.take()] == [(COMMIT_STREAM, first[1][0])]
    h.spout.ack(first[1][0])  # commit of 1 done → 2 commits, 4 starts
    out = h.take()
    assert [(s, m.transaction_id) for s, _v, m in out] == [(COMMIT_STREAM, 2), (BATCH_STREAM, 4)]
    assert out[1][1][2] == 1  # the batch tuple names the last committed txid


def test_failed_batch_replays_with_same_txid_and_metadata_and_later_ones_wait(tx_id: str) -> None:
    h = Harness(tx_id)
    h.spout.next_tuple()
    first = h.batches()
    h.spout.ack(first[1][0])
    h.take()  # commit of 1
    h.spout.fail(first[2][0])  # 2 fails: 2 and 3 start again
    again = h.batches()
    assert sorted(again) == [2, 3]
    for txid in (2, 3):
        assert again[txid][1] == first[txid][1]
        assert again[txid][0].attempt_id != first[txid][0].attempt_id
    h.spout.ack(first[3][0])  # the abandoned attempt of 3: ignored
    h.spout.ack(first[1][0])  # 1 committed
    assert [m.transaction_id for s, _v, m in h.take() if s == COMMIT_STREAM] == []
    h.spout.ack(again[2][0])
    assert [m for s, _v, m in h.take() if s == COMMIT_STREAM] == [again[2][0]]


def test_restarted_coordinator_replays_exactly_what_was_in_flight(tx_id: str) -> None:
    h = Harness(tx_id)
    h.spout.next_tuple()
    first = h.batches()
    h.spout.ack(first[1][0])
    h.take()
    h.spout.ack(first[1][0])  # 1 committed
    h.take()
    h.spout.close()
    h2 = Harness(tx_id)  # same store: a restart
    h2.spout.next_tuple()
    replay = h2.batches()
    assert sorted(replay) == [2, 3, 4]
    for txid in (2, 3):
        assert replay[txid][1] == first[txid][1]
        assert replay[txid][0].attempt_id != first[txid][0].attempt_id


class FlakyStore(NamedMemoryStore):
    up = True

    def available(self) -> bool:
        return self.up

    def put(self, key: str, value: Any) -> None:
        if not self.up:
            raise StoreUnavailable("down")
        super().put(key, value)


def test_unreachable_store_stops_new_batches_and_commit_resumes_after(tx_id: str,
                                                                     monkeypatch: Any) -> None:
    store = FlakyStore(tx_id)
    monkeypatch.setattr("stormpy.transactional._coordinator.open_store", lambda conf, context, name: store)
    h = Harness(tx_id, pending=2)
    h.spout.next_tuple()
    first = h.batches()
    h.spout.ack(first[1][0])
    h.take()
    store.up = False
    h.spout.ack(first[1][0])  # commit of 1 completes while the store is down
    h.spout.ack(first[2][0])
    for _ in range(3):
        h.spout.next_tuple()
    assert h.take() == []  # nothing starts or commits
    store.up = True
    h.spout.next_tuple()
    out = h.take()
    assert [(s, m.transaction_id) for s, _v, m in out] == [(COMMIT_STREAM, 2), (BATCH_STREAM, 3)]
    assert store.get("coordinator/current") == 2


def test_coordinator_refuses_a_topology_without_ackers(tx_id: str) -> None:
    with pytest.raises(ValueError, match="needs ackers"):
        Harness(tx_id, conf={"topology.acker.executors": 0})
