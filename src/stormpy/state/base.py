"""What every store of the state layer offers beyond the seam's
:class:`~stormpy.topology.state.StateStore` contract (get, put, delete, children of msgpack values
under ``/``-separated key paths, bounded in time, errors naming the path):

* ``put_many``/``delete_many``: several keys at once (atomic as a whole on memory and SQLite, key
  by key on ZooKeeper);
* ``update(key, fn)``: compare-and-set: ``fn(current value or None)`` gives the new value, or None
  to leave the key as it is; the write happens only if nobody changed the key meanwhile (else
  ``fn`` runs again on the newer value); True when it wrote;
* ``sub(*segments)``: the same store seen from a node below it down (a namespace; no copy, no
  I/O); each argument is ONE segment, any non-empty string (a ``/`` in it is part of the name);
* ``watch(key, callback)``: ``callback(value or None)`` now and after every change of the key
  until the returned function is called (memory and ZooKeeper; a SQLite store refuses);
* ``available()``: False while the backing service is known to be unreachable;
* ``close()``: release what the store owns (a connection it opened); idempotent.

``""`` is the store's own node: ``get("")``/``put("")`` read and write the value of the node the
store is rooted at (a namespace's own value, e.g. a Kinesis stream's shard list above its shards).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stormpy.topology.state import StateKeyError, StateStoreError, key_segments

__all__ = ["MAX_UPDATE_ROUNDS", "Store", "check_segments", "contention_pause", "root_or_segments"]

#: How often ``update`` re-reads a key that concurrent writers keep changing before it gives up
#: (StateUnavailableError: try again later); between rounds it waits a little, at random.
MAX_UPDATE_ROUNDS = 100
UPDATE_BACKOFF_SECS = 0.002


def contention_pause(round_: int) -> None:
    """The random wait before ``update``'s round ``round_`` + 1 (writers that collided spread)."""
    time.sleep(random.uniform(0, UPDATE_BACKOFF_SECS * min(round_ + 1, 10)))


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
