"""A checkpoint's changes are packed once: the fold writes the state documents its PREPARE packed
(``Store.write_encoded``) and they are the documents ``encode_state`` gives; the chunks keep the
``[key, present, value]`` format a restarted task folds; every backend's ``write_encoded`` has
``write_batch``'s effect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from parts_kit import fresh_redis_store
from stormpy.state import KeyValueState, MemoryBackend, SqliteStore, Store
from stormpy.state._base import encode_packed
from stormpy.state._kv import _DELETED, _enc, _Encoded, _unpack_all
from stormpy.topology._state import MAX_VALUE_BYTES, StateValueError, encode_state

VALUES = [0, -1, 2**40, 1.5, "text", b"\x00bytes", None, True, [1, "a", [2.0]],
          {"k": {"nested": [1, 2]}}, "x" * 70_000]


@pytest.mark.parametrize("value", VALUES)
def test_a_packed_value_gives_the_document_encode_state_gives(value: Any) -> None:
    assert encode_packed("p", msgpack.packb(value, use_bin_type=True)) == encode_state("p", value)


def test_a_packed_value_over_the_limit_is_refused_naming_its_path() -> None:
    with pytest.raises(StateValueError, match="big/key.*limit"):
        encode_packed("big/key", msgpack.packb(b"x" * MAX_VALUE_BYTES, use_bin_type=True))


def test_the_chunks_hold_every_change_as_key_present_value_within_their_size() -> None:
    changes: dict[Any, Any] = {f"k{i}": i for i in range(3000)}
    changes.update({7: _DELETED, "gone": _DELETED, ("t"): [1, 2]})
    packed = _Encoded("loc", changes, 4096)
    assert len(packed.chunks) > 1 and all(len(c) <= 4096 for c in packed.chunks)
    entries = [e for chunk in packed.chunks for e in _unpack_all(chunk)]
    assert entries == [[k, v is not _DELETED, None if v is _DELETED else v]
                       for k, v in changes.items()]
    assert packed.deletes == [_enc(7), _enc("gone")]
    assert dict(packed.puts) == {_enc(k): encode_state("x", v) for k, v in changes.items()
                                 if v is not _DELETED}


def test_an_entry_larger_than_a_chunk_is_a_chunk_of_its_own() -> None:
    packed = _Encoded("loc", {"a": 1, "big": "y" * 500, "b": 2}, 100)
    assert [len(_unpack_all(c)) for c in packed.chunks] == [1, 1, 1]


def test_a_value_that_cannot_be_packed_fails_the_prepare_naming_its_key() -> None:
    store = MemoryBackend().at("unpackable")
    state = KeyValueState(store)
    state.put("fine", 1)
    state.put("odd", object())
    with pytest.raises(StateValueError, match="'odd'.*msgpack"):
        state.prepare_commit(1)
    assert store.get("p.1") is None


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        made: Store = MemoryBackend().at("encoded")
    elif request.param == "sqlite":
        made = SqliteStore(tmp_path / "encoded.sqlite")
    else:
        made = fresh_redis_store(request.getfixturevalue("redis_server"), "encoded")
    yield made
    made.close()


def test_write_encoded_has_write_batchs_effect(store: Store) -> None:
    store.write_batch({"a": 1, "b": [2], "c": "three", "n/deep": 4})
    store.write_encoded([("a", encode_state("a", {"x": 1})), ("d", encode_state("d", None)),
                         ("m/deep", encode_state("m/deep", 5))], ["b", "n"])
    assert {k: store.get(k, "absent") for k in ("a", "b", "c", "d", "m/deep", "n/deep")} == {
        "a": {"x": 1}, "b": "absent", "c": "three", "d": None, "m/deep": 5, "n/deep": "absent"}
    assert store.children() == ["a", "c", "d", "m"]


def test_a_commit_writes_the_values_as_they_were_prepared(store: Store) -> None:
    state = KeyValueState(store)
    state.put("gone", 0)
    state.prepare_commit(1)
    state.commit(1)
    value = [1]
    state.put("k", value)
    state.put("other", 2)
    state.delete("gone")
    state.prepare_commit(2)
    value.append(2)  # changed after PREPARE: the commit writes what was prepared
    state.commit(2)
    assert dict(KeyValueState(store).items()) == {"k": [1], "other": 2}
    assert sorted(store.children()) == sorted(["meta", _enc("k"), _enc("other")])
