"""The monitor's liveness rules one by one (``executor_liveness`` on hand-made assignments and
heartbeats), the heartbeat cache, and what a round does with them (in-memory cluster state,
simulated time)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import FakeClusterState, NimbusRig, SimClock, staged_bundle

import stormpy.nimbus.monitor as monitor_module
from stormpy.cluster import Assignment, ClusterStateError, SupervisorInfo, WorkerHeartbeat
from stormpy.config import DEFAULTS
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.monitor import ROUND_SUMMARY_SECS, HeartbeatCache, Monitor, executor_liveness, wall_clock
from stormpy.nimbus.store import BundleStore, StoreError
from stormpy.nimbus.topologies import TopologyManager
from stormpy.testing import wait_for
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


class Round(NimbusRig):
    """A manager and monitor over the in-memory cluster state, on simulated time."""

    def __init__(self, tmp: Path, **monitor_kw: Any) -> None:
        super().__init__(tmp, ROUND_CONF, **monitor_kw)


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
    with pytest.raises(ClusterStateError, match="no listing"):
        env.monitor.tick(raise_errors=True)


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
    assert lines(caplog) == [f"monitor: asking for the code of {tid} failed: cannot ask"]
    with pytest.raises(ClusterStateError, match="cannot ask"):
        env.monitor.tick(raise_errors=True)
    # the topologies after it in the round are scheduled all the same
    env.state.sups.clear()
    later = env.submit("zz-later")
    env.state.add_supervisor("sup-c", [6700])
    asked.clear()
    env.monitor._on_missing_bundle = asked.append
    env.monitor.tick(raise_errors=True)
    assert asked == [tid] and later in env.state.assigns and tid not in env.state.assigns
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


def test_a_kill_in_a_round_that_cannot_list_topologies_still_forgets_its_heartbeats(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.run(2, tid)
    env.manager.kill("wc", 1)

    def unlisted() -> list[str]:
        raise ClusterStateError("no listing")

    env.state.topologies = unlisted  # type: ignore[method-assign]
    env.clock.advance(1)
    env.monitor.tick()  # the kill fires; the clean-up of leftovers has nothing to go on
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
    other = env.submit("other")
    env.beat(tid)
    env.beat(other)
    env.monitor.freq_secs = -1.0  # every round is longer than that
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor._round()
    [line] = lines(caplog)
    assert line.startswith("monitor round took ") and line.endswith(
        "longer than nimbus.monitor.freq.secs (-1 s): 2 topologies, 4 worker heartbeats read")


def test_a_round_as_long_as_the_period_is_no_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    env = Round(tmp_path)
    ticks = iter([50.0, 60.0, 70.0, 80.5])
    monkeypatch.setattr(monitor_module.time, "perf_counter", lambda: next(ticks))
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor._round()  # 10 s: the period itself
    assert lines(caplog) == []
    env.monitor._round()
    assert lines(caplog) == ["monitor round took 10.50 s, longer than nimbus.monitor.freq.secs (10 s): "
                             "0 topologies, 0 worker heartbeats read"]


def test_the_first_summary_counts_nothing_when_no_round_could_read_the_supervisors(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    env = Round(tmp_path)
    env.submit()

    def unreadable(callback: Any = None) -> dict[str, SupervisorInfo]:
        raise ClusterStateError("ZooKeeper timed out")

    env.state.supervisors = unreadable  # type: ignore[method-assign]
    ticks = iter([1000.0, 1001.0])
    monkeypatch.setattr(monitor_module.time, "perf_counter", lambda: next(ticks))
    env.monitor._summary_at = 1000.0 - ROUND_SUMMARY_SECS
    caplog.set_level(logging.INFO, logger="stormpy.nimbus.monitor")
    env.monitor._round()
    assert [line for line in lines(caplog) if line.startswith("monitor round took")] == [
        "monitor round took 1.000 s (median of 1 rounds in 60 s; longest 1.000 s): "
        "0 topologies, 0 worker heartbeats read"]


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


def count_supervisor_reads(env: Round) -> list[int]:
    reads = [0]
    real = env.state.supervisors

    def counted(callback: Any = None) -> dict[str, SupervisorInfo]:
        reads[0] += 1
        return real()

    env.state.supervisors = counted  # type: ignore[method-assign]
    return reads


def slots_of(env: Round, tid: str) -> set[tuple[str, int]]:
    return set(env.state.assigns[tid].executors.values())


def test_topologies_scheduled_in_one_round_see_each_others_slots(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    first = env.submit("a-top", workers=1)
    second = env.submit("b-top", workers=1)
    env.state.add_supervisor("sup-c", [6700, 6701])
    reads = count_supervisor_reads(env)
    env.monitor.tick(raise_errors=True)
    assert reads == [1]  # the round's one read serves every reschedule
    assert slots_of(env, first) == {("sup-c", 6700)} and slots_of(env, second) == {("sup-c", 6701)}


def test_a_dead_worker_moved_in_a_round_is_seen_by_the_next_topology_of_the_round(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    env.state.add_supervisor("sup-a", [6700])
    first = env.submit("a-top", workers=1)
    env.state.sups.clear()
    second = env.submit("b-top", workers=1)  # no slot free: waits for the monitor
    env.state.add_supervisor("sup-a", [6701, 6702])  # port 6700 gone: the first's worker is dead
    reads = count_supervisor_reads(env)
    env.monitor.tick(raise_errors=True)
    assert reads == [1]
    assert slots_of(env, first) == {("sup-a", 6701)} and slots_of(env, second) == {("sup-a", 6702)}


def test_a_topology_scheduled_in_a_round_is_seen_by_a_dead_worker_moved_after_it(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    env.state.add_supervisor("sup-a", [6700])
    moved = env.submit("b-top", workers=1)
    env.state.sups.clear()
    waiting = env.submit("a-top", workers=1)  # no slot: scheduled by the round, before the other
    env.state.add_supervisor("sup-a", [6701, 6702])  # port 6700 gone: the other's worker is dead
    env.monitor.tick(raise_errors=True)
    assert slots_of(env, waiting) == {("sup-a", 6701)} and slots_of(env, moved) == {("sup-a", 6702)}


def test_a_topology_spreading_in_a_round_is_seen_by_the_next_topology_of_the_round(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    env.state.add_supervisor("sup-a", [6700])
    first = env.submit("a-top", workers=2)  # packed on the one slot there is
    second = env.submit("b-top", workers=1)  # nothing free: waits
    assert slots_of(env, first) == {("sup-a", 6700)} and second not in env.state.assigns
    env.state.add_supervisor("sup-b", [6700])
    reads = count_supervisor_reads(env)
    env.monitor.tick(raise_errors=True)
    assert reads == [1]
    assert slots_of(env, first) == {("sup-a", 6700), ("sup-b", 6700)} and second not in env.state.assigns


def test_a_packed_topology_is_not_rescheduled_while_no_slot_is_free(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    env.state.add_supervisor("sup-a", [6700, 6701])
    packed = env.submit("a-top", workers=3)  # three workers asked, two slots
    asked: list[str] = []
    real = env.manager.reschedule
    env.manager.reschedule = lambda tid, *a, **k: (asked.append(tid), real(tid, *a, **k))[1]  # type: ignore[method-assign]
    env.run(3, packed)
    assert asked == [] and len(env.state.assigns[packed].workers()) == 2
    env.state.add_supervisor("sup-b", [6700])
    env.run(1, packed)
    assert asked == [packed] and len(env.state.assigns[packed].workers()) == 3


def test_a_packed_topology_is_not_rescheduled_onto_slots_another_topology_holds(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.sups.clear()
    env.state.add_supervisor("sup-a", [6700])
    other = env.submit("b-top", workers=1)
    env.state.add_supervisor("sup-b", [6700])
    packed = env.submit("a-top", workers=2)
    assert slots_of(env, other) == {("sup-a", 6700)} and slots_of(env, packed) == {("sup-b", 6700)}
    asked: list[str] = []
    real = env.manager.reschedule
    env.manager.reschedule = lambda tid, *a, **k: (asked.append(tid), real(tid, *a, **k))[1]  # type: ignore[method-assign]
    env.run(3, packed, other)
    assert asked == []


def test_a_topology_with_fewer_executors_than_workers_is_not_spread_further(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.manager.submit("small", staged_bundle(tmp_path, "small"), build(100).create_topology(),
                             {"topology.workers": 20, "topology.acker.executors": 0}, "active")
    assert len(env.state.assigns[tid].workers()) == 4  # every slot there is
    env.state.add_supervisor("sup-c", [6700, 6701, 6702, 6703, 6704, 6705, 6706])
    env.run(1, tid)
    assert len(env.state.assigns[tid].workers()) == 7  # one executor a worker: no more
    asked: list[str] = []
    env.manager.reschedule = lambda tid, *a, **k: asked.append(tid)  # type: ignore[method-assign,assignment]
    env.run(2, tid)
    assert asked == []


def test_a_topology_whose_workers_all_moved_leaves_no_heartbeat_entries(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    env.run(2, tid)
    assert env.monitor.heartbeats.topologies() == {tid}
    env.state.add_supervisor("sup-a", [6710, 6711])  # every port the workers ran on is gone
    env.state.add_supervisor("sup-b", [6710, 6711])
    env.monitor.tick(raise_errors=True)
    assert {p for _, p in slots_of(env, tid)} <= {6710, 6711}
    env.monitor.tick(raise_errors=True)  # the old slots' heartbeats are gone: so are their entries
    assert env.monitor.heartbeats.topologies() == set()


def test_an_executor_never_listed_dies_a_task_timeout_after_it_was_first_asked_about(tmp_path: Path) -> None:
    env = Round(tmp_path)
    tid = env.submit()
    first = env.state.assigns[tid]
    slot = sorted(first.workers())[0]
    never = sorted(first.workers()[slot])[0]

    def run(secs: int) -> None:
        for _ in range(secs):
            env.clock.advance(1)
            for (node, port), execs in first.workers().items():
                listed = [e for e in execs if e != never]
                env.monitor.beats.record([WorkerHeartbeat(tid, node, port, env.clock(), 1.0, listed)])
            env.monitor.tick(raise_errors=True)

    run(9)  # within the launch time
    assert env.state.assigns[tid] == first
    run(1)  # launched, and 9 s since the first round asked about it
    assert slot not in env.state.assigns[tid].workers()


def test_failures_outside_one_topology_are_named_in_the_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Round(tmp_path)
    tid = env.submit()

    def no_assignments(callback: Any = None) -> dict[str, Assignment]:
        raise ClusterStateError("assignments unreadable")

    real_assignments = env.state.assignments
    env.state.assignments = no_assignments  # type: ignore[method-assign]
    caplog.set_level(logging.WARNING, logger="stormpy.nimbus.monitor")
    env.monitor.tick()
    assert lines(caplog) == ["monitor: reassignment failed: assignments unreadable"]
    with pytest.raises(ClusterStateError, match="assignments unreadable"):
        env.monitor.tick(raise_errors=True)
    env.state.assignments = real_assignments  # type: ignore[method-assign]
    caplog.clear()

    def no_removal(topology_id: str) -> None:
        raise ClusterStateError("cannot remove")

    env.state.remove_topology = no_removal  # type: ignore[method-assign]
    env.state.errs["gone-1"] = {}
    env.monitor.tick()
    assert lines(caplog) == ["monitor: cleanup failed: cannot remove"]
    with pytest.raises(ClusterStateError, match="cannot remove"):
        env.monitor.tick(raise_errors=True)
    del env.state.errs["gone-1"]
    caplog.clear()
    env.manager.kill("wc", 1)
    env.clock.advance(1)
    env.monitor.tick()
    assert lines(caplog) == [f"kill of {tid} failed: cannot remove".join(["monitor: ", ""])]
    assert env.state.bases[tid].status == "killed"
    env.manager.timers.schedule(tid, "kill", env.clock())
    with pytest.raises(ClusterStateError, match="cannot remove"):
        env.monitor.tick(raise_errors=True)


def test_an_idle_supervisor_that_vanished_is_missed_once(tmp_path: Path) -> None:
    env = Round(tmp_path)
    env.state.add_supervisor("sup-idle", [6700])
    env.monitor.tick(raise_errors=True)
    woken: list[bool] = []
    env.monitor.wake = lambda: woken.append(True)  # type: ignore[method-assign]
    del env.state.sups["sup-idle"]
    env.monitor.supervisors_changed(["sup-a", "sup-b"])
    assert woken == [True]
    env.clock.advance(1)
    assert env.monitor._round() == pytest.approx(6.0)  # its timeout ends before the period
    env.monitor.supervisors_changed(["sup-a", "sup-b"])  # already missed: no round needed
    assert woken == [True]


def test_the_monitor_thread_runs_rounds_and_reports_a_failing_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = Round(tmp_path)
    caplog.set_level(logging.INFO, logger="stormpy.nimbus.monitor")
    env.monitor.start()
    try:
        wait_for(lambda: env.monitor.judge_from is not None, 30, "the monitor's first round")
        assert "nimbus-monitor" in {t.name for t in threading.enumerate()}

        def broken(now: float) -> list[Any]:
            raise ValueError("timers broken")

        env.manager.timers.due = broken  # type: ignore[method-assign]
        env.monitor.wake()
        failed = "nimbus-monitor: round failed (1 in a row)"
        wait_for(lambda: any(m.startswith(failed) for m in lines(caplog)), 30,
                 "the failed round in the monitor's log")
    finally:
        env.monitor.stop()
    assert "monitor stopped" in lines(caplog)


def test_stopping_gives_up_on_a_stuck_round_after_its_timeout(tmp_path: Path) -> None:
    env = Round(tmp_path)
    entered, release = threading.Event(), threading.Event()
    real = env.manager.supervisors

    def stuck(*, fresh: bool = True) -> dict[str, SupervisorInfo]:
        entered.set()
        release.wait(60)
        return real()

    env.manager.supervisors = stuck  # type: ignore[method-assign]
    env.monitor.start()
    stopped = threading.Event()
    stopper = threading.Thread(target=lambda: (env.monitor.stop(0.2), stopped.set()))
    try:
        wait_for(entered.is_set, 30, "the round to get stuck")
        stopper.start()
        wait_for(stopped.is_set, 30, "stop() to give up on the stuck round")
        assert not release.is_set()  # the round is still stuck: stop() returned at its timeout
    finally:
        release.set()
        if stopper.ident is not None:
            stopper.join(60)
        env.monitor.stop()
    assert not env.monitor.running
