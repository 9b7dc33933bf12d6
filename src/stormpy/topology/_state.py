"""Durable small state for components: the contract of the state seam (the :class:`StateStore`
and :class:`StateBackend` protocols, their errors and the value encoding). The implementations
(memory, SQLite, ZooKeeper) are the state layer, :mod:`stormpy.state`.

A running component reaches its topology's store with ``context.state_store(area)``; ``area`` is
:data:`CHECKPOINTS` (spout positions: ``<spout>/<partition>``) or :data:`TRANSACTIONAL`
(transactional coordinators and committers). State kept across topologies by a name of its own
(a transactional id, a connector's config name) is ``context.state_backend.named_store(area,
owner, name)``. On a cluster, and in ``LocalCluster`` when ZooKeeper is configured, the backend is
ZooKeeper (``<root>/<area>/<topology-id>/...`` and ``<root>/<area>/<owner>:<name>/...``,
:mod:`stormpy.state._zookeeper`); otherwise it is the LocalCluster's own memory
(:mod:`stormpy.state._memory`), which says so in the log when a component first asks for it.
Per-topology state lives as long as the topology id: killing the topology removes it.

Contract of every :class:`StateStore`:

* Keys are paths of non-empty segments separated by ``/`` (``"spout/shard-0001"``); a segment may
  hold any other character; ``""`` is the store's own node (its top level). A malformed key raises
  :class:`StateKeyError` naming it.
* Values are what msgpack carries (None, bool, int, float, str, bytes, lists, maps), at most
  :data:`MAX_VALUE_BYTES` encoded; tuples come back as lists. Anything else raises
  :class:`StateValueError` naming the path. The store keeps a copy.
* ``get(key, default)`` returns the value or ``default`` (also for a key that only has children);
  ``put`` creates the key and any missing parents; ``delete`` removes the key and everything below
  it and says whether it existed; ``children(key)`` lists the direct children's names, sorted.
* Every call returns or raises within the store's bound (``timeout_secs``); a backing service
  that cannot be reached in time raises :class:`StateUnavailableError`, and a stored value that
  cannot be decoded raises :class:`CorruptStateError`; both name the path.
* Stores are thread-safe (background jobs may use them).
"""

from __future__ import annotations

from typing import Any, Protocol

import msgpack

__all__ = [
    "AREAS", "CHECKPOINTS", "MAX_VALUE_BYTES", "TRANSACTIONAL", "CorruptStateError",
    "StateBackend", "StateKeyError", "StateStore", "StateStoreError", "StateUnavailableError",
    "StateValueError", "check_area", "check_owner", "decode_state", "encode_state",
    "key_segments",
]

#: Spout checkpoints (``<spout>/<partition>`` → position).
CHECKPOINTS = "checkpoints"
#: Transactional coordinator and committer state.
TRANSACTIONAL = "transactional"
AREAS = (CHECKPOINTS, TRANSACTIONAL)

#: Largest encoded value (ZooKeeper refuses nodes near 1 MiB; state here is meant to be small).
MAX_VALUE_BYTES = 512 * 1024
#: Schema version of the stored document ``{"v": 1, "value": ...}``.
STATE_VERSION = 1


class StateStoreError(RuntimeError):
    """A state-store call failed; ``path`` names the key's location."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"state {path}: {problem}")
        self.path = path
        self.problem = problem


class StateKeyError(StateStoreError, ValueError):
    """The key is not a path of non-empty segments."""


class StateValueError(StateStoreError, ValueError):
    """The value cannot be stored (not msgpack-serialisable, or too large)."""


class CorruptStateError(StateStoreError):
    """The stored bytes are not a state document this version can read."""


class StateUnavailableError(StateStoreError):
    """The backing service could not be reached within the store's time bound."""


class StateStore(Protocol):
    """Small msgpack values under key paths, for one (area, topology); see the module contract."""

    #: Where the store keeps its keys, for messages (``/stormpy/checkpoints/wc-1-17``).
    location: str
    #: Longest time any call may take.
    timeout_secs: float

    def get(self, key: str, default: Any = None) -> Any:
        """The value at ``key``, or ``default`` when there is none."""

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` at ``key`` (creating missing parents)."""

    def delete(self, key: str) -> bool:
        """Remove ``key`` and everything below it; False when it did not exist."""

    def children(self, key: str = "") -> list[str]:
        """Sorted names of ``key``'s direct children (``""``: the store's top level)."""


class StateBackend(Protocol):
    """Where a worker's (or a LocalCluster's) components keep state; one per process or cluster."""

    #: Human-readable place (``"memory"``, ``"ZooKeeper 127.0.0.1:2181/stormpy"``).
    description: str

    def store(self, area: str, topology_id: str) -> StateStore:
        """The store of ``topology_id``'s ``area`` (one of :data:`AREAS`); ValueError otherwise."""

    def named_store(self, area: str, owner: str, name: str) -> StateStore:
        """The store ``name`` of ``owner`` (a lowercase word: ``"tx"``, ``"kinesis"``) in ``area``,
        kept across topologies (no kill removes it): a transactional id's coordinator state, a
        connector's checkpoints by its config name."""

    @property
    def memory(self) -> StateBackend:
        """The volatile backend of the same owner (the LocalCluster, the worker process): state
        that users asked to keep in memory (``topology.state.provider: memory``,
        ``transactional.store: memory``). A memory backend is its own."""

    def drop(self, topology_id: str) -> None:
        """Remove every area of ``topology_id`` (the topology was killed)."""


def check_area(area: str) -> str:
    if area not in AREAS:
        raise ValueError(f"unknown state area {area!r} (areas: {', '.join(AREAS)})")
    return area


def check_owner(owner: str) -> str:
    """``owner`` of a named store: a plain lowercase word (ValueError otherwise), so the
    ``<owner>:<name>`` segment never equals a topology id (ids have no ``:``)."""
    if not isinstance(owner, str) or not owner.isalpha() or not owner.islower():
        raise ValueError(f"state owner {owner!r} must be a lowercase word (e.g. 'tx', 'kinesis')")
    return owner


def key_segments(location: str, key: str, *, allow_root: bool = False) -> tuple[str, ...]:
    """``key`` split into its segments; StateKeyError naming it when malformed (``""`` is the
    top level, allowed only with ``allow_root``)."""
    if not isinstance(key, str):
        raise StateKeyError(f"{location}/{key!r}", "key must be a string path like 'spout/0'")
    if key == "" and allow_root:
        return ()
    segments = tuple(key.split("/"))
    if not all(segments):
        raise StateKeyError(f"{location}/{key}", "key must be '/'-separated non-empty segments")
    return segments


def encode_state(path: str, value: Any) -> bytes:
    """The stored document for ``value``; StateValueError naming ``path`` when it cannot be."""
    try:
        data: bytes = msgpack.packb({"v": STATE_VERSION, "value": value}, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise StateValueError(path, f"value must be msgpack-serialisable plain data: {exc}") \
            from None
    if len(data) > MAX_VALUE_BYTES:
        raise StateValueError(path, f"value is {len(data)} bytes encoded; the limit is "
                                    f"{MAX_VALUE_BYTES} (keep large data elsewhere)")
    return data


def decode_state(path: str, data: bytes) -> Any:
    """The value of a stored document; CorruptStateError naming ``path`` when it is not one."""
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # noqa: BLE001 - any undecodable node is corrupt
        raise CorruptStateError(path, f"not a msgpack document ({type(exc).__name__}: {exc})") \
            from None
    if not isinstance(doc, dict) or "value" not in doc or not isinstance(doc.get("v"), int):
        raise CorruptStateError(path, "not a state document ({'v': version, 'value': ...})")
    if doc["v"] > STATE_VERSION:
        raise CorruptStateError(path, f"schema version {doc['v']} is newer than this stormpy "
                                      f"reads ({STATE_VERSION})")
    return doc["value"]
