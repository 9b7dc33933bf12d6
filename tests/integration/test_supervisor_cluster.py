"""Supervisors (in-process) with real worker processes, real ZooKeeper and a fake Nimbus serving
bundles over RPC: workers start on their assigned ports, process tuples across two supervisors,
follow status changes, are restarted after kill -9, stopped and cleaned up when unassigned, and
adopted by a restarted supervisor."""

from __future__ import annotations

import os
import signal
import time

import pytest
from supervisor_kit import (
    PACED_FILES,
    WORDCOUNT_FILES,
    SupervisorEnv,
    paced_spec,
    pid_alive,
    stuck_spec,
    wait_for,
    wordcount_spec,
)

from stormpy.testing import free_ports, stays_unchanged

pytest_plugins = ["supervisor_fixtures"]
pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(180)]


def test_wordcount_across_two_supervisors_then_unassigned(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    ports = free_ports(4)
    sup_a = env.start_supervisor("a", ports[:2])
    sup_b = env.start_supervisor("b", ports[2:])
    assert sup_a.supervisor_id != sup_b.supervisor_id
    wait_for(lambda: len(env.state.supervisors()) == 2, 20, "both supervisors to register")
    sentences = 1500
    slots = [(sup_a.supervisor_id, ports[0]), (sup_b.supervisor_id, ports[2])]
    env.publish("wc-1", wordcount_spec(sentences), {"topology.max.spout.pending": 500}, slots,
                files=WORDCOUNT_FILES)

    wait_for(lambda: env.total("wc-1", "sentences", "acked") >= sentences, 90,
             "every sentence to be acked")
    assert env.total("wc-1", "sentences", "acked") == sentences
    assert env.total("wc-1", "sentences", "failed") == 0
    beats = env.heartbeats("wc-1")
    assert set(beats) == set(slots)
    assert all(hb.stats["count"]["executed"] > 0 for hb in beats.values()), "both workers counted"
    assert env.state.all_errors("wc-1") == {}
    assert {p for p in sup_a.workers()} == {ports[0]} and {p for p in sup_b.workers()} == {ports[2]}
    assert sup_a.dirs is not None
    assert sup_a.dirs.is_downloaded("wc-1")

    pids = [h.pid for s in (sup_a, sup_b) for h in s.workers().values()]
    env.state.remove_assignment("wc-1")
    wait_for(lambda: not sup_a.workers() and not sup_b.workers(), 30, "workers to be stopped")
    wait_for(lambda: not any(pid_alive(p) for p in pids), 10, "worker processes to exit")
    for sup in (sup_a, sup_b):
        assert sup.dirs is not None
        wait_for(lambda s=sup: not s.dirs.stormdist("wc-1").exists(), 10, "stormdist cleanup")
        assert not sup.dirs.worker_dir("wc-1", ports[0]).exists()
    assert env.worker_pids() == []


def test_kill9_restart_deactivate_and_adoption(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    ports = free_ports(4)
    sup_a = env.start_supervisor("a", ports[:2])
    sup_b = env.start_supervisor("b", ports[2:])
    slots = [(sup_a.supervisor_id, ports[1]), (sup_b.supervisor_id, ports[3])]
    env.publish("paced-1", paced_spec(rate=100), {}, slots, files=PACED_FILES)
    wait_for(lambda: env.total("paced-1", "sink", "acked") > 50, 60, "tuples to flow")

    # kill -9 a worker: the supervisor restarts it and tuples flow through it again
    victim = sup_a.workers()[ports[1]]
    killed_at = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)

    def restarted_and_processing() -> bool:
        handle = sup_a.workers().get(ports[1])
        beat = env.heartbeats("paced-1").get(slots[0])
        return (handle is not None and handle.pid != victim.pid and beat is not None
                and beat.uptime < time.monotonic() - killed_at
                and beat.stats.get("sink", {}).get("executed", 0) > 0)

    wait_for(restarted_and_processing, 60, "the killed worker to be restarted and process tuples",
             interval=0.05)
    restart_secs = time.monotonic() - killed_at
    print(f"\nworker restart (kill -9 -> first tuple processed again, seen via 0.5 s heartbeats): "
          f"{restart_secs:.2f} s")

    # deactivate: spouts stop emitting; activate: they start again
    env.set_status("paced-1", "inactive", num_workers=2)

    def emitted() -> float:
        return env.total("paced-1", "pace", "emitted")

    # 1.2 s: more than two heartbeat periods; until it settles stays_unchanged raises
    settled = wait_for(lambda: stays_unchanged(emitted, 1.2, "the spouts' emitted count"), 30,
                       "spouts to stop emitting")
    assert stays_unchanged(emitted, 1.2, "the deactivated spouts' emitted count") == settled
    env.set_status("paced-1", "active", num_workers=2)
    wait_for(lambda: env.total("paced-1", "pace", "emitted") > settled + 20, 30,
             "spouts to emit again")

    # a supervisor restart adopts its running workers (same id, same pids, no relaunch)
    before = {port: h.pid for port, h in sup_a.workers().items()}
    conf = sup_a.conf
    sup_a.stop(stop_workers=False)
    assert all(pid_alive(pid) for pid in before.values())
    sup_a2 = env.start_supervisor("a", ports[:2])
    assert sup_a2.supervisor_id == sup_a.supervisor_id
    assert sup_a2.conf["storm.local.dir"] == conf["storm.local.dir"]
    assert {port: h.pid for port, h in sup_a2.workers().items()} == before
    assert all(h.adopted for h in sup_a2.workers().values())
    syncs = sup_a2.syncs
    wait_for(lambda: sup_a2.syncs >= syncs + 3, 20, "a few sync rounds")
    assert {port: h.pid for port, h in sup_a2.workers().items()} == before
    wait_for(lambda: sup_a2.supervisor_id in env.state.supervisors(), 10, "re-registration")

    # the adopted worker is still supervised: kill -9 -> restarted
    os.kill(before[ports[1]], signal.SIGKILL)
    wait_for(lambda: ports[1] in sup_a2.workers() and sup_a2.workers()[ports[1]].pid != before[ports[1]],
             30, "the adopted worker to be restarted")

    # stopping the supervisors stops every worker
    sup_a2.stop()
    sup_b.stop()
    assert env.worker_pids() == []
    assert env.state.supervisors() == {}


def test_hung_worker_is_replaced(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    ports = free_ports(1)
    sup = env.start_supervisor("a", ports, **{"supervisor.worker.timeout.secs": 2,
                                              "supervisor.worker.start.timeout.secs": 6,
                                              "supervisor.worker.shutdown.sleep.secs": 1})
    env.publish("stuck-1", stuck_spec(), {}, [(sup.supervisor_id, ports[0])], files=PACED_FILES)
    first = wait_for(lambda: sup.workers().get(ports[0]), 20, "a worker")
    wait_for(lambda: ports[0] in sup.workers() and sup.workers()[ports[0]].pid != first.pid, 30,
             "the hung worker to be replaced")
    assert not pid_alive(first.pid)
    assert sup.log_path is not None
    log = sup.log_path.read_text()
    assert "restarting worker stuck-1" in log
    assert "did not stop within 1.0 s; killing it" in log  # it ignored SIGTERM while hung
