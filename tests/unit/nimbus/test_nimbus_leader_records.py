"""The leader's in-memory StormBases and assignments, and what a monitor round reads and when.

The fake cluster state counts the reads Nimbus makes of what only the leader writes: once the
manager leads (``resume``), a round, a submit, a rebalance and a kill read no StormBase or
assignment from it, and what the manager holds stays equal to what it wrote.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Set
from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import FakeClusterState, NimbusRig

from stormpy.cluster import Assignment, ClusterStateError, StormBase, SupervisorInfo

CONF = {"nimbus.task.timeout.secs": 4, "nimbus.supervisor.timeout.secs": 6, "nimbus.monitor.freq.secs": 10,
        "nimbus.task.launch.secs": 10, "topology.message.timeout.secs": 30}


class CountingState(FakeClusterState):
    """A fake cluster state that counts reads of StormBases and assignments, and can fail writes."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()
        self.fail_writes = False
        self.on_supervisors: Any = None

    def storm_bases(self) -> dict[str, StormBase]:
        self.reads["storm_bases"] += 1
        return super().storm_bases()

    def storm_base(self, tid: str, callback: Any = None) -> StormBase | None:
        self.reads["storm_base"] += 1
        return super().storm_base(tid)

    def assignments(self, callback: Any = None) -> dict[str, Assignment]:
        self.reads["assignments"] += 1
        return super().assignments()

    def assignment(self, tid: str, callback: Any = None) -> Assignment | None:
        self.reads["assignment"] += 1
        return super().assignment(tid)

    def active_storms(self) -> list[str]:
        self.reads["active_storms"] += 1
        return super().active_storms()

    def supervisors(self, callback: Any = None) -> dict[str, SupervisorInfo]:
        if self.on_supervisors is not None:
            self.on_supervisors()
        return super().supervisors()

    def set_assignment(self, assignment: Assignment) -> None:
        if self.fail_writes:
            raise ClusterStateError("ZooKeeper timed out (the write may still be applied)")
        super().set_assignment(assignment)


class Env(NimbusRig):
    def __init__(self, tmp: Path) -> None:
        self.state: CountingState
        super().__init__(tmp, CONF, state=CountingState())

    def run(self, secs: int, *tids: str, skip: Set[tuple[str, int]] = frozenset()) -> None:
        """``secs`` seconds, one at a time: the workers of every topology assigned at that
        second (``tids``: of those only) heartbeat, then a monitor round runs."""
        for _ in range(secs):
            self.clock.advance(1)
            for tid in tids or list(self.state.assigns):
                self.beat(tid, skip)
            self.monitor.tick(raise_errors=True)

    def assert_in_step(self) -> None:
        """What the manager answers is what the cluster state holds."""
        assert self.manager.records.storm_bases() == self.state.bases
        assert self.manager.records.assignments() == self.state.assigns


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_a_leader_reads_bases_and_assignments_once_and_then_from_memory(env: Env) -> None:
    first = env.submit("first")  # before leading: read from the cluster state
    assert env.state.reads["storm_bases"] >= 1
    env.manager.resume()
    assert env.manager.records.in_memory and env.manager.records.loads == 1
    env.state.reads.clear()

    second = env.submit("second")
    env.assert_in_step()
    env.run(12)
    env.manager.rebalance("first", 0, 1, None)
    env.assert_in_step()
    assert len(env.state.assigns[first].workers()) == 1
    env.manager.set_active("second", False)
    env.manager.kill("second", 2)
    env.run(3)
    assert second not in env.state.bases and second not in env.state.assigns
    env.assert_in_step()
    assert env.state.reads == Counter(), "the leader read what only it writes"
    assert env.manager.records.loads == 1


def test_standing_by_reads_from_the_cluster_state_again(env: Env) -> None:
    tid = env.submit("wc")
    env.manager.resume()
    env.manager.stand_by()
    assert not env.manager.records.in_memory
    other = StormBase("other-1", "other", "active", 1, 1.0, "", {})
    env.state.bases["other-1"] = other  # written by the new leader
    assert env.manager.records.storm_bases() == {tid: env.state.bases[tid], "other-1": other}
    env.manager.resume()  # leading again: loads once more
    assert env.manager.records.loads == 2
    assert env.manager.base_by_name("other") == other


def test_a_failed_write_makes_the_copy_load_again(env: Env) -> None:
    tid = env.submit("wc")
    env.manager.resume()
    env.state.fail_writes = True
    env.state.sups.pop("sup-b")
    with pytest.raises(ClusterStateError):  # the write may still reach ZooKeeper...
        env.manager.reschedule(tid, {})
    env.state.assigns[tid] = Assignment(tid, tid, {(1, 1): ("sup-a", 6700)}, {"sup-a": "h"}, {})
    env.state.fail_writes = False
    assert env.manager.records.assignment(tid) == env.state.assigns[tid]  # ...so it is read again
    assert env.manager.records.loads == 2


def test_a_round_reads_the_supervisors_before_taking_the_lock(env: Env) -> None:
    """A submit waits for the round's decisions, not for its ZooKeeper reads."""
    env.submit("wc")
    env.manager.resume()
    held: list[bool] = []

    def lock_is_free() -> None:
        got: list[bool] = []

        def probe() -> None:  # another thread: the round's own thread could re-enter the RLock
            got.append(env.manager.lock.acquire(timeout=0))
            if got[0]:
                env.manager.lock.release()

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        held.append(not got[0])

    env.state.on_supervisors = lock_is_free
    env.monitor.tick(raise_errors=True)
    assert held == [False]


def test_layouts_are_computed_once_per_executor_counts(env: Env) -> None:
    tid = env.submit("wc")
    base = env.state.bases[tid]
    assert env.manager.layout(base) is env.manager.layout(base)
    env.manager.rebalance("wc", 0, None, {"count": 1})
    changed = env.manager.layout(env.state.bases[tid])
    assert len([e for e in changed.executors if e.component == "count"]) == 1


def test_a_vanished_supervisor_wakes_the_monitor_and_its_timeout_ends_a_round(env: Env) -> None:
    tid = env.submit("wc")
    env.run(1)
    woken: list[bool] = []
    env.monitor.wake = lambda: woken.append(True)  # type: ignore[method-assign]
    env.monitor.supervisors_changed(["sup-a", "sup-b", "sup-c"])  # one more: no round needed
    assert woken == []
    del env.state.sups["sup-b"]
    env.monitor.supervisors_changed(["sup-a"])
    assert woken == [True]
    missed_at = env.clock()
    assert env.monitor._round() == pytest.approx(6.0)  # its timeout (6 s) ends before the period (10 s)
    env.clock.advance(4)
    assert env.monitor._round() == pytest.approx(2.0)
    env.clock.now = missed_at + 6
    for assigned in list(env.state.assigns):
        env.beat(assigned)
    env.monitor._round()
    assert {n for n, _ in env.state.assigns[tid].executors.values()} == {"sup-a"}
    env.monitor.supervisors_changed(["sup-a"])  # sup-b is known missing: no round needed
    assert woken == [True]
    assert env.monitor._round() == pytest.approx(10.0)  # nothing pending: the period


def test_a_topology_page_reads_only_the_supervisors_its_workers_run_on(env: Env) -> None:
    from stormpy.nimbus.handler import NimbusHandler

    for i in range(20):
        env.state.add_supervisor(f"idle-{i}", [6700])
    tid = env.submit("wc")
    env.manager.resume()
    asked: list[list[str]] = []
    real = env.state.supervisors_of
    env.state.supervisors_of = lambda sids: (asked.append(sorted(sids)), real(sids))[1]  # type: ignore[method-assign]
    env.state.supervisors = None  # type: ignore[assignment,method-assign]  # must not read them all
    info = NimbusHandler(env.manager, None, None, nimbus_info=dict).get_topology_info("wc")  # type: ignore[arg-type]
    assert info["id"] == tid
    assert asked == [sorted({n for n, _ in env.state.assigns[tid].workers()})]
