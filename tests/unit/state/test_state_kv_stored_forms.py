"""KeyValueState reads what is in its store as it was written, by this release or an earlier one,
and names what it cannot read: the ``d.`` row names are unpadded-newline base64url of the key's
msgpack (rows written before are found), values holding maps with int keys survive a fold from
the stored chunks, an earlier release's one-document ``p.<txid>`` is folded, a header whose
chunks are gone (a fold done, then a crash) is dropped, and each unreadable header or chunk (one
cut short too) is a CorruptStateError naming the store and the key."""

from __future__ import annotations

from itertools import count
from typing import Any

import msgpack
import pytest

from stormpy.state import KeyValueState, MemoryBackend, MemoryStore
from stormpy.topology._state import CorruptStateError

_names = count()


def fresh() -> MemoryStore:
    return MemoryBackend().at(f"kv-forms-{next(_names)}")


def test_committed_rows_are_named_by_the_keys_base64url_msgpack() -> None:
    store = fresh()
    state = KeyValueState(store)
    state.put("a", 1)
    state.put(300, "three hundred")
    state.prepare_commit(1)
    state.commit(1)
    # msgpack "a" is a1 61, 300 is cd 01 2c: their base64url, padded, no newline
    assert sorted(store.names()) == ["d.oWE=", "d.zQEs", "meta"]


def test_rows_written_before_are_found_by_their_names() -> None:
    store = fresh()
    store.put("meta", {"committed": 3})
    store.put("d.oWE=", "from an earlier run")
    store.put("d.zQEs", 7)
    state = KeyValueState(store)
    assert state.get("a") == "from an earlier run" and state.get(300) == 7
    assert dict(state.items()) == {"a": "from an earlier run", 300: 7}


def test_a_value_with_int_keyed_maps_survives_a_fold_from_the_stored_chunks() -> None:
    store = fresh()
    state = KeyValueState(store)
    value = {1: "one", 2: {3: [4]}}
    state.put("m", value)
    state.prepare_commit(1)
    store.put("meta", {"committed": 1})  # the commit point, then the task dies before the fold
    restarted = KeyValueState(store)  # folds p.1 from its chunks
    assert restarted.get("m") == value and "p.1" not in store.names()
    assert KeyValueState(store).get("m") == value


def test_an_earlier_releases_one_document_prepare_is_folded_at_load() -> None:
    store = fresh()
    store.put("meta", {"committed": 2})
    store.put("p.2", [["a", True, 5], ["gone", False, None]])
    store.put("d.pGdvbmU=", "old")  # "gone", committed before
    state = KeyValueState(store)
    assert dict(state.items()) == {"a": 5}
    assert sorted(store.names()) == ["d.oWE=", "meta"]


def test_a_header_whose_chunks_are_gone_was_folded_and_is_dropped() -> None:
    store = fresh()
    store.put("meta", {"committed": 4})
    store.put("p.4", {"chunks": 2, "changes": 3})  # the fold dropped the chunks, then a crash
    store.put("d.oWE=", 1)
    state = KeyValueState(store)
    assert "p.4" not in store.names() and dict(state.items()) == {"a": 1}


def committed_with(name: str, doc: Any, *children: tuple[str, Any]) -> MemoryStore:
    store = fresh()
    store.put("meta", {"committed": 1})
    store.put(name, doc)
    for child, value in children:
        store.put(child, value)
    return store


@pytest.mark.parametrize(("header", "children", "key", "problem"), [
    ({"chunks": "2"}, (), "p.1", "not a prepared checkpoint header: {'chunks': '2'}"),
    ({"changes": 3}, (), "p.1", "not a prepared checkpoint header: {'changes': 3}"),
    ("text", (), "p.1", "not a prepared checkpoint header: 'text'"),
    ({"chunks": 1}, (("p.1/0", "text"),), "p.1/0",
     "not a chunk of packed [key, present, value] entries"),
    ({"chunks": 1}, (("p.1/0", msgpack.packb(5)),), "p.1/0", "not a list of [key, present, value]"),
    ({"chunks": 2}, (("p.1/0", msgpack.packb(["a", True, 1])), ("p.1/1", b"\xc1")),
     "p.1/1", "not a chunk of packed entries (FormatError)"),
    # a chunk cut short inside its second entry: an error, not the first entry alone
    ({"chunks": 1}, (("p.1/0", msgpack.packb(["a", True, 1]) + b"\x93\xa1b"),), "p.1/0",
     "not a chunk of packed entries (cut short inside the entry after 1 whole one(s))"),
])
def test_an_unreadable_header_or_chunk_is_named_by_store_and_key(
        header: Any, children: tuple[tuple[str, Any], ...], key: str, problem: str) -> None:
    store = committed_with("p.1", header, *children)
    with pytest.raises(CorruptStateError) as err:
        KeyValueState(store)
    assert str(err.value).startswith(f"state {store.location} key {key!r}: {problem}"), str(err.value)
    assert err.value.path == f"{store.location} key {key!r}"


def test_a_negative_cache_bound_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^cache_max_keys must be >= 0, got -1$"):
        KeyValueState(fresh(), -1)


def test_the_cache_of_committed_values_answers_each_key_with_its_own_and_learns_commits() -> None:
    store = fresh()
    state = KeyValueState(store)
    state.put(None, "none's")
    state.put("a", 1)
    state.prepare_commit(1)
    state.commit(1)
    reader = KeyValueState(store)
    assert reader.get(None) == "none's" and reader.get("a") == 1  # both read, both cached
    assert reader.get("a") == 1 and reader.get("zz", "absent") == "absent"
    reader.put("a", 2)
    reader.prepare_commit(2)
    reader.commit(2)
    assert reader.get("a") == 2 and reader.get(None) == "none's"


def test_reads_see_pending_changes_over_a_commit_not_yet_folded_and_committed_rows_under_it() -> None:
    store = fresh()
    state = KeyValueState(store)
    state.put("old", "kept")
    state.prepare_commit(1)
    state.commit(1)
    state.put("a", 1)
    state.prepare_commit(2)
    state.commit(2, fold=False)  # committed, its fold still to do
    state.put("a", 3)
    assert state.get("a") == 3 and state.get("old") == "kept"
    state.discard_pending()
    assert state.get("a") == 1
    state.fold()
    assert dict(KeyValueState(store).items()) == {"old": "kept", "a": 1}


def test_a_fold_writes_its_puts_and_its_deletes_in_one_batch_each() -> None:
    store = fresh()
    state = KeyValueState(store)
    for k in "abc":
        state.put(k, 1)
    state.prepare_commit(1)
    state.commit(1)
    calls: list[tuple[int, int]] = []
    write = store.write_encoded

    def recording(puts: Any, deletes: Any = ()) -> None:
        puts, deletes = list(puts), list(deletes)
        calls.append((len(puts), len(deletes)))
        write(puts, deletes)

    store.write_encoded = recording  # type: ignore[method-assign]
    for k in "abc":
        state.delete(k)
    state.put("d", 1)
    state.prepare_commit(2)
    state.commit(2)
    assert calls == [(1, 0), (0, 3)]
    assert dict(KeyValueState(store).items()) == {"d": 1}


def test_a_value_the_prepare_cannot_store_is_named_by_store_and_key() -> None:
    from stormpy.topology._state import MAX_VALUE_BYTES, StateValueError

    state = KeyValueState(fresh())
    state.put("odd", object())
    with pytest.raises(StateValueError) as err:
        state.prepare_commit(1)
    assert str(err.value).startswith(f"state {state.store.location} key 'odd': value must be "
                                     "msgpack-serialisable plain data: ")
    big = KeyValueState(fresh())
    big.put("big", b"x" * MAX_VALUE_BYTES)
    with pytest.raises(StateValueError) as err:
        big.prepare_commit(1)
    assert str(err.value).startswith(f"state {big.store.location} key 'big': ")


def test_bytes_values_stay_bytes_through_the_rows_and_through_a_fold_from_the_chunks() -> None:
    value = b"\xff\x00\xfe"  # not UTF-8: packed as str it would not even decode
    store = fresh()
    state = KeyValueState(store)
    state.put("b", value)
    state.prepare_commit(1)
    state.commit(1)
    assert KeyValueState(store).get("b") == value
    state.put("c", value)
    state.prepare_commit(2)
    store.put("meta", {"committed": 2})  # the commit point, then the task dies
    assert KeyValueState(store).get("c") == value


def test_a_chunk_holds_entries_up_to_exactly_its_limit() -> None:
    from stormpy.state._kv import _Encoded, _unpack_all

    changes = {f"k{i}": i for i in range(5)}  # each entry 6 bytes: 93 a2 6b 3x c3 0x
    packed = _Encoded("loc", changes, 12)
    assert [len(_unpack_all(c)) for c in packed.chunks] == [2, 2, 1]
    assert [len(c) for c in packed.chunks] == [12, 12, 6]


def test_a_fold_that_fails_after_the_commit_point_is_logged_with_its_checkpoint(
        caplog: pytest.LogCaptureFixture) -> None:
    from stormpy.topology._state import StateUnavailableError

    store = fresh()
    state = KeyValueState(store)
    state.put("a", 1)
    state.prepare_commit(3)

    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise StateUnavailableError(store.location, "unreachable")

    store.write_encoded = refuse  # type: ignore[method-assign]
    with caplog.at_level("WARNING", logger="stormpy.state"):
        assert state.commit(3)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"{store.location}: checkpoint 3 is committed; folding its changes failed")
    assert state.get("a") == 1


def test_a_key_whose_row_name_reads_like_a_txid_is_not_taken_for_a_prepare() -> None:
    key = -5855291126575571340  # its row is d.066907439150: digits after two characters
    store = fresh()
    state = KeyValueState(store)
    state.put(key, "kept")
    state.prepare_commit(1)
    state.commit(1)
    assert "d.066907439150" in store.names()
    assert KeyValueState(store).get(key) == "kept" and "d.066907439150" in store.names()
