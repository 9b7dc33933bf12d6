"""The Nimbus monitor and topology transitions with simulated time and in-memory cluster state."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from nimbus_fakes import NimbusRig, staged_bundle

from stormpy.cluster import WorkerHeartbeat
from stormpy.nimbus.monitor import ROUND_SUMMARY_SECS, HeartbeatCache
from stormpy.nimbus.topologies import TopologyManager
from stormpy.rpc.errors import AlreadyExistsError, InvalidRequestError, NotFoundError, TopologyRefusedError

CONF = {"nimbus.task.timeout.secs": 4, "nimbus.supervisor.timeout.secs": 6, "nimbus.monitor.freq.secs": 1,
        "nimbus.task.launch.secs": 10, "topology.message.timeout.secs": 30}


class Env(NimbusRig):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, CONF)

    def send(self, beat: WorkerHeartbeat) -> None:
        """A supervisor sends this heartbeat to Nimbus (``send_supervisor_worker_heartbeats``)."""
        self.monitor.beats.record([beat])

    def run(self, secs: float, beating: set[tuple[str, int]] | None = None, tid: str | None = None) -> None:
        """Advance time second by second, ticking the monitor; the slots in ``beating`` heartbeat."""
        for _ in range(int(secs)):
            self.clock.advance(1)
            if tid is not None and beating is not None:
                assignment = self.state.assigns[tid]
                for slot, execs in assignment.workers().items():
                    if slot in beating:
                        self.send(
                            WorkerHeartbeat(tid, slot[0], slot[1], self.clock(), 1.0, execs))
            self.monitor.tick(raise_errors=True)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_submit_writes_base_assignment_and_store(env: Env) -> None:
    tid = env.submit()
    base = env.state.bases[tid]
    assert base.status == "active" and base.name == "wc" and base.num_workers == 2
    assert base.component_executors == {"__acker": 2, "count": 3, "sentences": 2, "split": 2}
    assignment = env.state.assigns[tid]
    assert assignment.bundle_key == tid
    assert len(assignment.executors) == 9
    assert {n for n, _ in assignment.executors.values()} == {"sup-a", "sup-b"}
    stored = env.store.load(tid)
    assert stored.conf["topology.acker.executors"] == 2 and stored.conf["topology.name"] == "wc"
    with pytest.raises(AlreadyExistsError):
        env.submit()


def test_submitted_inactive_stays_inactive(env: Env) -> None:
    tid = env.submit(status="inactive")
    assert env.state.bases[tid].status == "inactive"
    env.manager.set_active("wc", True)
    assert env.state.bases[tid].status == "active"


def test_silent_worker_is_reassigned_only_after_launch_grace_and_task_timeout(env: Env) -> None:
    tid = env.submit()
    first = env.state.assigns[tid]
    slots = set(first.workers())
    silent = sorted(slots)[0]
    beating = slots - {silent}
    env.run(9, beating, tid)  # within nimbus.task.launch.secs nothing moves
    assert env.state.assigns[tid] == first
    env.run(2, beating, tid)  # launch grace over and the silent worker never beat
    after = env.state.assigns[tid]
    assert silent not in set(after.workers())
    assert len(after.workers()) == 2
    for executor, slot in first.executors.items():
        if slot != silent:
            assert after.executors[executor] == slot  # alive executors stay put


def test_heartbeats_that_stop_changing_time_out(env: Env) -> None:
    tid = env.submit()
    slots = set(env.state.assigns[tid].workers())
    env.run(12, slots, tid)
    first = env.state.assigns[tid]
    stopped = sorted(slots)[1]
    env.run(3, slots - {stopped}, tid)  # under nimbus.task.timeout.secs: still assigned
    assert env.state.assigns[tid] == first
    env.run(2, slots - {stopped}, tid)
    assert stopped not in env.state.assigns[tid].workers()


def test_vanished_supervisor_executors_move_after_supervisor_timeout(env: Env) -> None:
    tid = env.submit()
    slots = set(env.state.assigns[tid].workers())
    env.run(2, slots, tid)
    del env.state.sups["sup-b"]
    live = {s for s in slots if s[0] == "sup-a"}
    env.run(5, live, tid)
    assert any(n == "sup-b" for n, _ in env.state.assigns[tid].executors.values())
    env.run(2, live, tid)
    after = env.state.assigns[tid]
    assert {n for n, _ in after.executors.values()} == {"sup-a"}
    assert len(after.workers()) == 2


def test_topology_without_slots_is_scheduled_when_a_supervisor_appears(env: Env) -> None:
    env.state.sups.clear()
    tid = env.submit()
    assert tid not in env.state.assigns
    env.state.add_supervisor("sup-c", [6700])
    env.monitor.tick(raise_errors=True)
    assert {s for s in env.state.assigns[tid].executors.values()} == {("sup-c", 6700)}


def test_kill_with_wait_deactivates_then_removes_everything(env: Env) -> None:
    tid = env.submit()
    env.beat(tid)
    env.manager.kill("wc", 5)
    assert env.state.bases[tid].status == "killed"
    assert env.store.exists(tid)
    env.run(4)
    assert tid in env.state.bases
    env.run(1)
    assert tid not in env.state.topologies()
    assert not env.store.exists(tid)
    with pytest.raises(NotFoundError):
        env.manager.kill("wc", 0)
    with pytest.raises(InvalidRequestError):
        env.submit("other")
        env.manager.kill("other", 10)
        env.manager.set_active("other", True)


def test_kill_without_wait_uses_the_topology_message_timeout(env: Env) -> None:
    tid = env.submit()
    env.manager.kill("wc", None)
    assert env.manager.timers.get(tid).deadline == env.clock() + 30  # type: ignore[union-attr]


def test_rebalance_with_wait_changes_workers_and_restores_status(env: Env) -> None:
    tid = env.submit(workers=1, status="inactive")
    assert len(env.state.assigns[tid].workers()) == 1
    env.manager.rebalance("wc", 3, 3, {"count": 1})
    base = env.state.bases[tid]
    assert base.status == "rebalancing" and base.prev_status == "inactive"
    env.manager.set_active("wc", True)  # changes what is restored afterwards
    env.run(2)
    assert len(env.state.assigns[tid].workers()) == 1
    env.run(1)
    assignment = env.state.assigns[tid]
    assert len(assignment.workers()) == 3
    assert env.state.bases[tid].status == "active"
    counts = env.state.bases[tid].component_executors
    assert counts["count"] == 1
    layout = env.manager.layout(env.state.bases[tid])
    assert set(assignment.executors) == {e.key for e in layout.executors}
    with pytest.raises(NotFoundError):
        env.manager.rebalance("wc", 0, None, {"nope": 2})


def test_rebalance_to_more_executors_than_tasks_is_refused_and_changes_nothing(env: Env) -> None:
    """Storm refuses more executors than tasks (an executor runs at least one task); the count
    is not clamped to the task count without a word."""
    tid = env.submit()
    before = env.state.bases[tid]
    with pytest.raises(InvalidRequestError, match=r"rebalance of 'wc': component 'count' has 3 "
                                                  r"tasks, so it cannot run 4 executors"):
        env.manager.rebalance("wc", 0, None, {"count": 4})
    assert env.state.bases[tid] == before
    env.manager.rebalance("wc", 0, None, {"count": 3})  # up to the task count is fine
    assert env.state.bases[tid].component_executors["count"] == 3


def test_orphaned_state_is_cleaned(env: Env) -> None:
    env.state.set_worker_heartbeat(WorkerHeartbeat("gone-1", "sup-a", 6700, 1.0, 1.0))
    env.monitor.tick(raise_errors=True)
    assert "gone-1" not in env.state.topologies()


def test_resume_rearms_waits_and_drops_vanished_bundles(env: Env) -> None:
    tid = env.submit()
    other = env.submit("gone")
    env.manager.kill("wc", 20)
    del env.state.bases[other]
    fresh = TopologyManager(env.state, env.store, CONF, clock=env.clock)  # type: ignore[arg-type]
    assert fresh.resume() == [tid]
    assert fresh.timers.get(tid).deadline == env.clock() + 20  # type: ignore[union-attr]
    assert not env.store.exists(other)


def test_heartbeat_cache_times_changes_with_nimbus_clock() -> None:
    cache = HeartbeatCache()
    assert cache.observe("t", ("n", 1), 5.0, now=100.0) == 100.0
    assert cache.observe("t", ("n", 1), 5.0, now=103.0) == 100.0
    assert cache.observe("t", ("n", 1), 6.0, now=104.0) == 104.0
    cache.forget("t")
    assert cache.topologies() == set()


def test_topology_spreads_back_to_its_worker_count_when_slots_return(env: Env) -> None:
    tid = env.submit(workers=4)
    assert len(env.state.assigns[tid].workers()) == 4
    env.run(2, set(env.state.assigns[tid].workers()), tid)
    lost = env.state.sups.pop("sup-b")
    live = {s for s in env.state.assigns[tid].workers() if s[0] == "sup-a"}
    env.run(7, live, tid)
    packed = env.state.assigns[tid]
    assert set(packed.workers()) == {("sup-a", 6700), ("sup-a", 6701)}
    env.state.sups["sup-b"] = lost
    env.run(1, set(packed.workers()), tid)
    spread = env.state.assigns[tid]
    assert len(spread.workers()) == 4
    assert {n for n, _ in spread.executors.values()} == {"sup-a", "sup-b"}
    env.run(12, set(spread.workers()), tid)  # steady: the spread assignment is kept
    assert env.state.assigns[tid] == spread


def test_nimbus_refuses_a_window_longer_than_the_message_timeout(env: Env) -> None:
    from window_kit import Collect

    from stormpy.rpc.errors import TopologyRefusedError
    from stormpy.testing import FeederSpout
    from stormpy.topology import TopologyBuilder
    from stormpy.windowing import Duration

    b = TopologyBuilder()
    b.set_spout("src", FeederSpout(["v"]))
    b.set_bolt("win", Collect.with_window(Duration(seconds=40), Duration(seconds=5))) \
        .shuffle_grouping("src")
    with pytest.raises(TopologyRefusedError, match=r"topology.message.timeout.secs: must be >= 45 "
                                                   r"for component 'win' .*got 30"):
        env.manager.submit("win", staged_bundle(env.tmp, "win"), b.create_topology(), {},
                           "active")
    assert env.state.bases == {}


def test_an_executor_its_worker_stops_listing_is_rescheduled_after_the_task_timeout(env: Env) -> None:
    """The worker keeps heartbeating, but without one of its executors: that executor counts as
    dead once nimbus.task.timeout.secs (4 s here) passed since a heartbeat last listed it, and its
    worker is rescheduled away from the slot; the other worker stays where it is."""
    tid = env.submit()
    slots = set(env.state.assigns[tid].workers())
    env.run(12, slots, tid)  # past the launch grace, everything alive
    first = env.state.assigns[tid]
    slot = sorted(slots)[0]
    dropped = sorted(e for e, s in first.executors.items() if s == slot)[0]

    def run_without_dropped(secs: int) -> None:
        for _ in range(secs):
            env.clock.advance(1)
            for (node, port), execs in first.workers().items():
                listed = [e for e in execs if e != dropped]
                env.send(WorkerHeartbeat(tid, node, port, env.clock(), 1.0, listed))
            env.monitor.tick(raise_errors=True)

    run_without_dropped(3)  # under the task timeout: nothing moves although the worker beats
    assert env.state.assigns[tid] == first
    run_without_dropped(2)
    after = env.state.assigns[tid]
    assert slot not in after.workers()  # the worker is rescheduled as a whole, away from its slot
    assert len(after.workers()) == 2
    for executor, was in first.executors.items():
        if was != slot:
            assert after.executors[executor] == was  # the other worker stays put


def test_nimbus_keeps_the_submit_warnings_and_shows_them_in_the_topology_info(env: Env) -> None:
    from window_kit import Collect

    from stormpy.nimbus.handler import NimbusHandler
    from stormpy.testing import FeederSpout
    from stormpy.topology import TopologyBuilder
    from stormpy.windowing import Duration

    class Uploads:
        restaged: list[str] = []

        def take(self, key: str) -> Any:
            return staged_bundle(env.tmp, key)

        def restage(self, staged: Any) -> None:  # a refused submit keeps the upload
            self.restaged.append(staged.bundle_key)

    b = TopologyBuilder()
    b.set_spout("src", FeederSpout(["v"]))
    b.set_bolt("win", Collect.with_tumbling_window(Duration(seconds=10))).shuffle_grouping("src")
    handler = NimbusHandler(env.manager, Uploads(), None, nimbus_info=dict)  # type: ignore[arg-type]
    answer = handler.submit_topology("win", "bkey", b.create_topology().to_doc(),
                                     {"topology.max.spout.pending": 200, "topology.wrokers": 2})
    assert [w.split(";")[0] for w in answer["warnings"]] == [
        "unknown config key topology.wrokers (did you mean topology.workers?)",
        "component 'win' holds each tuple un-acked for up to 20 s (its time window)"]
    assert handler.get_topology_info("win")["warnings"] == answer["warnings"]
    stored = env.store.load(answer["topology_id"]).conf
    assert stored["topology.submit.warnings"] == answer["warnings"]
    with pytest.raises(TopologyRefusedError, match=r"^topology 'bad' refused: topology.workers: "
                                                   r"must be an integer >= 1, got 0$"):
        handler.submit_topology("bad", "bkey", b.create_topology().to_doc(), {"topology.workers": 0})
    assert Uploads.restaged == ["bkey"] and "bad" not in {b.name for b in env.state.bases.values()}


def test_rounds_are_timed_and_summed_up_in_the_log(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    tid = env.submit()
    env.beat(tid)
    caplog.set_level(logging.INFO, logger="stormpy.nimbus.monitor")
    env.monitor._summary_at -= ROUND_SUMMARY_SECS  # a summary is due at the end of the next round
    env.monitor._round()
    lines = [r.getMessage() for r in caplog.records if "monitor round took" in r.getMessage()]
    assert len(lines) == 1 and "median of 1 rounds" in lines[0]
    assert lines[0].endswith("1 topologies, 2 worker heartbeats read")
    caplog.clear()
    env.monitor._round()  # the next summary waits ROUND_SUMMARY_SECS
    assert not [r for r in caplog.records if "monitor round took" in r.getMessage()]
