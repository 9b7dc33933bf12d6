"""The state layer's memory and SQLite backends at their edges, and what every store inherits from
``stormpy.state.base``: where a key is (``where``, ``repr``, the namespaces' names), the pause
between compare-and-set rounds and giving up after ``MAX_UPDATE_ROUNDS``, watches that are
cancelled or fail, the bounded lock, a SQLite file reopened, closed, shared with a namespace or
used from another thread, and a failed ``update`` leaving no transaction open."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stormpy.state import MemoryBackend, SqliteStore, Store
from stormpy.state import base as base_module
from stormpy.state import memory as memory_module
from stormpy.state import sqlite as sqlite_module
from stormpy.state.base import MAX_UPDATE_ROUNDS, check_segments, contention_pause, root_or_segments
from stormpy.topology.state import (
    AREAS,
    CHECKPOINTS,
    TRANSACTIONAL,
    CorruptStateError,
    StateKeyError,
    StateStoreError,
    StateUnavailableError,
    StateValueError,
)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        yield MemoryBackend().at("edges")
        return
    s = SqliteStore(tmp_path / "edges.sqlite")
    yield s
    s.close()


# -- base ------------------------------------------------------------------------------------------

class DictStore(Store):
    """The smallest store: only the abstract calls, over a dict (the base gives the rest)."""

    location = "dict:here"

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.calls: list[tuple[str, str]] = []

    def put(self, key: str, value: Any) -> None:
        self.calls.append(("put", key))
        self.data[key] = value

    def delete(self, key: str) -> bool:
        self.calls.append(("delete", key))
        return self.data.pop(key, None) is not None

    def children(self, key: str = "") -> list[str]:
        assert key == ""
        return sorted(self.data)


def test_the_base_gives_several_keys_names_and_places_from_the_calls_of_its_subclass() -> None:
    s = DictStore()
    s.put_many({"b": 2, "a": 1})
    assert s.data == {"b": 2, "a": 1} and s.calls == [("put", "b"), ("put", "a")]
    s.delete_many(iter(["a", "nothing"]))
    assert s.data == {"b": 2} and s.calls[2:] == [("delete", "a"), ("delete", "nothing")]
    assert s.names() == ["b"]
    assert s.available() is True
    assert s.close() is None and s.close() is None
    assert s.where("") == "dict:here" and s.where("a/b c") == "dict:here/a/b c"
    with pytest.raises(StateKeyError) as err:
        s.where("a//b")
    assert err.value.path == "dict:here/a//b"
    assert repr(s) == "DictStore('dict:here')"


def test_a_store_that_cannot_watch_says_which_key_and_which_store() -> None:
    with pytest.raises(StateStoreError) as err:
        DictStore().watch("a/b", print)
    assert str(err.value) == "state dict:here/a/b: DictStore cannot watch keys"
    assert err.value.path == "dict:here/a/b"


def test_the_base_leaves_the_rest_to_its_subclasses() -> None:
    s = Store()
    for call, args in ((s.get, ("k",)), (s.put, ("k", 1)), (s.delete, ("k",)), (s.children, ()),
                       (s.update, ("k", lambda old: 1)), (s.sub, ("a",))):
        with pytest.raises(NotImplementedError):
            call(*args)
    assert (s.location, s.timeout_secs) == ("store", 10.0)


def test_the_pause_between_update_rounds_grows_with_the_round_up_to_ten_steps(
        monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[tuple[float, float]] = []
    slept: list[float] = []
    monkeypatch.setattr(base_module.random, "uniform", lambda a, b: drawn.append((a, b)) or b)
    monkeypatch.setattr(base_module.time, "sleep", slept.append)
    for round_ in (0, 1, 4, 9, 10, 50):
        contention_pause(round_)
    step = base_module.UPDATE_BACKOFF_SECS
    bounds = [step * n for n in (1, 2, 5, 10, 10, 10)]
    assert drawn == [(0, b) for b in bounds] and slept == bounds


def test_keys_and_namespace_segments_are_checked_naming_the_store() -> None:
    assert root_or_segments("loc", "") == ()
    assert root_or_segments("loc", "a/b") == ("a", "b")
    assert check_segments("loc", ("a/b", "c")) == ("a/b", "c")
    assert check_segments("loc", ()) == ()
    for bad in ("", 3, None):
        with pytest.raises(StateKeyError) as err:
            check_segments("loc", ("ok", bad))  # type: ignore[arg-type]
        assert str(err.value) == f"state loc/{bad!r}: a namespace segment is a non-empty string"


def test_a_namespace_is_named_after_its_store_and_segments(tmp_path: Path) -> None:
    mem = MemoryBackend().at("a", "b")
    assert mem.location == "memory:a/b"
    inner = mem.sub("c/d", "e")
    assert inner.location == "memory:a/b/c/d/e"
    assert inner.where("k") == "memory:a/b/c/d/e/k" and repr(inner) == "MemoryStore('memory:a/b/c/d/e')"
    with pytest.raises(StateKeyError, match="memory:a/b/3"):
        mem.sub(3)  # type: ignore[arg-type]
    s = SqliteStore(tmp_path / "n.sqlite", "tbl")
    try:
        assert s.location == f"sqlite {tmp_path / 'n.sqlite'} table tbl"
        ns = s.sub("x/y", "z")
        assert ns.location == f"sqlite {tmp_path / 'n.sqlite'} table tbl at x/y/z"
        assert ns.sub("w").location.endswith(" at x/y/z/w")
        with pytest.raises(StateKeyError, match=r"table tbl/''"):
            s.sub("")
        with pytest.raises(StateKeyError, match=r"at x/y/z/''"):
            ns.sub("")
    finally:
        s.close()


# -- update, and keys below keys (both backends) ---------------------------------------------------------

def test_update_runs_again_on_the_newer_value_after_a_concurrent_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (a SQLite update is one transaction: nobody writes in between)
    store = MemoryBackend().at("cas")
    pauses: list[int] = []
    monkeypatch.setattr(memory_module, "contention_pause", pauses.append)
    store.put("n", 1)
    seen: list[Any] = []

    def bump(old: Any) -> Any:
        seen.append(old)
        if len(seen) == 1:
            store.put("n", 10)  # someone else writes while this round computes
        return old + 1

    assert store.update("n", bump) is True
    assert seen == [1, 10] and store.get("n") == 11 and pauses == [1]


def test_update_gives_up_when_others_keep_changing_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[int] = []
    monkeypatch.setattr(memory_module, "contention_pause", pauses.append)
    store = MemoryBackend().at("busy")
    calls = [0]

    def always_beaten(old: Any) -> Any:
        calls[0] += 1
        store.put("n", calls[0])
        return -1

    with pytest.raises(StateUnavailableError) as err:
        store.update("n", always_beaten)
    assert str(err.value) == f"state memory:busy/n: changed by others {MAX_UPDATE_ROUNDS} times in a row"
    assert calls[0] == MAX_UPDATE_ROUNDS and pauses == list(range(1, MAX_UPDATE_ROUNDS))
    assert store.get("n") == MAX_UPDATE_ROUNDS


def test_update_of_a_missing_key_or_the_stores_own_node(store: Store) -> None:
    seen: list[Any] = []
    assert store.update("", lambda old: seen.append(old) or {"own": 1}) is True
    assert store.get("") == {"own": 1} and seen == [None]
    assert store.update("a/b", lambda old: seen.append(old) or 0) is True  # 0 is a value
    assert store.get("a/b") == 0 and seen == [None, None]
    assert store.update("a/b", lambda old: seen.append(old) or None) is False
    assert seen[-1] == 0 and store.get("a/b") == 0


def test_an_update_to_a_value_that_cannot_be_stored_names_the_key(store: Store) -> None:
    store.put("k", 1)
    with pytest.raises(StateValueError, match="k"):
        store.update("k", lambda old: object())
    assert store.get("k") == 1
    store.put("k", 2)  # the store is still usable
    assert store.get("k") == 2


def test_an_update_whose_function_fails_changes_nothing_and_leaves_the_store_usable(store: Store) -> None:
    store.put("k", 1)

    def boom(old: Any) -> Any:
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        store.update("k", boom)
    assert store.get("k") == 1
    store.put("k", 2)
    assert store.update("k", lambda old: old + 1) is True and store.get("k") == 3


def test_a_parent_keeps_its_own_value_when_children_are_written(store: Store) -> None:
    store.put("a", "parent")
    store.put("a/b/c", 1)
    store.put_many({"a/d": 2, "a/b": 3})
    assert store.get("a") == "parent" and store.get("a/b") == 3
    assert store.children("a") == ["b", "d"] and store.children("a/b") == ["c"]
    assert store.delete("a/b") is True
    assert store.get("a") == "parent" and store.children("a") == ["d"]
    assert store.delete("nothing") is False
    assert store.delete("a/d") is True and store.delete("a/d") is False


def test_children_are_only_direct_and_only_below_the_key(store: Store) -> None:
    store.put_many({"ab": 1, "a/x/y": 2, "a/z": 3, "a0": 4, "a.b": 5, "b/a": 6})
    assert store.children("a") == ["x", "z"]
    assert store.children() == ["a", "a.b", "a0", "ab", "b"]
    assert store.delete("a") is True
    assert store.names() == ["a.b", "a0", "ab", "b"]
    assert store.get("ab") == 1 and store.get("a0") == 4


def test_deleting_several_keys_takes_their_subtrees_and_ignores_missing_ones(store: Store) -> None:
    store.put_many({"a/1": 1, "a/2": 2, "b": 3, "c": 4})
    store.delete_many(["a", "c", "missing"])
    assert store.names() == ["b"] and store.get("a/1") is None
    store.delete_many([])
    store.put_many({})
    assert store.names() == ["b"]


# -- memory ----------------------------------------------------------------------------------------

def test_a_memory_backend_and_its_stores_are_bounded_by_its_timeout() -> None:
    backend = MemoryBackend()
    assert backend.timeout_secs == 5.0 and backend.description == "memory"
    assert backend.store(CHECKPOINTS, "t").timeout_secs == 5.0
    quick = MemoryBackend(timeout_secs=0.25)
    assert quick.at("x").timeout_secs == 0.25
    assert quick.named_store(TRANSACTIONAL, "tx", "n").timeout_secs == 0.25


def test_a_busy_memory_backend_names_the_key_and_its_bound() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.at("w")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with backend.locked("test"):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        for call, args, path in ((store.get, ("k",), "memory:w/k"),
                                 (store.put, ("k", 1), "memory:w"),
                                 (store.delete, ("k",), "memory:w/k"),
                                 (store.children, ("k",), "memory:w/k"),
                                 (store.update, ("k", lambda old: 1), "memory:w/k")):
            with pytest.raises(StateUnavailableError) as err:
                call(*args)
            assert str(err.value) == f"state {path}: store busy for 0.05 s"
    finally:
        release.set()
        holder.join(10)
    store.put("k", 1)  # the lock was released after every refusal
    assert store.get("k") == 1


def test_named_and_anywhere_stores_of_a_memory_backend() -> None:
    backend = MemoryBackend()
    named = backend.named_store(TRANSACTIONAL, "tx", "global/count")
    assert named.location == "memory:transactional/tx:global/count"
    named.put("coordinator/current", 3)
    assert backend.named_store(TRANSACTIONAL, "tx", "global/count").get("coordinator/current") == 3
    assert backend.named_store(CHECKPOINTS, "tx", "global/count").children() == []
    assert backend.named_store(TRANSACTIONAL, "kinesis", "global/count").children() == []
    with pytest.raises(ValueError, match="unknown state area"):
        backend.named_store("nowhere", "tx", "n")
    assert backend.at().location == "memory:"
    backend.at("x", "y").put("k", 1)
    assert backend.at("x").get("y/k") == 1 and backend.at("x").children() == ["y"]


def test_dropping_a_topology_removes_every_area_of_it_and_tells_its_watchers() -> None:
    backend = MemoryBackend()
    for area in AREAS:
        backend.store(area, "t-1").put("k", area)
    backend.store(CHECKPOINTS, "t-2").put("k", "other")
    backend.store(CHECKPOINTS, "t-10").put("k", "longer id")
    seen: list[Any] = []
    backend.store(TRANSACTIONAL, "t-1").watch("k", seen.append)
    backend.drop("t-1")
    assert all(backend.store(area, "t-1").children() == [] for area in AREAS)
    assert backend.store(CHECKPOINTS, "t-2").get("k") == "other"
    assert backend.store(CHECKPOINTS, "t-10").get("k") == "longer id"
    assert seen == [TRANSACTIONAL, None]
    backend.drop("never-there")  # nothing to drop


def test_a_cancelled_watch_stays_cancelled_and_others_on_the_key_go_on() -> None:
    store = MemoryBackend().at("w")
    first: list[Any] = []
    second: list[Any] = []
    cancel_first = store.watch("k", first.append)
    store.watch("k", second.append)
    store.put("k", 1)
    cancel_first()
    cancel_first()  # twice is harmless
    store.put("k", 2)
    assert first == [None, 1] and second == [None, 1, 2]


def test_a_watch_cancelled_while_its_change_is_due_is_not_called() -> None:
    store = MemoryBackend().at("w")
    seen: list[Any] = []
    cancels: list[Callable[[], None]] = []
    store.watch("k", lambda value: cancels[0]() if value == 1 else None)  # cancels the other
    cancels.append(store.watch("k", seen.append))
    store.put("k", 1)
    assert seen == [None]


def test_a_failing_watch_callback_is_logged_and_the_others_still_called(
        caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryBackend().at("w")
    seen: list[Any] = []

    def failing(value: Any) -> None:
        if value is not None:
            raise RuntimeError("watcher broke")

    store.watch("k", failing)
    store.watch("k", seen.append)
    with caplog.at_level(logging.ERROR, logger="stormpy.state"):
        store.put("k", 1)
        store.delete("k")
    assert seen == [None, 1, None] and store.get("k") is None
    assert [r.exc_info[1].args for r in caplog.records if r.exc_info] == [("watcher broke",)]


def test_watches_hear_of_several_keys_and_of_subtrees_removed_at_once() -> None:
    store = MemoryBackend().at("w")
    seen: dict[str, list[Any]] = {"a": [], "b/c": []}
    for key, values in seen.items():
        store.watch(key, values.append)
    store.put_many({"a": 1, "b/c": 2})
    store.delete_many(["a", "b"])
    assert seen == {"a": [None, 1, None], "b/c": [None, 2, None]}


def test_a_memory_store_keeps_a_copy_of_what_it_was_given() -> None:
    store = MemoryBackend().at("w")
    value = {"list": [1, 2]}
    store.put("k", value)
    value["list"].append(3)
    assert store.get("k") == {"list": [1, 2]}
    assert store.get("missing", "dflt") == "dflt" and store.get("", "dflt") == "dflt"


# -- SQLite ------------------------------------------------------------------------------------------

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


def test_an_update_to_a_value_that_cannot_be_stored_names_the_keys_full_path(store: Store) -> None:
    with pytest.raises(StateValueError) as err:
        store.update("a/k", lambda old: object())
    assert err.value.path == f"{store.location}/a/k"


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


def test_a_busy_memory_backend_names_what_waited() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.store(CHECKPOINTS, "t-1")
    cancel = store.watch("k", lambda value: None)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with backend.locked("test"):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        for call, args, path in ((store.delete_many, (["k"],), "memory:checkpoints/t-1"),
                                 (store.watch, ("k", print), "memory:checkpoints/t-1/k"),
                                 (cancel, (), "memory:checkpoints/t-1/k"),
                                 (backend.store, (CHECKPOINTS, "t-2"), "memory:checkpoints/t-2"),
                                 (backend.drop, ("t-1",), "memory:*/t-1"),
                                 (backend.notify_due, (), "memory:watchers")):
            with pytest.raises(StateUnavailableError) as err:
                call(*args)
            assert err.value.path == path
    finally:
        release.set()
        holder.join(10)


def test_an_update_that_finds_the_store_busy_when_writing_names_the_key() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.at("w")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with backend.locked("test"):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)

    def grab_the_lock_meanwhile(old: Any) -> Any:
        holder.start()
        assert held.wait(10)
        return 1

    try:
        with pytest.raises(StateUnavailableError) as err:
            store.update("k", grab_the_lock_meanwhile)
        assert str(err.value) == "state memory:w/k: store busy for 0.05 s"
    finally:
        release.set()
        holder.join(10)
    assert store.get("k") is None


def test_a_cancelled_watch_leaves_nothing_behind() -> None:
    backend = MemoryBackend()
    store = backend.at("w")
    cancels = [store.watch("k", lambda value: None) for _ in range(3)]
    assert len(backend.watchers[("w", "k")]) == 3
    for cancel in cancels:
        cancel()
    assert backend.watchers[("w", "k")] == []


def test_a_memory_parent_stays_after_its_last_child_goes_as_a_znode_would() -> None:
    backend = MemoryBackend()
    store = backend.at("w")
    store.put("a/b/c", 1)
    assert store.delete("a/b/c") is True
    assert store.children() == ["a"] and store.children("a") == ["b"]
    assert store.get("a") is None and store.get("a/b") is None  # no value of their own
    assert store.delete("a") is True and store.children() == []
    assert backend.at().children() == ["w"]  # the store's own node stays too
    assert store.delete("") is True and backend.at().children() == []
    assert backend.at().delete("") is False  # nothing is left, not even the top


def test_a_corrupt_memory_node_is_named_by_update_and_watch() -> None:
    backend = MemoryBackend()
    store = backend.at("w")
    backend.nodes[("w", "k")] = b"\xc1"  # not a state document (no store call writes one)
    with pytest.raises(CorruptStateError) as err:
        store.update("k", lambda old: 1)
    assert err.value.path == "memory:w/k"
    with pytest.raises(CorruptStateError) as err:
        store.watch("k", print)
    assert err.value.path == "memory:w/k"
