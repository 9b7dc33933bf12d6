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
