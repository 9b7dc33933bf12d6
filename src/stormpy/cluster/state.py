"""ClusterState: the typed façade over ZooKeeper that Nimbus, supervisors and workers share.

It reads and writes the documents of :mod:`stormpy.cluster.records` at the paths of
:mod:`stormpy.cluster.paths`. Contract:

* Getters return ``None`` (or empty collections) for missing state; a document that cannot be read
  raises :class:`~stormpy.cluster.errors.MalformedStateError` naming its znode.
* ``callback`` arguments are one-shot "something changed" hooks in the style of ZooKeeper (and
  Storm's cluster state): ``callback()`` runs once, on a kazoo thread, at the next change of anything
  the call returned (a node's data, the set of nodes, or the creation of a node that was missing).
  Re-read with a new callback to keep watching. Only the latest callback per kind of read is kept
  (``assignments`` and each ``assignment(id)`` are separate kinds). They are fed by the storage's
  only watch mechanism, kazoo's DataWatch / ChildrenWatch recipes, set up once per node read and
  kept (they survive reconnections and session losses) until :meth:`ClusterState.close`; a change
  that happens while no callback is pending is not saved for the next one (the read after it sees
  it). Callbacks must not block for long; daemons still resync on a timer.
* A read with a ``callback`` is answered from what the node's watch last delivered (kazoo's
  recipe reads the node at each change), so re-reading watched nodes costs ZooKeeper nothing
  until they change: a supervisor's sync reads every assignment, and 1,000 supervisors re-reading
  hundreds of assignments every few seconds would otherwise be a read load that grows with both.
  The same holds for the child list of a watched directory (the layout's directories, which
  are never deleted: kazoo's children watch ends silently with its directory). Decoded records
  are reused while a node's data is unchanged. A write through this façade forgets what was
  delivered for its node and its parent's child list, so the writer's next read sees its own
  write.
* Every call is bounded by the storage's operation timeout (ZkConnectionError when ZooKeeper is
  unreachable that long); after :meth:`ClusterState.begin_shutdown` calls fail at once instead of
  waiting for a lost connection (see :class:`~stormpy.cluster.storage.ZkStorage`). A read whose
  watch could not be set up leaves none registered, so the next read sets it up again.
* ``register_supervisor`` writes an ephemeral node: it disappears when the session ends and is
  re-created automatically if the session is lost and a new one established.
* ``remove_topology`` removes every node of the topology (assignment first, status last).

Module-level names re-export the record types, so ``from stormpy.cluster.state import Assignment``
works.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from stormpy.cluster.change_hooks import Callback, ChangeHooks, drop_path
from stormpy.cluster.errors import ClusterStateError, MalformedStateError, ZkConnectionError
from stormpy.cluster.paths import DEFAULT_ROOT, ZkPaths, decode_segment, parse_worker_key
from stormpy.cluster.records import (
    SCHEMA_VERSION,
    Assignment,
    ErrorInfo,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
    decode,
    decode_value,
    encode,
    encode_value,
)
from stormpy.cluster.storage import ZkStorage
from stormpy.cluster.watches import Watch

__all__ = [
    "MAX_ERRORS_PER_COMPONENT",
    "SCHEMA_VERSION",
    "Assignment",
    "ClusterState",
    "ClusterStateError",
    "ErrorInfo",
    "MalformedStateError",
    "StormBase",
    "SupervisorInfo",
    "WorkerHeartbeat",
    "ZkConnectionError",
]

#: How many errors per component are kept (older ones are removed as new ones arrive).
MAX_ERRORS_PER_COMPONENT = 10


class ClusterState:
    """Typed access to stormpy's cluster state in ZooKeeper, over one :class:`ZkStorage`.

    :attr:`paths` (a :class:`~stormpy.cluster.paths.ZkPaths` on the storage's root) names every node.
    """

    def __init__(self, storage: ZkStorage, *, owns_storage: bool = False) -> None:
        self.storage = storage
        self.paths = ZkPaths(storage.root)
        self._owns_storage = owns_storage
        self._hooks = ChangeHooks(storage)
        self._decoded: dict[str, tuple[bytes, Any]] = {}  # path → (data, record) of watched reads
        self._decoded_lock = threading.Lock()

    @classmethod
    def connect(cls, hosts: str, root: str = DEFAULT_ROOT, *, connect_timeout_secs: float = 15.0,
                session_timeout_secs: float = 20.0,
                operation_timeout_secs: float | None = None) -> ClusterState:
        """Connect a new storage (closed by :meth:`close`); raises ZkConnectionError on timeout."""
        storage = ZkStorage(hosts, root, connect_timeout_secs=connect_timeout_secs,
                            session_timeout_secs=session_timeout_secs,
                            operation_timeout_secs=operation_timeout_secs).start()
        return cls(storage, owns_storage=True)

    @classmethod
    def from_config(cls, conf: Mapping[str, Any]) -> ClusterState:
        """Connect using the ``storm.zookeeper.*`` keys of ``conf``."""
        return cls(ZkStorage.from_config(conf).start(), owns_storage=True)

    def close(self) -> None:
        """Cancel this façade's watches and close the storage if this façade created it (bounded,
        see ZkStorage.close); idempotent."""
        self._hooks.cancel_all()
        if self._owns_storage:
            self.storage.close()

    def begin_shutdown(self) -> None:
        """Stop waiting for a lost ZooKeeper connection: from now on calls fail at once while it is
        down (and calls already waiting are woken); see :meth:`ZkStorage.begin_shutdown`."""
        self.storage.begin_shutdown()

    @property
    def connected(self) -> bool:
        """True while the ZooKeeper session is connected."""
        return self.storage.connected

    def __enter__(self) -> ClusterState:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- generic helpers -----------------------------------------------------------------------
    def _read(self, cls: Any, path: str, slot: str | None = None) -> Any:
        if not slot:
            data = self.storage.get(path)
            return None if data is None else decode(cls, data, path)
        self._hooks.watch(slot, "data", path)  # fires on a change, a deletion or a creation
        known, data = self._hooks.latest(slot, "data", path)
        if not known:
            data = self.storage.get(path)
        if data is None:
            return None
        with self._decoded_lock:
            cached = self._decoded.get(path)
        if cached is not None and cached[0] == data:
            return cached[1]
        record = decode(cls, data, path)
        with self._decoded_lock:
            self._decoded[path] = (data, record)
        return record

    def _written(self, path: str, *, tree: bool = False) -> None:
        """This client changed ``path`` (with ``tree``, maybe nodes under it too): its next reads
        of them go to ZooKeeper."""
        self._hooks.forget_latest(path, tree=tree)
        self._hooks.forget_latest(path.rsplit("/", 1)[0])  # its parent's child list
        with self._decoded_lock:
            drop_path(self._decoded, path, tree=tree)

    def _children(self, path: str, slot: str | None = None) -> list[str]:
        if slot:
            self._hooks.watch(slot, "children", path)  # creates ``path`` when it is missing
            known, children = self._hooks.latest(slot, "children", path)
            if known:
                return list(children)
        return self.storage.children(path)

    def _read_all(self, cls: Any, parent: str, slot: str | None = None) -> dict[str, Any]:
        found = {}
        children = self._children(parent, slot)
        if slot:
            self._hooks.retain(slot, parent, children)
            kept = {f"{parent}/{child}" for child in children}
            prefix = parent + "/"
            with self._decoded_lock:
                for key in [k for k in self._decoded if k.startswith(prefix) and k not in kept]:
                    del self._decoded[key]
        if slot is None:  # no watches to set: ask for every node at once
            paths = [f"{parent}/{child}" for child in children]
            for child, path, data in zip(children, paths, self.storage.get_many(paths), strict=True):
                if data is not None:
                    found[child] = decode(cls, data, path)
            return found
        for child in children:
            value = self._read(cls, f"{parent}/{child}", slot)
            if value is not None:
                found[child] = value
        return found

    # -- nimbus instances ----------------------------------------------------------------------
    def nimbus_records(self) -> dict[str, dict[str, Any]]:
        """nimbus id → the document each running Nimbus registered at its start (``host``,
        ``port``, ``version``, ``start_time``...); an unreadable one is left out."""
        leader = self.paths.nimbus_leader().rsplit("/", 1)[-1]
        found: dict[str, dict[str, Any]] = {}
        for child in self.storage.children(self.paths.nimbuses()):
            if child == leader:
                continue
            path = self.paths.nimbus(child)
            data = self.storage.get(path)
            if not data:
                continue
            try:
                doc = decode_value(data, path)
            except MalformedStateError:
                continue
            if isinstance(doc, dict):
                found[child] = doc
        return found

    # -- supervisors ---------------------------------------------------------------------------
    def register_supervisor(self, info: SupervisorInfo) -> None:
        """Publish ``info`` as this session's ephemeral supervisor node (replacing a stale one)."""
        self.storage.create_ephemeral(self.paths.supervisor(info.supervisor_id), encode(info))
        self._written(self.paths.supervisor(info.supervisor_id))

    def unregister_supervisor(self, supervisor_id: str) -> None:
        """Remove the supervisor node now (otherwise it vanishes with the session)."""
        self.storage.delete(self.paths.supervisor(supervisor_id))
        self._written(self.paths.supervisor(supervisor_id))

    def supervisor(self, supervisor_id: str) -> SupervisorInfo | None:
        """The live supervisor's info, or None."""
        result: SupervisorInfo | None = self._read(SupervisorInfo, self.paths.supervisor(supervisor_id))
        return result

    def supervisors(self, callback: Callback | None = None) -> dict[str, SupervisorInfo]:
        """supervisor id → info for every live supervisor; ``callback`` fires when that changes."""
        slot = None
        if callback is not None:
            slot = "supervisors"
            self._hooks.set_callback(slot, callback)
        return self._read_all(SupervisorInfo, self.paths.supervisors(), slot)

    def watch_supervisor_ids(self, callback: Callable[[list[str]], Any]) -> Watch:
        """Call ``callback(sorted supervisor ids)`` now and whenever a supervisor registers or
        vanishes (not when one re-publishes its info), on a kazoo thread, until the returned
        handle is cancelled (:meth:`ZkStorage.watch_children`)."""
        return self.storage.watch_children(self.paths.supervisors(), callback)

    def supervisors_of(self, supervisor_ids: list[str]) -> dict[str, SupervisorInfo]:
        """supervisor id → info of each live one of ``supervisor_ids``, read in one batch (what a
        topology's page needs: the supervisors its workers run on, not every one)."""
        ids = sorted(set(supervisor_ids))
        paths = [self.paths.supervisor(sid) for sid in ids]
        return {sid: decode(SupervisorInfo, data, path)
                for sid, path, data in zip(ids, paths, self.storage.get_many(paths), strict=True)
                if data is not None}

    # -- storms (topology status) --------------------------------------------------------------
    def set_storm_base(self, base: StormBase) -> None:
        """Create or overwrite the topology's StormBase."""
        self.storage.set(self.paths.storm(base.topology_id), encode(base))
        self._written(self.paths.storm(base.topology_id))

    def storm_base(self, topology_id: str, callback: Callback | None = None) -> StormBase | None:
        """The topology's StormBase, or None; ``callback`` fires when it changes or is removed."""
        slot = None
        if callback is not None:
            slot = f"storm:{topology_id}"
            self._hooks.set_callback(slot, callback)
        result: StormBase | None = self._read(StormBase, self.paths.storm(topology_id), slot)
        return result

    def remove_storm_base(self, topology_id: str) -> None:
        """Delete the topology's StormBase (missing is fine)."""
        self.storage.delete(self.paths.storm(topology_id))
        self._written(self.paths.storm(topology_id))

    def storm_bases(self) -> dict[str, StormBase]:
        """topology id → StormBase for every known topology."""
        return self._read_all(StormBase, self.paths.storms())

    def active_storms(self) -> list[str]:
        """Sorted ids of every topology that has a StormBase (whatever its status)."""
        return self.storage.children(self.paths.storms())

    # -- assignments ---------------------------------------------------------------------------
    def set_assignment(self, assignment: Assignment) -> None:
        """Create or overwrite the topology's assignment."""
        self.storage.set(self.paths.assignment(assignment.topology_id), encode(assignment))
        self._written(self.paths.assignment(assignment.topology_id))

    def assignment(self, topology_id: str, callback: Callback | None = None) -> Assignment | None:
        """The topology's assignment, or None; ``callback`` fires when it changes or is removed."""
        slot = None
        if callback is not None:
            slot = f"assignment:{topology_id}"
            self._hooks.set_callback(slot, callback)
        result: Assignment | None = self._read(Assignment, self.paths.assignment(topology_id), slot)
        return result

    def remove_assignment(self, topology_id: str) -> None:
        """Delete the topology's assignment (missing is fine)."""
        self.storage.delete(self.paths.assignment(topology_id))
        self._written(self.paths.assignment(topology_id))

    def assignments(self, callback: Callback | None = None) -> dict[str, Assignment]:
        """topology id → assignment for every assigned topology.

        ``callback`` fires once at the next change: an assignment added, removed or rewritten.
        """
        slot = None
        if callback is not None:
            slot = "assignments"
            self._hooks.set_callback(slot, callback)
        return self._read_all(Assignment, self.paths.assignments(), slot)

    # -- worker heartbeats ---------------------------------------------------------------------
    def set_worker_heartbeat(self, heartbeat: WorkerHeartbeat) -> None:
        """Write one worker's heartbeat."""
        path = self.paths.workerbeat(heartbeat.topology_id, heartbeat.node, heartbeat.port)
        self.storage.set(path, encode(heartbeat))

    def worker_heartbeat(self, topology_id: str, node: str, port: int) -> WorkerHeartbeat | None:
        """One worker's latest heartbeat, or None."""
        result: WorkerHeartbeat | None = self._read(
            WorkerHeartbeat, self.paths.workerbeat(topology_id, node, port))
        return result

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        """(node, port) → latest heartbeat for every worker of the topology."""
        parent = self.paths.workerbeats(topology_id)
        beats: dict[tuple[str, int], WorkerHeartbeat] = {}
        for key, beat in self._read_all(WorkerHeartbeat, parent).items():
            try:
                beats[parse_worker_key(key)] = beat
            except ValueError as exc:
                raise MalformedStateError(f"{parent}/{key}", str(exc)) from exc
        return beats

    def heartbeats_of(self, topology_ids: list[str]) -> dict[str, dict[tuple[str, int], WorkerHeartbeat]]:
        """topology id → :meth:`worker_heartbeats` for each of ``topology_ids``, read in two
        batches (every heartbeat directory, then every heartbeat, each batch's requests sent at
        once): what Nimbus's monitor reads every round, in two round trips however many
        topologies and workers there are."""
        parents = [self.paths.workerbeats(tid) for tid in topology_ids]
        keys = [(tid, parent, child) for tid, parent, children
                in zip(topology_ids, parents, self.storage.children_many(parents), strict=True)
                for child in children]
        datas = self.storage.get_many([f"{parent}/{child}" for _, parent, child in keys])
        found: dict[str, dict[tuple[str, int], WorkerHeartbeat]] = {tid: {} for tid in topology_ids}
        for (tid, parent, child), data in zip(keys, datas, strict=True):
            if data is None:
                continue
            try:
                slot = parse_worker_key(child)
            except ValueError as exc:
                raise MalformedStateError(f"{parent}/{child}", str(exc)) from exc
            found[tid][slot] = decode(WorkerHeartbeat, data, f"{parent}/{child}")
        return found

    def remove_worker_heartbeat(self, topology_id: str, node: str, port: int) -> None:
        """Delete one worker's heartbeat (missing is fine)."""
        self.storage.delete(self.paths.workerbeat(topology_id, node, port))

    def heartbeat_topologies(self) -> list[str]:
        """Sorted ids of topologies that have a heartbeat directory."""
        return self.storage.children(self.paths.workerbeats_root())

    # -- errors --------------------------------------------------------------------------------
    def report_error(self, topology_id: str, error: ErrorInfo) -> None:
        """Record ``error`` under its component, keeping the newest :data:`MAX_ERRORS_PER_COMPONENT`."""
        parent = self.paths.component_errors(topology_id, error.component)
        self.storage.create(f"{parent}/e", encode(error), sequence=True)
        children = self.storage.children(parent)
        for old in children[:-MAX_ERRORS_PER_COMPONENT]:
            self.storage.delete(f"{parent}/{old}", recursive=False)

    def errors(self, topology_id: str, component: str) -> list[ErrorInfo]:
        """The component's recent errors, oldest first."""
        found = self._read_all(ErrorInfo, self.paths.component_errors(topology_id, component))
        return [found[k] for k in sorted(found)]

    def last_error(self, topology_id: str, component: str) -> ErrorInfo | None:
        """The component's newest error, or None."""
        errors = self.errors(topology_id, component)
        return errors[-1] if errors else None

    def all_errors(self, topology_id: str) -> dict[str, list[ErrorInfo]]:
        """component → its recent errors (oldest first), for components that reported any."""
        result = {}
        for segment in self.storage.children(self.paths.errors(topology_id)):
            component = decode_segment(segment)
            errors = self.errors(topology_id, component)
            if errors:
                result[component] = errors
        return result

    # -- spout checkpoints ---------------------------------------------------------------------
    def set_checkpoint(self, topology_id: str, spout: str, partition: str, value: Any) -> None:
        """Store a msgpack-serialisable checkpoint ``value`` for one spout partition."""
        self.storage.set(self.paths.checkpoint(topology_id, spout, partition), encode_value(value))

    def checkpoint(self, topology_id: str, spout: str, partition: str) -> Any:
        """The partition's checkpoint value, or None when there is none."""
        path = self.paths.checkpoint(topology_id, spout, partition)
        data = self.storage.get(path)
        return None if data is None else decode_value(data, path)

    def checkpoints(self, topology_id: str, spout: str) -> dict[str, Any]:
        """partition → checkpoint value for every partition of the spout."""
        parent = self.paths.spout_checkpoints(topology_id, spout)
        result = {}
        for segment in self.storage.children(parent):
            path = f"{parent}/{segment}"
            data = self.storage.get(path)
            if data is not None:
                result[decode_segment(segment)] = decode_value(data, path)
        return result

    # -- whole topologies ----------------------------------------------------------------------
    def topologies(self) -> list[str]:
        """Sorted ids of every topology with any state (status, assignment, heartbeats, errors),
        the directories listed in one batch."""
        ids: set[str] = set()
        for children in self.storage.children_many([
                self.paths.storms(), self.paths.assignments(), self.paths.workerbeats_root(),
                self.paths.errors_root(), self.paths.blobstore_root()]):
            ids.update(children)
        return sorted(ids)

    def mark_submitting(self, topology_id: str) -> None:
        """Record that ``topology_id`` is being submitted (before anything else of it is written)."""
        self.storage.ensure_path(self.paths.submitting(topology_id))

    def clear_submitting(self, topology_id: str) -> None:
        """Commit the submission of ``topology_id`` (its marker goes)."""
        self.storage.delete(self.paths.submitting(topology_id))

    def submitting(self) -> list[str]:
        """Sorted ids of the submissions begun and never committed."""
        return sorted(self.storage.children(self.paths.submitting_root()))

    def remove_topology(self, topology_id: str, *, keep_checkpoints: bool = False) -> None:
        """Remove every node of ``topology_id``: assignment, heartbeats, errors, checkpoints (unless
        ``keep_checkpoints``), transactional state, bundle replica nodes, its StormBase, and finally
        its uncommitted-submission marker if any."""
        checkpoints = self.paths.checkpoints(topology_id)
        for path in self.paths.topology_paths(topology_id):
            if keep_checkpoints and path == checkpoints:
                continue
            self.storage.delete(path)
            self._written(path, tree=True)
        self.storage.delete(self.paths.submitting(topology_id))  # last: an interrupted removal is redone

    def ensure_layout(self) -> None:
        """Create every top-level directory of the layout (idempotent)."""
        for path in self.paths.top_level():
            self.storage.ensure_path(path)
