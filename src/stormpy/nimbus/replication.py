"""Bundle replication between Nimbus hosts, so whichever Nimbus leads can serve every topology's code.

Contract of :class:`Replicator` (one per Nimbus):

* A Nimbus that holds a topology's bundle in its :class:`~stormpy.nimbus.store.BundleStore` says so
  with an ephemeral node ``blobstore/<topology-id>/<nimbus-id>`` whose data is the bundle's sha256
  (:meth:`register`). The node goes with the Nimbus's session, so only live copies count.
* On every pass (:meth:`sync`; run on its own thread when a topology appears in ``storms/`` and at
  least every ``poll_secs``), each topology in ZooKeeper that the local store lacks is downloaded
  from a Nimbus that registered a copy (the leader first), checked against the sha256 that copy
  registered (the key of the bundle) and the full bundle verification, installed into the store,
  then registered. Copies already held are registered if they are not yet. A download that fails
  is retried on the next pass; nothing half-written is ever installed.
* On a Nimbus that is not the leader, stored bundles of topologies that have been missing from
  ZooKeeper on two consecutive passes are removed (the leader removes its own on kill).
* :meth:`await_replicas` blocks until ``count`` Nimbus hosts registered a copy of a topology, or
  until ``timeout_secs`` passed: the leader's submit answers only then
  (``topology.min.replication.count``, see :func:`replication_target`). A count set explicitly
  that is not met raises :class:`ReplicationError` (the submit is rolled back); the default count
  that is not met (or cannot be: fewer live Nimbus hosts than it asks for) gives a warning the
  submit's answer carries and the log repeats. The leader also records the bundle's sha256 as the
  data of ``blobstore/<topology-id>`` (a persistent node), so a copy sent back later (a supervisor's,
  when no Nimbus holds one any more) can be checked against it.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from stormpy.bundle import BundleError, verify_bundle
from stormpy.client import NimbusClient, seed_addresses
from stormpy.cluster import ClusterState, ClusterStateError, Watch
from stormpy.cluster.records import decode_value
from stormpy.config import SettingError, setting
from stormpy.host.service import Service
from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore, StoreError
from stormpy.nimbus.uploads import StagedBundle
from stormpy.rpc.errors import InvalidRequestError, RpcError

__all__ = ["ReplicationError", "Replicator", "replication_target"]

log = logging.getLogger(__name__)

ClientFactory = Callable[[str], NimbusClient]


class ReplicationError(InvalidRequestError):
    """Too few Nimbus hosts hold a topology's bundle in time (topology.min.replication.count)."""


def replication_target(nimbus_conf: Mapping[str, Any], topo_conf: Mapping[str, Any]) -> tuple[int, bool]:
    """(copies a submit waits for, whether that count was set explicitly).

    ``topology.min.replication.count`` from the topology's config, else Nimbus's; unset (None)
    means 2 when ``nimbus.seeds`` names two or more Nimbus hosts (``nimbus.host`` does not count), else
    1. SettingError for a count
    below 1."""
    key = "topology.min.replication.count"
    value = topo_conf.get(key, nimbus_conf.get(key))
    if value is None:
        seeds = setting(nimbus_conf, "nimbus.seeds")
        hosts = seed_addresses({"nimbus.thrift.port": nimbus_conf.get("nimbus.thrift.port"),
                                "nimbus.seeds": [seeds] if isinstance(seeds, str) else seeds,
                                "nimbus.host": None})
        return (2 if len(hosts) >= 2 else 1), False
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SettingError(key, f"must be an integer >= 1 (or unset), got {value!r}")
    return value, True


class Replicator:
    """Keeps this Nimbus's store in step with the topologies in ZooKeeper (module docstring)."""

    def __init__(self, state: ClusterState, store: BundleStore, dirs: NimbusDirs, nimbus_id: str, *,
                 client_factory: ClientFactory, is_leader: Callable[[], bool],
                 leader_address: Callable[[], str | None], poll_secs: float = 5.0,
                 housekeeping: Callable[[], None] | None = None) -> None:
        self.state = state
        self.store = store
        self.dirs = dirs
        self.nimbus_id = nimbus_id
        self._client_factory = client_factory
        self._is_leader = is_leader
        self._leader_address = leader_address
        self.poll_secs = poll_secs
        self._housekeeping = housekeeping
        self._registered: dict[str, str] = {}
        self._missing_once: set[str] = set()
        self._service = Service("nimbus-replication", self._round, interval=poll_secs, first_delay=poll_secs,
                                expected_errors=(ClusterStateError, StoreError), log=log)
        self._watch: Watch | None = None
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Replicator:
        """Run :meth:`sync` on a daemon thread (a :class:`~stormpy.host.service.Service`), woken by
        new topologies; return self."""
        self._service.start()
        self._watch = self.state.storage.watch_children(self.state.paths.storms(),
                                                        lambda _children: self._service.wake())
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._service.request_stop()
        if self._watch is not None:
            self._watch.cancel()
        self._service.stop(timeout)

    def _round(self) -> None:
        if self._housekeeping is not None:
            self._housekeeping()
        self.sync()

    # -- replicas ----------------------------------------------------------------------------------
    def register(self, topology_id: str) -> None:
        """Announce that this Nimbus holds ``topology_id``'s bundle (idempotent). A topology killed
        meanwhile (no StormBase after the node is written) is not left registered."""
        stored = self.store.load(topology_id)
        with self._lock:
            if self._registered.get(topology_id) == stored.bundle_sha256 and self.state.storage.exists(
                    self.state.paths.replica(topology_id, self.nimbus_id)):
                return
            self.state.storage.create_ephemeral(self.state.paths.replica(topology_id, self.nimbus_id),
                                                stored.bundle_sha256.encode())
            self._registered[topology_id] = stored.bundle_sha256
        if self.state.storm_base(topology_id) is None:  # killed while we registered: undo
            self._forget(topology_id)
            self.state.storage.delete(self.state.paths.blobstore(topology_id))

    def holders(self, topology_id: str) -> dict[str, str]:
        """nimbus id → sha256 of every registered copy of ``topology_id``."""
        out = {}
        parent = self.state.paths.blobstore(topology_id)
        for child in self.state.storage.children(parent):
            data = self.state.storage.get(f"{parent}/{child}")
            if data:
                out[child] = data.decode(errors="replace")
        return out

    def holder_counts(self, topology_ids: list[str]) -> dict[str, int]:
        """topology id → how many copies of it are registered (:meth:`holders` of each, read in
        two batches: what ``get_cluster_info`` asks for every topology)."""
        storage = self.state.storage
        parents = [self.state.paths.blobstore(tid) for tid in topology_ids]
        listed = storage.children_many(parents)
        nodes = [(tid, f"{parent}/{child}") for tid, parent, children in zip(topology_ids, parents, listed,
                                                                            strict=True)
                 for child in children]
        counts = dict.fromkeys(topology_ids, 0)
        for (tid, _), data in zip(nodes, storage.get_many([path for _, path in nodes]), strict=True):
            if data:
                counts[tid] += 1
        return counts

    def await_replicas(self, topology_id: str, count: int, timeout_secs: float, *,
                       strict: bool = True) -> str | None:
        """Wait until ``count`` copies are registered (see the module docstring); None when they
        are, else (``strict`` false) the warning to give. ReplicationError when ``strict``."""
        self.register(topology_id)
        self.record_sha256(topology_id)
        self._service.wake()
        if not strict:
            live = self.live_nimbuses()
            if live < count:
                running = "1 Nimbus host is" if live == 1 else f"{live} Nimbus hosts are"
                return self._short(topology_id, len(self.holders(topology_id)), count,
                                   f"only {running} running")
        def stopping() -> None:
            if self._service.stopping:
                raise ReplicationError(f"topology {topology_id}: this Nimbus is stopping")

        try:
            wait_for(lambda: len(self.holders(topology_id)) >= count, timeout_secs,
                     f"{count} copies of {topology_id}", interval=0.05, check=stopping)
            return None
        except WaitTimeout:
            have = len(self.holders(topology_id))
        why = (f"no more copies after {timeout_secs:g} s (topology.max.replication.wait.time.sec); "
               "are the standby Nimbus hosts running?")
        if strict:
            raise ReplicationError(
                f"topology {topology_id}: only {have} of the {count} Nimbus hosts required by "
                f"topology.min.replication.count hold its bundle: {why}")
        return self._short(topology_id, have, count, why)

    @staticmethod
    def _short(topology_id: str, have: int, count: int, why: str) -> str:
        warning = (f"topology {topology_id} was submitted, but only {have} of {count} Nimbus hosts hold its "
                   f"code ({why}); if the leader dies before a standby copies it, the topology cannot be "
                   "rescheduled until a supervisor that runs it sends its copy back")
        log.warning("%s", warning)
        return warning

    def live_nimbuses(self) -> int:
        """How many Nimbus processes are registered in ZooKeeper now (this one included)."""
        leader = self.state.paths.nimbus_leader().rsplit("/", 1)[-1]
        return len([c for c in self.state.storage.children(self.state.paths.nimbuses()) if c != leader])

    def record_sha256(self, topology_id: str) -> None:
        """Write the stored bundle's sha256 as the data of ``blobstore/<topology-id>``."""
        stored = self.store.load(topology_id)
        self.state.storage.set(self.state.paths.blobstore(topology_id), stored.bundle_sha256.encode())

    def recorded_sha256(self, topology_id: str) -> str | None:
        """The sha256 the leader recorded at submit (None: not recorded, e.g. an older Nimbus)."""
        data = self.state.storage.get(self.state.paths.blobstore(topology_id))
        return data.decode(errors="replace") if data else None

    # -- one pass ----------------------------------------------------------------------------------
    def sync(self) -> None:
        """Fetch missing bundles, register held ones, drop stale ones (standbys only). A copy
        this Nimbus registered whose node is still there (one batched read for all of them) is
        not registered again, so a pass over many topologies costs no read per topology."""
        wanted = set(self.state.active_storms())
        held = set(self.store.topology_ids())
        with self._lock:
            registered = sorted(tid for tid in self._registered if tid in wanted and tid in held)
        nodes = self.state.storage.children_many([self.state.paths.blobstore(tid) for tid in registered])
        standing = {tid for tid, children in zip(registered, nodes, strict=True)
                    if self.nimbus_id in children}
        for topology_id in sorted(wanted):
            if self._service.stopping:
                return
            if topology_id not in held:
                self._fetch(topology_id)
            elif topology_id not in standing and self.store.exists(topology_id):
                self.register(topology_id)
        stale = held - wanted
        if not self._is_leader():
            for topology_id in sorted(stale & self._missing_once):
                log.info("removing the replicated bundle of vanished topology %s", topology_id)
                self.store.remove(topology_id)
                self._forget(topology_id)
        self._missing_once = stale

    def _forget(self, topology_id: str) -> None:
        with self._lock:
            self._registered.pop(topology_id, None)
        self.state.storage.delete(self.state.paths.replica(topology_id, self.nimbus_id))

    def _sources(self, topology_id: str) -> list[tuple[str, str]]:
        """(address, sha256) of the copies held elsewhere, the leader's first."""
        leader = self._leader_address()
        out = []
        for nimbus_id, sha in self.holders(topology_id).items():
            if nimbus_id == self.nimbus_id:
                continue
            data = self.state.storage.get(self.state.paths.nimbus(nimbus_id))
            if not data:
                continue
            info: Any = decode_value(data, self.state.paths.nimbus(nimbus_id))
            if isinstance(info, dict) and info.get("host") and info.get("port"):
                out.append((f"{info['host']}:{info['port']}", sha))
        return sorted(out, key=lambda item: item[0] != leader)

    def _fetch(self, topology_id: str) -> bool:
        for address, sha in self._sources(topology_id):
            part = self.dirs.uploads / f"replica-{uuid.uuid4().hex}.part"
            part.parent.mkdir(parents=True, exist_ok=True)
            try:
                with self._client_factory(address) as client:
                    files = client.topology_files(topology_id)
                    if files["bundle_sha256"] != sha:
                        raise BundleError(f"Nimbus {address} serves sha256 {files['bundle_sha256']}, its "
                                          f"registered copy is {sha}")
                    client.download_bundle(topology_id, part)
                verify_bundle(part)
                staged = StagedBundle(topology_id, part, sha, part.stat().st_size, time.time())
                self.store.install(topology_id, staged, files["spec"], files["conf"])
            except (RpcError, BundleError, StoreError, OSError, KeyError, TypeError) as exc:
                log.warning("cannot replicate topology %s from Nimbus %s: %s", topology_id, address, exc)
                continue
            finally:
                Path(part).unlink(missing_ok=True)
            self.register(topology_id)
            log.info("replicated topology %s from Nimbus %s (sha256 %s)", topology_id, address, sha)
            return True
        return False
