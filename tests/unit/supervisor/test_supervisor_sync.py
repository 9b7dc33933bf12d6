"""Pure supervisor rules: which slots to run, when a worker must be replaced, the persistent id,
and the local heartbeat file shared with the worker process."""

from __future__ import annotations

import os
from pathlib import Path

from stormpy.cluster import Assignment
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.supervisor.local_state import (
    claim_supervisor_id,
    read_local_heartbeat,
    read_pid,
    write_pid,
)
from stormpy.supervisor.sync import LocalAssignment, assigned_slots, relaunch_delay, worker_health
from stormpy.worker.heartbeats import write_local_heartbeat


def assignment(tid: str, executors: dict[tuple[int, int], tuple[str, int]]) -> Assignment:
    return Assignment(topology_id=tid, bundle_key=tid, executors=executors,
                      node_host={n: "h" for n, _ in executors.values()})


def test_assigned_slots_picks_this_supervisors_executors() -> None:
    a = assignment("t1", {(1, 1): ("s1", 6700), (2, 3): ("s1", 6700), (4, 4): ("s2", 6700),
                          (5, 5): ("s1", 6701)})
    b = assignment("t2", {(1, 2): ("s2", 6701)})
    slots, problems = assigned_slots({"t1": a, "t2": b}, "s1", [6700, 6701, 6702])
    assert slots == {6700: LocalAssignment("t1", ((1, 1), (2, 3))),
                     6701: LocalAssignment("t1", ((5, 5),))}
    assert problems == []
    assert assigned_slots({"t2": b}, "s1", [6700]) == ({}, [])


def test_assigned_slots_reports_foreign_and_contested_ports() -> None:
    a = assignment("t1", {(1, 1): ("s1", 6700), (2, 2): ("s1", 9999)})
    b = assignment("t0", {(1, 1): ("s1", 6700)})
    slots, problems = assigned_slots({"t1": a, "t0": b}, "s1", [6700])
    assert slots == {6700: LocalAssignment("t0", ((1, 1),))}
    assert len(problems) == 2
    assert any("9999" in p for p in problems) and any("several topologies" in p for p in problems)


def test_worker_health_rules() -> None:
    common = {"pid": 10, "launched_at": 100.0, "worker_timeout": 5.0, "start_timeout": 30.0}
    # no heartbeat yet: start grace
    assert worker_health(heartbeat_time=None, heartbeat_pid=None, now=120.0, **common) is None
    assert "no heartbeat" in worker_health(heartbeat_time=None, heartbeat_pid=None, now=131.0,
                                           **common)
    # a heartbeat of a previous process does not count
    assert "no heartbeat" in worker_health(heartbeat_time=130.0, heartbeat_pid=9, now=131.0, **common)
    # own heartbeat: worker timeout
    assert worker_health(heartbeat_time=128.0, heartbeat_pid=10, now=131.0, **common) is None
    assert "heartbeat is 6.0 s old" in worker_health(heartbeat_time=125.0, heartbeat_pid=10,
                                                     now=131.0, **common)


def test_relaunch_delay_grows_for_crash_loops() -> None:
    assert [relaunch_delay(n) for n in range(1, 8)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert relaunch_delay(100) == 30.0


def test_supervisor_id_is_kept_across_restarts_and_not_shared(tmp_path: Path) -> None:
    first, lock1 = claim_supervisor_id(tmp_path, "h", [6701, 6700])
    second, lock2 = claim_supervisor_id(tmp_path, "h", [6700, 6701])  # first still running
    assert first != second
    lock1.close()  # the first supervisor dies
    again, lock3 = claim_supervisor_id(tmp_path, "h", [6700, 6701])
    assert again == first
    other, lock4 = claim_supervisor_id(tmp_path, "h", [7000])  # other slots: other identity
    assert other not in (first, second)
    for lock in (lock2, lock3, lock4):
        lock.close()


def test_local_heartbeat_round_trip_and_garbage(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    assert read_local_heartbeat(path) is None
    write_local_heartbeat(path, time=12.5, pid=42, topology_id="t", port=6700,
                          executors=[(1, 2), (3, 3)])
    beat = read_local_heartbeat(path)
    assert beat is not None
    assert (beat.time, beat.pid, beat.topology_id, beat.port, beat.executors) == \
        (12.5, 42, "t", 6700, ((1, 2), (3, 3)))
    path.write_bytes(b"\xc1garbage")
    assert read_local_heartbeat(path) is None
    path.write_bytes(b"\x05")
    assert read_local_heartbeat(path) is None


def test_dirs_and_pid_files(tmp_path: Path) -> None:
    dirs = SupervisorDirs(tmp_path, "s1", tmp_path / "logs")
    assert dirs.worker_log("t-1", 6700) == (tmp_path / "logs" / "worker-t-1-6700.log").resolve()
    assert dirs.supervisor_log.name == "supervisor-s1.log"
    dirs.worker_dir("my-topo-1", 6700).mkdir(parents=True)
    assert [(t, p) for t, p, _ in dirs.worker_dirs()] == [("my-topo-1", 6700)]
    pid_file = dirs.pid_file("my-topo-1", 6700)
    assert read_pid(pid_file) is None
    write_pid(pid_file, os.getpid())
    assert read_pid(pid_file) == os.getpid()
    assert not dirs.is_downloaded("my-topo-1")
