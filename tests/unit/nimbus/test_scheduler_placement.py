"""Where the even scheduler puts new workers when some already run: on the supervisors that host
fewest of the topology's workers, and which workers it keeps when the worker count goes down."""

from __future__ import annotations

from stormpy.scheduler.even import schedule_topology, sort_slots


def test_a_new_worker_goes_to_the_supervisor_hosting_fewest_of_the_topologys_workers() -> None:
    available = {"sup-a": [1, 2, 3, 4, 5], "sup-b": [1, 2, 3, 4]}
    # two workers already on sup-a, one on sup-b; sup-a also has more free ports
    existing = {(1, 1): ("sup-a", 1), (2, 2): ("sup-a", 2), (3, 3): ("sup-b", 1)}
    out = schedule_topology([(i, i) for i in range(1, 5)], available, num_workers=4,
                            existing=existing)
    assert all(out[e] == s for e, s in existing.items())
    assert out[(4, 4)] == ("sup-b", 2)


def test_a_new_worker_avoids_the_supervisor_that_already_hosts_one() -> None:
    available = {"sup-a": [1, 2, 3], "sup-b": [1, 2]}
    out = schedule_topology([(1, 1), (2, 2)], available, num_workers=2,
                            existing={(1, 1): ("sup-a", 1)})
    assert out == {(1, 1): ("sup-a", 1), (2, 2): ("sup-b", 1)}


def test_when_the_worker_count_goes_down_the_fullest_workers_are_kept() -> None:
    # the fullest worker sorts last by slot, so keeping by slot order would pick another
    existing = {(1, 1): ("sup-a", 1), (2, 2): ("sup-a", 2),
                (3, 3): ("sup-b", 9), (4, 4): ("sup-b", 9), (5, 5): ("sup-b", 9)}
    available = {"sup-a": [1, 2], "sup-b": [9]}
    out = schedule_topology([(i, i) for i in range(1, 6)], available, num_workers=1,
                            existing=existing)
    assert set(out.values()) == {("sup-b", 9)}
    assert len(out) == 5


def test_no_slots_sort_to_an_empty_order() -> None:
    assert sort_slots({}) == []
    assert sort_slots({"sup-a": []}, avoid={("sup-a", 1)}) == []
