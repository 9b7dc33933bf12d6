"""The worker process on its own (no supervisor): it follows the topology status, re-routes to
moved peers, exits 0 on SIGTERM or when unassigned or reassigned, and exits 1 after reporting a
component failure to ZooKeeper."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from supervisor_kit import (
    PACED_FILES,
    SupervisorEnv,
    failing_spec,
    paced_spec,
    prepare_node,
    wait_for,
)

from stormpy.cluster import Assignment
from stormpy.supervisor import SupervisorDirs
from stormpy.supervisor.launcher import WorkerHandle, launch_worker
from stormpy.supervisor.local_state import read_local_heartbeat
from stormpy.testing import free_ports
from stormpy.topology._state import decode_state

pytest_plugins = ["supervisor_fixtures"]
pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(120)]


def exit_code(handle: WorkerHandle, timeout: float = 20.0) -> int:
    assert handle.proc is not None
    try:
        return handle.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        handle.proc.kill()
        raise AssertionError(f"{handle.describe()} did not exit within {timeout}s") from None


def heartbeating(dirs: SupervisorDirs, handle: WorkerHandle) -> bool:
    """True once the worker process ``handle`` wrote its local heartbeat (its loop runs)."""
    beat = read_local_heartbeat(dirs.heartbeat_file(handle.topology_id, handle.port))
    return beat is not None and beat.pid == handle.pid


def log_of(dirs: SupervisorDirs, topology_id: str, port: int) -> str:
    return Path(dirs.worker_log(topology_id, port)).read_text()


def test_status_changes_sigterm_and_unassignment(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    port, port2 = free_ports(2)
    env.publish("solo-1", paced_spec(rate=100), {}, [("node-a", port)], files=PACED_FILES,
                status="inactive")
    dirs = prepare_node(env, "node-a", "solo-1")
    assignment = env.state.assignment("solo-1")
    assert assignment is not None
    worker = launch_worker(dirs, "solo-1", port, tuple(assignment.executors))

    # inactive: heartbeats flow, spouts stay silent
    wait_for(lambda: (hb := env.heartbeats("solo-1").get(("node-a", port))) and hb.uptime > 1.5, 30,
             "a heartbeat after 1.5 s of uptime")
    assert env.total("solo-1", "pace", "emitted") == 0
    beat = dirs.heartbeat_file("solo-1", port)
    assert beat.exists()

    env.set_status("solo-1", "active")
    wait_for(lambda: env.total("solo-1", "sink", "acked") > 20, 30, "tuples once active")

    env.state.remove_assignment("solo-1")
    assert exit_code(worker) == 0
    assert "assignment was removed" in log_of(dirs, "solo-1", port)

    # SIGTERM: clean stop, exit 0
    env.state.set_assignment(assignment)
    worker = launch_worker(dirs, "solo-1", port, tuple(assignment.executors))
    wait_for(lambda: heartbeating(dirs, worker), 30, "the second worker to heartbeat")
    # component state is in ZooKeeper and outlives a worker process: each spout task has opened
    # twice, counting on what the first worker stored
    for index in ("0", "1"):
        data = env.state.storage.get(env.state.paths.checkpoint("solo-1", "pace", index))
        assert data is not None and decode_state("checkpoint", data) == {"opens": 2}
    worker.signal(signal.SIGTERM)
    assert exit_code(worker) == 0
    assert "received SIGTERM" in log_of(dirs, "solo-1", port)

    # its executors moved to another port: it exits (the supervisor would start a fresh one)
    worker = launch_worker(dirs, "solo-1", port, tuple(assignment.executors))
    wait_for(lambda: heartbeating(dirs, worker), 30, "the third worker to heartbeat")
    moved = Assignment(topology_id="solo-1", bundle_key="solo-1",
                       executors={e: ("node-a", port2) for e in assignment.executors},
                       node_host=assignment.node_host)
    env.state.set_assignment(moved)
    assert exit_code(worker) == 0
    assert "executors changed" in log_of(dirs, "solo-1", port)


def test_peers_follow_a_reassignment(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    pa, pb, pc = free_ports(3)
    assignment = env.publish("move-1", paced_spec(rate=100), {}, [("node-a", pa), ("node-b", pb)],
                             files=PACED_FILES)
    dirs_a = prepare_node(env, "node-a", "move-1")
    dirs_b = prepare_node(env, "node-b", "move-1")
    a = launch_worker(dirs_a, "move-1", pa, tuple(assignment.executors_of("node-a", pa)))
    b = launch_worker(dirs_b, "move-1", pb, tuple(assignment.executors_of("node-b", pb)))
    try:
        wait_for(lambda: env.heartbeats("move-1").get(("node-b", pb)) is not None
                 and env.heartbeats("move-1")[("node-b", pb)].stats["sink"]["executed"] > 20, 30,
                 "worker b to process tuples from a")
        # b's executors move to c (node-b, port pc): b exits, a re-routes to c
        moved = Assignment(topology_id="move-1", bundle_key="move-1",
                           executors={e: (slot if slot[0] == "node-a" else ("node-b", pc))
                                      for e, slot in assignment.executors.items()},
                           node_host=assignment.node_host)
        env.state.set_assignment(moved)
        assert exit_code(b) == 0
        c = launch_worker(dirs_b, "move-1", pc, tuple(moved.executors_of("node-b", pc)))
        try:
            wait_for(lambda: "peers of node-a" in log_of(dirs_a, "move-1", pa), 60,
                     "worker a to re-route to c")
            # c's heartbeats carry b's counters from the start, and a acks through its own sink
            # and acker too: only c's counters growing past its first heartbeat prove the route
            wait_for(lambda: env.heartbeats("move-1").get(("node-b", pc)) is not None, 60,
                     "worker c's first heartbeat")
            first = env.heartbeats("move-1")[("node-b", pc)].stats
            wait_for(lambda: (hb := env.heartbeats("move-1")[("node-b", pc)]).stats["sink"]["executed"]
                     > first["sink"]["executed"] + 20
                     and hb.stats["__acker"]["executed"] > first["__acker"]["executed"] + 20,
                     60, "worker c to process tuples and acks from a")
            acked = env.heartbeats("move-1")[("node-a", pa)].stats["pace"]["acked"]
            wait_for(lambda: env.heartbeats("move-1")[("node-a", pa)].stats["pace"]["acked"]
                     > acked + 20, 60, "a's spout tuples to be acked")
        finally:
            c.signal(signal.SIGTERM)
            assert exit_code(c) == 0
    finally:
        a.signal(signal.SIGTERM)
        assert exit_code(a) == 0


def test_component_failure_is_reported_and_exits_1(supervisor_env: SupervisorEnv) -> None:
    env = supervisor_env
    (port,) = free_ports(1)
    assignment = env.publish("fail-1", failing_spec(), {}, [("node-a", port)], files=PACED_FILES)
    dirs = prepare_node(env, "node-a", "fail-1")
    worker = launch_worker(dirs, "fail-1", port, tuple(assignment.executors))
    assert exit_code(worker) == 1
    errors = env.state.errors("fail-1", "explode")
    assert errors and "boom" in errors[-1].message
    assert errors[-1].port == port and errors[-1].host == "127.0.0.1"
    started = time.time()
    assert errors[-1].time <= started
