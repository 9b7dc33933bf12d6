"""The task layout every process derives alike (acker count, task counts under caps, ids in
sorted component order, executors as contiguous runs, rebalance overrides) and the clocks
(real, simulated: advancing, sleeping until advanced, releasing sleepers, nested simulations)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder
from stormpy.host.waiting import wait_for
from stormpy.topology import clock
from stormpy.topology._layout import (
    ACKER_COMPONENT,
    Executor,
    TaskLayout,
    acker_count,
    compute_layout,
    split_tasks,
    task_count,
)
from stormpy.topology._spec import ComponentSpec


class Words(Spout):
    outputs = ["word"]


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        self.ack(tup)


def test_acker_count() -> None:
    assert acker_count({}) == 1
    assert acker_count({"topology.workers": 3}) == 3
    assert acker_count({"topology.workers": 0}) == 1
    assert acker_count({"topology.workers": None}) == 1
    assert acker_count({"topology.acker.executors": 0, "topology.workers": 3}) == 0
    assert acker_count({"topology.acker.executors": 2, "topology.workers": 3}) == 2
    assert acker_count({"topology.acker.executors": "4"}) == 4


def comp(**kw: Any) -> ComponentSpec:
    return ComponentSpec(id="c", kind="bolt", class_path="m:C", **kw)


def test_task_counts_under_caps() -> None:
    assert task_count(comp(parallelism=3), {}) == 3
    assert task_count(comp(parallelism=3, tasks=5), {}) == 5
    assert task_count(comp(tasks=5, config={"topology.tasks": 6}), {}) == 6
    assert task_count(comp(tasks=5), {"topology.max.task.parallelism": 2}) == 2
    assert task_count(comp(tasks=5), {"topology.max.task.parallelism": 5}) == 5
    assert task_count(comp(tasks=5), {"topology.max.task.parallelism": 9}) == 5
    own = comp(tasks=5, config={"topology.max.task.parallelism": 4})
    assert task_count(own, {"topology.max.task.parallelism": 1}) == 4
    assert task_count(own, {"topology.max.task.parallelism": "bad"}) == 4  # the component's wins
    assert task_count(comp(tasks=5, config={"topology.max.task.parallelism": 3}), {}) == 3


@pytest.mark.parametrize("cap", [0, -1, True, "2", 1.5])
def test_a_bad_topology_cap_is_named(cap: Any) -> None:
    with pytest.raises(ValueError) as err:
        task_count(comp(tasks=5), {"topology.max.task.parallelism": cap})
    assert str(err.value) == f"topology.max.task.parallelism must be an integer >= 1 or unset, got {cap!r}"


def test_split_tasks() -> None:
    assert split_tasks([1, 2, 3, 4, 5, 6, 7], 3) == [[1, 2, 3], [4, 5], [6, 7]]
    assert split_tasks([1, 2, 3, 4, 5, 6, 7, 8], 3) == [[1, 2, 3], [4, 5, 6], [7, 8]]
    assert split_tasks([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
    assert split_tasks([5, 6, 7], 1) == [[5, 6, 7]]
    assert split_tasks([5, 6, 7], 3) == [[5], [6], [7]]


def spec() -> Any:
    b = TopologyBuilder()
    b.set_spout("words", Words, 2)
    b.set_bolt("count", Sink, 2, tasks=5).shuffle_grouping("words")
    b.set_bolt("b", Sink).shuffle_grouping("words")
    return b.create_topology()


def test_layout_in_sorted_component_order_from_task_one() -> None:
    layout = compute_layout(spec(), {"topology.acker.executors": 2})
    assert layout == TaskLayout(
        {ACKER_COMPONENT: [1, 2], "b": [3], "count": [4, 5, 6, 7, 8], "words": [9, 10]},
        {1: ACKER_COMPONENT, 2: ACKER_COMPONENT, 3: "b", 4: "count", 5: "count", 6: "count",
         7: "count", 8: "count", 9: "words", 10: "words"},
        [Executor(ACKER_COMPONENT, 1, 1), Executor(ACKER_COMPONENT, 2, 2), Executor("b", 3, 3),
         Executor("count", 4, 6), Executor("count", 7, 8), Executor("words", 9, 9),
         Executor("words", 10, 10)])
    assert layout.acker_tasks == [1, 2]
    assert layout.executors[3].key == (4, 6) and list(layout.executors[3].tasks) == [4, 5, 6]


def test_layout_without_ackers_and_with_caps() -> None:
    layout = compute_layout(spec(), {"topology.acker.executors": 0, "topology.max.task.parallelism": 1})
    assert layout.component_tasks == {"b": [1], "count": [2], "words": [3]}
    assert layout.acker_tasks == []
    assert [e.key for e in layout.executors] == [(1, 1), (2, 2), (3, 3)]


def test_rebalance_overrides() -> None:
    layout = compute_layout(spec(), {"topology.acker.executors": 1},
                            {"count": 5, "words": 0, "b": 7, "nope": 3})
    assert [(e.component, e.key) for e in layout.executors] == [
        (ACKER_COMPONENT, (1, 1)), ("b", (2, 2)),
        ("count", (3, 3)), ("count", (4, 4)), ("count", (5, 5)), ("count", (6, 6)), ("count", (7, 7)),
        ("words", (8, 9))]
    layout = compute_layout(spec(), {"topology.acker.executors": 1}, {"count": 3})
    assert [e.key for e in layout.executors if e.component == "count"] == [(3, 4), (5, 6), (7, 7)]
    assert "nope" not in compute_layout(spec(), {}, {"nope": 3}).component_tasks


def test_the_real_clock() -> None:
    real = clock.Clock()
    assert real.simulated is False
    before = time.monotonic()
    assert before <= real.now() <= time.monotonic()
    real.sleep(0)
    with pytest.raises(ValueError) as err:
        real.sleep(-1)
    assert str(err.value) == "cannot sleep a negative time (-1)"


def test_simulated_time_moves_only_when_advanced() -> None:
    sim = clock.SimulatedClock()
    assert sim.simulated is True and sim.now() == 1000.0
    assert clock.SimulatedClock(5.0).now() == 5.0
    sim.advance(2.5)
    sim.advance(0)
    assert sim.now() == 1002.5
    with pytest.raises(ValueError) as err:
        sim.advance(-1)
    assert str(err.value) == "time cannot go backwards"
    with pytest.raises(ValueError) as err:
        sim.sleep(-0.5)
    assert str(err.value) == "cannot sleep a negative time (-0.5)"
    sim.sleep(0)  # returns at once
    assert sim.sleepers == 0


def start_sleeper(sim: clock.SimulatedClock, seconds: float) -> tuple[threading.Thread, list[float]]:
    woke: list[float] = []

    def run() -> None:
        sim.sleep(seconds)
        woke.append(sim.now())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_for(lambda: sim.is_sleeping(thread), 30, "the thread sleeping in simulated time")
    return thread, woke


def test_a_simulated_sleep_returns_once_time_moved_past_it() -> None:
    sim = clock.SimulatedClock(0.0)
    thread, woke = start_sleeper(sim, 5)
    other, other_woke = start_sleeper(sim, 10)
    assert sim.sleepers == 2
    assert sim.is_sleeping(thread.ident) and not sim.is_sleeping(None)
    assert not sim.is_sleeping(threading.current_thread())
    sim.advance(4.5)
    assert sim.is_sleeping(thread) and woke == []
    sim.advance(0.5)  # exactly due: no longer counted as sleeping when advance returns
    assert not sim.is_sleeping(thread) and sim.is_sleeping(other)
    thread.join(30)
    assert woke == [5.0]
    sim.advance(5)
    other.join(30)
    assert other_woke == [10.0] and sim.sleepers == 0


def test_released_threads_do_not_sleep() -> None:
    sim = clock.SimulatedClock(0.0)
    thread, woke = start_sleeper(sim, 100)
    sim.release([thread, threading.Thread()])  # a thread never started has no ident: ignored
    thread.join(30)
    assert not thread.is_alive() and woke == [0.0]
    assert sim.sleepers == 0 and not sim.is_sleeping(thread)
    me = threading.current_thread()
    sim.release([me])
    sim.sleep(50)  # returns at once
    sim.release([me, thread], released=False)  # (a new thread may reuse the ended one's ident)
    assert sim.now() == 0.0
    other, other_woke = start_sleeper(sim, 1)
    sim.release([other], released=False)  # not released: still sleeping
    assert sim.is_sleeping(other)
    sim.advance(1)
    other.join(30)
    assert other_woke == [1.0]


def test_nested_simulations_share_one_clock() -> None:
    assert not clock.simulating() and clock.current_clock() is clock._REAL
    with clock.simulated_time() as outer:
        assert clock.simulating() and clock.current_clock() is outer
        assert clock.now() == 1000.0
        with clock.simulated_time() as inner:
            assert inner is outer
        assert clock.simulating() and clock.current_clock() is outer
        outer.advance(3)
        assert clock.now() == 1003.0
        clock.sleep(0)
    assert not clock.simulating() and clock.current_clock() is clock._REAL
    with clock.simulated_time() as again:
        assert again is not outer and again.now() == 1000.0
    with pytest.raises(RuntimeError) as err:
        clock.leave_simulation()
    assert str(err.value) == "leave_simulation() without a matching enter_simulation()"
    assert not clock.simulating()
