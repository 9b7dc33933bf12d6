"""The state layer's SQLite backend at its edges: a file reopened by table and base, table names
(checked before the file is touched; every accepted one works, SQL keywords included), encoded
segments, a closed store and its namespaces, another thread, another connection's lock, a damaged
row or a foreign table of the same name, the connection's busy timeout and autocommit, open
errors naming file, table and namespace, and the journal-mode retry stopping at its deadline."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from stormpy.state import SqliteStore
from stormpy.state import _sqlite as sqlite_module
from stormpy.topology._state import (
    CorruptStateError,
    StateKeyError,
    StateUnavailableError,
)


def test_a_sqlite_store_survives_reopening_by_table_and_base(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    s = SqliteStore(path, "tbl", "topo/count-1")
    s.put_many({"meta": {"committed": 3}, "k/1": "v"})
    s.close()
    s.close()  # idempotent
    again = SqliteStore(str(path), "tbl", segments=("topo", "count-1"))
    other_table = SqliteStore(path)
    whole = SqliteStore(path, "tbl")
    try:
        assert again.get("meta") == {"committed": 3} and again.children() == ["k", "meta"]
        assert other_table.children() == []
        assert whole.children() == ["topo"] and whole.get("topo/count-1/k/1") == "v"
        assert whole.timeout_secs == sqlite_module.OPEN_TIMEOUT_SECS == 30.0
    finally:
        for s in (again, other_table, whole):
            s.close()


def test_a_sqlite_table_name_is_checked_before_the_file_is_touched(tmp_path: Path) -> None:
    for bad in ("a b", "x;drop", "", "t-1", "1st", 'a"b'):
        with pytest.raises(ValueError) as err:
            SqliteStore(tmp_path / "never.sqlite", bad)
        assert str(err.value) == ("table name must be letters, digits and '_', not starting with a "
                                  f"digit, got {bad!r}")
    assert not (tmp_path / "never.sqlite").exists()


@pytest.mark.parametrize("table", ["my_state_2", "_", "order", "select", "\u00e9tat"])
def test_any_accepted_table_name_works_even_an_sql_keyword(tmp_path: Path, table: str) -> None:
    path = tmp_path / "names.sqlite"
    s = SqliteStore(path, table)
    s.put_many({"a/b": 1, "c": 2})
    assert s.update("c", lambda old: old + 1) is True
    assert s.delete("c") is True and s.children() == ["a"]
    s.delete_many(["a"])
    s.put("k", table)
    s.close()
    again = SqliteStore(path, table)
    try:
        assert again.get("k") == table and again.names() == ["k"]
    finally:
        again.close()


def test_sqlite_segments_are_encoded_so_odd_names_stay_one_segment(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "odd.sqlite")
    try:
        ns = s.sub("a/b", "c%d", "..")
        ns.put("x y/z", 1)
        assert s.children() == ["a/b"] and s.sub("a/b").children() == ["c%d"]
        assert s.sub("a/b", "c%d").children() == [".."] and ns.children() == ["x y"]
        assert ns.children("x y") == ["z"] and ns.get("x y/z") == 1
        assert s.get("a/b/c%d/../x y/z") is None  # a '/' in a segment is not a path separator
        s.put("a0", 2)  # sorts between "a/" and "a0" bounds: not below "a"
        assert s.children() == ["a/b", "a0"]
    finally:
        s.close()


def test_a_closed_sqlite_store_is_unavailable_naming_the_key(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "c.sqlite")
    ns = s.sub("ns")
    s.close()
    for call, args, where in ((s.get, ("k",), "/k"), (s.put, ("k", 1), ""), (s.delete, ("k",), "/k"),
                              (s.children, ("k",), "/k"), (s.update, ("k", lambda o: 1), "/k"),
                              (ns.get, ("k",), " at ns/k")):
        with pytest.raises(StateUnavailableError) as err:
            call(*args)
        assert str(err.value) == f"state {s.location}{where}: store is closed"
    s.put_many({})  # nothing to write needs no file
    s.delete_many([])


def test_a_sqlite_namespace_does_not_close_the_file_it_shares(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "c.sqlite")
    try:
        ns = s.sub("ns")
        ns.close()
        ns.put("k", 1)
        assert s.get("ns/k") == 1
    finally:
        s.close()
    with pytest.raises(StateUnavailableError):
        ns.get("k")  # closed with the store it came from


def test_a_sqlite_store_is_usable_from_another_thread(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "t.sqlite")
    errors: list[BaseException] = []

    def work() -> None:
        try:
            s.put("from", "thread")
            s.update("n", lambda old: 1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    try:
        assert errors == [] and s.get("from") == "thread" and s.get("n") == 1
    finally:
        s.close()


def test_a_write_another_connection_holds_up_is_unavailable_and_the_store_usable_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "locked.sqlite"
    monkeypatch.setattr(sqlite_module, "OPEN_TIMEOUT_SECS", 0.05)
    s = SqliteStore(path)
    s.put("k", 1)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(StateUnavailableError) as err:
            s.put("k", 2)
        assert str(err.value).startswith(f"state {s.location}: ") and "locked" in str(err.value)
        with pytest.raises(StateUnavailableError, match=r"/k: database is locked"):
            s.update("k", lambda old: 3)
        blocker.execute("ROLLBACK")
    finally:
        blocker.close()
    s.put("k", 4)
    assert s.get("k") == 4
    s.close()


def test_a_sqlite_row_that_is_not_a_state_document_is_corrupt_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite"
    s = SqliteStore(path)
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO stormpy_state (key, doc) VALUES ('ns/k', x'c1')")
    raw.commit()
    raw.close()
    try:
        with pytest.raises(CorruptStateError, match=r"ns/k: not a msgpack document"):
            s.get("ns/k")
        with pytest.raises(CorruptStateError, match=r"ns/k: not a msgpack document"):
            s.update("ns/k", lambda old: 1)
        assert s.children("ns") == ["k"]
    finally:
        s.close()


def test_a_sqlite_table_that_is_not_the_stores_is_corrupt_state_naming_the_store(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE stormpy_state (key TEXT PRIMARY KEY, doc BLOB NOT NULL, "
                "owner TEXT NOT NULL)")
    raw.commit()
    raw.close()
    s = SqliteStore(path)
    try:
        with pytest.raises(CorruptStateError) as err:
            s.put("k", 1)
        assert str(err.value) == (f"state {s.location}: NOT NULL constraint failed: "
                                  "stormpy_state.owner")
        with pytest.raises(CorruptStateError, match=r"table stormpy_state/k: NOT NULL constraint"):
            s.update("k", lambda old: 1)
        assert s.get("k") is None  # nothing half-written, and the store still answers
    finally:
        s.close()


def test_a_sqlite_connection_waits_for_locks_and_commits_every_call(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "conn.sqlite")
    try:
        conn = s._db.conn
        assert conn is not None
        busy_ms = int(sqlite_module.OPEN_TIMEOUT_SECS * 1000)
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (busy_ms,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.isolation_level is None  # autocommit outside the store's own transactions
        s.put("k", 1)
        s.update("k", lambda old: 2)
        assert not conn.in_transaction
    finally:
        s.close()


def test_a_sqlite_file_that_cannot_be_opened_names_the_store(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StateUnavailableError) as err:
        SqliteStore(tmp_path, "t")  # a directory
    assert str(err.value).startswith(f"state sqlite {tmp_path} table t: cannot open (")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.InterfaceError("no interface today")

    monkeypatch.setattr(sqlite_module.sqlite3, "connect", refuse)
    with pytest.raises(StateUnavailableError) as err:
        SqliteStore(tmp_path / "x.sqlite", "t", segments=("ns",))
    assert str(err.value) == (f"state sqlite {tmp_path / 'x.sqlite'} table t at ns: cannot open "
                              "(no interface today)")


def test_a_sqlite_stores_own_segments_are_checked_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(StateKeyError) as err:
        SqliteStore(tmp_path / "s.sqlite", segments=("ok", ""))
    assert str(err.value) == (f"state sqlite {tmp_path / 's.sqlite'}/'': a namespace segment is a "
                              "non-empty string")


def test_a_locked_journal_switch_at_its_deadline_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    class LockedTwice:
        def __init__(self) -> None:
            self.calls = 0

        def execute(self, sql: str) -> None:
            self.calls += 1
            if self.calls <= 2:
                raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(sqlite_module, "OPEN_TIMEOUT_SECS", 0.0)
    monkeypatch.setattr(sqlite_module.time, "monotonic", lambda: 100.0)  # the clock stands still
    monkeypatch.setattr(sqlite_module.time, "sleep", lambda secs: None)
    db = LockedTwice()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        SqliteStore._set_up(db, "t")  # type: ignore[arg-type]
    assert db.calls == 1


def test_a_closed_sqlite_store_names_itself_for_several_keys(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "c.sqlite")
    s.close()
    with pytest.raises(StateUnavailableError) as err:
        s.delete_many(["a", "b"])
    assert str(err.value) == f"state {s.location}: store is closed"
    with pytest.raises(StateUnavailableError) as err:
        s.put_many({"a": 1, "b": 2})
    assert str(err.value) == f"state {s.location}: store is closed"


def test_concurrent_updates_through_two_connections_lose_no_increment(tmp_path: Path) -> None:
    """update() is a compare-and-set across connections (two stores on one file, as two
    processes open it): every read-modify-write lands, none overwrites another's."""
    path = tmp_path / "cas.sqlite"
    stores = [SqliteStore(path), SqliteStore(path)]
    rounds, errors = 40, []

    def bump(old: Any) -> int:
        time.sleep(0.002)  # widen the read-to-write window another connection could slip into
        return (old or 0) + 1

    def work(store: SqliteStore) -> None:
        try:
            for _ in range(rounds):
                store.update("n", bump)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in (*stores, *stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert errors == [] and not any(t.is_alive() for t in threads)
        assert stores[0].get("n") == stores[1].get("n") == rounds * len(threads)
    finally:
        for s in stores:
            s.close()
