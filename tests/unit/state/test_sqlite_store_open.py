"""Opening a SQLite state store: a file that is not a database is corrupt state, a path that
cannot be opened or a lock that does not go away is unavailable state (not corruption), and a
journal-mode switch answered "database is locked" at once is retried until the open timeout."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from stormpy.state import _sqlite as stores
from stormpy.state._sqlite import SqliteStore
from stormpy.topology._state import CorruptStateError, StateUnavailableError


class LockedThenFine:
    """Answers ``execute`` with OperationalError(``error``) ``times`` times, then records."""

    def __init__(self, times: int, error: str = "database is locked") -> None:
        self.times = times
        self.error = error
        self.ran: list[str] = []

    def execute(self, sql: str) -> None:
        if self.times:
            self.times -= 1
            raise sqlite3.OperationalError(self.error)
        self.ran.append(sql.split()[0])


def test_a_locked_journal_switch_is_retried_until_it_goes_through(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(stores.time, "sleep", slept.append)
    db = LockedThenFine(3)
    SqliteStore._set_up(db, "t")  # type: ignore[arg-type]
    assert db.ran == ["PRAGMA", "CREATE"] and slept == [stores.LOCKED_RETRY_SECS] * 3


def test_other_errors_and_a_lock_past_the_timeout_are_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stores.time, "sleep", lambda s: None)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        SqliteStore._set_up(LockedThenFine(1, "disk I/O error"), "t")  # type: ignore[arg-type]
    monkeypatch.setattr(stores, "OPEN_TIMEOUT_SECS", 0.0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        SqliteStore._set_up(LockedThenFine(5), "t")  # type: ignore[arg-type]


def test_a_file_that_is_not_a_database_is_corrupt_and_a_directory_unavailable(tmp_path: Path) -> None:
    garbage = tmp_path / "state.sqlite"
    garbage.write_bytes(b"not a database at all, " * 100)
    with pytest.raises(CorruptStateError, match=r"sqlite .*state.sqlite table stormpy_state: cannot open"):
        SqliteStore(garbage)
    with pytest.raises(StateUnavailableError, match="cannot open"):
        SqliteStore(tmp_path)  # a directory


def test_a_store_opens_while_another_connection_reads_and_writes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    first = SqliteStore(path, "t")
    first.put("k", {"v": 1})
    second: Any = SqliteStore(path, "t")
    try:
        assert second.get("k") == {"v": 1}
        second.put("k", {"v": 2})
        assert first.get("k") == {"v": 2}
    finally:
        second.close()
        first.close()
