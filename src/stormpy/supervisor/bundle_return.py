"""Sending a topology's code back to the leading Nimbus when no Nimbus holds it any more.

Contract of :class:`BundleReturner` (one per supervisor): :meth:`poll` (every sync round) reads the
leader's requests ``blobstore-wanted/<topology-id>`` (see ``stormpy.nimbus.recovery``); for each
requested topology this supervisor holds (``stormdist/<topology-id>/bundle.zip`` and its
``topology.msgpack``, kept from the download), it uploads the bundle to the leader like a
submitter (``begin_upload`` / ``upload_chunk`` / ``finish_upload``) and calls
``restore_bundle(topology_id, bundle_key, spec, conf)``. Sending runs on a thread of its own, one
at a time, so worker supervision never waits on it; a failure is logged and retried on a later
round (the leader checks the sha256 against the one recorded at submit).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

import msgpack

from stormpy.cluster import ClusterState, ClusterStateError
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.config import DEFAULTS, rpc_auth_token
from stormpy.rpc import RpcClient, RpcError
from stormpy.rpc.curve import server_public_key
from stormpy.supervisor.download import CONNECT_TIMEOUT_SECS, nimbus_addresses

__all__ = ["BundleReturner"]


class BundleReturner:
    """Answers the leader's requests for lost bundles (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], dirs: SupervisorDirs, state: ClusterState, *,
                 log: logging.Logger | None = None) -> None:
        self.conf = conf
        self.dirs = dirs
        self.state = state
        self.log = log or logging.getLogger(__name__)
        self._thread: threading.Thread | None = None

    def poll(self) -> None:
        """Start sending the requested bundles this supervisor holds, unless a send is running."""
        if self._thread is not None and self._thread.is_alive():
            return
        try:
            wanted = self.state.storage.children(self.state.paths.bundle_wanted_root())
        except ClusterStateError:
            return
        held = [tid for tid in sorted(wanted) if self.dirs.bundle_file(tid).is_file()
                and self.dirs.topology_file(tid).is_file()]
        if held:
            self._thread = threading.Thread(target=self._send_all, args=(held,),
                                            name="supervisor-bundle-return", daemon=True)
            self._thread.start()

    def _send_all(self, topology_ids: list[str]) -> None:
        for tid in topology_ids:
            try:
                self.send(tid)
            except (RpcError, OSError, ValueError, KeyError, ClusterStateError) as exc:
                self.log.warning("cannot send the code of topology %s back to Nimbus: %s", tid, exc)

    def _client(self, address: tuple[str, int]) -> RpcClient:
        conf = self.conf
        timeout = float(conf.get("nimbus.rpc.timeout.secs", DEFAULTS["nimbus.rpc.timeout.secs"]))
        return RpcClient(address[0], address[1], timeout_secs=timeout,
                         retries=int(conf.get("nimbus.rpc.retries", DEFAULTS["nimbus.rpc.retries"])),
                         auth_token=rpc_auth_token(conf), service="Nimbus",
                         connect_timeout_secs=CONNECT_TIMEOUT_SECS,
                         curve_server_key=server_public_key(conf))

    def _leader(self) -> RpcClient:
        """A client for the leading Nimbus; RpcError when no candidate names one."""
        for address in nimbus_addresses(self.conf):
            client = self._client(address)
            try:
                answer = client.call("get_leader")
            except RpcError:
                client.close()
                continue
            if answer.get("is_leader"):
                return client
            client.close()
            leader = answer.get("leader")
            if isinstance(leader, str) and ":" in leader:
                host, _, port = leader.rpartition(":")
                return self._client((host, int(port)))
        raise RpcError("no Nimbus leader found among nimbus.host / nimbus.seeds")

    def send(self, topology_id: str) -> bool:
        """Upload ``topology_id``'s bundle to the leader and ask it to restore it; True when it did."""
        if not self.state.storage.exists(self.state.paths.bundle_wanted(topology_id)):
            return False
        bundle = self.dirs.bundle_file(topology_id)
        doc = msgpack.unpackb(self.dirs.topology_file(topology_id).read_bytes(), raw=False,
                              strict_map_key=False)
        client = self._leader()
        try:
            size = bundle.stat().st_size
            begun = client.call("begin_upload", size=size)
            chunk_size = int(begun["chunk_size"])
            digest = hashlib.sha256()
            sent = 0
            with open(bundle, "rb") as stream:
                while chunk := stream.read(chunk_size):
                    digest.update(chunk)
                    client.call("upload_chunk", upload_id=begun["upload_id"], data=chunk, offset=sent)
                    sent += len(chunk)
            key = client.call("finish_upload", upload_id=begun["upload_id"], sha256=digest.hexdigest())
            answer = client.call("restore_bundle", topology_id=topology_id, bundle_key=key["bundle_key"],
                                 spec=doc["spec"], conf=doc.get("conf") or {})
        finally:
            client.close()
        restored = bool(answer.get("restored"))
        if restored:
            self.log.warning("sent the code of topology %s back to Nimbus %s:%s, which had lost it",
                             topology_id, client.host, client.port)
        return restored
