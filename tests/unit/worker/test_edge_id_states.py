"""An edge id generator's state (``worker/edges.py``): a generator restarted at another's state,
or following it, draws the same ids from there on (what lets a run of edges cross as one
state); a state outside ``STATE_LIMITS`` is refused with a clear error."""

from __future__ import annotations

import pytest

from stormpy.worker.edges import STATE_LIMITS, EdgeIds


def test_a_generator_restarted_at_another_state_draws_the_same_ids() -> None:
    source = EdgeIds(seed=2024)
    for _ in range(5):
        source.next()
    x, c = source.x, source.c
    ahead = [source.next() for _ in range(50)]
    again = EdgeIds(0)
    again.restart(x, c)
    assert [again.next() for _ in range(50)] == ahead
    follower = EdgeIds(0)
    follower.follow(source)
    assert [follower.next() for _ in range(20)] == [source.next() for _ in range(20)]


@pytest.mark.parametrize("x, c", [(-1, 1), (STATE_LIMITS[0] + 1, 1), (1, -1),
                                  (1, STATE_LIMITS[1] + 1)])
def test_a_state_out_of_range_is_refused(x: int, c: int) -> None:
    ids = EdgeIds(0)
    with pytest.raises(ValueError, match=r"edge id state \(.*\) out of range"):
        ids.restart(x, c)


def test_the_limits_keep_every_draw_below_2_to_the_62() -> None:
    ids = EdgeIds(0)
    ids.restart(*STATE_LIMITS)
    assert all(0 <= ids.next() < 2 ** 62 for _ in range(100))


def reference_draw(x: int, c: int) -> int:
    """The first id drawn from the state ``(x, c)``, in plain integer arithmetic (edges.py: three
    multiply-with-carry digits d1, d2, d3 give d1 * 2**32 + d2 * 4 + d3's top two bits)."""
    digits = []
    for _ in range(3):
        c, x = divmod(1073741172 * x + c, 2 ** 30)
        digits.append(x)
    return digits[0] * 2 ** 32 + digits[1] * 4 + digits[2] // 2 ** 28


@pytest.mark.parametrize("x, c", [(0, 5), (5, 0), (0, 0), (STATE_LIMITS[0], STATE_LIMITS[1]),
                                  (STATE_LIMITS[0], 0), (0, STATE_LIMITS[1])])
def test_every_state_within_the_limits_edges_included_is_taken(x: int, c: int) -> None:
    """A sender's generator reaches a digit or a carry of 0 after some draws (only its seed
    avoids them): a run naming such a state is read."""
    ids = EdgeIds(7)
    ids.restart(x, c)
    assert (ids.x, ids.c) == (x, c)
    assert ids.next() == reference_draw(x, c)
