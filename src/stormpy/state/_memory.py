"""The state layer's memory backend: a tree of nodes, like ZooKeeper's, in this process.

One :class:`MemoryBackend` per owner: a ``LocalCluster`` instance (so every new LocalCluster starts
with fresh state and two in one process share nothing), a worker process (the volatile part of
its ZooKeeper backend, ``ZkBackend.memory``), or a test. State is lost with its owner. The first
time a component asks for a store of a topology the log says that the state is not durable and
how to make it so (the caller says how: the runtime's state through ZooKeeper, stateful bolts'
through ``topology.state.provider``).

Values are stored encoded (:func:`~stormpy.topology._state.encode_state`), so a store keeps a copy
and refuses what ZooKeeper would refuse. Every call holds the backend's lock, acquired within
``timeout_secs`` or :class:`~stormpy.topology._state.StateUnavailableError`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stormpy.state._base import (
    MAX_UPDATE_ROUNDS,
    Store,
    check_segments,
    root_or_segments,
    update_rounds,
)
from stormpy.topology._state import (
    AREAS,
    StateUnavailableError,
    check_area,
    check_owner,
    decode_state,
    encode_state,
)

__all__ = ["MemoryBackend", "MemoryStore"]

log = logging.getLogger("stormpy.state")

#: what :meth:`MemoryBackend.store` logs for a topology's area (``%s``) by default: the runtime's
#: state (spout positions, coordinators), which a conf naming ZooKeeper keeps there
ZOOKEEPER_NOTE = ("%s state is kept in memory only and lost when this cluster or process ends "
                  "(configure storm.zookeeper.servers to keep it in ZooKeeper)")

Node = tuple[str, ...]


class MemoryStore(Store):
    """The subtree below ``node`` of a :class:`MemoryBackend`; see :mod:`stormpy.state._base`."""

    def __init__(self, backend: MemoryBackend, node: Node, location: str) -> None:
        self._backend = backend
        self._node = node
        self.location = location
        self.timeout_secs = backend.timeout_secs

    def _key(self, key: str) -> Node:
        return self._node + root_or_segments(self.location, key)

    def get(self, key: str, default: Any = None) -> Any:
        node = self._key(key)
        with self._backend.locked(self.where(key)):
            data = self._backend.nodes.get(node)
        if not data:  # missing, or a parent without a value of its own
            return default
        return decode_state(self.where(key), data)

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def put_many(self, items: Mapping[str, Any]) -> None:
        encoded = [(self._key(k), encode_state(self.where(k), v)) for k, v in items.items()]
        with self._backend.locked(self.location):
            for node, data in encoded:
                self._backend.write(node, data)
        self._backend.notify_due()

    def delete(self, key: str) -> bool:
        node = self._key(key)
        with self._backend.locked(self.where(key)):
            existed = self._backend.remove(node)
        self._backend.notify_due()
        return existed

    def delete_many(self, keys: Iterable[str]) -> None:
        nodes = [self._key(k) for k in keys]
        with self._backend.locked(self.location):
            for node in nodes:
                self._backend.remove(node)
        self._backend.notify_due()

    def children(self, key: str = "") -> list[str]:
        node = self._key(key)
        with self._backend.locked(self.where(key)):
            return self._backend.children(node)

    def update(self, key: str, fn: Callable[[Any], Any]) -> bool:
        node, path = self._key(key), self.where(key)
        for _round in update_rounds():
            with self._backend.locked(path):
                data = self._backend.nodes.get(node)
            old = decode_state(path, data) if data else None
            new = fn(old)
            if new is None:
                return False
            encoded = encode_state(path, new)
            with self._backend.locked(path):
                written = self._backend.nodes.get(node) == data
                if written:
                    self._backend.write(node, encoded)
            if written:
                self._backend.notify_due()
                return True
        raise StateUnavailableError(path, f"changed by others {MAX_UPDATE_ROUNDS} times in a row")

    def sub(self, *segments: str) -> MemoryStore:
        check_segments(self.location, segments)
        return MemoryStore(self._backend, self._node + segments,
                           "/".join((self.location, *segments)))

    def watch(self, key: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        node, path = self._key(key), self.where(key)
        cancelled = threading.Event()

        def changed(data: bytes | None) -> None:
            if not cancelled.is_set():
                callback(decode_state(path, data) if data else None)

        def cancel() -> None:
            cancelled.set()
            with self._backend.locked(path):
                watchers = self._backend.watchers[node]  # registered below, never dropped
                if changed in watchers:
                    watchers.remove(changed)

        with self._backend.locked(path):
            self._backend.watchers.setdefault(node, []).append(changed)
            data = self._backend.nodes.get(node)
        changed(data)
        return cancel


class MemoryBackend:
    """State in this process's memory, owned by whoever made it (see the module doc).

    ``timeout_secs`` bounds the wait for the internal lock.
    """

    description = "memory"

    def __init__(self, timeout_secs: float = 5.0) -> None:
        self.timeout_secs = timeout_secs
        self.nodes: dict[Node, bytes] = {}
        self.watchers: dict[Node, list[Callable[[bytes | None], None]]] = {}
        self._lock = threading.Lock()
        self._stores: dict[tuple[str, str], MemoryStore] = {}
        #: (area, topology id, note) warned about (see :meth:`store`)
        self._noted: set[tuple[str, str, str]] = set()
        self._due: list[tuple[Callable[[bytes | None], None], bytes | None]] = []

    @property
    def memory(self) -> MemoryBackend:
        """A memory backend is its own volatile backend."""
        return self

    def locked(self, path: str) -> _Held:
        """The backend's lock, held within ``timeout_secs`` or StateUnavailableError on ``path``."""
        return _Held(self._lock, self.timeout_secs, path)

    def store(self, area: str, topology_id: str, *, note: str = ZOOKEEPER_NOTE) -> MemoryStore:
        """The store of ``topology_id``'s ``area``; the first call with each ``note`` (what the
        state is and how to keep it, after ``topology <id>: ``) logs it as a warning."""
        key = (check_area(area), topology_id)
        with self.locked(f"memory:{area}/{topology_id}"):
            found = self._stores.get(key)
            if found is None:
                found = self._stores[key] = MemoryStore(self, key, f"memory:{area}/{topology_id}")
            noted = (area, topology_id, note)
            if noted not in self._noted:
                self._noted.add(noted)
                log.warning("topology %s: " + note, topology_id, area)
        return found

    def named_store(self, area: str, owner: str, name: str) -> MemoryStore:
        segment = f"{check_owner(owner)}:{name}"
        return MemoryStore(self, (check_area(area), segment), f"memory:{area}/{segment}")

    def at(self, *segments: str) -> MemoryStore:
        """A store at any node of this backend (tests, stand-alone uses)."""
        return MemoryStore(self, segments, "memory:" + "/".join(segments))

    def drop(self, topology_id: str) -> None:
        with self.locked(f"memory:*/{topology_id}"):
            for area in AREAS:
                self.remove((area, topology_id))
        self.notify_due()

    def notify_due(self) -> None:
        """Call the watchers of the changes made so far (outside the lock: they may use the
        store)."""
        with self.locked("memory:watchers"):
            due, self._due = self._due, []
        for callback, data in due:
            try:
                callback(data)
            except Exception:  # noqa: BLE001 - a watcher's failure is its own
                log.exception("a state watch callback failed")

    # -- called with the lock held (then notify_due without it) ------------------------------
    def write(self, node: Node, data: bytes) -> None:
        for i in range(1, len(node)):
            self.nodes.setdefault(node[:i], b"")
        self.nodes[node] = data
        self._notify(node, data)

    def remove(self, node: Node) -> bool:
        """Remove ``node`` and its descendants."""
        doomed = [k for k in self.nodes if k[:len(node)] == node]
        for k in doomed:
            del self.nodes[k]
            self._notify(k, None)
        return bool(doomed)

    def children(self, node: Node) -> list[str]:
        n = len(node)
        return sorted({k[n] for k in self.nodes if len(k) > n and k[:n] == node})

    def _notify(self, node: Node, data: bytes | None) -> None:
        self._due.extend((callback, data) for callback in self.watchers.get(node, ()))


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
