"""What every store of the state layer inherits from ``stormpy.state._base`` (several keys at once,
names, where a key is, ``repr``, the refused watch, the pause between compare-and-set rounds,
the checks of keys and namespace segments) and what the memory and SQLite backends do alike at
their edges: ``update`` run again on the newer value, giving up after ``MAX_UPDATE_ROUNDS``,
changing nothing when its function fails or its value cannot be stored; parents keeping their
values; children only below their key. The memory backend's own edges are in
test_state_memory.py, the SQLite backend's in test_state_sqlite.py."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from parts_kit import fresh_redis_store
from stormpy.host.backoff import Backoff
from stormpy.state import MemoryBackend, SqliteStore, Store
from stormpy.state import _base as base_module
from stormpy.state._base import (
    MAX_UPDATE_ROUNDS,
    check_segments,
    contention_pause,
    root_or_segments,
    update_rounds,
)
from stormpy.topology._state import (
    StateKeyError,
    StateStoreError,
    StateUnavailableError,
    StateValueError,
)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "redis":
        r = fresh_redis_store(request.getfixturevalue("redis_server"), "edges")
        yield r
        r.close()
        return
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


def test_the_pause_between_update_rounds_is_the_one_backoff_with_full_jitter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No pause before the first round; then host.backoff's delays (2 ms doubling up to the 20 ms
    cap), each shortened by a random fraction of up to all of itself."""
    slept: list[float] = []
    monkeypatch.setattr(base_module.time, "sleep", slept.append)
    rounds = update_rounds()
    assert next(rounds) == 0 and slept == []
    for _ in range(6):
        next(rounds)
    step, cap = base_module.UPDATE_BACKOFF_SECS, base_module.UPDATE_BACKOFF_CAP_SECS
    bounds = [min(cap, step * 2 ** n) for n in range(6)]
    assert len(slept) == 6 and all(0 <= s <= b for s, b in zip(slept, bounds, strict=True))
    assert bounds[-1] == cap
    backoff = Backoff(step, cap, jitter=1.0, rng=random.Random(7))
    contention_pause(backoff)
    assert backoff.failures == 1 and slept[-1] == backoff.last_delay <= step
    assert list(update_rounds())[-1] == MAX_UPDATE_ROUNDS - 1


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


# -- update, and keys below keys (both backends) ---------------------------------------------------

def test_update_runs_again_on_the_newer_value_after_a_concurrent_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (a SQLite update is one transaction: nobody writes in between)
    store = MemoryBackend().at("cas")
    pauses: list[Backoff] = []
    monkeypatch.setattr(base_module, "contention_pause", pauses.append)
    store.put("n", 1)
    seen: list[Any] = []

    def bump(old: Any) -> Any:
        seen.append(old)
        if len(seen) == 1:
            store.put("n", 10)  # someone else writes while this round computes
        return old + 1

    assert store.update("n", bump) is True
    assert seen == [1, 10] and store.get("n") == 11 and len(pauses) == 1


def test_update_gives_up_when_others_keep_changing_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[Backoff] = []
    monkeypatch.setattr(base_module, "contention_pause", pauses.append)
    store = MemoryBackend().at("busy")
    calls = [0]

    def always_beaten(old: Any) -> Any:
        calls[0] += 1
        store.put("n", calls[0])
        return -1

    with pytest.raises(StateUnavailableError) as err:
        store.update("n", always_beaten)
    assert str(err.value) == f"state memory:busy/n: changed by others {MAX_UPDATE_ROUNDS} times in a row"
    assert calls[0] == MAX_UPDATE_ROUNDS and len(pauses) == MAX_UPDATE_ROUNDS - 1
    assert len({id(p) for p in pauses}) == 1  # one backoff for the whole update: the pause grows
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


def test_an_update_to_a_value_that_cannot_be_stored_names_the_keys_full_path(store: Store) -> None:
    with pytest.raises(StateValueError) as err:
        store.update("a/k", lambda old: object())
    assert err.value.path == f"{store.location}/a/k"
