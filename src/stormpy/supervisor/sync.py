"""Pure decisions of the supervisor's sync (Storm's synchronize-supervisor / sync-processes).

:func:`assigned_slots` turns the cluster's assignments into what this supervisor must run:
port → :class:`LocalAssignment`. :func:`worker_health` says whether a running worker must be
replaced. No I/O here, so the rules are unit-tested directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from stormpy.cluster.records import Assignment
from stormpy.host.backoff import Backoff
from stormpy.topology._layout import ExecutorKey

__all__ = ["QUICK_EXIT_SECS", "LocalAssignment", "assigned_slots", "relaunch_backoff", "relaunch_delay",
           "worker_health"]

#: A worker exiting sooner than this after its launch made a "quick exit" (a crash loop suspect).
QUICK_EXIT_SECS = 10.0
#: Longest wait before relaunching a worker that keeps exiting quickly.
MAX_RELAUNCH_DELAY_SECS = 30.0


@dataclass(frozen=True)
class LocalAssignment:
    """What one worker slot must run: the topology and the sorted executors."""

    topology_id: str
    executors: tuple[ExecutorKey, ...]


def assigned_slots(assignments: Mapping[str, Assignment], supervisor_id: str,
                   ports: Iterable[int]) -> tuple[dict[int, LocalAssignment], list[str]]:
    """``(port → LocalAssignment, problems)`` for ``supervisor_id``.

    Executors assigned to a port this supervisor does not offer, or a port claimed by two
    topologies, are left out and described in ``problems`` (the first topology, by id, keeps a
    contested port).
    """
    offered = {int(p) for p in ports}
    slots: dict[int, dict[str, list[ExecutorKey]]] = {}
    problems: list[str] = []
    for topology_id in sorted(assignments):
        for port in assignments[topology_id].worker_ports.get(supervisor_id, ()):
            if port not in offered:
                problems.append(f"topology {topology_id} is assigned to port {port}, which this "
                                f"supervisor does not offer (slots {sorted(offered)})")
                continue
            slots.setdefault(port, {})[topology_id] = assignments[topology_id].executors_of(
                supervisor_id, port)
    result: dict[int, LocalAssignment] = {}
    for port, by_topology in sorted(slots.items()):
        topology_id = min(by_topology)
        if len(by_topology) > 1:
            problems.append(f"port {port} is assigned to several topologies {sorted(by_topology)}; "
                            f"running {topology_id}")
        result[port] = LocalAssignment(topology_id, tuple(sorted(by_topology[topology_id])))
    return result, problems


def worker_health(*, pid: int, launched_at: float, heartbeat_time: float | None,
                  heartbeat_pid: int | None, now: float, worker_timeout: float,
                  start_timeout: float) -> str | None:
    """None when the worker is healthy, else why it must be restarted.

    A heartbeat counts only when it was written by ``pid``. Without one, the worker has
    ``start_timeout`` seconds from ``launched_at``; with one, it must be younger than
    ``worker_timeout`` seconds. Times are wall-clock seconds on this host.
    """
    if heartbeat_time is not None and heartbeat_pid == pid:
        age = now - heartbeat_time
        if age > worker_timeout:
            return f"its heartbeat is {age:.1f} s old (supervisor.worker.timeout.secs={worker_timeout:g})"
        return None
    waited = now - launched_at
    if waited > start_timeout:
        return (f"no heartbeat {waited:.1f} s after launch "
                f"(supervisor.worker.start.timeout.secs={start_timeout:g})")
    return None


def relaunch_backoff() -> Backoff:
    """The backoff of one worker slot's crash loop: the first quick exit is relaunched at once,
    then after 1, 2, 4 ... seconds, up to MAX_RELAUNCH_DELAY_SECS."""
    return Backoff(1.0, MAX_RELAUNCH_DELAY_SECS, free_failures=1)


_RELAUNCH_RULE = relaunch_backoff()


def relaunch_delay(quick_exits: int) -> float:
    """Seconds to wait before relaunching a worker after its ``quick_exits``-th consecutive quick
    exit (:func:`relaunch_backoff`'s rule)."""
    return _RELAUNCH_RULE.delay(quick_exits)
