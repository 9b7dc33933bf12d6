"""Durable small state for components: the :class:`StateStore` protocol, its value encoding and the
in-memory implementation for plain local runs.

A running component reaches its topology's store with ``context.state_store(area)``; ``area`` is
:data:`CHECKPOINTS` (spout positions: ``<spout>/<partition>``) or :data:`TRANSACTIONAL`
(transactional coordinators and committers). On a cluster, and in ``LocalCluster`` when ZooKeeper
is configured, the store is ZooKeeper (``/stormpy/<area>/<topology-id>/...``,
:mod:`stormpy.cluster.statestore`); otherwise it is memory (:class:`MemoryStateBackend`), which
says so in the log when a component first asks for it. State lives as long as the topology id:
killing the topology removes it.

Contract of every :class:`StateStore`:

* Keys are paths of non-empty segments separated by ``/`` (``"spout/shard-0001"``); a segment may
  hold any other character. A malformed key raises :class:`StateKeyError` naming it.
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

import logging
import threading
from typing import Any, Protocol

import msgpack

__all__ = [
    "AREAS", "CHECKPOINTS", "MAX_VALUE_BYTES", "TRANSACTIONAL", "CorruptStateError",
    "MemoryStateBackend", "MemoryStateStore", "StateBackend", "StateKeyError", "StateStore",
    "StateStoreError", "StateUnavailableError", "StateValueError", "check_area", "decode_state",
    "encode_state", "key_segments",
]

log = logging.getLogger("stormpy.state")

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

    def drop(self, topology_id: str) -> None:
        """Remove every area of ``topology_id`` (the topology was killed)."""


def check_area(area: str) -> str:
    if area not in AREAS:
        raise ValueError(f"unknown state area {area!r} (areas: {', '.join(AREAS)})")
    return area


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


class MemoryStateStore:
    """One (area, topology) of a :class:`MemoryStateBackend`: a tree of nodes, like ZooKeeper's."""

    def __init__(self, backend: MemoryStateBackend, area: str, topology_id: str) -> None:
        self._backend = backend
        self._prefix = (area, topology_id)
        self.location = f"memory:{area}/{topology_id}"
        self.timeout_secs = backend.timeout_secs

    def _path(self, segments: tuple[str, ...]) -> str:
        return "/".join((self.location, *segments))

    def get(self, key: str, default: Any = None) -> Any:
        segments = key_segments(self.location, key)
        with self._backend.locked(self._path(segments)):
            data = self._backend.nodes.get(self._prefix + segments)
        if not data:  # missing, or a parent without a value of its own
            return default
        return decode_state(self._path(segments), data)

    def put(self, key: str, value: Any) -> None:
        segments = key_segments(self.location, key)
        data = encode_state(self._path(segments), value)
        nodes = self._backend.nodes
        with self._backend.locked(self._path(segments)):
            for i in range(1, len(segments)):
                nodes.setdefault(self._prefix + segments[:i], b"")
            nodes[self._prefix + segments] = data

    def delete(self, key: str) -> bool:
        segments = key_segments(self.location, key)
        with self._backend.locked(self._path(segments)):
            return self._backend.remove(self._prefix + segments)

    def children(self, key: str = "") -> list[str]:
        segments = key_segments(self.location, key, allow_root=True)
        node = self._prefix + segments
        with self._backend.locked(self._path(segments)):
            return sorted({k[len(node)] for k in self._backend.nodes
                           if len(k) > len(node) and k[:len(node)] == node})


class MemoryStateBackend:
    """State in this process's memory, lost when it exits: for plain local runs.

    The first time a component asks for a store the log says that its state is not durable and how
    to make it so (configure ZooKeeper). ``timeout_secs`` bounds the wait for the internal lock.
    """

    description = "memory"

    def __init__(self, timeout_secs: float = 5.0) -> None:
        self.timeout_secs = timeout_secs
        self.nodes: dict[tuple[str, ...], bytes] = {}
        self._lock = threading.Lock()
        self._stores: dict[tuple[str, str], MemoryStateStore] = {}

    def locked(self, path: str) -> _Held:
        """The backend's lock, held within ``timeout_secs`` or StateUnavailableError on ``path``."""
        return _Held(self._lock, self.timeout_secs, path)

    def store(self, area: str, topology_id: str) -> MemoryStateStore:
        key = (check_area(area), topology_id)
        with self.locked(f"memory:{area}/{topology_id}"):
            found = self._stores.get(key)
            if found is None:
                found = self._stores[key] = MemoryStateStore(self, area, topology_id)
                log.warning("topology %s: %s state is kept in memory only and lost when this "
                            "process exits (configure storm.zookeeper.servers to keep it in "
                            "ZooKeeper)", topology_id, area)
        return found

    def remove(self, node: tuple[str, ...]) -> bool:
        """Remove ``node`` and its descendants (lock held by the caller)."""
        doomed = [k for k in self.nodes if k[:len(node)] == node]
        for k in doomed:
            del self.nodes[k]
        return bool(doomed)

    def drop(self, topology_id: str) -> None:
        with self.locked(f"memory:*/{topology_id}"):
            for area in AREAS:
                self.remove((area, topology_id))


class _Held:
    """``with`` block holding a lock acquired within a time bound."""

    def __init__(self, lock: threading.Lock, timeout_secs: float, path: str) -> None:
        self._lock = lock
        self._timeout = timeout_secs
        self._path = path

    def __enter__(self) -> None:
        if not self._lock.acquire(timeout=self._timeout):
            raise StateUnavailableError(self._path, f"store busy for {self._timeout:g} s")

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
