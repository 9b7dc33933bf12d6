"""KeyValueState edges: what the bolt sees through pending, prepared and committed layers,
deletes, keys it refuses, the store layout after each step, commits that do nothing, a second
prepare, and state documents that cannot be read (each named by store and key)."""

from __future__ import annotations

from itertools import count

import pytest

from stormpy.state import KeyValueState, MemoryBackend, MemoryStore
from stormpy.state._kv import _enc, _unpack_all
from stormpy.topology._state import CorruptStateError, StateValueError

_names = count()


def fresh() -> MemoryStore:
    return MemoryBackend().at(f"kv-edges-{next(_names)}")


def test_reads_see_pending_over_prepared_over_committed() -> None:
    state = KeyValueState(fresh())
    state.put("a", 1)
    state.put("b", 1)
    state.prepare_commit(1)
    state.commit(1)
    state.put("a", 2)
    state.put("c", 2)
    state.delete("b")
    state.prepare_commit(2)
    state.put("a", 3)
    assert (state.get("a"), state.get("b"), state.get("c")) == (3, None, 2)
    assert state.get("b", "gone") == "gone" and state.get("zz", 7) == 7
    assert "b" not in state and "a" in state and "zz" not in state
    assert dict(state.items()) == {"a": 3, "c": 2} and sorted(state.keys()) == ["a", "c"]
    assert sorted(state) == [("a", 3), ("c", 2)] and len(state) == 2
    state.delete("c")
    assert state.get("c") is None and len(state) == 1
    assert state.delete("nothing") is None and state.delete("a") == 3


def test_a_falsy_value_and_a_falsy_prepared_layer_are_still_seen() -> None:
    state = KeyValueState(fresh())
    state.put("zero", 0)
    state.prepare_commit(1)
    assert state.get("zero", "default") == 0 and "zero" in state
    state.commit(1)
    state.put(None, False)
    assert state.get(None, "default") is False and state.get("zero") == 0


def test_keys_must_be_msgpack_scalars() -> None:
    state = KeyValueState(fresh())
    for key in ("s", 1, b"b", 1.5, True, None):
        state.put(key, key)
    assert len(state) == 5  # True == 1: one key
    with pytest.raises(StateValueError) as err:
        state.put(("a", "b"), 1)
    assert str(err.value) == (f"state {state.store.location} key ('a', 'b'): state keys are str, "
                              "int, bytes, float, bool or None")


def test_the_store_layout_after_prepare_commit_and_rollback() -> None:
    store = fresh()
    state = KeyValueState(store)
    state.put("k", "v")
    state.put("gone", 1)
    state.prepare_commit(1)
    assert store.get("p.1") == {"chunks": 1, "changes": 2}  # the header, over its chunks
    assert _unpack_all(store.get("p.1/0")) == [["k", True, "v"], ["gone", True, 1]]
    assert store.get("meta") is None
    assert state.commit(1)
    assert store.get("meta") == {"committed": 1} and "p.1" not in store.names()
    assert store.get(_enc("k")) == "v"
    state.delete("gone")
    state.prepare_commit(2)
    assert _unpack_all(store.get("p.2/0")) == [["gone", False, None]]
    state.commit(2)
    assert _enc("gone") not in store.names() and state.committed_txid == 2
    state.put("x", 1)
    state.prepare_commit(3)
    state.rollback()
    assert "p.3" not in store.names() and dict(state.items()) == {"k": "v"}
    assert sorted(store.names()) == sorted(["meta", _enc("k")])


def test_commits_that_do_nothing_say_so() -> None:
    store = fresh()
    state = KeyValueState(store)
    assert not state.commit(1)  # nothing prepared
    state.put("a", 1)
    state.prepare_commit(2)
    assert not state.commit(3)  # another txid
    assert state.commit(2) and not state.commit(2) and not state.commit(1)
    assert store.get("meta") == {"committed": 2}
    state.put("late", 1)
    state.prepare_commit(2)  # prepared again under a txid already committed
    assert not state.commit(2) and store.get("meta") == {"committed": 2}


def test_a_second_prepare_needs_the_first_committed_and_may_repeat_itself() -> None:
    state = KeyValueState(fresh())
    state.put("a", 1)
    state.prepare_commit(4)
    state.put("b", 2)
    state.prepare_commit(4)  # a replayed PREPARE of the same checkpoint: widens it
    with pytest.raises(RuntimeError) as err:
        state.prepare_commit(5)
    assert str(err.value) == (f"{state.store.location}: prepare 5 while 4 is prepared and not "
                              "committed")
    assert state.commit(4)
    state.put("c", 3)
    state.prepare_commit(5)
    assert state.commit(5)
    assert dict(KeyValueState(state.store).items()) == {"a": 1, "b": 2, "c": 3}


def test_loading_ignores_foreign_names_and_drops_prepares_after_the_commit_point() -> None:
    store = fresh()
    first = KeyValueState(store)
    first.put("a", 1)
    first.prepare_commit(1)
    first.commit(1)
    first.put("a", 2)
    first.prepare_commit(2)
    store.put("p.x", [1])  # not a prepare of this state
    store.put("other", 5)
    again = KeyValueState(store)
    assert dict(again.items()) == {"a": 1} and again.committed_txid == 1
    assert "p.2" not in store.names() and "p.x" in store.names()
    assert not again.commit(2)  # nothing of 2 is committed by a restarted task
    again.rollback()
    assert "p.x" in store.names() and "other" in store.names()
    assert dict(KeyValueState(store).items()) == {"a": 1}


@pytest.mark.parametrize(("meta", "problem"), [
    ([1], "not a state meta document: [1]"),
    ({"committed": "3"}, "not a state meta document: {'committed': '3'}"),
])
def test_an_unreadable_meta_document_is_named(meta: object, problem: str) -> None:
    store = fresh()
    store.put("meta", meta)
    with pytest.raises(CorruptStateError) as err:
        KeyValueState(store)
    assert str(err.value) == f"state {store.location} key 'meta': {problem}"


def test_an_unreadable_key_or_prepared_document_is_named() -> None:
    store = fresh()
    store.put("d.!!!", 1)
    with pytest.raises(CorruptStateError) as err:
        dict(KeyValueState(store).items())  # read through: found when iterated
    assert str(err.value).startswith(f"state {store.location} key 'd.!!!': not a state key (")
    other = fresh()
    other.put("meta", {"committed": 2})
    other.put("p.1", [["k", True]])  # folded at load (committed), but malformed
    with pytest.raises(CorruptStateError) as err:
        KeyValueState(other)
    assert str(err.value) == (f"state {other.location} key 'p.1': not a list of "
                              "[key, present, value]")
    third = fresh()
    third.put("p.1", 5)
    state = KeyValueState(third)  # after the commit point: dropped unread
    assert "p.1" not in third.names() and not state.commit(1)


def test_deletes_survive_a_restart_between_the_commit_point_and_the_fold() -> None:
    store = fresh()
    state = KeyValueState(store)
    state.put("keep", 1)
    state.put("drop", 2)
    state.prepare_commit(1)
    state.commit(1)
    state.delete("drop")
    state.delete("never-there")
    state.prepare_commit(2)
    store.put("meta", {"committed": 2})  # the commit point, then the crash
    restarted = KeyValueState(store)
    assert not restarted.commit(2) and restarted.committed_txid == 2
    assert dict(restarted.items()) == {"keep": 1}
    assert dict(KeyValueState(store).items()) == {"keep": 1}


def test_deleting_a_key_that_was_never_committed_commits_cleanly() -> None:
    state = KeyValueState(fresh())
    state.put("tmp", 1)
    state.delete("tmp")
    state.delete("ghost")
    state.prepare_commit(1)
    assert state.commit(1) and dict(state.items()) == {}
