"""A conformance check for :class:`~stormpy.topology._state.StateStore` implementations: run
:func:`check_state_store` on an empty store (memory, ZooKeeper, or a new backend) and it exercises
the whole contract of :mod:`stormpy.topology._state`, raising AssertionError at the first breach."""

from __future__ import annotations

from stormpy.topology._state import (
    MAX_VALUE_BYTES,
    StateKeyError,
    StateStore,
    StateStoreError,
    StateValueError,
)

__all__ = ["check_state_store"]


def _raises(error: type[BaseException], fn: object, *args: object, naming: str = "") -> StateStoreError:
    try:
        fn(*args)  # type: ignore[operator]
    except error as exc:
        assert isinstance(exc, StateStoreError), f"{exc!r} is not a StateStoreError"
        assert naming in str(exc), f"{exc} does not name {naming!r}"
        return exc
    raise AssertionError(f"{fn!r}{args!r} did not raise {error.__name__}")


def check_state_store(store: StateStore) -> None:
    """Exercise ``store`` (which must start empty) against the StateStore contract."""
    assert store.children() == [], "the store must start empty"
    assert store.get("missing") is None and store.get("missing", 7) == 7
    value = {"offset": 2**40, "ok": True, "ratio": 0.5, "name": "shard/1", "raw": b"\x00\xff",
             "list": [1, (2, 3)], "nested": {"a": None}, "by_partition": {0: 10, 1: 11}}
    store.put("spout/shard-0001", value)
    back = store.get("spout/shard-0001")
    assert back == {**value, "list": [1, [2, 3]]}, back
    back["offset"] = -1
    assert store.get("spout/shard-0001")["offset"] == 2**40, "get must return a copy"
    assert store.get("spout") is None, "a parent without a value of its own reads as missing"
    store.put("spout", "parent value")
    assert store.get("spout") == "parent value"
    store.put("spout/shard 2/x", [1])  # any characters but '/' in a segment
    store.put("spout/%2F odd.", 0)
    store.put("spout/..", 0)
    assert store.children() == ["spout"]
    assert store.children("spout") == ["%2F odd.", "..", "shard 2", "shard-0001"]
    assert store.children("spout/shard 2") == ["x"]
    assert store.children("nothing/here") == []
    store.put("spout/shard-0001", 5)
    assert store.get("spout/shard-0001") == 5
    assert store.delete("spout/shard 2") is True
    assert store.delete("spout/shard 2") is False
    assert store.get("spout/shard 2/x") is None
    assert store.children("spout") == ["%2F odd.", "..", "shard-0001"]
    assert store.get("") is None, "the store's own node starts without a value"
    for bad in ("/a", "a/", "a//b"):
        _raises(StateKeyError, store.put, bad, 1, naming=store.location)
        _raises(StateKeyError, store.get, bad, naming=store.location)
    _raises(StateValueError, store.put, "bad/value", object(), naming="bad/value")
    _raises(StateValueError, store.put, "big", b"x" * MAX_VALUE_BYTES, naming="big")
    assert store.get("bad/value") is None and store.get("big") is None
    assert store.delete("spout") is True
    assert store.children() == [] and store.get("spout/shard-0001") is None
    assert store.timeout_secs > 0
