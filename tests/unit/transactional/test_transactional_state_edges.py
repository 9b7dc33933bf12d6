"""SqliteState's defaults (its table, its path) and the key check for keys that are not strings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stormpy.transactional import SqliteState, TransactionalValue


def test_sqlite_state_keeps_its_path_and_the_default_table(tmp_path: Path) -> None:
    state = SqliteState(tmp_path / "s.sqlite")
    assert Path(state.path) == tmp_path / "s.sqlite" and state.table == "transactional_state"
    state.update("k", 1, lambda v: 1)
    state.close()
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "transactional_state" in tables
    other = SqliteState(tmp_path / "s.sqlite", table="mine")
    assert other.table == "mine" and other.get("k") is None  # another table, other keys
    other.close()
    again = SqliteState(tmp_path / "s.sqlite")
    assert again.get("k") == TransactionalValue(1, 1)
    again.close()


@pytest.mark.parametrize("key", [5, None, b"k", ""])
def test_keys_that_are_not_non_empty_strings_are_refused_by_name(tmp_path: Path, key: object) -> None:
    state = SqliteState(tmp_path / "k.sqlite")
    with pytest.raises(ValueError, match=f"state keys are non-empty strings without '/', got {key!r}"):
        state.get(key)  # type: ignore[arg-type]
    state.close()
