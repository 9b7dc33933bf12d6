"""``EdgeIds``'s exact arithmetic: the multiply-with-carry recurrence of ``edges.py`` written
again here in plain integer arithmetic (``divmod`` by 2**30, no masks or shifts), the first ids
of a few seeds pinned as numbers, the seed's reduction to a state that avoids the fixed points,
and the default seed drawn from ``random``."""

from __future__ import annotations

import pytest

from stormpy.worker import edges
from stormpy.worker.edges import EdgeIds

#: the generator's multiplier and digit base (edges.py: a * 2**30 - 1 is a safe prime)
A = 1073741172
BASE = 2 ** 30


def reference_ids(seed: int, n: int) -> list[int]:
    """The first ``n`` ids for ``seed``: x_k = (a * x_{k-1} + c_{k-1}) mod 2**30 and c_k the
    quotient; an id is three digits d1, d2, d3 as d1 * 2**32 + d2 * 4 + (d3's top two bits)."""
    s = seed % 2 ** 64
    x = 1 + (s % BASE) % (BASE - 2)
    c = 1 + (s // BASE) % (A - 2)
    out = []
    for _ in range(n):
        digits = []
        for _ in range(3):
            c, x = divmod(A * x + c, BASE)
            digits.append(x)
        d1, d2, d3 = digits
        out.append(d1 * 2 ** 32 + d2 * 4 + d3 // 2 ** 28)
    return out


def drawn(ids: EdgeIds, n: int) -> list[int]:
    return [ids.next() for _ in range(n)]


def test_the_first_ids_of_known_seeds() -> None:
    assert drawn(EdgeIds(0), 3) == [4611683222405376018, 209983459597738709, 1825248801394855010]
    assert drawn(EdgeIds(12345), 3) == [4577113292149725492, 3743023247347788022,
                                        351501690887622366]
    assert reference_ids(0, 3) == drawn(EdgeIds(0), 3)  # the pinned numbers are the recurrence's


@pytest.mark.parametrize("seed", [
    0, 1, 7, 12345, 2 ** 40 + 3, 2 ** 63 + 2 ** 45 + 17,
    BASE - 3, BASE - 2, BASE - 1,  # the digit's largest, wrapped and all-ones values
    (A - 3) * BASE, (A - 2) * BASE, (A - 1) * BASE,  # the carry's
    (2 ** 34 - 1) * BASE + BASE - 1,  # every bit of the seed set
])
def test_ids_follow_the_multiply_with_carry_recurrence(seed: int) -> None:
    assert drawn(EdgeIds(seed), 40) == reference_ids(seed, 40)


def test_the_seed_becomes_a_state_away_from_the_fixed_points() -> None:
    """digit in [1, 2**30 - 2], carry in [1, a - 2]: the low 30 bits give the digit, the rest
    the carry, each reduced so that neither 0 nor its largest value comes out."""
    assert (EdgeIds(0).x, EdgeIds(0).c) == (1, 1)
    assert EdgeIds(BASE - 3).x == BASE - 2  # the largest digit
    assert EdgeIds(BASE - 2).x == 1  # wraps before 2**30 - 1
    assert EdgeIds(BASE - 1).x == 2
    assert EdgeIds((A - 3) * BASE).c == A - 2  # the largest carry
    assert EdgeIds((A - 2) * BASE).c == 1  # wraps before a - 1
    assert EdgeIds(5 * BASE + 9).c == 6 and EdgeIds(5 * BASE + 9).x == 10


def test_a_seed_counts_only_by_its_low_64_bits() -> None:
    assert drawn(EdgeIds(2 ** 64 + 5), 10) == drawn(EdgeIds(5), 10)
    assert drawn(EdgeIds(-1), 10) == drawn(EdgeIds(2 ** 64 - 1), 10)
    assert EdgeIds(2 ** 64 - 1).c == 1 + (2 ** 34 - 1) % (A - 2)


def test_without_a_seed_64_random_bits_seed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def getrandbits(k: int) -> int:
        asked.append(k)
        return 2 ** 63 + 2 ** 45 + 17

    monkeypatch.setattr(edges, "getrandbits", getrandbits)
    ids = EdgeIds()
    assert asked == [64]
    assert drawn(ids, 5) == reference_ids(2 ** 63 + 2 ** 45 + 17, 5)
