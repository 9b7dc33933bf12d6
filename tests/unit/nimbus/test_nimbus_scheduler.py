"""The even scheduler in isolation: spreading, keeping alive executors, limits."""

from __future__ import annotations

from collections import Counter

from stormpy.scheduler.even import available_slots, schedule_topology, sort_slots
from stormpy.topology._layout import compute_layout
from wordcount import build

SLOTS = {"sup-a": [6700, 6701, 6702], "sup-b": [6700, 6701, 6702]}


def executors(n: int) -> list[tuple[int, int]]:
    return [(i, i) for i in range(1, n + 1)]


def workers(assignment: dict) -> dict:
    return Counter(assignment.values())


def test_workers_spread_over_supervisors_and_every_executor_is_placed() -> None:
    out = schedule_topology(executors(7), SLOTS, num_workers=2)
    assert set(out) == set(executors(7))
    slots = set(out.values())
    assert len(slots) == 2
    assert {node for node, _ in slots} == {"sup-a", "sup-b"}
    assert sorted(workers(out).values()) == [3, 4]


def test_acker_executors_of_a_real_layout_are_scheduled() -> None:
    spec = build(100).create_topology()
    layout = compute_layout(spec, {"topology.workers": 3, "topology.acker.executors": 3})
    keys = [e.key for e in layout.executors]
    out = schedule_topology(keys, SLOTS, num_workers=3)
    assert set(out) == set(keys)
    acker = [e.key for e in layout.executors if e.component == "__acker"]
    assert len({out[k] for k in acker}) == 3  # round-robin spreads each component
    assert len(set(out.values())) == 3


def test_sort_slots_interleaves_nodes_and_puts_avoided_slots_last() -> None:
    assert sort_slots(SLOTS)[:4] == [("sup-a", 6700), ("sup-b", 6700), ("sup-a", 6701), ("sup-b", 6701)]
    order = sort_slots(SLOTS, avoid={("sup-a", 6700)})
    assert order[0] == ("sup-b", 6700)
    assert order[-1] == ("sup-a", 6700)
    assert sort_slots(SLOTS, kept_per_node={"sup-a": 1})[0][0] == "sup-b"


def test_more_workers_than_slots_uses_every_slot() -> None:
    out = schedule_topology(executors(10), {"sup-a": [1, 2]}, num_workers=5)
    assert set(out.values()) == {("sup-a", 1), ("sup-a", 2)}


def test_no_slots_means_no_assignment() -> None:
    assert schedule_topology(executors(3), {}, num_workers=2) == {}
    assert schedule_topology(executors(3), {"sup-a": []}, num_workers=2) == {}


def test_alive_executors_stay_and_dead_ones_move_to_a_fresh_slot() -> None:
    first = schedule_topology(executors(6), SLOTS, num_workers=2)
    dead_slot = first[(1, 1)]
    alive = {e: s for e, s in first.items() if s != dead_slot}
    out = schedule_topology(executors(6), SLOTS, num_workers=2, existing=alive, avoid={dead_slot})
    for e, s in alive.items():
        assert out[e] == s
    moved = {out[e] for e in first if first[e] == dead_slot}
    assert len(moved) == 1 and dead_slot not in moved
    assert len(set(out.values())) == 2


def test_vanished_supervisor_executors_go_to_the_other_one() -> None:
    first = schedule_topology(executors(6), SLOTS, num_workers=2)
    alive = {e: s for e, s in first.items() if s[0] == "sup-a"}
    out = schedule_topology(executors(6), {"sup-a": SLOTS["sup-a"]}, num_workers=2, existing=alive)
    assert {node for node, _ in out.values()} == {"sup-a"}
    assert len(set(out.values())) == 2
    assert all(out[e] == s for e, s in alive.items())


def test_dead_executors_share_kept_slots_when_nothing_is_free() -> None:
    alive = {(1, 1): ("sup-a", 1)}
    out = schedule_topology(executors(3), {"sup-a": [1]}, num_workers=2, existing=alive)
    assert set(out.values()) == {("sup-a", 1)}
    assert set(out) == set(executors(3))


def test_fewer_workers_keep_the_fullest_slots() -> None:
    existing = {(1, 1): ("sup-a", 6700), (2, 2): ("sup-a", 6700), (3, 3): ("sup-b", 6700)}
    out = schedule_topology(executors(3), SLOTS, num_workers=1, existing=existing)
    assert set(out.values()) == {("sup-a", 6700)}


def test_existing_slots_that_are_gone_or_stale_executors_are_dropped() -> None:
    existing = {(1, 1): ("sup-gone", 6700), (9, 9): ("sup-a", 6700)}
    out = schedule_topology(executors(2), SLOTS, num_workers=1, existing=existing)
    assert set(out) == {(1, 1), (2, 2)}
    assert all(node in SLOTS for node, _ in out.values())


def test_available_slots_excludes_other_topologies() -> None:
    other = {(1, 1): ("sup-a", 6700), (2, 2): ("sup-b", 6701)}
    free = available_slots(SLOTS, [other])
    assert free == {"sup-a": [6701, 6702], "sup-b": [6700, 6702]}


def test_scheduling_is_deterministic() -> None:
    a = schedule_topology(executors(9), SLOTS, num_workers=4)
    b = schedule_topology(list(reversed(executors(9))), dict(reversed(list(SLOTS.items()))), num_workers=4)
    assert a == b


def test_packed_topology_spreads_back_without_moving_workers_that_fit() -> None:
    # 8 executors asked for 4 workers; one worker's executors were packed onto sup-c:6700.
    a, b, c = ("sup-a", 6700), ("sup-b", 6700), ("sup-c", 6700)
    existing = {(1, 1): a, (2, 2): a, (3, 3): b, (4, 4): b,
                (5, 5): c, (6, 6): c, (7, 7): c, (8, 8): c}
    slots = {"sup-a": [6700], "sup-b": [6700], "sup-c": [6700], "sup-d": [6700]}
    out = schedule_topology(executors(8), slots, num_workers=4, existing=existing)
    assert len(set(out.values())) == 4
    assert sorted(workers(out).values()) == [2, 2, 2, 2]
    for executor in [(1, 1), (2, 2), (3, 3), (4, 4)]:
        assert out[executor] == existing[executor]  # those workers fit the spread: not restarted


def test_packed_topology_stays_when_no_slot_is_free() -> None:
    existing = {(1, 1): ("sup-a", 1), (2, 2): ("sup-a", 1), (3, 3): ("sup-a", 1)}
    out = schedule_topology(executors(3), {"sup-a": [1]}, num_workers=3, existing=existing)
    assert out == existing
