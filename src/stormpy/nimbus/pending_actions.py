"""Pending delayed actions of topologies: kill-with-wait and rebalance-with-wait.

At most one action per topology (a newer one replaces the older, as in Storm where a second kill
shortens the wait). Time is whatever clock the caller uses; :meth:`ActionTimers.due` pops every
action whose deadline has passed, so simulated time drives them in tests.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["KILL", "REBALANCE", "ActionTimers", "PendingAction"]

KILL = "kill"
REBALANCE = "rebalance"


@dataclass(frozen=True)
class PendingAction:
    topology_id: str
    kind: str
    deadline: float


class ActionTimers:
    """Thread-safe table topology id → pending action."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._actions: dict[str, PendingAction] = {}

    def schedule(self, topology_id: str, kind: str, deadline: float) -> None:
        """Set (or replace) the topology's pending action."""
        if kind not in (KILL, REBALANCE):
            raise ValueError(f"unknown action {kind!r}")
        with self._lock:
            self._actions[topology_id] = PendingAction(topology_id, kind, deadline)

    def cancel(self, topology_id: str) -> None:
        with self._lock:
            self._actions.pop(topology_id, None)

    def get(self, topology_id: str) -> PendingAction | None:
        with self._lock:
            return self._actions.get(topology_id)

    def due(self, now: float) -> list[PendingAction]:
        """Remove and return the actions whose deadline is at or before ``now``, earliest first."""
        with self._lock:
            ready = sorted((a for a in self._actions.values() if a.deadline <= now),
                           key=lambda a: (a.deadline, a.topology_id))
            for action in ready:
                del self._actions[action.topology_id]
        return ready

    def next_deadline(self) -> float | None:
        with self._lock:
            return min((a.deadline for a in self._actions.values()), default=None)
