"""The files a supervisor keeps across its restarts: the id directory found again by its
identity file (written by an earlier run, whatever else lies beside it), a local dir created
on first use, and the local heartbeat of a worker that names no executors; and the slot rules
at their bounds (a heartbeat exactly `worker.timeout` old, a launch exactly `start.timeout` ago,
a topology with a port this supervisor does not offer before one it does)."""

from __future__ import annotations

import json
from pathlib import Path

import msgpack

from stormpy.cluster import Assignment
from stormpy.supervisor.local_state import claim_supervisor_id, read_local_heartbeat
from stormpy.supervisor.sync import LocalAssignment, assigned_slots, worker_health


def test_the_id_and_identity_files_are_laid_out_under_supervisor(tmp_path: Path) -> None:
    local = tmp_path / "not" / "there" / "yet"
    supervisor_id, lock = claim_supervisor_id(local, "host-a", [6701, 6700])
    try:
        base = local / "supervisor"
        assert [d.name for d in base.iterdir()] == [supervisor_id]
        assert json.loads((base / supervisor_id / "identity.json").read_text()) == {
            "host": "host-a", "ports": [6700, 6701]}
        assert (base / supervisor_id / "supervisor.lock").is_file()
    finally:
        lock.close()


def write_identity(base: Path, name: str, identity: object) -> None:
    (base / name).mkdir(parents=True)
    text = identity if isinstance(identity, str) else json.dumps(identity)
    (base / name / "identity.json").write_text(text)


def test_a_restart_finds_the_id_an_earlier_run_wrote_past_other_directories(tmp_path: Path) -> None:
    base = tmp_path / "supervisor"
    (base / "a-no-identity").mkdir(parents=True)
    write_identity(base, "b-garbage", "{not json")
    write_identity(base, "c-other-host", {"host": "host-b", "ports": [6700, 6701]})
    write_identity(base, "d-other-ports", {"host": "host-a", "ports": [6700]})
    write_identity(base, "e-mine", {"host": "host-a", "ports": [6700, 6701]})
    supervisor_id, lock = claim_supervisor_id(tmp_path, "host-a", (6701, 6700))
    lock.close()
    assert supervisor_id == "e-mine"


def test_a_heartbeat_without_executors_is_read_with_executors_unknown(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat"
    path.write_bytes(msgpack.packb({"time": 12.5, "pid": 42}))
    beat = read_local_heartbeat(path)
    assert beat is not None
    assert (beat.time, beat.pid, beat.topology_id, beat.port, beat.executors) == (12.5, 42, None, None, None)


def test_worker_health_at_its_bounds() -> None:
    common = {"pid": 7, "launched_at": 0.0, "worker_timeout": 30.0, "start_timeout": 120.0}
    assert worker_health(heartbeat_time=70.0, heartbeat_pid=7, now=100.0, **common) is None
    assert worker_health(heartbeat_time=69.5, heartbeat_pid=7, now=100.0, **common) == (
        "its heartbeat is 30.5 s old (supervisor.worker.timeout.secs=30)")
    assert worker_health(heartbeat_time=None, heartbeat_pid=None, now=120.0, **common) is None
    assert worker_health(heartbeat_time=None, heartbeat_pid=None, now=120.5, **common) == (
        "no heartbeat 120.5 s after launch (supervisor.worker.start.timeout.secs=120)")


def test_a_port_not_offered_does_not_hide_the_topologys_other_ports() -> None:
    topology = Assignment(topology_id="t-1", bundle_key="t-1",
                          executors={(1, 1): ("sup", 6600), (2, 2): ("sup", 6700), (3, 3): ("sup", 6701)},
                          node_host={"sup": "h"})
    slots, problems = assigned_slots({"t-1": topology}, "sup", [6700, 6701])
    assert slots == {6700: LocalAssignment("t-1", ((2, 2),)), 6701: LocalAssignment("t-1", ((3, 3),))}
    assert problems == ["topology t-1 is assigned to port 6600, which this supervisor does not offer "
                        "(slots [6700, 6701])"]
