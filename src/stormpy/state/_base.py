"""What every store of the state layer offers beyond the seam's
:class:`~stormpy.topology._state.StateStore` contract (get, put, delete, children of msgpack values
under ``/``-separated key paths, bounded in time, errors naming the path):

* ``put_many``/``delete_many``: several keys at once (atomic as a whole on memory, SQLite and
  Redis, key by key in order on ZooKeeper);
* ``get_many(keys)``: the values of those keys that hold one (one round trip on Redis);
* ``write_batch(puts, deletes)``: puts then deletes, applied in that order, for large checkpoint
  steps: atomic on memory and SQLite; on ZooKeeper and Redis sent in batches, so an interruption
  leaves a prefix of them applied (callers make the batch idempotent and repeat it);
* ``write_encoded(puts, deletes)``: ``write_batch`` with the values given already encoded as
  state documents (``(key, document)`` pairs, :func:`encode_packed` or
  :func:`~stormpy.topology._state.encode_state` bytes): the same effect, without packing the
  values again (a checkpoint's fold writes the bytes its prepare packed);
* ``scan(key, prefix=)``: ``(name, value)`` of the children of ``key`` that hold a value (and whose
  name starts with ``prefix``), streamed page by page: never the whole subtree in memory at once
  on SQLite and Redis; in no promised order; a child written during the scan may be missed, and
  on Redis a child may be yielded twice while Redis resizes the hash (``HSCAN``'s rule);
* ``count(key)``: how many children ``key`` has (at least those ``scan`` yields);
* ``update(key, fn)``: compare-and-set: ``fn(current value or None)`` gives the new value, or None
  to leave the key as it is; the write happens only if nobody changed the key meanwhile (else
  ``fn`` runs again on the newer value); True when it wrote;
* ``sub(*segments)``: the same store seen from a node below it down (a namespace; no copy, no
  I/O); each argument is ONE segment, any non-empty string (a ``/`` in it is part of the name);
* ``watch(key, callback)``: ``callback(value or None)`` now and after every change of the key
  until the returned function is called (memory and ZooKeeper; Redis by polling; a SQLite
  store refuses);
* ``available()``: False while the backing service is known to be unreachable;
* ``close()``: release what the store owns (a connection it opened); idempotent.

``""`` is the store's own node: ``get("")``/``put("")`` read and write the value of the node the
store is rooted at (a namespace's own value, e.g. a Kinesis stream's shard list above its shards).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgpack

from stormpy.host.backoff import Backoff
from stormpy.topology._state import (
    MAX_VALUE_BYTES,
    STATE_VERSION,
    StateKeyError,
    StateStoreError,
    StateValueError,
    decode_state,
    key_segments,
)

__all__ = ["MAX_UPDATE_ROUNDS", "Store", "check_segments", "contention_pause", "encode_packed",
           "root_or_segments", "update_rounds"]

#: a state document's bytes before its packed value (``encode_state``'s map, its value last)
_DOC_HEAD = msgpack.packb({"v": STATE_VERSION, "value": None}, use_bin_type=True)[:-1]


def encode_packed(path: str, packed: bytes) -> bytes:
    """The state document of a value already packed (``msgpack.packb(value,
    use_bin_type=True)``): the bytes ``encode_state(path, value)`` gives, without packing the
    value again; StateValueError naming ``path`` when over the size limit."""
    data = _DOC_HEAD + packed
    if len(data) > MAX_VALUE_BYTES:
        raise StateValueError(path, f"value is {len(data)} bytes encoded; the limit is "
                                    f"{MAX_VALUE_BYTES} (keep large data elsewhere)")
    return data

#: How often ``update`` re-reads a key that concurrent writers keep changing before it gives up
#: (StateUnavailableError: try again later); between rounds it waits a little, at random.
MAX_UPDATE_ROUNDS = 100
#: the pause before the second round is at most this long; it doubles per round up to the cap
UPDATE_BACKOFF_SECS = 0.002
UPDATE_BACKOFF_CAP_SECS = 0.02
_ABSENT = object()


def update_rounds() -> Iterator[int]:
    """The rounds of one ``update`` (0 … ``MAX_UPDATE_ROUNDS`` - 1), with a contention pause
    before every round but the first: the one :class:`~stormpy.host.backoff.Backoff` with full
    jitter (up to 2 ms, doubling to at most 20 ms), so writers that collided spread out. The
    caller stops iterating when a round wrote (or decided not to) and raises
    ``StateUnavailableError`` when the rounds run out."""
    backoff = Backoff(UPDATE_BACKOFF_SECS, UPDATE_BACKOFF_CAP_SECS, jitter=1.0)
    for round_ in range(MAX_UPDATE_ROUNDS):
        if round_:
            contention_pause(backoff)
        yield round_


def contention_pause(backoff: Backoff) -> None:
    """Wait out the delay ``backoff`` gives for one more failed round."""
    time.sleep(backoff.failed())


def root_or_segments(location: str, key: str) -> tuple[str, ...]:
    """``key``'s segments, ``()`` for the store's own node ``""``; StateKeyError when malformed."""
    return key_segments(location, key, allow_root=True)


def check_segments(location: str, segments: tuple[str, ...]) -> tuple[str, ...]:
    """``segments`` of ``sub``: non-empty strings (StateKeyError naming them otherwise)."""
    for segment in segments:
        if not isinstance(segment, str) or not segment:
            raise StateKeyError(f"{location}/{segment!r}", "a namespace segment is a non-empty "
                                                           "string")
    return segments


class Store:
    """Base of the layer's stores (memory, SQLite, ZooKeeper); see the module contract."""

    #: Where the store keeps its keys, for messages.
    location: str = "store"
    #: Longest time any call may take.
    timeout_secs: float = 10.0

    def get(self, key: str, default: Any = None) -> Any:
        raise NotImplementedError

    def put(self, key: str, value: Any) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> bool:
        raise NotImplementedError

    def children(self, key: str = "") -> list[str]:
        raise NotImplementedError

    def update(self, key: str, fn: Callable[[Any], Any]) -> bool:
        raise NotImplementedError

    def sub(self, *segments: str) -> Store:
        raise NotImplementedError

    def put_many(self, items: Mapping[str, Any]) -> None:
        for key, value in items.items():
            self.put(key, value)

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.delete(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """The values of those of ``keys`` that hold one."""
        found: dict[str, Any] = {}
        for key in keys:
            value = self.get(key, _ABSENT)
            if value is not _ABSENT:
                found[key] = value
        return found

    def write_batch(self, puts: Mapping[str, Any], deletes: Iterable[str] = ()) -> None:
        """Apply ``puts``, then ``deletes``, in that order (see the module contract)."""
        self.put_many(puts)
        self.delete_many(deletes)

    def write_encoded(self, puts: Iterable[tuple[str, bytes]], deletes: Iterable[str] = ()
                      ) -> None:
        """``write_batch`` of ``(key, state document)`` pairs (see the module contract)."""
        self.write_batch({key: decode_state(self.where(key), data) for key, data in puts},
                         deletes)

    def scan(self, key: str = "", *, prefix: str = "", page: int = 1000
             ) -> Iterator[tuple[str, Any]]:
        """Stream ``(name, value)`` of ``key``'s children that hold a value (module contract)."""
        for name in self.children(key):
            if name.startswith(prefix):
                value = self.get(f"{key}/{name}" if key else name, _ABSENT)
                if value is not _ABSENT:
                    yield name, value

    def count(self, key: str = "") -> int:
        """How many children ``key`` has."""
        return len(self.children(key))

    def watch(self, key: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Watch ``key`` (see the module contract); returns the function that cancels it."""
        raise StateStoreError(f"{self.location}/{key}", f"{type(self).__name__} cannot watch keys")

    def available(self) -> bool:
        return True

    def close(self) -> None:
        """Release what this store owns; idempotent."""

    def names(self) -> list[str]:
        """The store's top-level keys, sorted (``children("")``)."""
        return self.children("")

    def where(self, key: str) -> str:
        """``key``'s full location, for messages."""
        segments = root_or_segments(self.location, key)
        return "/".join((self.location, *segments))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"
