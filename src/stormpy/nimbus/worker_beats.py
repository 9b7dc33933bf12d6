"""The leader's in-memory worker heartbeats, as supervisors send them over RPC.

Contract of :class:`WorkerBeats`:

* Supervisors send their workers' heartbeats to the leading Nimbus (RPC
  ``send_supervisor_worker_heartbeats``, Storm 2.x's ``sendSupervisorWorkerHeartbeats``) every
  ``task.heartbeat.frequency.secs``; :meth:`record` keeps the newest
  :class:`~stormpy.cluster.records.WorkerHeartbeat` per (topology, node, port), never an older
  one (by its ``time``) over a newer one. Nothing is written to ZooKeeper: a cluster's heartbeat
  load is RPC calls to Nimbus (supervisors / period), not ZooKeeper writes (workers / period).
* :meth:`of` / :meth:`topology` are what the monitor, ``get_topology_info`` and
  ``get_worker_heartbeats`` (the UI's sampler, a worker carrying its tasks' counters) read: a
  copy, taken under the lock, never a view the next record changes.
* Entries leave with :meth:`retain` (the monitor keeps the slots of the current assignments, so
  the store holds at most one heartbeat per assigned slot) and :meth:`clear` (a Nimbus that
  gains the leadership starts empty: what it held from an earlier term is stale).
* :attr:`reported` holds the nodes that sent since the last :meth:`clear` (what a new leader
  waits for, see :mod:`stormpy.nimbus.monitor`).
* Thread-safe: RPC threads record while the monitor reads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from stormpy.cluster import WorkerHeartbeat

__all__ = ["Slot", "WorkerBeats"]

Slot = tuple[str, int]


class WorkerBeats:
    """topology id → (node, port) → the newest heartbeat received (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._beats: dict[str, dict[Slot, WorkerHeartbeat]] = {}
        self._reported: set[str] = set()
        #: heartbeats recorded since this store was made (a counter for tests and the bench)
        self.received = 0

    def record(self, beats: Iterable[WorkerHeartbeat]) -> int:
        """Keep each of ``beats`` unless a newer one of its slot is held; return how many were
        kept."""
        kept = 0
        with self._lock:
            for beat in beats:
                self._reported.add(beat.node)
                slots = self._beats.setdefault(beat.topology_id, {})
                slot = (beat.node, beat.port)
                held = slots.get(slot)
                if held is None or beat.time >= held.time:
                    slots[slot] = beat
                    kept += 1
            self.received += kept
        return kept

    def topology(self, topology_id: str) -> dict[Slot, WorkerHeartbeat]:
        """(node, port) → heartbeat of ``topology_id`` (a copy; empty when none was received)."""
        with self._lock:
            return dict(self._beats.get(topology_id, {}))

    def of(self, topology_ids: Iterable[str]) -> dict[str, dict[Slot, WorkerHeartbeat]]:
        """:meth:`topology` of each of ``topology_ids``, taken at once."""
        with self._lock:
            return {tid: dict(self._beats.get(tid, {})) for tid in topology_ids}

    def retain(self, slots: dict[str, set[Slot]]) -> None:
        """Drop every heartbeat whose topology is not in ``slots`` or whose slot is not in its
        topology's set."""
        with self._lock:
            for tid in list(self._beats):
                keep = slots.get(tid)
                if keep is None:
                    del self._beats[tid]
                    continue
                held = self._beats[tid]
                for slot in [s for s in held if s not in keep]:
                    del held[slot]

    def clear(self) -> None:
        """Forget everything (a new term of leadership)."""
        with self._lock:
            self._beats.clear()
            self._reported.clear()

    @property
    def reported(self) -> set[str]:
        """Nodes that sent heartbeats since the last :meth:`clear` (a copy)."""
        with self._lock:
            return set(self._reported)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._beats.values())
