"""Getting back a topology's bundle that no Nimbus holds any more, and saying so while it is missing.

A bundle can be lost from every Nimbus: the leader died before a standby copied it (a default
``topology.min.replication.count`` that could not be met), or every Nimbus's disk was lost. The
supervisors that ran the topology still hold its code (``stormdist/<topology-id>/bundle.zip`` and
the spec and config it was submitted with). Contract of :class:`BundleRecovery` (leader side):

* :meth:`request` (the leader, on taking over and on every monitor round, for each topology in
  ZooKeeper whose bundle its store lacks after replication tried the other Nimbus hosts) writes the
  persistent node ``blobstore-wanted/<topology-id>`` and logs, once per topology, what it means and
  what to do. A supervisor holding the code sees the node and sends the bundle back: it uploads it
  like a submitter and calls ``restore_bundle`` (:meth:`restore`).
* :meth:`restore` installs a returned bundle when its sha256 equals the one the leader recorded at
  submit (``blobstore/<topology-id>`` data; a bundle without a recorded sha256 is accepted after
  the full bundle verification), registers the replica and removes the request; the monitor then
  schedules the topology as usual. A bundle already held again is dropped (another supervisor was
  faster): True when this call installed it.
* :func:`degraded_reason` says why a topology cannot be (re)scheduled, for ``stormpy list``/``info``,
  the UI and the REST API: no Nimbus holds its code, or no worker slot is assigned to it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from stormpy.cluster import Assignment, ClusterState, StormBase
from stormpy.nimbus.replication import Replicator
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.uploads import StagedBundle
from stormpy.rpc.errors import InvalidRequestError, NotFoundError

__all__ = ["BundleRecovery", "degraded_reason"]

log = logging.getLogger(__name__)

#: What ``degraded`` says of a topology whose code no Nimbus holds.
NO_CODE = ("no Nimbus holds its code (lost with the Nimbus that had it): workers that stop cannot be "
           "restarted elsewhere and it cannot be rebalanced; waiting for a supervisor that runs it to send "
           "its copy back. If none does, kill it and submit it again")
#: ... and of one with no worker slot assigned.
UNSCHEDULED = "not scheduled: no free worker slot (add supervisors or free slots)"


def degraded_reason(base: StormBase, assignment: Assignment | None, holders: int) -> str | None:
    """Why ``base``'s topology cannot run as asked (None when nothing is wrong); ``holders`` is how
    many Nimbus hosts registered a copy of its bundle."""
    if base.status == "killed":
        return None
    if holders == 0:
        return NO_CODE
    if assignment is None or not assignment.executors:
        return UNSCHEDULED
    return None


class BundleRecovery:
    """The leader's side of getting lost bundles back (see the module docstring)."""

    def __init__(self, state: ClusterState, store: BundleStore, replicator: Replicator) -> None:
        self.state = state
        self.store = store
        self.replicator = replicator
        self._logged: set[str] = set()

    def request(self, topology_id: str) -> None:
        """Ask the supervisors for ``topology_id``'s bundle (idempotent; logs once)."""
        path = self.state.paths.bundle_wanted(topology_id)
        if not self.state.storage.exists(path):
            self.state.storage.set(path, b"")
        if topology_id not in self._logged:
            self._logged.add(topology_id)
            log.error("topology %s is in ZooKeeper but no Nimbus holds its code (%s lacks it); it keeps "
                      "running on its current workers but cannot be rescheduled. Asked the supervisors "
                      "that run it to send their copy back (%s). If none does (stormpy list shows it "
                      "degraded), kill it and submit it again", topology_id,
                      self.store.dirs.stormdist(topology_id), path)

    def request_missing(self, topology_ids: Mapping[str, Any]) -> list[str]:
        """:meth:`request` for every topology of ``topology_ids`` the store lacks; their ids."""
        missing = [tid for tid in sorted(topology_ids) if not self.store.exists(tid)]
        for tid in missing:
            self.request(tid)
        return missing

    def restore(self, topology_id: str, staged: StagedBundle, spec: dict[str, Any],
                conf: dict[str, Any]) -> bool:
        """Install a bundle sent back by a supervisor (see the module docstring)."""
        if self.state.storm_base(topology_id) is None:
            raise NotFoundError(f"no topology with id {topology_id!r}")
        if self.store.exists(topology_id):
            staged.path.unlink(missing_ok=True)
            self._done(topology_id)
            return False
        recorded = self.replicator.recorded_sha256(topology_id)
        if recorded is not None and recorded != staged.sha256:
            staged.path.unlink(missing_ok=True)
            raise InvalidRequestError(f"topology {topology_id}: the bundle sent back has sha256 "
                                      f"{staged.sha256}, the submitted one had {recorded}")
        self.store.install(topology_id, staged, spec, conf)
        self.replicator.register(topology_id)
        if recorded is None:
            self.replicator.record_sha256(topology_id)
        self._done(topology_id)
        log.warning("topology %s: its code was sent back by a supervisor (sha256 %s); it can be "
                    "rescheduled again", topology_id, staged.sha256)
        return True

    def _done(self, topology_id: str) -> None:
        self.state.storage.delete(self.state.paths.bundle_wanted(topology_id))
        self._logged.discard(topology_id)
