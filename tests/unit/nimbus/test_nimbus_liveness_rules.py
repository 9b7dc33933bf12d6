"""The monitor's liveness rules one by one (``executor_liveness`` on hand-made assignments and
heartbeats), the heartbeat cache, and what a round does with them (in-memory cluster state,
simulated time)."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

import stormpy.nimbus.monitor as monitor_module
from stormpy.cluster import Assignment, ClusterStateError, SupervisorInfo, WorkerHeartbeat
from stormpy.config import DEFAULTS
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.monitor import ROUND_SUMMARY_SECS, HeartbeatCache, Monitor, executor_liveness, wall_clock
from stormpy.nimbus.store import BundleStore, StoreError
from stormpy.nimbus.topologies import TopologyManager
from wordcount import build

E1, E2 = (1, 1), (2, 2)
SLOT_A, SLOT_B = ("sup-a", 6700), ("sup-b", 6700)


def sup(node: str, *ports: int) -> SupervisorInfo:
    return SupervisorInfo(node, f"host-{node}", tuple(ports), 0.0, "test")


def assigned(started: float = 0.0) -> Assignment:
    return Assignment("t-1", "t-1", {E1: SLOT_A, E2: SLOT_B}, {"sup-a": "h", "sup-b": "h"},
                      {E1: started, E2: started})


def judge(assignment: Assignment, beats: dict[Any, WorkerHeartbeat], sups: dict[str, SupervisorInfo],
          **kw: Any) -> tuple[dict[Any, Any], set[Any]]:
    args: dict[str, Any] = {"now": 100.0, "changed_at": {}, "missing_since": {}, "task_timeout": 4.0,
                            "launch_secs": 10.0, "supervisor_timeout": 6.0}
    args.update(kw)
    result = executor_liveness(assignment, beats, sups, **args)
    return result.alive, result.dead_slots


def test_executors_within_the_launch_time_are_alive_without_any_heartbeat() -> None:
    sups = {"sup-a": sup("sup-a", 6700), "sup-b": sup("sup-b", 6700)}
    assert judge(assigned(started=90.5), {}, sups) == ({E1: SLOT_A, E2: SLOT_B}, set())
    assert judge(assigned(started=90.0), {}, sups) == ({}, {SLOT_A, SLOT_B})


def beat(slot: tuple[str, int], *executors: Any, at: float = 1.0) -> WorkerHeartbeat:
    return WorkerHeartbeat("t-1", slot[0], slot[1], at, 1.0, executors)


BOTH = {"sup-a": sup("sup-a", 6700), "sup-b": sup("sup-b", 6700)}


def test_a_missing_start_time_counts_from_zero() -> None:
    no_times = Assignment("t-1", "t-1", {E1: SLOT_A}, {"sup-a": "h"}, {})
    assert judge(no_times, {}, BOTH, now=9.5) == ({E1: SLOT_A}, set())
    assert judge(no_times, {}, BOTH, now=10.0) == ({}, {SLOT_A})


def test_a_port_the_supervisor_no_longer_offers_kills_its_worker_even_within_the_launch_time() -> None:
    sups = {"sup-a": sup("sup-a", 6701), "sup-b": sup("sup-b", 6700)}
    assert judge(assigned(started=99.0), {}, sups) == ({E2: SLOT_B}, {SLOT_A})


def test_a_vanished_supervisor_counts_as_live_until_its_timeout() -> None:
    only_b = {"sup-b": sup("sup-b", 6700)}
    fresh = assigned(started=99.0)
    assert judge(fresh, {}, only_b, missing_since={"sup-a": 94.5}) == ({E1: SLOT_A, E2: SLOT_B}, set())
    assert judge(fresh, {}, only_b, missing_since={"sup-a": 94.0}) == ({E2: SLOT_B}, {SLOT_A})
    # never missed before: it is missed from now on, alive for the timeout
    assert judge(fresh, {}, only_b) == ({E1: SLOT_A, E2: SLOT_B}, set())
    # within its timeout it is judged like any other: by its heartbeats once launched
    assert judge(assigned(), {SLOT_B: beat(SLOT_B, E2)}, only_b, missing_since={"sup-a": 99.0},
                 changed_at={SLOT_B: 99.0}) == ({E2: SLOT_B}, {SLOT_A})
    assert judge(assigned(), {SLOT_A: beat(SLOT_A, E1), SLOT_B: beat(SLOT_B, E2)}, only_b,
                 missing_since={"sup-a": 99.0}, changed_at={SLOT_A: 99.0, SLOT_B: 99.0}) == (
        {E1: SLOT_A, E2: SLOT_B}, set())
    # a vanished supervisor past its timeout is dead even while heartbeats are not judged
    assert judge(assigned(), {}, only_b, missing_since={"sup-a": 90.0}, judge_heartbeats=False) == (
        {E2: SLOT_B}, {SLOT_A})


def test_heartbeats_are_not_judged_in_a_new_leaders_grace_period() -> None:
    assert judge(assigned(), {}, BOTH, judge_heartbeats=False) == ({E1: SLOT_A, E2: SLOT_B}, set())


def test_a_heartbeat_is_fresh_while_it_changed_less_than_the_task_timeout_ago() -> None:
    beats = {SLOT_A: beat(SLOT_A, E1), SLOT_B: beat(SLOT_B, E2)}
    assert judge(assigned(), beats, BOTH, changed_at={SLOT_A: 96.5, SLOT_B: 96.0}) == (
        {E1: SLOT_A}, {SLOT_B})
    assert judge(assigned(), beats, BOTH, changed_at={SLOT_A: 96.5}) == ({E1: SLOT_A}, {SLOT_B})


def test_a_heartbeat_without_an_executor_list_speaks_for_every_executor_of_its_worker() -> None:
    two = Assignment("t-1", "t-1", {E1: SLOT_A, E2: SLOT_A}, {"sup-a": "h"}, {})
    beats = {SLOT_A: beat(SLOT_A)}
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 97.0}) == ({E1: SLOT_A, E2: SLOT_A}, set())
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 96.0}) == ({}, {SLOT_A})
    assert judge(two, beats, BOTH) == ({}, {SLOT_A})
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 97.0}, listed_at={}) == (
        {E1: SLOT_A, E2: SLOT_A}, set())


def test_an_executor_the_heartbeat_does_not_list_is_dead_at_once_without_listing_times() -> None:
    two = Assignment("t-1", "t-1", {E1: SLOT_A, E2: SLOT_A}, {"sup-a": "h"}, {})
    beats = {SLOT_A: beat(SLOT_A, E1)}
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 99.0}) == ({E1: SLOT_A}, {SLOT_A})
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 96.0}) == ({}, {SLOT_A})


def test_with_listing_times_an_executor_lives_until_the_task_timeout_after_its_last_listing() -> None:
    two = Assignment("t-1", "t-1", {E1: SLOT_A, E2: SLOT_A}, {"sup-a": "h"}, {})
    beats = {SLOT_A: beat(SLOT_A, E1)}
    listed = {E1: 99.0, E2: 96.5}
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 99.0}, listed_at=listed) == (
        {E1: SLOT_A, E2: SLOT_A}, set())
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 99.0}, listed_at={E1: 99.0, E2: 96.0}) == (
        {E1: SLOT_A}, {SLOT_A})
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 99.0}, listed_at={E1: 99.0}) == (
        {E1: SLOT_A}, {SLOT_A})
    # the worker's heartbeat itself stopped changing: every executor of it is dead
    assert judge(two, beats, BOTH, changed_at={SLOT_A: 96.0}, listed_at=listed) == ({}, {SLOT_A})
    assert judge(two, beats, BOTH, listed_at=listed) == ({}, {SLOT_A})


def test_the_heartbeat_cache_times_changes_and_listings_per_topology() -> None:
    cache = HeartbeatCache()
    assert cache.observe("t", SLOT_A, 5.0, 100.0, [E1, E2]) == 100.0
    assert cache.observe("t", SLOT_A, 5.0, 103.0, [E1]) == 100.0  # unchanged: its listing is old news
    assert cache.listed_at("t", [E1, E2], 104.0) == {E1: 100.0, E2: 100.0}
    assert cache.observe("t", SLOT_A, 6.0, 105.0, [E1]) == 105.0
    assert cache.listed_at("t", [E1, E2], 106.0) == {E1: 105.0, E2: 100.0}
    assert cache.observe("u", SLOT_A, 6.0, 107.0) == 107.0  # another topology: its own entries
    # an executor never listed counts from the first time it is asked about
    assert cache.listed_at("u", [E1], 108.0) == {E1: 108.0}
    assert cache.listed_at("u", [E1], 109.0) == {E1: 108.0}
    assert cache.topologies() == {"t", "u"}
    cache.observe("t", SLOT_B, 1.0, 110.0)
    cache.forget("t", keep={SLOT_B})  # the slot is gone, its executors' listings stay
    assert cache.observe("t", SLOT_A, 6.0, 111.0) == 111.0
    assert cache.observe("t", SLOT_B, 1.0, 112.0) == 110.0
    assert cache.listed_at("t", [E1], 113.0) == {E1: 105.0}
    cache.forget("t", keep=set())
    assert cache.topologies() == {"u"}
    cache.forget("gone", keep={SLOT_A})
    cache.forget("gone")
    cache.forget("t")  # the whole topology: its listings go too
    assert cache.listed_at("t", [E1], 114.0) == {E1: 114.0}
    assert cache.topologies() == {"u"}


def test_monitor_settings_come_from_the_conf_or_the_defaults(tmp_path: Path) -> None:
    manager = TopologyManager(FakeClusterState(), BundleStore(NimbusDirs(tmp_path / "l")),  # type: ignore[arg-type]
                              {}, clock=SimClock(5.0))
    monitor = Monitor(manager, {})
    keys = ("nimbus.monitor.freq.secs", "nimbus.task.timeout.secs", "nimbus.task.launch.secs",
            "nimbus.supervisor.timeout.secs")
    settings = (monitor.freq_secs, monitor.task_timeout, monitor.launch_secs, monitor.supervisor_timeout)
    assert settings == tuple(float(DEFAULTS[k]) for k in keys)
    assert monitor.clock() == 5.0  # the manager's clock
    monitor = Monitor(manager, dict(zip(keys, (2, 3, 4, 5), strict=True)), clock=lambda: 7.0)
    assert (monitor.freq_secs, monitor.task_timeout, monitor.launch_secs, monitor.supervisor_timeout) == (
        2.0, 3.0, 4.0, 5.0)
    assert monitor.clock() == 7.0
    assert abs(wall_clock() - time.time()) < 60


ROUND_CONF = {"nimbus.task.timeout.secs": 4, "nimbus.supervisor.timeout.secs": 6,
              "nimbus.monitor.freq.secs": 10, "nimbus.task.launch.secs": 10,
              "topology.message.timeout.secs": 30}


class Expiring:
    """An upload or download manager stand-in: records when it was asked to expire sessions."""

    def __init__(self) -> None:
        self.asked: list[float | None] = []

    def expire(self, now: float | None = None) -> list[str]:
        self.asked.append(now)
        return []


def monitor_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "stormpy.nimbus.monitor"]


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in monitor_records(caplog)]


class Round:
    """A manager and monitor over the in-memory cluster state, on simulated time."""

    def __init__(self, tmp: Path, **monitor_kw: Any) -> None:
        self.tmp = tmp
        self.clock = SimClock()
        self.state = FakeClusterState()
        self.state.add_supervisor("sup-a", [6700, 6701])
        self.state.add_supervisor("sup-b", [6700, 6701])
        self.store = BundleStore(NimbusDirs(tmp / "local"))
        self.manager = TopologyManager(self.state, self.store, ROUND_CONF, clock=self.clock)  # type: ignore[arg-type]
        self.monitor = Monitor(self.manager, ROUND_CONF, clock=self.clock, **monitor_kw)

    def submit(self, name: str = "wc", workers: int = 2, status: str = "active") -> str:
        return self.manager.submit(name, staged_bundle(self.tmp, name), build(100).create_topology(),
                                   {"topology.workers": workers}, status)

    def beat(self, tid: str, skip: set[tuple[str, int]] = frozenset()) -> None:  # type: ignore[assignment]
        for (node, port), execs in self.state.assigns[tid].workers().items():
            if (node, port) not in skip:
                self.monitor.beats.record([WorkerHeartbeat(tid, node, port, self.clock(), 1.0, execs)])

    def run(self, secs: int, *tids: str, skip: set[tuple[str, int]] = frozenset()) -> None:  # type: ignore[assignment]
        for _ in range(secs):
            self.clock.advance(1)
            for tid in tids:
                self.beat(tid, skip)
            self.monitor.tick(raise_errors=True)


def test_heartbeats_are_judged_from_one_task_timeout_after_the_first_round(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.clock.advance(20)  # past the launch time: only the grace of a new leader keeps it
    env.monitor.tick()
    assert env.monitor.judge_from == env.clock() + 4
    first = env.state.assigns[tid]
    env.clock.advance(3.5)
    env.monitor.tick()
    assert env.state.assigns[tid] == first and env.monitor.judge_from == env.clock() + 0.5
    env.clock.advance(0.5)  # no heartbeat ever arrived: the workers are dead now
    env.monitor.tick()
    assert set(env.state.assigns[tid].workers()).isdisjoint(first.workers())


def test_each_round_expires_uploads_and_downloads_at_its_time(tmp_path: Path) -> None:
    uploads, downloads = Expiring(), Expiring()
    env = Round(tmp_path, uploads=uploads, downloads=downloads)
    env.monitor.tick(123.0)
    env.monitor.tick()
    assert uploads.asked == downloads.asked == [123.0, env.clock()]


def test_a_round_whose_supervisor_read_fails_still_fires_waits_and_cleans_up(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    doomed = env.submit("doomed")
    env.manager.kill("doomed", 1)
    env.state.errs["gone-1"] = {}

    def unreadable(callback: Any = None) -> dict[str, SupervisorInfo]:
        raise ClusterStateError("ZooKeeper timed out")

    env.state.supervisors = unreadable  # type: ignore[method-assign]
    before = env.state.assigns[tid]
    env.clock.advance(30)
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor.tick()
    assert doomed not in env.state.bases and "gone-1" not in env.state.topologies()
    assert env.state.assigns[tid] == before  # nothing judged without the supervisors
    assert lines(caplog) == [
        "monitor: reading the supervisors failed: ZooKeeper timed out"]
    with pytest.raises(ClusterStateError, match="ZooKeeper timed out"):
        env.monitor.tick(raise_errors=True)


def test_a_round_whose_topology_listing_fails_still_reschedules(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    tid = env.submit()

    def unlisted() -> list[str]:
        raise ClusterStateError("no listing")

    env.state.topologies = unlisted  # type: ignore[method-assign]
    env.state.add_supervisor("sup-c", [6700])
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor.tick()
    assert set(env.state.assigns[tid].executors.values()) == {("sup-c", 6700)}
    assert lines(caplog) == ["monitor: listing topology state failed: no listing"]


def test_one_topology_failing_to_schedule_does_not_stop_the_others(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    first = env.submit("first")
    second = env.submit("second")
    env.state.add_supervisor("sup-c", [6700, 6701])
    real = env.manager.layout

    def broken(base: Any) -> Any:
        if base.topology_id == first:
            raise KeyError("broken layout")
        return real(base)

    env.manager.layout = broken  # type: ignore[method-assign]
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor.tick()
    assert first not in env.state.assigns and second in env.state.assigns
    [record] = monitor_records(caplog)
    assert record.getMessage() == f"monitor: scheduling {first} failed" and record.exc_info is not None
    with pytest.raises(KeyError, match="broken layout"):
        env.monitor.tick(raise_errors=True)
    caplog.clear()
    env.manager.layout = lambda base: (_ for _ in ()).throw(StoreError("code gone"))  # type: ignore[method-assign]
    env.monitor.tick()
    assert lines(caplog) == [f"monitor: scheduling {first} failed: code gone",
                                                        f"monitor: scheduling {second} failed: code gone"]


def test_a_topology_whose_code_is_missing_is_not_scheduled_but_asked_for(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    asked: list[str] = []
    env = Round(tmp_path, on_missing_bundle=asked.append)
    env.state.sups.clear()
    tid = env.submit()
    env.store.remove(tid)
    env.state.add_supervisor("sup-c", [6700])
    env.monitor.tick(raise_errors=True)
    assert asked == [tid] and tid not in env.state.assigns

    def refuse(topology_id: str) -> None:
        raise ClusterStateError("cannot ask")

    env.monitor._on_missing_bundle = refuse
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor.tick()
    assert lines(caplog) == [f"monitor: asking for the code of {tid} failed: "
                                                        "cannot ask"]
    alone = Round(tmp_path / "alone")  # without a way to ask for it: skipped all the same
    alone.state.sups.clear()
    other = alone.submit()
    alone.store.remove(other)
    alone.state.add_supervisor("sup-c", [6700])
    alone.monitor.tick(raise_errors=True)
    assert other not in alone.state.assigns


def test_only_active_and_inactive_topologies_are_rescheduled(tmp_path: Path) -> None:
    env = Round(tmp_path)
    live = env.submit("live", status="inactive")
    moving = env.submit("moving")
    env.manager.rebalance("moving", 100, None, None)
    env.run(12, live, moving)
    firsts = {tid: env.state.assigns[tid] for tid in (live, moving)}
    env.state.add_supervisor("sup-c", [6700, 6701])
    env.run(5, skip={(n, p) for n in ("sup-a", "sup-b") for p in (6700, 6701)})  # nobody beats
    assert env.state.assigns[moving] == firsts[moving]
    assert {n for n, _ in env.state.assigns[live].executors.values()} == {"sup-c"}
    assert env.monitor.beats.of([moving]) == {moving: {}}  # the beats of a topology not running go


def test_a_killed_topology_leaves_no_heartbeat_entries(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.run(2, tid)
    assert env.monitor.heartbeats.topologies() == {tid}
    env.manager.kill("wc", 3)
    env.run(3, tid)
    assert tid not in env.state.bases and env.monitor.heartbeats.topologies() == set()


def test_leftover_state_is_removed_with_its_heartbeat_entries(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.run(2, tid)
    env.monitor.heartbeats.observe("gone-1", ("sup-a", 6700), 1.0, env.clock())
    env.state.assigns["gone-1"] = replace(env.state.assigns[tid], topology_id="gone-1")
    env.monitor.tick(raise_errors=True)
    assert "gone-1" not in env.state.topologies() and tid in env.state.bases
    assert env.monitor.heartbeats.topologies() == {tid}


def test_a_supervisor_never_seen_by_a_new_leader_counts_as_missing_from_its_first_round(
        tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    lost = env.state.sups.pop("sup-b")
    env.clock.advance(20)
    # a new leader's monitor (heartbeats not judged for 30 s: only the supervisor rules apply)
    monitor = Monitor(env.manager, {**ROUND_CONF, "nimbus.task.timeout.secs": 30}, clock=env.clock)
    first = env.state.assigns[tid]
    monitor.tick(raise_errors=True)
    assert env.state.assigns[tid] == first
    env.clock.advance(5.5)
    monitor.tick(raise_errors=True)
    assert env.state.assigns[tid] == first
    env.clock.advance(0.5)  # its supervisor timeout (6 s) from the first round
    monitor.tick(raise_errors=True)
    assert {n for n, _ in env.state.assigns[tid].executors.values()} == {"sup-a"}
    env.state.sups["sup-b"] = lost
    monitor.tick(raise_errors=True)
    assert monitor._supervisor_deadline(env.clock()) is None


def test_a_supervisor_back_before_its_timeout_starts_a_new_timeout_when_it_goes_again(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.run(12, tid)
    first = env.state.assigns[tid]
    lost = env.state.sups.pop("sup-b")
    env.run(5, tid)
    env.state.sups["sup-b"] = lost
    env.run(1, tid)
    del env.state.sups["sup-b"]
    env.run(6, tid)  # 5 s since it was first missed again: still within its timeout
    assert env.state.assigns[tid] == first
    env.run(1, tid)
    assert {n for n, _ in env.state.assigns[tid].executors.values()} == {"sup-a"}


def test_the_next_round_comes_sooner_when_a_wait_ends_first(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    assert env.monitor._round() == 10.0
    env.manager.kill("wc", 3)
    assert env.monitor._round() == pytest.approx(3.0)
    env.manager.timers.schedule(tid, "kill", env.clock() - 5)
    env.manager.timers.due = lambda now: []  # type: ignore[method-assign]  # overdue, not yet fired
    assert env.monitor._round() == 0.01


def test_a_round_longer_than_the_period_is_a_warning(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.submit("other")
    env.beat(tid)
    env.monitor.freq_secs = -1.0  # every round is longer than that
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor._round()
    [line] = lines(caplog)
    assert line.startswith("monitor round took ") and line.endswith(
        "longer than nimbus.monitor.freq.secs (-1 s): 2 topologies, 2 worker heartbeats read")


def test_the_round_summary_gives_the_median_and_the_longest_round(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    env = Round(tmp_path)
    ticks = iter([100.0, 101.0, 200.0, 203.0, 300.0, 302.0, 400.0, 400.5])
    monkeypatch.setattr(monitor_module.time, "perf_counter", lambda: next(ticks))
    env.monitor._summary_at = 400.0 - ROUND_SUMMARY_SECS
    caplog.set_level(logging.INFO, logger="stormpy.nimbus.monitor")
    for _ in range(4):
        env.monitor._round()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("monitor round took")]
    assert lines == ["monitor round took 2.000 s (median of 4 rounds in 60 s; longest 3.000 s): "
                     "0 topologies, 0 worker heartbeats read"]
    assert env.monitor._summary_at == 400.0 and env.monitor._round_secs == []


def test_a_monitor_starts_once(tmp_path: Path) -> None:
    env = Round(tmp_path)
    assert not env.monitor.running
    env.monitor.start()
    try:
        assert env.monitor.running
        with pytest.raises(RuntimeError, match="^monitor already started$"):
            env.monitor.start()
    finally:
        env.monitor.stop()
    assert not env.monitor.running
    with pytest.raises(RuntimeError, match="^monitor already started$"):
        env.monitor.start()  # a stopped monitor is not started again
