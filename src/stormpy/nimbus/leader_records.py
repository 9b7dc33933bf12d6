"""The leader's copy of what only it writes: every StormBase and assignment, kept in memory.

Contract of :class:`TopologyRecords`:

* The leading Nimbus is the only writer of StormBases and assignments (Storm's Nimbus keeps its
  assignments cache for the same reason). :meth:`load` (called once when this Nimbus becomes
  leader, :meth:`~stormpy.nimbus.topologies.TopologyManager.resume`) reads them all from
  ZooKeeper; from then on every read (:meth:`storm_bases`, :meth:`storm_base`,
  :meth:`assignments`, :meth:`assignment`, :meth:`topology_ids`) is answered from memory, and
  every write (:meth:`set_storm_base`, :meth:`remove_storm_base`, :meth:`set_assignment`,
  :meth:`remove_topology`) goes to ZooKeeper first and into memory once ZooKeeper took it. So a
  monitor round, a submit and ``get_cluster_info`` read no StormBase or assignment znode.
* A write that fails (:class:`~stormpy.cluster.errors.ClusterStateError`, e.g. a timeout after
  which ZooKeeper may still apply it) makes the copy stale: the next read loads everything again.
* :meth:`drop` (the leadership lost) forgets the copy; until the next :meth:`load`, reads go to
  ZooKeeper, as on a standby, which other writers' changes reach only through ZooKeeper.
* Reads return copies (the records themselves are immutable); thread-safe.
"""

from __future__ import annotations

import threading
from typing import Any

from stormpy.cluster import Assignment, ClusterState, ClusterStateError, StormBase

__all__ = ["TopologyRecords"]


class TopologyRecords:
    """StormBases and assignments over a :class:`ClusterState` (see the module docstring)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._lock = threading.RLock()
        self._leading = False
        #: (StormBases, assignments) by topology id, or None (not leading, or stale)
        self._copy: tuple[dict[str, StormBase], dict[str, Assignment]] | None = None
        #: full loads from ZooKeeper since this object was made (for tests and the bench)
        self.loads = 0

    # -- leadership ------------------------------------------------------------------------------
    def load(self) -> None:
        """Read every StormBase and assignment once; answer reads from memory from now on."""
        with self._lock:
            self._leading = True
            self._reload()

    def drop(self) -> None:
        """Forget the copy; reads go to ZooKeeper again."""
        with self._lock:
            self._leading = False
            self._copy = None

    @property
    def in_memory(self) -> bool:
        """True while reads are answered from memory (after :meth:`load`, before :meth:`drop`)."""
        return self._leading

    def _reload(self) -> None:
        self._copy = None  # a load that fails half-way leaves no copy to answer from
        bases = self.state.storm_bases()
        assignments = self.state.assignments()
        self._copy = (bases, assignments)
        self.loads += 1

    def _current(self) -> tuple[dict[str, StormBase], dict[str, Assignment]] | None:
        """The copy (loaded again when stale), or None when not leading."""
        with self._lock:
            if not self._leading:
                return None
            if self._copy is None:
                self._reload()
            assert self._copy is not None
            return self._copy

    def _write(self, write: Any, apply: Any) -> None:
        with self._lock:
            try:
                write()
            except ClusterStateError:
                self._copy = None  # stale: ZooKeeper may still apply it
                raise
            if self._copy is not None:
                apply(*self._copy)

    # -- reads -----------------------------------------------------------------------------------
    def storm_bases(self) -> dict[str, StormBase]:
        """topology id → StormBase of every known topology."""
        current = self._current()
        return dict(current[0]) if current is not None else self.state.storm_bases()

    def storm_base(self, topology_id: str) -> StormBase | None:
        current = self._current()
        return current[0].get(topology_id) if current is not None else self.state.storm_base(topology_id)

    def topology_ids(self) -> list[str]:
        """Sorted ids of every topology with a StormBase."""
        current = self._current()
        return sorted(current[0]) if current is not None else self.state.active_storms()

    def assignments(self) -> dict[str, Assignment]:
        """topology id → assignment of every assigned topology."""
        current = self._current()
        return dict(current[1]) if current is not None else self.state.assignments()

    def assignment(self, topology_id: str) -> Assignment | None:
        current = self._current()
        return current[1].get(topology_id) if current is not None else self.state.assignment(topology_id)

    # -- writes ----------------------------------------------------------------------------------
    def set_storm_base(self, base: StormBase) -> None:
        self._write(lambda: self.state.set_storm_base(base),
                    lambda bases, _a: bases.__setitem__(base.topology_id, base))

    def remove_storm_base(self, topology_id: str) -> None:
        self._write(lambda: self.state.remove_storm_base(topology_id),
                    lambda bases, _a: bases.pop(topology_id, None))

    def set_assignment(self, assignment: Assignment) -> None:
        self._write(lambda: self.state.set_assignment(assignment),
                    lambda _b, assignments: assignments.__setitem__(assignment.topology_id, assignment))

    def remove_topology(self, topology_id: str) -> None:
        """:meth:`ClusterState.remove_topology` (every node of the topology)."""
        def forget(bases: dict[str, StormBase], assignments: dict[str, Assignment]) -> None:
            bases.pop(topology_id, None)
            assignments.pop(topology_id, None)

        self._write(lambda: self.state.remove_topology(topology_id), forget)
