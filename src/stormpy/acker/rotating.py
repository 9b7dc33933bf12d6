"""RotatingMap: a map whose entries expire after a number of rotations (Storm's RotatingMap).

Entries live in ``buckets`` dicts, newest first. ``rotate`` drops the oldest bucket and returns
what was in it. Rotating every ``timeout / (buckets - 1)`` seconds expires an entry between
``timeout`` and ``timeout * buckets / (buckets - 1)`` seconds after it was last put or touched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Generic, TypeVar, cast

K = TypeVar("K")
V = TypeVar("V")


#: what ``dict.pop`` returns for a key a bucket does not hold (never a stored value)
_ABSENT: Final = object()


class RotatingMap(Generic[K, V]):
    """Expiring map; not thread-safe (it lives on one executor loop)."""

    __slots__ = ("_buckets",)

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a RotatingMap needs at least 2 buckets")
        self._buckets: list[dict[K, V]] = [{} for _ in range(buckets)]

    def put(self, key: K, value: V) -> None:
        """Insert or replace ``key`` in the newest bucket (restarting its expiry)."""
        buckets = self._buckets
        buckets[0][key] = value
        for b in buckets[1:]:
            b.pop(key, None)

    def put_new(self, key: K, value: V) -> None:
        """``put`` of a key the caller knows is in no bucket (a fresh random id): one dict
        store, no removal from the older buckets."""
        self._buckets[0][key] = value

    def get(self, key: K, default: V | None = None) -> V | None:
        for b in self._buckets:
            if key in b:
                return b[key]
        return default

    def pop(self, key: K, default: V | None = None) -> V | None:
        """Remove and return ``key``'s value, or ``default`` when absent."""
        for b in self._buckets:
            value = b.pop(key, _ABSENT)  # one lookup per bucket
            if value is not _ABSENT:
                return cast(V, value)
        return default

    def touch(self, key: K) -> bool:
        """Move ``key`` to the newest bucket; False when it is not present."""
        for b in self._buckets:
            if key in b:
                self._buckets[0][key] = b.pop(key)
                return True
        return False

    def rotate(self) -> dict[K, V]:
        """Drop the oldest bucket and return its entries (the expired ones)."""
        expired = self._buckets.pop()
        self._buckets.insert(0, {})
        return expired

    def __contains__(self, key: object) -> bool:
        return any(key in b for b in self._buckets)

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def __iter__(self) -> Iterator[K]:
        for b in self._buckets:
            yield from b
