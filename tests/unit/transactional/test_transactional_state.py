"""TransactionalState on SQLite: a batch applies once per txid; opaque values recompute a replay
from the previous value."""

from __future__ import annotations

from pathlib import Path

import pytest

from stormpy.transactional import OpaqueValue, SqliteState, TransactionalValue
from stormpy.transactional._attempt import TransactionAttempt


def test_update_applies_each_txid_once(tmp_path: Path) -> None:
    state = SqliteState(tmp_path / "s.sqlite")
    assert state.get("count") is None
    assert state.update("count", 1, lambda v: (v or 0) + 5) == TransactionalValue(1, 5)
    assert state.update("count", 1, lambda v: (v or 0) + 5) == TransactionalValue(1, 5)  # replay
    assert state.update("count", 2, lambda v: v + 3) == TransactionalValue(2, 8)
    state.close()
    reopened = SqliteState(tmp_path / "s.sqlite")
    assert reopened.get("count") == TransactionalValue(2, 8)
    assert list(reopened.keys()) == ["count"]
    reopened.close()


def test_opaque_replay_with_different_content_starts_from_previous(tmp_path: Path) -> None:
    state = SqliteState(tmp_path / "o.sqlite")
    assert state.update_opaque("n", 1, lambda v: (v or 0) + 10) == OpaqueValue(1, None, 10)
    assert state.update_opaque("n", 2, lambda v: v + 4) == OpaqueValue(2, 10, 14)
    # txid 2 replayed with different content: 10 + 6, not 14 + 6
    assert state.update_opaque("n", 2, lambda v: v + 6) == OpaqueValue(2, 10, 16)
    assert state.get_opaque("n") == OpaqueValue(2, 10, 16)
    state.close()


def test_bad_keys_and_tables_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="table name"):
        SqliteState(tmp_path / "x.sqlite", table="bad;name")
    state = SqliteState(tmp_path / "x.sqlite")
    with pytest.raises(ValueError, match="state keys"):
        state.get("a/b")
    state.close()


def test_transaction_attempt_wire_form() -> None:
    a = TransactionAttempt(3, 99)
    assert TransactionAttempt.of(a.to_wire()) == a == TransactionAttempt.of((3, 99))
    assert a.key == (3, 99) and hash(a) == hash(TransactionAttempt(3, 99))
    with pytest.raises(ValueError, match="not a transaction attempt"):
        TransactionAttempt.of("nope")
