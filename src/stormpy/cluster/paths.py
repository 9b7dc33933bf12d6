"""The whole ZooKeeper layout of stormpy (DESIGN.md §4), in one place.

::

    <root>/supervisors/<supervisor-id>                       ephemeral SupervisorInfo
    <root>/storms/<topology-id>                              StormBase
    <root>/assignments/<topology-id>                         Assignment
    <root>/workerbeats/<topology-id>/<node>-<port>           WorkerHeartbeat
    <root>/errors/<topology-id>/<component>/e<seq>           ErrorInfo (last few per component)
    <root>/nimbuses/<nimbus-id>                              ephemeral, one per Nimbus instance
    <root>/leader                                            leader election among Nimbus instances
    <root>/checkpoints/<topology-id>/<spout>/<partition>     spout checkpoint (shard/offset)
    <root>/transactional/<topology-id>/...                   transactional spout/committer state

``root`` defaults to ``/stormpy`` (config ``storm.zookeeper.root``). Identifiers chosen by stormpy
(topology, supervisor, node and nimbus ids) must be plain path segments: non-empty, no ``/``, not
``.`` or ``..``; anything else is a ValueError naming it. Names chosen by users (component, spout,
partition, transactional keys) are percent-encoded into one segment, as Storm does for component ids,
and :func:`decode_segment` reverses that.

Every function takes ``root`` as a keyword; :class:`ZkPaths` binds one root for convenience.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

__all__ = [
    "DEFAULT_ROOT",
    "ZkPaths",
    "assignment",
    "assignments",
    "checkpoint",
    "checkpoints",
    "checkpoints_root",
    "component_errors",
    "decode_segment",
    "encode_segment",
    "errors",
    "errors_root",
    "leader",
    "nimbus",
    "nimbuses",
    "normalize_root",
    "parse_worker_key",
    "spout_checkpoints",
    "storm",
    "storms",
    "supervisor",
    "supervisors",
    "topology_paths",
    "transactional",
    "transactional_root",
    "worker_key",
    "workerbeat",
    "workerbeats",
    "workerbeats_root",
]

DEFAULT_ROOT = "/stormpy"


def normalize_root(root: str) -> str:
    """``root`` as an absolute znode path without a trailing slash (``"/"`` stays ``"/"``)."""
    if not root.startswith("/"):
        raise ValueError(f"ZooKeeper root {root!r} must be an absolute path")
    trimmed = root.rstrip("/")
    return trimmed or "/"


def _join(root: str, *parts: str) -> str:
    base = normalize_root(root)
    return (base if base != "/" else "") + "/" + "/".join(parts)


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


# --- supervisors -------------------------------------------------------------------------------
def supervisors(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of the ephemeral supervisor nodes."""
    return _join(root, "supervisors")


def supervisor(supervisor_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One supervisor's ephemeral node."""
    return _join(root, "supervisors", _id(supervisor_id, "supervisor id"))


# --- storms (topology status) ------------------------------------------------------------------
def storms(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of the StormBase nodes."""
    return _join(root, "storms")


def storm(topology_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One topology's StormBase node."""
    return _join(root, "storms", _id(topology_id, "topology id"))


# --- assignments -------------------------------------------------------------------------------
def assignments(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of the assignment nodes."""
    return _join(root, "assignments")


def assignment(topology_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One topology's assignment node."""
    return _join(root, "assignments", _id(topology_id, "topology id"))


# --- worker heartbeats -------------------------------------------------------------------------
def workerbeats_root(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of every topology's heartbeat directory."""
    return _join(root, "workerbeats")


def workerbeats(topology_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One topology's heartbeat directory."""
    return _join(root, "workerbeats", _id(topology_id, "topology id"))


def workerbeat(topology_id: str, node: str, port: int, *, root: str = DEFAULT_ROOT) -> str:
    """One worker's heartbeat node."""
    return _join(root, "workerbeats", _id(topology_id, "topology id"), worker_key(node, port))


# --- errors ------------------------------------------------------------------------------------
def errors_root(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of every topology's error directory."""
    return _join(root, "errors")


def errors(topology_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One topology's error directory (one child per component)."""
    return _join(root, "errors", _id(topology_id, "topology id"))


def component_errors(topology_id: str, component: str, *, root: str = DEFAULT_ROOT) -> str:
    """One component's error directory; its children are sequential ``e<seq>`` nodes."""
    return _join(root, "errors", _id(topology_id, "topology id"), encode_segment(component))


# --- nimbus leadership -------------------------------------------------------------------------
def nimbuses(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of the ephemeral Nimbus instance nodes."""
    return _join(root, "nimbuses")


def nimbus(nimbus_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One Nimbus instance's ephemeral node."""
    return _join(root, "nimbuses", _id(nimbus_id, "nimbus id"))


def leader(*, root: str = DEFAULT_ROOT) -> str:
    """The leader-election node (used with kazoo's Election/Lock recipes)."""
    return _join(root, "leader")


# --- spout checkpoints -------------------------------------------------------------------------
def checkpoints_root(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of every topology's checkpoint directory."""
    return _join(root, "checkpoints")


def checkpoints(topology_id: str, *, root: str = DEFAULT_ROOT) -> str:
    """One topology's checkpoint directory."""
    return _join(root, "checkpoints", _id(topology_id, "topology id"))


def spout_checkpoints(topology_id: str, spout: str, *, root: str = DEFAULT_ROOT) -> str:
    """One spout's checkpoint directory (one child per partition)."""
    return _join(root, "checkpoints", _id(topology_id, "topology id"), encode_segment(spout))


def checkpoint(topology_id: str, spout: str, partition: str, *, root: str = DEFAULT_ROOT) -> str:
    """One spout partition's checkpoint node."""
    return _join(root, "checkpoints", _id(topology_id, "topology id"), encode_segment(spout),
                 encode_segment(str(partition)))


# --- transactional state -----------------------------------------------------------------------
def transactional_root(*, root: str = DEFAULT_ROOT) -> str:
    """Parent of every topology's transactional state."""
    return _join(root, "transactional")


def transactional(topology_id: str, *keys: str, root: str = DEFAULT_ROOT) -> str:
    """A topology's transactional directory, or a node below it named by ``keys`` (each encoded)."""
    return _join(root, "transactional", _id(topology_id, "topology id"), *(encode_segment(k) for k in keys))


def topology_paths(topology_id: str, *, root: str = DEFAULT_ROOT) -> list[str]:
    """Every subtree holding state of ``topology_id``, in the order a kill should remove them
    (assignment first, so supervisors stop its workers; status last)."""
    return [
        assignment(topology_id, root=root),
        workerbeats(topology_id, root=root),
        errors(topology_id, root=root),
        checkpoints(topology_id, root=root),
        transactional(topology_id, root=root),
        storm(topology_id, root=root),
    ]


@dataclass(frozen=True)
class ZkPaths:
    """The layout bound to one root: ``ZkPaths("/stormpy").assignment("wc-1-17")``."""

    root: str = DEFAULT_ROOT

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", normalize_root(self.root))

    def top_level(self) -> list[str]:
        """Every top-level directory of the layout (``leader`` excluded: recipes create it)."""
        r = self.root
        return [supervisors(root=r), storms(root=r), assignments(root=r), workerbeats_root(root=r),
                errors_root(root=r), nimbuses(root=r), checkpoints_root(root=r),
                transactional_root(root=r)]

    def supervisors(self) -> str:
        return supervisors(root=self.root)

    def supervisor(self, supervisor_id: str) -> str:
        return supervisor(supervisor_id, root=self.root)

    def storms(self) -> str:
        return storms(root=self.root)

    def storm(self, topology_id: str) -> str:
        return storm(topology_id, root=self.root)

    def assignments(self) -> str:
        return assignments(root=self.root)

    def assignment(self, topology_id: str) -> str:
        return assignment(topology_id, root=self.root)

    def workerbeats_root(self) -> str:
        return workerbeats_root(root=self.root)

    def workerbeats(self, topology_id: str) -> str:
        return workerbeats(topology_id, root=self.root)

    def workerbeat(self, topology_id: str, node: str, port: int) -> str:
        return workerbeat(topology_id, node, port, root=self.root)

    def errors_root(self) -> str:
        return errors_root(root=self.root)

    def errors(self, topology_id: str) -> str:
        return errors(topology_id, root=self.root)

    def component_errors(self, topology_id: str, component: str) -> str:
        return component_errors(topology_id, component, root=self.root)

    def nimbuses(self) -> str:
        return nimbuses(root=self.root)

    def nimbus(self, nimbus_id: str) -> str:
        return nimbus(nimbus_id, root=self.root)

    def leader(self) -> str:
        return leader(root=self.root)

    def checkpoints_root(self) -> str:
        return checkpoints_root(root=self.root)

    def checkpoints(self, topology_id: str) -> str:
        return checkpoints(topology_id, root=self.root)

    def spout_checkpoints(self, topology_id: str, spout: str) -> str:
        return spout_checkpoints(topology_id, spout, root=self.root)

    def checkpoint(self, topology_id: str, spout: str, partition: str) -> str:
        return checkpoint(topology_id, spout, partition, root=self.root)

    def transactional_root(self) -> str:
        return transactional_root(root=self.root)

    def transactional(self, topology_id: str, *keys: str) -> str:
        return transactional(topology_id, *keys, root=self.root)

    def topology_paths(self, topology_id: str) -> list[str]:
        return topology_paths(topology_id, root=self.root)
