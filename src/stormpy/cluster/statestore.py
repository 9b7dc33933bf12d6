"""Component state in ZooKeeper: the :class:`~stormpy.topology.state.StateStore` of a cluster.

:class:`ZkStateBackend` keeps each topology's areas where :mod:`stormpy.cluster.paths` puts them::

    <root>/checkpoints/<topology-id>/<key segments...>
    <root>/transactional/<topology-id>/<key segments...>

Key segments are percent-encoded into znode names (:func:`~stormpy.cluster.paths.encode_segment`)
and decoded again by ``children``. Values are the state documents of
:func:`~stormpy.topology.state.encode_state`. Every call is one or a few :class:`ZkStorage`
operations, so it is bounded by the storage's operation timeout (``timeout_secs``); an unreachable
ZooKeeper raises :class:`~stormpy.topology.state.StateUnavailableError`, any other ZooKeeper
failure :class:`~stormpy.topology.state.StateStoreError`, an undecodable node
:class:`~stormpy.topology.state.CorruptStateError` — each naming the znode. Nimbus's kill removes
these subtrees with the rest of the topology (``ZkPaths.topology_paths``); :meth:`ZkStateBackend.drop`
does the same for a LocalCluster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from stormpy.cluster import paths
from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.cluster.storage import ZkStorage
from stormpy.topology.state import (
    AREAS,
    CHECKPOINTS,
    StateStoreError,
    StateUnavailableError,
    check_area,
    decode_state,
    encode_state,
    key_segments,
)

__all__ = ["ZkStateBackend", "ZkStateStore"]

log = logging.getLogger("stormpy.state")

T = TypeVar("T")


def area_path(area: str, topology_id: str, *, root: str) -> str:
    """The znode under which ``topology_id`` keeps ``area``."""
    if check_area(area) == CHECKPOINTS:
        return paths.ZkPaths(root).checkpoints(topology_id)
    return paths.ZkPaths(root).transactional(topology_id)


class ZkStateStore:
    """One (area, topology) in ZooKeeper; see the module contract."""

    def __init__(self, storage: ZkStorage, area: str, topology_id: str) -> None:
        self._storage = storage
        self.location = area_path(area, topology_id, root=storage.root)
        self.timeout_secs = storage.operation_timeout_secs

    def _znode(self, key: str, *, allow_root: bool = False) -> str:
        segments = key_segments(self.location, key, allow_root=allow_root)
        return "/".join((self.location, *(paths.encode_segment(s) for s in segments)))

    def _call(self, path: str, op: Callable[[], T]) -> T:
        try:
            return op()
        except ZkConnectionError as exc:
            raise StateUnavailableError(path, f"ZooKeeper unreachable: {exc}") from exc
        except ClusterStateError as exc:
            raise StateStoreError(path, f"ZooKeeper failed: {exc}") from exc

    def get(self, key: str, default: Any = None) -> Any:
        path = self._znode(key)
        data = self._call(path, lambda: self._storage.get(path))
        if not data:  # missing, or a parent without a value of its own
            return default
        return decode_state(path, data)

    def put(self, key: str, value: Any) -> None:
        path = self._znode(key)
        data = encode_state(path, value)
        self._call(path, lambda: self._storage.set(path, data))

    def delete(self, key: str) -> bool:
        path = self._znode(key)
        return self._call(path, lambda: self._storage.delete(path, recursive=True))

    def children(self, key: str = "") -> list[str]:
        path = self._znode(key, allow_root=True)
        names = self._call(path, lambda: self._storage.children(path))
        return sorted(paths.decode_segment(n) for n in names)


class ZkStateBackend:
    """Every topology's state areas in the ZooKeeper of ``storage`` (under its root).

    The backend does not own the storage: whoever opened it closes it (a worker's ClusterState, a
    LocalCluster). The first store opened per (area, topology) is logged with its znode.
    """

    def __init__(self, storage: ZkStorage) -> None:
        self._storage = storage
        self.description = f"ZooKeeper {storage.hosts}{storage.root}"
        self._lock = threading.Lock()
        self._stores: dict[tuple[str, str], ZkStateStore] = {}

    def store(self, area: str, topology_id: str) -> ZkStateStore:
        key = (check_area(area), topology_id)
        with self._lock:
            found = self._stores.get(key)
            if found is None:
                found = self._stores[key] = ZkStateStore(self._storage, area, topology_id)
                log.info("topology %s: %s state in ZooKeeper %s at %s", topology_id, area,
                         self._storage.hosts, found.location)
        return found

    def drop(self, topology_id: str) -> None:
        for area in AREAS:
            path = area_path(area, topology_id, root=self._storage.root)
            try:
                self._storage.delete(path, recursive=True)
            except ZkConnectionError as exc:
                raise StateUnavailableError(path, f"ZooKeeper unreachable: {exc}") from exc
            except ClusterStateError as exc:
                raise StateStoreError(path, f"ZooKeeper failed: {exc}") from exc
