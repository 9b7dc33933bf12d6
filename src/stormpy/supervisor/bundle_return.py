"""Sending a topology's code back to the leading Nimbus when no Nimbus holds it any more.

Contract of :class:`BundleReturner` (one per supervisor): :meth:`poll` (every sync round) wakes
its service (a :class:`~stormpy.host.service.Service` named ``supervisor-bundle-return``, started
by the first poll), whose round reads the leader's requests ``blobstore-wanted/<topology-id>``
(see ``stormpy.nimbus.recovery``); for each requested topology this supervisor holds
(``stormdist/<topology-id>/bundle.zip`` and its ``topology.msgpack``, kept from the download), it
finds the leader among the seeds (:func:`stormpy.client.find_leader`: a standby asked first names
the leader), uploads the bundle there like a submitter (:func:`stormpy.client.upload_bundle`) and
calls ``restore_bundle(topology_id, bundle_key, spec, conf)``. Sending runs on the service's
thread, one at a time, so worker supervision never waits on it; a failure is logged and retried
on a later round (the leader checks the sha256 against the one recorded at submit).
:meth:`stop` ends the service after the current send.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import msgpack

from stormpy.client import find_leader, rpc_client, seed_addresses, upload_bundle
from stormpy.cluster import ClusterState, ClusterStateError
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.host.service import Service
from stormpy.rpc import RpcError

__all__ = ["BundleReturner"]

#: A round runs when the sync round wakes it; with no wake, at most this often.
_IDLE_SECS = 60.0


class BundleReturner:
    """Answers the leader's requests for lost bundles (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], dirs: SupervisorDirs, state: ClusterState, *,
                 log: logging.Logger | None = None) -> None:
        self.conf = conf
        self.dirs = dirs
        self.state = state
        self.log = log or logging.getLogger(__name__)
        self._service = Service("supervisor-bundle-return", self._send_requested, interval=_IDLE_SECS,
                                log=self.log)

    def poll(self) -> None:
        """Have the service look for requested bundles now (starting it on the first poll)."""
        if not self._service.running and not self._service.stopping:
            self._service.start()
        self._service.wake()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the service after the current send (idempotent); True when its thread ended."""
        return self._service.stop(timeout)

    def requested(self) -> list[str]:
        """Topologies the leader asks back whose bundle and spec this supervisor holds."""
        try:
            wanted = self.state.storage.children(self.state.paths.bundle_wanted_root())
        except ClusterStateError:
            return []
        return [tid for tid in sorted(wanted) if self.dirs.bundle_file(tid).is_file()
                and self.dirs.topology_file(tid).is_file()]

    def _send_requested(self) -> None:
        for tid in self.requested():
            try:
                self.send(tid)
            except (RpcError, OSError, ValueError, KeyError, ClusterStateError) as exc:
                self.log.warning("cannot send the code of topology %s back to Nimbus: %s", tid, exc)

    def send(self, topology_id: str) -> bool:
        """Upload ``topology_id``'s bundle to the leader and ask it to restore it; True when it did.
        RpcError when no seed names a leader."""
        if not self.state.storage.exists(self.state.paths.bundle_wanted(topology_id)):
            return False
        bundle = self.dirs.bundle_file(topology_id)
        doc = msgpack.unpackb(self.dirs.topology_file(topology_id).read_bytes(), raw=False,
                              strict_map_key=False)
        leader = find_leader(seed_addresses(self.conf),
                             client_factory=lambda address: rpc_client(self.conf, address))
        if leader is None:
            raise RpcError("no Nimbus leader found among nimbus.host / nimbus.seeds")
        client = rpc_client(self.conf, leader)
        try:
            key = upload_bundle(client.call, bundle)
            answer = client.call("restore_bundle", topology_id=topology_id, bundle_key=key,
                                 spec=doc["spec"], conf=doc.get("conf") or {})
        finally:
            client.close()
        restored = bool(answer.get("restored"))
        if restored:
            self.log.warning("sent the code of topology %s back to Nimbus %s, which had lost it",
                             topology_id, leader)
        return restored
