"""The scheduler keeps the slots whose executor counts fit an even spread (``_fitting_slots``):
``q`` or ``q + 1`` executors each, at most ``r`` of the larger and ``target - r`` of the smaller,
ties by slot; and a topology already spread over ``target`` slots, however unevenly, keeps them."""

from __future__ import annotations

from typing import Any

from stormpy.scheduler.even import _fitting_slots, schedule_topology


def kept(**counts: int) -> dict[Any, list[tuple[int, int]]]:
    """Slots named by node ("a" → ("a", 6700)) holding ``count`` executors each."""
    out: dict[Any, list[tuple[int, int]]] = {}
    start = 1
    for node, n in counts.items():
        out[(node, 6700)] = [(i, i) for i in range(start, start + n)]
        start += n
    return out


def fitting(n_execs: int, target: int, **counts: int) -> list[str]:
    return [node for node, _ in _fitting_slots(kept(**counts), n_execs, target)]


def test_one_larger_slot_and_the_smaller_ones_up_to_their_quota() -> None:
    # 5 over 2: one slot of 3 and one of 2
    assert fitting(5, 2, a=3, b=3, c=2, d=2) == ["a", "c"]
    assert fitting(5, 2, a=1, b=4) == []  # neither count fits


def test_the_quota_of_larger_slots_is_r() -> None:
    # 8 over 3: two slots of 3, one of 2
    assert fitting(8, 3, a=3, b=3, c=3, d=2) == ["a", "b", "d"]
    assert fitting(8, 3, a=3) == ["a"]


def test_the_quota_of_smaller_slots_is_target_minus_r() -> None:
    # 7 over 3: one slot of 3, two of 2
    assert fitting(7, 3, a=2, b=2, c=2, d=3) == ["a", "b", "d"]
    # 6 over 3: no larger slot, three of 2
    assert fitting(6, 3, a=2, b=2, c=2, d=2) == ["a", "b", "c"]


def test_a_topology_on_target_slots_keeps_them_even_when_uneven() -> None:
    """Two workers asked, executors on two slots 3 + 1: nothing moves (a rebalance to even
    counts is the user's call), though a third slot is free."""
    execs = [(i, i) for i in range(1, 5)]
    existing = {(1, 1): ("a", 6700), (2, 2): ("a", 6700), (3, 3): ("a", 6700),
                (4, 4): ("b", 6700)}
    got = schedule_topology(execs, {"a": [6700], "b": [6700], "c": [6700]}, 2, existing)
    assert got == existing
