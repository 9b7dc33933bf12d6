"""The monitor's liveness rules one by one (``executor_liveness`` on hand-made assignments and
heartbeats), the heartbeat cache, and what a round does with them (in-memory cluster state,
simulated time)."""

from __future__ import annotations

from typing import Any

from stormpy.cluster import Assignment, SupervisorInfo, WorkerHeartbeat
from stormpy.nimbus.monitor import executor_liveness

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
