"""Edge and root ids: the random ids the XOR acker tracks.

Storm gives every (tuple, target) pair of a tracked emit a fresh random 64-bit edge id. Here an
edge id has ``EDGE_BITS`` = 62 bits: ids below 2**62, and the XOR of any of them, are the small
integers the compiled tuple path keeps unboxed, so XORing and storing edges allocates nothing
(with 64-bit ids every XOR made a new heap integer). A tree is wrongly seen complete only when
the XOR of a proper subset of its edges is 0, which for uniform random ids has probability
2**-62 per ack (Storm: 2**-64): at a million acks per second, once in ~146,000 years (Storm:
~585,000 years). Root ids (one per spout tuple, unique among the pending ones) are drawn the same
way: 62-bit, so the acker's ledger and the spout's pending map key on unboxed integers too.

The ids come from ``EdgeIds``, one per worker (``Dispatch.edges``) and one per task of another
worker the worker sends to (``Dispatch.edges_for``: the edges of the tuples for that task, drawn
in the order they are written to the wire), each seeded from ``random``: a
multiply-with-carry generator (Marsaglia) of 30-bit digits whose multiplier ``a`` (below 2**30)
makes ``a * 2**30 - 1`` a safe prime, so its period is about 2**59; an id is three consecutive
digits (30 + 30 + 2 bits). Every operand stays below 2**30 and every intermediate value below
2**60, so the state and the arithmetic are mypyc's native ``i64`` (no tag checks, no overflow
path; plain ``int`` when interpreted): compiled, a draw is a few tens of machine instructions,
which the C compiler inlines into its callers, where ``random.getrandbits(62)`` cost ~620 (a
call, a heap integer, its conversion) and the same generator on tagged integers ~185.
Multiply-with-carry is not linear over GF(2) (its carries mix the bits), so no fixed set of
outputs XORs to zero the way it would for an xorshift generator: XOR-cancellation among a tree's
edges, what would make the acker miss a tuple, stays as unlikely as chance.

A generator's state, ``(x, c)``, is two ints below 2**30 (``STATE_LIMITS``): the ids a run of
tuples carries to another worker are its next draws from a state the run names once
(``messaging/codec.py``); the receiver draws them again from that state (``restart``).
"""

from __future__ import annotations

from random import getrandbits
from typing import Final

try:  # mypy's native 64-bit integer for compiled code (plain int when interpreted)
    from mypy_extensions import i64
except ImportError:  # pragma: no cover - only a compiled build reads the type
    i64 = int  # type: ignore[misc]

EDGE_BITS: Final = 62

#: the multiplier: a * 2**30 - 1 and (a * 2**30 - 2) / 2 are prime
_A: Final = 1073741172
_DIGIT: Final = 2 ** 30 - 1
#: a state (x, c) is valid with 0 <= x <= STATE_LIMITS[0] and 0 <= c <= STATE_LIMITS[1]: every
#: intermediate value of a draw then stays below 2**60
STATE_LIMITS: Final = (_DIGIT, _A - 1)


class EdgeIds:
    """Random 62-bit ids (edges and roots) of one worker (see the module docstring). ``seed``
    (any int) fixes the sequence; by default it is drawn from ``random``."""

    def __init__(self, seed: int | None = None) -> None:
        s = getrandbits(64) if seed is None else seed & (2 ** 64 - 1)
        # a state (digit, carry) with digit in [1, 2**30 - 2] and carry in [1, a - 2] avoids
        # the two fixed points (0, 0) and (2**30 - 1, a - 1)
        self.x: i64 = i64(1 + (s & _DIGIT) % (_DIGIT - 1))
        self.c: i64 = i64(1 + (s >> 30) % (_A - 2))

    def restart(self, x: int, c: int) -> None:
        """Continue from the state ``(x, c)`` (see ``STATE_LIMITS``; ValueError outside)."""
        if not (0 <= x <= _DIGIT and 0 <= c < _A):
            raise ValueError(f"edge id state ({x}, {c}) out of range")
        self.x = i64(x)
        self.c = i64(c)

    def follow(self, other: EdgeIds) -> None:
        """Take ``other``'s state: the next draws of both are the same."""
        self.x = other.x
        self.c = other.c

    def next(self) -> int:
        """The next id: 62 random bits (0 <= id < 2**62)."""
        a: i64 = _A
        digit: i64 = _DIGIT
        t = a * self.x + self.c  # native 64-bit arithmetic: every value stays below 2**60
        d1 = t & digit
        t = a * d1 + (t >> 30)
        d2 = t & digit
        t = a * d2 + (t >> 30)
        d3 = t & digit
        self.x = d3
        self.c = t >> 30
        return int((d1 << 32) | (d2 << 2) | (d3 >> 28))
