"""Edge ids: the random ids the XOR acker tracks.

Storm gives every (tuple, target) pair of a tracked emit a fresh random 64-bit edge id. Here an
edge id has ``EDGE_BITS`` = 62 bits: ids below 2**62, and the XOR of any of them, are the small
integers the compiled tuple path keeps unboxed, so XORing and storing edges allocates nothing
(with 64-bit ids every XOR made a new heap integer). A tree is wrongly seen complete only when
the XOR of a proper subset of its edges is 0, which for uniform random ids has probability
2**-62 per ack (Storm: 2**-64): at a million acks per second, once in ~146,000 years (Storm:
~585,000 years). Root ids (one per spout tuple, unique among the pending ones) stay 64-bit.

Ids are drawn with ``random.getrandbits(EDGE_BITS)`` at each emit. A pool refilled in bulk
(``randbytes`` unpacked with ``struct``) was measured slower compiled: ~960 instructions per id
against ~550, the unpacked 64-bit values being heap integers to shift.
"""

from __future__ import annotations

from typing import Final

EDGE_BITS: Final = 62
