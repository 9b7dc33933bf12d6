"""Edge ids: the random ids the XOR acker tracks, drawn from a pool refilled in bulk.

Storm gives every (tuple, target) pair of a tracked emit a fresh random 64-bit edge id. Here an
edge id has ``EDGE_BITS`` = 62 bits: ids below 2**62, and the XOR of any of them, are the small
integers the compiled tuple path keeps unboxed, so XORing and storing edges allocates nothing.
A tree is wrongly seen complete only when the XOR of a proper subset of its edges is 0, which
for uniform random ids has probability 2**-62 per ack (Storm: 2**-64): at a million acks per
second, once in ~146,000 years (Storm: ~585,000 years). Root ids (one per spout tuple) stay
64-bit.

``random.getrandbits(62)`` costs a call and a bignum conversion per id (``getrandbits`` takes its
slow path above 32 bits); ``EdgeIds.next()`` takes them from ``POOL`` ids unpacked at once from
``random.randbytes`` (the same Mersenne Twister as ``getrandbits``).
"""

from __future__ import annotations

import struct
from random import randbytes
from typing import Final

EDGE_BITS: Final = 62
#: ids drawn per refill
POOL: Final = 512
_UNPACK = struct.Struct(f"<{POOL}Q").unpack


class EdgeIds:
    """A source of uniform random ``EDGE_BITS``-bit edge ids (one per task runner; the loop
    thread only)."""

    __slots__ = ("_pool", "_next")

    def __init__(self) -> None:
        self._pool: tuple[int, ...] = ()
        self._next = 0

    def next(self) -> int:
        """A fresh edge id in [0, 2**EDGE_BITS)."""
        i = self._next
        pool = self._pool
        if i >= len(pool):
            pool = self._pool = _UNPACK(randbytes(8 * POOL))
            i = 0
        self._next = i + 1
        return pool[i] >> (64 - EDGE_BITS)
