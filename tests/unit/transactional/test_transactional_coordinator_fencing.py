"""The coordinator spout kept in step with its store's next txid, driven by hand: a processed
transaction another coordinator committed meanwhile gets no commit tuple; a commit write the
store applied although its reply was lost is found as written (nothing in flight is dropped); and
the same steps on a store that is a plain ``StateStore`` (get and put, no compare-and-set)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from tx_coordinator_kit import OPENED, TX, Harness, reset
from tx_memory import NamedMemoryStore

from stormpy.transactional._coordinator import CURRENT_KEY, META_KEY
from stormpy.transactional._store import StoreUnavailable
from stormpy.transactional._streams import BATCH_STREAM, COMMIT_STREAM


@pytest.fixture(autouse=True)
def _reset(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    reset(monkeypatch)
    yield
    NamedMemoryStore.forget(TX)


def _resync_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "is not the store's" in r.getMessage()]


def test_a_processed_transaction_another_coordinator_committed_meanwhile_gets_no_commit(
        caplog: pytest.LogCaptureFixture) -> None:
    """Acked while the store was away, txid 1 is processed; meanwhile another coordinator
    committed 1 and 2 (the store's next txid is 3). Back in touch, this coordinator must not send
    the commit tuple of 1 (its batch would be applied twice): it drops what is in flight and
    starts again from the store's next txid."""
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    first = h.batches()
    store = OPENED[0]
    store.up = False
    h.spout.ack(first[1][0])  # processed; its commit waits for the store
    assert h.take() == []
    store.put(CURRENT_KEY, 3)  # another coordinator committed 1 and 2
    store.up = True
    h.spout.next_tuple()
    assert [m for s, _v, m in h.take() if s == COMMIT_STREAM] == []
    assert _resync_warnings(caplog) == [
        f"transactional {TX}: next txid 1 is not the store's 3 (another coordinator committed "
        "meanwhile); in-flight transactions dropped, resuming from the store"]
    h.spout.next_tuple()
    resumed = h.batches()
    assert sorted(resumed) == [3, 4] and [resumed[t][1][2] for t in (3, 4)] == [2, 2]
    h.spout.ack(first[2][0])  # an attempt dropped by the resync: nothing happens
    assert h.take() == [] and store.get(CURRENT_KEY) == 3


def test_a_coordinator_resuming_from_the_store_replays_the_stored_metadata_not_its_own() -> None:
    """Txids 1-3 are in flight (metadata 10, 20, 30) when another coordinator commits 1-3 and
    starts 4 with metadata of its own (99). Resuming at 4, this coordinator emits 4 with the
    stored 99 (a transactional spout's replay of 4 must stay identical), not a value derived
    from its stale copy (40), and leaves the store's 99 alone."""
    h = Harness({"topology.max.spout.pending": 3})
    h.spout.next_tuple()
    first = h.batches()
    assert [first[t][1][1] for t in (1, 2, 3)] == [10, 20, 30]
    store = OPENED[0]
    store.up = False
    h.spout.ack(first[1][0])
    store.put(f"{META_KEY}/4", 99)  # the other coordinator's transaction 4
    for txid in (1, 2, 3):
        store.delete(f"{META_KEY}/{txid}")  # committed there: cleaned up
    store.put(CURRENT_KEY, 4)
    store.up = True
    h.spout.next_tuple()
    h.spout.next_tuple()
    resumed = h.batches()
    assert 4 in resumed and resumed[4][1][1] == 99
    assert store.get(f"{META_KEY}/4") == 99


def test_a_commit_write_applied_although_its_reply_was_lost_is_found_as_written(
        caplog: pytest.LogCaptureFixture) -> None:
    """Storing 2 as the next txid after the commit of 1 reaches the store, but the reply is lost
    (the write raises). The retry finds 2 stored: the commit of 1 is complete, the transaction in
    flight (2) is kept, and the next one starts; no resync."""
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    first = h.batches()
    store = OPENED[0]
    applied_then_lost: list[bool] = [True]
    update = store.update

    def lossy_update(key: str, fn: Any) -> bool:
        wrote = update(key, fn)
        if applied_then_lost and applied_then_lost.pop():
            raise StoreUnavailable("reply lost")
        return wrote
    store.update = lossy_update  # type: ignore[method-assign]
    h.commit(first[1][0])
    assert h.take() == [] and store.get(CURRENT_KEY) == 2
    h.spout.next_tuple()
    assert list(h.batches()) == [3]
    assert _resync_warnings(caplog) == []
    h.spout.ack(first[2][0])  # still in flight: its commit follows
    assert [(s, m) for s, _v, m in h.take()] == [(COMMIT_STREAM, first[2][0])]


class PlainStore:
    """A ``StateStore`` that is not a store of the state layer: get, put, delete and children
    over a dict, no compare-and-set (the coordinator's fallback: read, then put)."""

    location = "plain"
    timeout_secs = 1.0

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.puts: list[tuple[str, Any]] = []

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def put(self, key: str, value: Any) -> None:
        self.puts.append((key, value))
        self.data[key] = value

    def delete(self, key: str) -> None:
        self.data.pop(key, None)

    def children(self, key: str) -> list[str]:
        prefix = key.strip("/") + "/"
        return sorted({k[len(prefix):].split("/")[0] for k in self.data if k.startswith(prefix)})


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> PlainStore:
    store = PlainStore()
    monkeypatch.setattr("stormpy.transactional._coordinator.open_store",
                        lambda conf, context, name: store)
    return store


def test_on_a_plain_state_store_a_commit_puts_the_next_txid_and_the_next_batch_starts_at_once(
        plain: PlainStore) -> None:
    h = Harness()
    h.spout.next_tuple()
    first = h.batches()
    h.commit(first[1][0])
    assert plain.data[CURRENT_KEY] == 2 and (CURRENT_KEY, 2) in plain.puts
    out = h.batches()  # in the same call as the commit's ack
    assert list(out) == [2] and out[2][1][1:] == [20, 1]
    h.commit(out[2][0])
    assert plain.data[CURRENT_KEY] == 3 and list(h.batches()) == [3]


def test_on_a_plain_state_store_a_commit_the_store_has_passed_is_not_stored_and_the_coordinator_resumes(
        plain: PlainStore, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    h = Harness()
    h.spout.next_tuple()
    first = h.batches()
    h.spout.ack(first[1][0])
    assert [(s, m) for s, _v, m in h.take()] == [(COMMIT_STREAM, first[1][0])]
    plain.data[CURRENT_KEY] = 4  # another coordinator committed up to 3 meanwhile
    h.spout.ack(first[1][0])
    assert plain.data[CURRENT_KEY] == 4 and (CURRENT_KEY, 2) not in plain.puts
    assert len(_resync_warnings(caplog)) == 1
    assert [m.transaction_id for s, _v, m in h.take() if s == BATCH_STREAM] == []
    h.spout.next_tuple()
    assert list(h.batches()) == [4]
