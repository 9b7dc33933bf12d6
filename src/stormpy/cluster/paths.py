"""The whole ZooKeeper layout of stormpy, in one place.

::

    <root>/supervisors/<supervisor-id>                       ephemeral SupervisorInfo
    <root>/storms/<topology-id>                              StormBase
    <root>/assignments/<topology-id>                         Assignment
    <root>/workerbeats/<topology-id>/<node>-<port>           WorkerHeartbeat
    <root>/errors/<topology-id>/<component>/e<seq>           ErrorInfo (last few per component)
    <root>/nimbuses/<nimbus-id>                              ephemeral, one per Nimbus instance
    <root>/nimbuses/leader/<lock-node>                       leader election (kazoo Lock recipe)
    <root>/blobstore/<topology-id>/<nimbus-id>               ephemeral: that Nimbus holds the bundle
    <root>/blobstore-wanted/<topology-id>                    the leader lacks this bundle: a
                                                             supervisor holding it sends it back
    <root>/submitting/<topology-id>                          a submission not yet committed
    <root>/logconfigs/<topology-id>                          LogConfig: run-time logger levels
                                                             (``stormpy set-log-level``)
    <root>/workercontrol/<topology-id>/<node>-<port>/r<seq>  ControlRequest to one worker
                                                             (dumps, profiles), answered in place
    <root>/checkpoints/<topology-id>/<key>/...               a topology's checkpoints area
                                                             (``context.state_store()``: spout
                                                             positions, <spout>/<partition>)
    <root>/checkpoints/<connector>:<name>/<key>/...          a connector's own state, kept across
                                                             topologies (e.g. kinesis:<config-name>)
    <root>/transactional/<topology-id>/<key>/...             a topology's transactional area
                                                             (``context.state_store("transactional")``)
    <root>/transactional/tx:<transactional-id>/...           a transactional topology's coordinator
                                                             and emitter state, kept across
                                                             topologies (the default; with
                                                             ``transactional.zookeeper.root`` set it
                                                             is ``<that root>/<transactional-id>``
                                                             on the transactional servers instead)

``root`` defaults to ``/stormpy`` (config ``storm.zookeeper.root``). Identifiers chosen by stormpy
(topology, supervisor, node and nimbus ids) must be plain path segments: non-empty, no ``/``, not
``.`` or ``..``; anything else is a ValueError naming it. Names chosen by users (component, spout,
partition, transactional keys) are percent-encoded into one segment, as Storm does for component ids,
and :func:`decode_segment` reverses that.

State kept by a name rather than by topology id (it outlives a topology: a Kinesis spout's shard
checkpoints by config name, a transactional topology's state by transactional id) sits beside the
topologies' directories of its area in an ``<owner>:<name>`` segment (:meth:`ZkPaths.named_state`).
Topology ids never contain ``:`` (Nimbus's topology names are ``[A-Za-z0-9][A-Za-z0-9_.-]*``), so
killing a topology, which removes ``checkpoints/<topology-id>`` and
``transactional/<topology-id>``, can never remove named state, whatever its name.

:class:`ZkPaths` is the one way to name a path: it binds a root and names every node of the layout
(``ZkPaths("/stormpy").assignment("wc-1-17")``; :attr:`ClusterState.paths
<stormpy.cluster.state.ClusterState.paths>` is the one of a cluster). The module functions only
handle single segments (:func:`encode_segment`, :func:`worker_key` and their inverses).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

__all__ = [
    "DEFAULT_ROOT",
    "ZkPaths",
    "decode_segment",
    "encode_segment",
    "normalize_root",
    "parse_worker_key",
    "worker_key",
]

DEFAULT_ROOT = "/stormpy"


def normalize_root(root: str) -> str:
    """``root`` as an absolute znode path without a trailing slash (``"/"`` stays ``"/"``)."""
    if not root.startswith("/"):
        raise ValueError(f"ZooKeeper root {root!r} must be an absolute path")
    trimmed = root.rstrip("/")
    return trimmed or "/"


def _id(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or "/" in value or value in (".", "..") or "\x00" in value:
        raise ValueError(f"{what} {value!r} is not a valid ZooKeeper path segment")
    return value


def encode_segment(name: str) -> str:
    """Percent-encode a user-chosen name into one safe znode segment (reversible)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name {name!r} must be a non-empty string")
    encoded = quote(name, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def decode_segment(segment: str) -> str:
    """Reverse :func:`encode_segment`."""
    return unquote(segment)


def worker_key(node: str, port: int) -> str:
    """The ``<node>-<port>`` segment naming one worker slot."""
    return f"{_id(node, 'node id')}-{int(port)}"


def parse_worker_key(key: str) -> tuple[str, int]:
    """Split a ``<node>-<port>`` segment (node ids may themselves contain ``-``)."""
    node, sep, port = key.rpartition("-")
    if not sep or not node or not port.isdigit():
        raise ValueError(f"worker key {key!r} is not of the form <node>-<port>")
    return node, int(port)


@dataclass(frozen=True)
class ZkPaths:
    """The layout bound to one root: ``ZkPaths("/stormpy").assignment("wc-1-17")``.

    ``root`` is normalised (absolute, no trailing slash); a relative root is a ValueError.
    """

    root: str = DEFAULT_ROOT

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", normalize_root(self.root))

    def _join(self, *parts: str) -> str:
        return (self.root if self.root != "/" else "") + "/" + "/".join(parts)

    def top_level(self) -> list[str]:
        """Every top-level directory of the layout."""
        return [self.supervisors(), self.storms(), self.assignments(), self.workerbeats_root(),
                self.errors_root(), self.nimbuses(), self.checkpoints_root(), self.transactional_root(),
                self.blobstore_root(), self.bundle_wanted_root(), self.submitting_root(),
                self.logconfigs_root(), self.workercontrol_root()]

    # --- supervisors ---------------------------------------------------------------------------
    def supervisors(self) -> str:
        """Parent of the ephemeral supervisor nodes."""
        return self._join("supervisors")

    def supervisor(self, supervisor_id: str) -> str:
        """One supervisor's ephemeral node."""
        return self._join("supervisors", _id(supervisor_id, "supervisor id"))

    # --- storms (topology status) --------------------------------------------------------------
    def storms(self) -> str:
        """Parent of the StormBase nodes."""
        return self._join("storms")

    def storm(self, topology_id: str) -> str:
        """One topology's StormBase node."""
        return self._join("storms", _id(topology_id, "topology id"))

    # --- assignments ---------------------------------------------------------------------------
    def assignments(self) -> str:
        """Parent of the assignment nodes."""
        return self._join("assignments")

    def assignment(self, topology_id: str) -> str:
        """One topology's assignment node."""
        return self._join("assignments", _id(topology_id, "topology id"))

    # --- worker heartbeats ---------------------------------------------------------------------
    def workerbeats_root(self) -> str:
        """Parent of every topology's heartbeat directory."""
        return self._join("workerbeats")

    def workerbeats(self, topology_id: str) -> str:
        """One topology's heartbeat directory."""
        return self._join("workerbeats", _id(topology_id, "topology id"))

    def workerbeat(self, topology_id: str, node: str, port: int) -> str:
        """One worker's heartbeat node."""
        return self._join("workerbeats", _id(topology_id, "topology id"), worker_key(node, port))

    # --- errors --------------------------------------------------------------------------------
    def errors_root(self) -> str:
        """Parent of every topology's error directory."""
        return self._join("errors")

    def errors(self, topology_id: str) -> str:
        """One topology's error directory (one child per component)."""
        return self._join("errors", _id(topology_id, "topology id"))

    def component_errors(self, topology_id: str, component: str) -> str:
        """One component's error directory; its children are sequential ``e<seq>`` nodes."""
        return self._join("errors", _id(topology_id, "topology id"), encode_segment(component))

    # --- nimbus instances ----------------------------------------------------------------------
    def nimbuses(self) -> str:
        """Parent of the ephemeral Nimbus instance nodes."""
        return self._join("nimbuses")

    def nimbus(self, nimbus_id: str) -> str:
        """One Nimbus instance's ephemeral node."""
        return self._join("nimbuses", _id(nimbus_id, "nimbus id"))

    def nimbus_leader(self) -> str:
        """The leader-election lock of the Nimbus hosts (kazoo Lock recipe; its contenders are the
        children, each holding its Nimbus's ``host:port``). Nimbus ids are never ``leader``."""
        return self._join("nimbuses", "leader")

    # --- bundle replicas -----------------------------------------------------------------------
    def blobstore_root(self) -> str:
        """Parent of every topology's replica directory."""
        return self._join("blobstore")

    def blobstore(self, topology_id: str) -> str:
        """One topology's replica directory: one ephemeral child per Nimbus holding its bundle."""
        return self._join("blobstore", _id(topology_id, "topology id"))

    def replica(self, topology_id: str, nimbus_id: str) -> str:
        """The ephemeral node saying Nimbus ``nimbus_id`` holds the bundle (data: its sha256)."""
        return self._join("blobstore", _id(topology_id, "topology id"), _id(nimbus_id, "nimbus id"))

    # --- submissions in flight -----------------------------------------------------------------
    def bundle_wanted_root(self) -> str:
        """Parent of the requests of a leader that holds no copy of a topology's bundle."""
        return self._join("blobstore-wanted")

    def bundle_wanted(self, topology_id: str) -> str:
        """The leader lacks ``topology_id``'s bundle and no Nimbus holds one: a supervisor that
        has the topology's code sends it back (``restore_bundle``); removed once restored."""
        return self._join("blobstore-wanted", _id(topology_id, "topology id"))

    def submitting_root(self) -> str:
        """Parent of the markers of submissions not yet committed."""
        return self._join("submitting")

    def submitting(self, topology_id: str) -> str:
        """Marker written before a submission's first write and removed when it is committed; a
        Nimbus taking over as leader rolls back every topology still marked."""
        return self._join("submitting", _id(topology_id, "topology id"))

    # --- run-time operations on workers ------------------------------------------------------
    def logconfigs_root(self) -> str:
        """Parent of every topology's log-level document."""
        return self._join("logconfigs")

    def logconfig(self, topology_id: str) -> str:
        """One topology's LogConfig (the logger levels its workers apply at run time)."""
        return self._join("logconfigs", _id(topology_id, "topology id"))

    def workercontrol_root(self) -> str:
        """Parent of every topology's worker-control directory."""
        return self._join("workercontrol")

    def workercontrol(self, topology_id: str) -> str:
        """One topology's worker-control directory (one child per worker)."""
        return self._join("workercontrol", _id(topology_id, "topology id"))

    def worker_requests(self, topology_id: str, node: str, port: int) -> str:
        """One worker's request directory: sequential ``r<seq>`` ControlRequest nodes."""
        return self._join("workercontrol", _id(topology_id, "topology id"), worker_key(node, port))

    # --- spout checkpoints ---------------------------------------------------------------------
    def checkpoints_root(self) -> str:
        """Parent of every topology's checkpoint directory."""
        return self._join("checkpoints")

    def checkpoints(self, topology_id: str) -> str:
        """One topology's checkpoint directory."""
        return self._join("checkpoints", _id(topology_id, "topology id"))

    def spout_checkpoints(self, topology_id: str, spout: str) -> str:
        """One spout's checkpoint directory (one child per partition)."""
        return self._join("checkpoints", _id(topology_id, "topology id"), encode_segment(spout))

    def checkpoint(self, topology_id: str, spout: str, partition: str) -> str:
        """One spout partition's checkpoint node."""
        return self._join("checkpoints", _id(topology_id, "topology id"), encode_segment(spout),
                          encode_segment(str(partition)))

    def connector_checkpoints(self, connector: str, name: str, *keys: str) -> str:
        """A connector's own state directory ``checkpoints/<connector>:<name>``, or a node below it
        named by ``keys`` (``name`` and each key encoded). ``connector`` is a plain lowercase word
        (ValueError otherwise); the ``:`` keeps the segment apart from every topology id."""
        return self.named_state("checkpoints", connector, name, *keys)

    def named_state(self, area: str, owner: str, name: str, *keys: str) -> str:
        """State kept across topologies: ``<area>/<owner>:<name>``, or a node below it named by
        ``keys`` (``name`` and each key encoded). ``area`` is ``checkpoints`` or
        ``transactional``; ``owner`` a plain lowercase word (``kinesis``, ``tx``); ValueError
        otherwise. The ``:`` keeps the segment apart from every topology id."""
        if area not in ("checkpoints", "transactional"):
            raise ValueError(f"state area {area!r} must be 'checkpoints' or 'transactional'")
        if not isinstance(owner, str) or not owner.isalpha() or not owner.islower():
            raise ValueError(f"connector {owner!r} must be a lowercase word (e.g. 'kinesis')")
        return self._join(area, f"{owner}:{encode_segment(name)}",
                          *(encode_segment(str(k)) for k in keys))

    # --- transactional state -------------------------------------------------------------------
    def transactional_root(self) -> str:
        """Parent of every topology's transactional area and of the transactional ids' state
        (``tx:<transactional-id>``, :meth:`named_state`)."""
        return self._join("transactional")

    def transactional(self, topology_id: str, *keys: str) -> str:
        """A topology's transactional directory, or a node below it named by ``keys`` (each encoded)."""
        return self._join("transactional", _id(topology_id, "topology id"),
                          *(encode_segment(k) for k in keys))

    def topology_paths(self, topology_id: str) -> list[str]:
        """Every subtree holding state of ``topology_id``, in the order a kill should remove them
        (assignment first, so supervisors stop its workers; status last)."""
        return [self.assignment(topology_id), self.workerbeats(topology_id), self.errors(topology_id),
                self.checkpoints(topology_id), self.transactional(topology_id), self.blobstore(topology_id),
                self.bundle_wanted(topology_id), self.logconfig(topology_id),
                self.workercontrol(topology_id), self.storm(topology_id)]
