"""The coordinator spout's edges, driven by hand over the in-memory store: how many transactions
``topology.max.spout.pending`` lets in flight, the committed txid its batch tuples carry, what a
commit stores (the next txid; older metadata dropped), a store that cannot be opened, read or
written (nothing starts, one warning per outage, everything resumes), and a user coordinator that
is not ready (asked once per new txid)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from tx_coordinator_kit import ASKED, OPEN_FAILS, OPENED, READY, TX, Harness, Opaque, Store, reset
from tx_memory import NamedMemoryStore

from stormpy.transactional import TransactionAttempt
from stormpy.transactional._coordinator import CURRENT_KEY, META_KEY
from stormpy.transactional._streams import BATCH_STREAM, COMMIT_STREAM


@pytest.fixture(autouse=True)
def _reset(monkeypatch: pytest.MonkeyPatch) -> Any:
    reset(monkeypatch)
    yield
    NamedMemoryStore.forget(TX)


@pytest.mark.parametrize(("pending", "in_flight"), [(None, 1), (0, 1), (-3, 1), (1, 1), ("2", 2), (4, 4)])
def test_max_spout_pending_bounds_the_transactions_in_flight(pending: Any, in_flight: int) -> None:
    h = Harness({"topology.max.spout.pending": pending})
    h.spout.next_tuple()
    h.spout.next_tuple()
    assert sorted(h.batches()) == list(range(1, in_flight + 1))


def test_the_no_acker_error_names_the_topology() -> None:
    with pytest.raises(ValueError) as err:
        Harness({"topology.acker.executors": 0})
    assert str(err.value) == ("transactional topology 'coord-edges' needs ackers: "
                              "topology.acker.executors is 0")


def test_batch_tuples_carry_metadata_and_the_last_committed_txid_and_commits_store_progress() -> None:
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    first = h.batches()
    assert [v[1:] for _a, v in first.values()] == [[10, None], [20, None]]  # nothing committed
    assert [v[0] for _a, v in first.values()] == [first[1][0].to_wire(), first[2][0].to_wire()]
    assert ASKED == ["ready", ("init", 1, None), "ready", ("init", 2, 10)]
    store = OPENED[0]
    assert store.get(CURRENT_KEY) is None and sorted(store.children(META_KEY)) == ["1", "2"]
    h.commit(first[1][0])
    out = h.batches()
    assert list(out) == [3] and out[3][1][1:] == [30, 1]  # 1 committed
    assert store.get(CURRENT_KEY) == 2
    assert sorted(store.children(META_KEY)) == ["1", "2", "3"]  # the last committed is kept
    h.commit(first[2][0])
    assert list(h.batches()) == [4]
    assert store.get(CURRENT_KEY) == 3 and sorted(store.children(META_KEY)) == ["2", "3", "4"]


def test_a_processed_transaction_behind_an_unprocessed_one_gets_no_commit() -> None:
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    first = h.batches()
    h.spout.ack(first[2][0])
    h.spout.next_tuple()
    assert h.take() == []
    h.spout.ack(first[1][0])
    assert [(s, m) for s, _v, m in h.take()] == [(COMMIT_STREAM, first[1][0])]
    h.spout.next_tuple()
    assert h.take() == []  # 1 is committing: no second commit tuple, nothing new
    h.spout.ack(first[1][0])
    assert [(s, m.transaction_id) for s, _v, m in h.take()] == [(COMMIT_STREAM, 2),
                                                                 (BATCH_STREAM, 3)]


def test_a_restart_resumes_from_the_stored_next_txid() -> None:
    h = Harness()
    h.spout.next_tuple()
    h.commit(h.batches()[1][0])
    h.commit(h.batches()[2][0])
    assert list(h.batches()) == [3]
    h.spout.close()
    assert OPENED[0].closed == 1 and ASKED[-1] == "close"
    h2 = Harness()
    h2.spout.next_tuple()
    again = h2.batches()
    assert list(again) == [3] and again[3][1][1:] == [30, 2]


def test_a_store_that_cannot_be_opened_starts_nothing_and_is_opened_again(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    OPEN_FAILS[0] = 2
    h = Harness()
    for _ in range(2):
        h.spout.next_tuple()
        assert h.take() == [] and OPENED == []
    h.spout.next_tuple()
    assert list(h.batches()) == [1] and len(OPENED) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "state store unavailable" in messages[0]
    assert messages[1].endswith("state store back")


def test_a_store_whose_first_read_fails_is_closed_and_opened_again(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    stores: list[Store] = []

    def flaky_open(conf: Any, context: Any, name: str) -> Store:
        store = Store(name)
        store.fail_gets = 1 if not stores else 0
        stores.append(store)
        return store
    monkeypatch.setattr("stormpy.transactional._coordinator.open_store", flaky_open)
    NamedMemoryStore(TX).put(CURRENT_KEY, 5)  # a previous run committed up to 4
    h = Harness()
    h.spout.next_tuple()
    assert h.take() == [] and stores[0].closed == 1
    h.spout.next_tuple()
    out = h.batches()
    assert list(out) == [5] and out[5][1][2] == 4 and len(stores) == 2 and stores[1].closed == 0
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "unavailable" in messages[0] and "back" in messages[1]


def test_an_unreachable_store_warns_once_per_outage_and_resumes(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    first = h.batches()
    store = OPENED[0]
    for outage in range(2):
        store.up = False
        for _ in range(3):
            h.spout.next_tuple()
        store.up = True
        h.spout.next_tuple()
        messages = [r.getMessage() for r in caplog.records]
        assert len(messages) == 2 * (outage + 1)
        assert "state store unavailable" in messages[-2]
        assert messages[-2].endswith(f": state transactional {TX}: no connection")
        assert messages[-1].endswith("state store back")
    h.spout.ack(first[1][0])
    assert [(s, m) for s, _v, m in h.take()] == [(COMMIT_STREAM, first[1][0])]


def test_a_failed_commit_write_is_retried_before_anything_else_starts() -> None:
    h = Harness()
    h.spout.next_tuple()
    first = h.batches()
    store = OPENED[0]
    store.fail_puts = 1
    h.commit(first[1][0])  # saving 2 as the next txid fails: retried on the next call
    assert h.take() == [] and store.get(CURRENT_KEY) is None
    asked = len(ASKED)
    h.spout.next_tuple()
    out = h.batches()
    assert list(out) == [2] and out[2][1][2] == 1 and store.get(CURRENT_KEY) == 2
    assert ASKED[asked:] == ["ready", ("init", 2, 10)]


def test_a_failed_metadata_write_asks_the_coordinator_once_and_the_store_decides() -> None:
    h = Harness()
    h.spout.next_tuple()  # opens the store
    first = h.batches()
    store = OPENED[0]
    h.spout.ack(first[1][0])
    h.take()
    store.fail_meta_puts = 1
    asked = len(ASKED)
    h.spout.ack(first[1][0])  # 1 committed; storing txid 2's metadata fails
    assert h.take() == [] and store.get(CURRENT_KEY) == 2
    assert ASKED[asked:] == ["ready", ("init", 2, 10)]
    h.spout.next_tuple()  # is_ready said yes for 2 already: only the metadata is made again
    out = h.batches()
    assert list(out) == [2] and out[2][1][1] == 20
    assert ASKED[asked:] == ["ready", ("init", 2, 10), ("init", 2, 10)]


def test_a_coordinator_that_is_not_ready_starts_nothing_until_it_is() -> None:
    READY.extend([False, False])
    h = Harness({"topology.max.spout.pending": 3})
    h.spout.next_tuple()
    assert h.take() == [] and ASKED == ["ready"]
    h.spout.next_tuple()
    assert h.take() == []
    h.spout.next_tuple()
    assert sorted(h.batches()) == [1, 2, 3]
    assert [a for a in ASKED if a != "ready"] == [("init", 1, None), ("init", 2, 10),
                                                  ("init", 3, 20)]


def test_a_replayed_transaction_reuses_its_metadata_without_asking_the_coordinator() -> None:
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    first = h.batches()
    asked = len(ASKED)
    h.spout.fail(first[1][0])
    again = h.batches()
    assert sorted(again) == [1, 2] and ASKED[asked:] == []
    assert [again[t][1][1] for t in (1, 2)] == [10, 20]
    h.spout.fail(first[2][0])  # abandoned attempts: nothing happens
    h.spout.ack(first[1][0])
    h.spout.ack(TransactionAttempt(7, 1))  # never started
    h.spout.fail(TransactionAttempt(7, 1))
    assert h.take() == []
    h.spout.ack(again[1][0])
    assert [(s, m) for s, _v, m in h.take()] == [(COMMIT_STREAM, again[1][0])]


def test_an_opaque_spout_starts_transactions_without_metadata_when_its_coordinator_is_ready() -> None:
    READY.append(False)
    h = Harness({"topology.max.spout.pending": 2}, Opaque)
    h.spout.next_tuple()
    assert h.take() == []
    h.spout.next_tuple()
    out = h.batches()
    assert sorted(out) == [1, 2] and [out[t][1][1] for t in (1, 2)] == [None, None]
    assert ASKED == ["ready", "ready", "ready"]  # no initialize_transaction: emitters keep all
    h.spout.close()
    assert ASKED[-1] == "close"


def test_attempt_ids_are_random_non_negative_64_bit_signed_integers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stormpy.transactional._coordinator.random.getrandbits",
                        lambda k: (1 << k) - 1)  # the highest id the coordinator can draw
    h = Harness({"topology.max.spout.pending": 2})
    h.spout.next_tuple()
    out = h.batches()
    assert [out[t][0].attempt_id for t in (1, 2)] == [2**63 - 1, 2**63 - 1]


def test_a_stale_coordinator_sends_no_commit_for_a_txid_another_one_committed(
        caplog: pytest.LogCaptureFixture) -> None:
    """A coordinator cut off from the store (its host partitioned) while a new one, placed
    elsewhere, commits on: when the old one is back (store reachable again, its worker not yet
    stopped) its in-memory next txid is behind the store's. It must not commit that txid again
    (the committer would apply the batch a second time: the stored txid is a later one), nor move
    the stored next txid back; it resumes from the store instead."""
    caplog.set_level(logging.WARNING, "stormpy.transactional")
    old = Harness({"topology.max.spout.pending": 2})
    old.spout.next_tuple()
    stale = old.batches()
    old.spout.ack(stale[1][0])  # 1 processed: its commit tuple goes out
    assert [(s, m) for s, _v, m in old.take()] == [(COMMIT_STREAM, stale[1][0])]
    OPENED[0].up = False  # the cut: the commit of 1 and batch 2 complete while it is away
    old.spout.ack(stale[1][0])
    old.spout.ack(stale[2][0])
    assert old.take() == []
    new = Harness({"topology.max.spout.pending": 2})  # the executors moved: 1 and 2 again
    new.spout.next_tuple()
    replay = new.batches()
    assert sorted(replay) == [1, 2]
    new.spout.ack(replay[2][0])
    new.commit(replay[1][0])
    assert [(s, m) for s, _v, m in new.take()][:1] == [(COMMIT_STREAM, replay[2][0])]
    new.spout.ack(replay[2][0])
    assert OPENED[1].get(CURRENT_KEY) == 3
    OPENED[0].up = True  # the heal
    old.spout.next_tuple()
    out = old.take()
    assert [m for s, _v, m in out if s == COMMIT_STREAM] == []  # no second commit of 1 or 2
    assert OPENED[0].get(CURRENT_KEY) == 3  # not moved back to 2
    assert any("next txid 1 is not the store's 3" in r.getMessage() for r in caplog.records)
    old.spout.next_tuple()
    resumed = old.batches()
    assert sorted(resumed) == [3, 4]  # from the store, with the metadata stored for them
    assert [resumed[t][1][1:] for t in (3, 4)] == [[30, 2], [40, 2]]
    assert [OPENED[1].get(f"{META_KEY}/{t}") for t in (3, 4)] == [30, 40]
    old.spout.ack(stale[1][0])  # late acks of dropped attempts change nothing
    old.spout.fail(stale[2][0])
    assert old.take() == []
