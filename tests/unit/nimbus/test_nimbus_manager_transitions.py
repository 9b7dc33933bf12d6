"""TopologyManager's lookups and status transitions, each checked for what it writes: the
StormBase fields, the waits it arms, the refusals and their messages (in-memory cluster state,
simulated time)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from nimbus_fakes import FakeClusterState, NimbusRig, SimClock, staged_bundle

from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.pending_actions import KILL, REBALANCE, PendingAction
from stormpy.nimbus.store import BundleStore, StoreError
from stormpy.nimbus.topologies import TopologyManager
from stormpy.rpc.errors import AlreadyExistsError, InvalidRequestError, NotFoundError, TopologyRefusedError
from wordcount import build

CONF = {"nimbus.task.timeout.secs": 4, "nimbus.supervisor.timeout.secs": 6, "nimbus.monitor.freq.secs": 10,
        "nimbus.task.launch.secs": 10, "topology.message.timeout.secs": 30}


class Env(NimbusRig):
    """A manager (no monitor) over the in-memory cluster state, on simulated time."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, CONF, monitor=False)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_a_topology_is_found_by_name_or_id_and_an_unknown_one_is_named(env: Env) -> None:
    with pytest.raises(NotFoundError, match=r"^no topology named 'wc' \(running: none\)$"):
        env.manager.base_by_name("wc")
    tid = env.submit("wc")
    other = env.submit("alpha")
    assert env.manager.base_by_name("wc") == env.state.bases[tid]
    assert env.manager.base_by_name(other) == env.state.bases[other]
    with pytest.raises(NotFoundError, match=r"^no topology named 'nope' \(running: alpha, wc\)$"):
        env.manager.base_by_name("nope")
    with pytest.raises(NotFoundError, match=r"^topology name must be a string, got 7$"):
        env.manager.base_by_name(7)


def test_supervisors_are_read_fresh_or_reused_while_one_monitor_period_old(env: Env) -> None:
    sups = env.manager.supervisors(fresh=False)  # nothing read yet: read now
    assert sorted(sups) == ["sup-a", "sup-b"]
    env.state.add_supervisor("sup-c", [6700])
    env.clock.advance(10)  # nimbus.monitor.freq.secs: still recent enough for advice
    assert sorted(env.manager.supervisors(fresh=False)) == ["sup-a", "sup-b"]
    env.clock.advance(0.5)
    assert sorted(env.manager.supervisors(fresh=False)) == ["sup-a", "sup-b", "sup-c"]
    del env.state.sups["sup-c"]
    env.clock.advance(-1)  # the clock stepped back: what was read is not trusted
    assert sorted(env.manager.supervisors(fresh=False)) == ["sup-a", "sup-b"]
    env.state.add_supervisor("sup-d", [6700])
    assert sorted(env.manager.supervisors()) == ["sup-a", "sup-b", "sup-d"]  # fresh: read now
    del env.state.sups["sup-d"]
    assert sorted(env.manager.supervisors(fresh=False)) == ["sup-a", "sup-b", "sup-d"]  # ...and kept


def test_the_freshness_of_supervisors_follows_the_monitor_period(tmp_path: Path) -> None:
    state = FakeClusterState()
    state.add_supervisor("sup-a", [6700])
    clock = SimClock()
    manager = TopologyManager(state, BundleStore(NimbusDirs(tmp_path / "l")),  # type: ignore[arg-type]
                              {"nimbus.monitor.freq.secs": 2}, clock=clock)
    manager.supervisors(fresh=False)
    state.add_supervisor("sup-b", [6700])
    clock.advance(2)
    assert sorted(manager.supervisors(fresh=False)) == ["sup-a"]
    clock.advance(0.1)
    assert sorted(manager.supervisors(fresh=False)) == ["sup-a", "sup-b"]


def test_descriptions_are_read_once_and_missing_code_is_named(env: Env) -> None:
    tid = env.submit()
    spec, conf = env.manager.describe(tid)
    assert sorted(spec.components) == ["count", "sentences", "split"] and conf["topology.workers"] == 2
    env.store.remove(tid)
    assert env.manager.describe(tid) == (spec, conf)  # the cached description
    with pytest.raises(NotFoundError, match=rf"^no stored topology {tid} \(missing .*\)$"):
        env.manager.stored(tid)
    with pytest.raises(NotFoundError, match=r"^no topology with id '\.\./x'$"):
        env.manager.stored("../x")
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=f"no stored topology {tid}"):
        fresh.describe(tid)
    with pytest.raises(NotFoundError, match=rf"^topology {tid}: its code is missing on this Nimbus \(no "
                                            r"stored topology .*\); it cannot be rescheduled until the code "
                                            r"is back \(stormpy list shows it degraded, with the reason\)$"):
        fresh.rebalance("wc", 0, 1, None)
    assert env.state.bases[tid].status == "active"


def test_a_topology_id_is_its_name_the_submit_time_and_a_random_part(env: Env) -> None:
    env.clock.now = 1_234_567.9
    tid = env.submit("wc")
    assert re.fullmatch(r"wc-1234567-[0-9a-f]{6}", tid)
    assert env.store.exists(tid) and env.state.assigns[tid].bundle_key == tid


def test_an_initial_status_other_than_active_or_inactive_is_refused(env: Env) -> None:
    with pytest.raises(InvalidRequestError, match=r"^initial_status must be 'active' or 'inactive', "
                                                  r"got 'killed'$"):
        env.submit(status="killed")
    assert env.state.bases == {}
    tid = env.submit(status="inactive")
    assert env.state.bases[tid].status == "inactive"
    with pytest.raises(AlreadyExistsError, match=r"^a topology named 'wc' is already running; kill it "
                                                 r"first or choose another --name$"):
        env.submit(status="active")


def test_a_submit_refused_before_activation_leaves_nothing_behind(env: Env) -> None:
    seen: list[str] = []

    def refuse(tid: str) -> None:
        seen.append(tid)
        assert env.state.bases[tid].status == "inactive" and tid in env.state.assigns
        raise RuntimeError("credentials could not be pushed")

    with pytest.raises(RuntimeError, match="credentials could not be pushed"):
        env.manager.submit("wc", staged_bundle(env.tmp, "wc"), build(100).create_topology(),
                           {"topology.workers": 2}, "active", before_activate=refuse)
    [tid] = seen
    assert env.state.bases == {} and env.state.assigns == {} and not env.store.exists(tid)
    with pytest.raises(StoreError):
        env.manager.describe(tid)  # no cached description survives the roll-back
    assert tid not in env.manager._layouts and env.manager.timers.get(tid) is None
    assert env.manager.base_by_name(env.submit("wc")).status == "active"  # the name is free again


def test_kill_marks_the_topology_killed_and_removes_it_after_the_wait(env: Env) -> None:
    tid = env.submit(status="inactive")
    assert env.manager.kill("wc", 5) == tid
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, base.kill_wait_secs) == ("killed", "inactive", 5.0)
    assert env.manager.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 5)
    assert env.manager.kill("wc", 7.5) == tid  # killed again: the status from before stays
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, base.kill_wait_secs) == ("killed", "inactive", 7.5)
    assert env.manager.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 7.5)
    env.manager.finish_kill(tid)
    assert env.state.bases == {} and env.state.assigns == {} and not env.store.exists(tid)
    assert env.manager.timers.get(tid) is None and tid not in env.manager._layouts
    with pytest.raises(StoreError):
        env.manager.describe(tid)
    with pytest.raises(NotFoundError):
        env.manager.kill("wc", 0)


def test_kill_without_a_wait_removes_at_once_and_a_default_wait_is_the_topologys_timeout(env: Env) -> None:
    tid = env.submit()
    env.manager.layout(env.state.bases[tid])
    assert env.manager.kill("wc", 0) == tid
    assert env.state.bases == {} and not env.store.exists(tid) and env.manager.timers.get(tid) is None
    assert tid not in env.manager._layouts
    tid = env.manager.submit("own", staged_bundle(env.tmp, "own"), build(100).create_topology(),
                             {"topology.workers": 1, "topology.message.timeout.secs": 45}, "active")
    env.manager.kill("own", None)
    assert env.state.bases[tid].kill_wait_secs == 45.0
    assert env.manager.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 45)
    env.manager.kill("own", -1)  # a negative wait acts at once as well
    assert env.state.bases == {}


def test_kill_of_a_topology_whose_code_is_gone_waits_nimbus_message_timeout(env: Env) -> None:
    tid = env.submit()
    env.store.remove(tid)
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    fresh.kill("wc", None)
    assert env.state.bases[tid].kill_wait_secs == 30.0
    assert fresh.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 30)


def test_kill_during_a_rebalance_keeps_the_status_to_restore(env: Env) -> None:
    tid = env.submit(status="inactive")
    env.manager.rebalance("wc", 20, 1, None)
    env.manager.kill("wc", 5)
    base = env.state.bases[tid]
    assert (base.status, base.prev_status) == ("killed", "inactive")
    assert env.manager.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 5)


def test_activation_changes_the_status_or_the_one_to_restore(env: Env) -> None:
    tid = env.submit()
    writes: list[str] = []
    real = env.state.set_storm_base
    env.state.set_storm_base = lambda b: (writes.append(b.status), real(b))[1]  # type: ignore[method-assign]
    assert env.manager.set_active("wc", True) == tid
    assert writes == []  # already active: nothing written
    assert env.manager.set_active("wc", False) == tid
    assert env.state.bases[tid].status == "inactive" and env.state.bases[tid].prev_status is None
    env.manager.rebalance("wc", 20, 1, None)
    writes.clear()
    env.manager.set_active("wc", True)
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, writes) == ("rebalancing", "active", ["rebalancing"])
    env.manager.set_active("wc", False)
    assert env.state.bases[tid].prev_status == "inactive"
    env.manager.kill("wc", 5)
    with pytest.raises(InvalidRequestError, match=r"^topology 'wc' is being killed; it cannot be activated$"):
        env.manager.set_active("wc", True)
    with pytest.raises(InvalidRequestError,
                       match=r"^topology 'wc' is being killed; it cannot be deactivated$"):
        env.manager.set_active("wc", False)


def test_sampled_tuples_are_switched_per_component_or_for_the_whole_topology(env: Env) -> None:
    tid = env.manager.submit("wc", staged_bundle(env.tmp, "wc"), build(100).create_topology(),
                             {"topology.workers": 1, "topology.eventlogger.executors": 1}, "active")
    assert env.manager.set_debug("wc", "split", True, 10) == tid
    assert env.state.bases[tid].component_debug == {"split": {"enable": True, "samplingpct": 10.0}}
    assert isinstance(env.state.bases[tid].component_debug["split"]["samplingpct"], float)
    env.manager.set_debug("wc", None, True, 5)
    assert env.state.bases[tid].component_debug == {"split": {"enable": True, "samplingpct": 10.0},
                                                    tid: {"enable": True, "samplingpct": 5.0}}
    env.manager.set_debug("wc", "count", False, 0)
    assert env.state.bases[tid].component_debug == {"split": {"enable": True, "samplingpct": 10.0},
                                                    tid: {"enable": True, "samplingpct": 5.0},
                                                    "count": {"enable": False, "samplingpct": 0.0}}
    env.manager.set_debug("wc", None, False, 0)  # off for the topology: off for every component too
    assert env.state.bases[tid].component_debug == {"split": {"enable": False, "samplingpct": 10.0},
                                                    tid: {"enable": False, "samplingpct": 0.0},
                                                    "count": {"enable": False, "samplingpct": 0.0}}
    with pytest.raises(NotFoundError, match=r"^topology 'wc' has no component 'nope' \(components: count, "
                                            r"sentences, split\)$"):
        env.manager.set_debug("wc", "nope", True, 1)
    env.manager.kill("wc", 5)
    with pytest.raises(InvalidRequestError, match=r"^topology 'wc' is being killed$"):
        env.manager.set_debug("wc", None, True, 1)


def test_sampled_tuples_need_an_event_logger(env: Env) -> None:
    tid = env.manager.submit("wc", staged_bundle(env.tmp, "wc"), build(100).create_topology(),
                             {"topology.workers": 1, "topology.eventlogger.executors": 0}, "active")
    with pytest.raises(InvalidRequestError, match=r"^topology 'wc' has no event logger "
                                                  r"\(topology.eventlogger.executors is 0\): nothing can be "
                                                  r"sampled$"):
        env.manager.set_debug("wc", "split", True, 10)
    env.manager.set_debug("wc", "split", False, 0)  # turning it off is fine
    assert env.state.bases[tid].component_debug == {"split": {"enable": False, "samplingpct": 0.0}}


def test_rebalance_marks_the_new_counts_and_restores_the_status_when_done(env: Env) -> None:
    tid = env.submit(status="inactive")
    assert env.manager.rebalance("wc", 5, 1, {"count": 2}) == tid
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, base.kill_wait_secs, base.num_workers) == (
        "rebalancing", "inactive", 5.0, 1)
    assert base.component_executors == {"__acker": 2, "count": 2, "sentences": 2, "split": 2}
    assert env.manager.timers.get(tid) == PendingAction(tid, REBALANCE, env.clock() + 5)
    env.manager.rebalance("wc", 8, None, {"split": 1})  # again while rebalancing: counts add up
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, base.kill_wait_secs, base.num_workers) == (
        "rebalancing", "inactive", 8.0, 1)
    assert base.component_executors == {"__acker": 2, "count": 2, "sentences": 2, "split": 1}
    env.manager.finish_rebalance(tid)
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, base.kill_wait_secs) == ("inactive", None, None)
    assert len(env.state.assigns[tid].workers()) == 1 and len(env.state.assigns[tid].executors) == 7
    env.manager.finish_rebalance(tid)  # no longer rebalancing: nothing happens
    assert env.state.bases[tid] == base
    env.manager.finish_rebalance("gone-1")


def test_rebalance_without_a_wait_acts_at_once_and_defaults_to_the_message_timeout(env: Env) -> None:
    tid = env.submit(workers=1)
    env.manager.rebalance("wc", 0, 2, None)
    base = env.state.bases[tid]
    assert (base.status, base.prev_status, base.num_workers) == ("active", None, 2)
    assert len(env.state.assigns[tid].workers()) == 2 and env.manager.timers.get(tid) is None
    env.manager.rebalance("wc", None, None, {})
    assert env.state.bases[tid].kill_wait_secs == 30.0 and env.state.bases[tid].num_workers == 2
    assert env.manager.timers.get(tid) == PendingAction(tid, REBALANCE, env.clock() + 30)
    env.manager.rebalance("wc", -2, None, None)
    assert env.state.bases[tid].status == "active" and env.manager.timers.get(tid) is None


def test_a_rebalance_with_no_status_to_restore_activates(env: Env) -> None:
    tid = env.submit()
    env.state.bases[tid] = replace(env.state.bases[tid], status="rebalancing", prev_status=None)
    env.manager.finish_rebalance(tid)
    assert env.state.bases[tid].status == "active"


def test_rebalance_refusals_name_what_is_wrong(env: Env) -> None:
    tid = env.submit()
    before = env.state.bases[tid]
    with pytest.raises(NotFoundError, match=r"^topology 'wc' has no component 'nope' \(components: __acker, "
                                            r"count, sentences, split\)$"):
        env.manager.rebalance("wc", 0, None, {"split": 1, "nope": 1})
    with pytest.raises(InvalidRequestError, match=r"^rebalance of 'wc': component 'count' has 3 tasks, "
                                                  r"so it cannot run 4 executors \(an executor runs at least "
                                                  r"one task; the task count is fixed at submit, set it with "
                                                  r"set_num_tasks / topology.tasks\)$"):
        env.manager.rebalance("wc", 0, None, {"count": 4, "split": 2})
    env.manager.rebalance("wc", 0, None, {"count": 3, "__acker": 2})  # at the task count: fine
    tid1 = env.manager.submit("one", staged_bundle(env.tmp, "one"), build(100).create_topology(),
                              {"topology.workers": 1, "topology.acker.executors": 1}, "active")
    with pytest.raises(InvalidRequestError, match=r"component '__acker' has 1 task, so it cannot run 2 "):
        env.manager.rebalance("one", 0, None, {"__acker": 2})
    with pytest.raises(TopologyRefusedError, match=r"^rebalance of 'wc': 257 workers exceed "
                                                   r"nimbus.slots.perTopology \(256\)$"):
        env.manager.rebalance("wc", 0, 257, None)
    env.manager.rebalance("wc", 0, 256, None)  # at the limit: fine
    assert env.state.bases[tid].num_workers == 256 and env.state.bases[tid1].num_workers == 1
    assert env.state.bases[tid].component_executors == before.component_executors
    env.manager.kill("wc", 5)
    with pytest.raises(InvalidRequestError,
                       match=r"^topology 'wc' is being killed; it cannot be rebalanced$"):
        env.manager.rebalance("wc", 0, 1, None)


def test_a_wait_of_a_second_or_less_is_still_a_wait(env: Env) -> None:
    tid = env.submit()
    env.manager.rebalance("wc", 1, 1, None)
    assert env.state.bases[tid].status == "rebalancing"
    assert env.manager.timers.get(tid) == PendingAction(tid, REBALANCE, env.clock() + 1)
    env.manager.finish_rebalance(tid)
    env.manager.rebalance("wc", 0.5, 2, None)
    assert env.manager.timers.get(tid) == PendingAction(tid, REBALANCE, env.clock() + 0.5)
    env.manager.kill("wc", 1)
    assert env.state.bases[tid].status == "killed"
    assert env.manager.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 1)
    env.manager.kill("wc", 0.25)
    assert env.manager.timers.get(tid) == PendingAction(tid, KILL, env.clock() + 0.25)
    assert env.store.exists(tid)


def test_a_restarted_nimbus_reads_descriptions_from_the_store_once(env: Env) -> None:
    loads: list[str] = []
    real = env.store.load
    env.store.load = lambda t: (loads.append(t), real(t))[1]  # type: ignore[method-assign]
    tid = env.submit()
    assert loads == [tid]  # the store's own check of what it installed; the submit keeps the rest
    loads.clear()
    spec, conf = env.manager.describe(tid)
    assert loads == [] and sorted(spec.components) == ["count", "sentences", "split"]
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    again, conf_again = fresh.describe(tid)
    assert loads == [tid]
    assert again.to_doc() == spec.to_doc() and conf_again == conf and conf["topology.workers"] == 2
    assert fresh.describe(tid) == (again, conf_again) and loads == [tid]


def test_a_restarted_nimbus_finishes_a_kill_of_a_topology_it_never_described(env: Env) -> None:
    tid = env.submit()
    env.manager.kill("wc", 20)
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    assert fresh.resume() == [tid]
    fresh.finish_kill(tid)
    assert env.state.bases == {} and not env.store.exists(tid) and fresh.timers.get(tid) is None


def test_resume_rolls_back_submissions_the_previous_leader_left_half_done(env: Env) -> None:
    done = env.submit("done")
    half = env.submit("half")
    env.state.marks.add(half)  # the previous leader stopped before its commit
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    assert fresh.resume() == [done]
    assert sorted(env.state.bases) == [done] and sorted(env.state.assigns) == [done]
    assert env.state.marks == set() and not env.store.exists(half) and env.store.exists(done)
    assert fresh.records.in_memory and fresh.records.storm_bases() == env.state.bases


def test_resume_rearms_rebalance_and_kill_waits_from_the_restart(env: Env) -> None:
    killed = env.submit("killed")
    moving = env.submit("moving")
    kill_now = env.submit("kill-now")
    move_now = env.submit("move-now")
    env.submit("still")
    env.manager.kill("killed", 20)
    env.manager.rebalance("moving", 15, 1, None)
    for tid, status in ((kill_now, "killed"), (move_now, "rebalancing")):
        env.state.bases[tid] = replace(env.state.bases[tid], status=status, kill_wait_secs=None)
    env.clock.advance(7)
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    fresh.resume()
    now = env.clock()
    assert sorted(fresh.timers.due(now + 100), key=lambda a: a.topology_id) == sorted([
        PendingAction(killed, KILL, now + 20), PendingAction(moving, REBALANCE, now + 15),
        PendingAction(kill_now, KILL, now), PendingAction(move_now, REBALANCE, now)],
        key=lambda a: a.topology_id)


def test_a_submit_gives_the_topology_its_own_zookeeper_identity(tmp_path: Path) -> None:
    state = FakeClusterState()
    state.add_supervisor("sup-a", [6700])
    store = BundleStore(NimbusDirs(tmp_path / "l"))
    manager = TopologyManager(state, store, {**CONF, "storm.zookeeper.auth.payload": "nimbus:secret"},  # type: ignore[arg-type]
                              clock=SimClock())
    tid = manager.submit("wc", staged_bundle(tmp_path, "wc"), build(100).create_topology(),
                         {"topology.workers": 1}, "active")
    payload = store.load(tid).conf["storm.zookeeper.topology.auth.payload"]
    assert payload.startswith(f"{tid}:") and len(payload) > len(tid) + 20


def test_reschedule_uses_the_supervisors_and_assignments_the_round_read(env: Env) -> None:
    tid = env.submit()
    other = env.submit("other", workers=1)
    reads: list[str] = []
    for name in ("supervisors", "assignments", "assignment"):
        real = getattr(env.state, name)
        setattr(env.state, name, lambda *a, _n=name, _r=real, **k: (reads.append(_n), _r(*a, **k))[1])
    only_a = {"sup-a": env.state.sups["sup-a"]}
    taken = {other: env.state.assigns[other]}  # what the round knows: this topology unassigned
    new = env.manager.reschedule(tid, {}, supervisors=only_a, assignments=taken)
    assert reads == []
    assert new is not None and {n for n, _ in new.executors.values()} == {"sup-a"}
    assert taken == {other: env.state.assigns[other], tid: new} and env.state.assigns[tid] == new
    assert set(new.executors.values()).isdisjoint(env.state.assigns[other].executors.values())


def test_reschedule_keeps_the_start_time_of_executors_left_in_place(env: Env) -> None:
    tid = env.submit()
    first = env.state.assigns[tid]
    started = env.clock()
    assert set(first.executor_start_times.values()) == {started}
    env.clock.advance(100)
    stay = sorted(first.workers())[0]
    alive = {e: s for e, s in first.executors.items() if s == stay}
    del env.state.sups[sorted({n for n, _ in first.executors.values()} - {stay[0]})[0]]
    new = env.manager.reschedule(tid, alive)
    assert new is not None and all(new.executors[e] == s for e, s in alive.items())
    assert new.executor_start_times == {e: (started if e in alive else env.clock()) for e in new.executors}
    # an executor alive in place without a recorded start time starts now
    env.state.assigns[tid] = replace(new, executor_start_times={})
    env.clock.advance(5)
    env.state.add_supervisor("sup-b", [6700, 6701])
    again = env.manager.reschedule(tid, alive)
    assert again is not None and all(again.executors[e] == s for e, s in alive.items())
    assert again.executor_start_times == {e: env.clock() for e in again.executors}


def test_reschedule_writes_only_when_executors_or_hosts_change(env: Env) -> None:
    tid = env.submit()
    first = env.state.assigns[tid]
    writes: list[object] = []
    real = env.state.set_assignment
    env.state.set_assignment = lambda a: (writes.append(a), real(a))[1]  # type: ignore[method-assign]
    env.clock.advance(10)
    assert env.manager.reschedule(tid, dict(first.executors)) is first
    assert writes == [] and env.state.assigns[tid] is first
    env.state.add_supervisor("sup-a", [6700, 6701], host="10.0.0.9")  # same slots, another address
    moved = env.manager.reschedule(tid, dict(first.executors))
    assert moved is not None and moved.executors == first.executors
    assert moved.node_host == {**first.node_host, "sup-a": "10.0.0.9"} and writes == [moved]
    assert moved.executor_start_times == first.executor_start_times
