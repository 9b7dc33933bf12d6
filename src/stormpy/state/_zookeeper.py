"""The state layer's ZooKeeper backend, on the one ZooKeeper client of stormpy
(:class:`~stormpy.cluster.storage.ZkStorage`: bounded retries, fail-fast shutdown).

:class:`ZkBackend` keeps each topology's areas and the named state where
:mod:`stormpy.cluster.paths` puts them::

    <root>/checkpoints/<topology-id>/<key segments...>
    <root>/transactional/<topology-id>/<key segments...>
    <root>/<area>/<owner>:<name>/<key segments...>        (named_store: kept across topologies)

Key segments are percent-encoded into znode names (:func:`~stormpy.cluster.paths.encode_segment`)
and decoded again by ``children``. Values are the state documents of
:func:`~stormpy.topology._state.encode_state`. Every call is one or a few ZkStorage operations, so
it is bounded by the storage's operation timeout (``timeout_secs``); an unreachable ZooKeeper
raises :class:`~stormpy.topology._state.StateUnavailableError`, any other ZooKeeper failure
:class:`~stormpy.topology._state.StateStoreError`, an undecodable node
:class:`~stormpy.topology._state.CorruptStateError` — each naming the znode. Nimbus's kill removes
the per-topology subtrees with the rest of the topology (``ZkPaths.topology_paths``);
:meth:`ZkBackend.drop` does the same for a LocalCluster.

:func:`open_zk_store` opens a store on its own connection (a setting that names other servers
or another root than the cluster's); closing the store closes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from stormpy.cluster import paths
from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.cluster.storage import ZkStorage
from stormpy.config import setting
from stormpy.state._base import (
    MAX_UPDATE_ROUNDS,
    Store,
    check_segments,
    root_or_segments,
    update_rounds,
)
from stormpy.state._memory import MemoryBackend
from stormpy.topology._state import (
    AREAS,
    CHECKPOINTS,
    StateStoreError,
    StateUnavailableError,
    check_area,
    decode_state,
    encode_state,
)

__all__ = ["ZkBackend", "ZkStore", "open_zk_store"]

log = logging.getLogger("stormpy.state")

T = TypeVar("T")


def area_path(area: str, topology_id: str, *, root: str) -> str:
    """The znode under which ``topology_id`` keeps ``area``."""
    if check_area(area) == CHECKPOINTS:
        return paths.ZkPaths(root).checkpoints(topology_id)
    return paths.ZkPaths(root).transactional(topology_id)


def _call(path: str, op: Callable[[], T]) -> T:
    try:
        return op()
    except (Contention, UnknownOutcome) as exc:
        raise StateUnavailableError(path, str(exc)) from exc
    except ZkConnectionError as exc:
        raise StateUnavailableError(path, f"ZooKeeper unreachable: {exc}") from exc
    except ClusterStateError as exc:
        raise StateStoreError(path, f"ZooKeeper failed: {exc}") from exc


class Contention(ClusterStateError):
    """``compare_and_set`` lost to other writers every round: try again later."""


class UnknownOutcome(ClusterStateError):
    """A ``compare_and_set`` write whose answer was lost with the connection may or may not have
    been applied, and other writers changed the node since, so it cannot be told which."""


def _lost_write_landed(sent: tuple[bytes, int], data: bytes | None, version: int | None) -> bool:
    """Whether a write whose answer was lost was applied, judged from the node as re-read
    (``data``/``version``, None when it is missing). ``sent`` is the data written and the version
    the node had after it had it landed (0 for a create). UnknownOutcome when the node moved on
    past that version (or vanished after a set): ours may be under the newer writes or not."""
    written, expected = sent
    if version == expected:
        # our write landed, unless another writer's took that version first (ours then failed on
        # it): told apart by the data (an identical value written by another counts as ours)
        return data == written
    if version == expected - 1 or (version is None and expected == 0):
        return False  # unchanged since our read: ours never reached ZooKeeper
    raise UnknownOutcome(f"compare-and-set: the outcome of a write whose answer was lost with the "
                         f"connection is unknown (the node is at version {version}, the write "
                         f"would have made it {expected})")


def compare_and_set(storage: ZkStorage, path: str, fn: Callable[[bytes | None], bytes | None]
                    ) -> bool:
    """Write ``fn(current data or None)`` to ``path`` unless it is None, only if the node did not
    change since it was read (its version), re-reading up to MAX_UPDATE_ROUNDS times; True when
    written. Bounded like every ZkStorage operation (it runs as one, under the storage's retry);
    ZkStorage has no versioned write, so this is the layer's own, on the storage's operation
    runner.

    ``fn`` is applied once per write: the storage retries the whole attempt after a connection
    loss, and a write whose answer was lost (it may have landed) is first judged from the node
    as re-read (:func:`_lost_write_landed`): at the version it would have given the node and
    holding its data, it landed and the update is done; unchanged, or taken at that version by
    another writer, it did not and ``fn`` runs on what is there; moved on further, the outcome is
    unknown and UnknownOutcome is raised rather than ``fn`` applied a second time. A write still
    unanswered when the operation's deadline passes raises ZkConnectionError and may still land
    (the storage's contract)."""
    client = storage._client  # noqa: SLF001 - the one client; see the docstring
    #: a write whose answer was lost with the connection: (data, the version it gives the node)
    sent: tuple[bytes, int] | None = None

    def attempt(wait: Callable[[Any], Any]) -> bool:
        nonlocal sent
        for _round in update_rounds():
            try:
                data, stat = wait(client.get_async(path))
            except NoNodeError:
                if sent is not None:
                    lost, sent = sent, None
                    if _lost_write_landed(lost, None, None):
                        return True
                new = fn(None)
                if new is None:
                    return False
                try:
                    sent = (new, 0)
                    wait(client.create_async(path, new, makepath=True))
                    sent = None
                    return True
                except NodeExistsError:
                    sent = None
                    continue
            if sent is not None:
                lost, sent = sent, None
                if _lost_write_landed(lost, bytes(data), stat.version):
                    return True
            new = fn(bytes(data) if data else None)
            if new is None:
                return False
            try:
                sent = (new, stat.version + 1)
                wait(client.set_async(path, new, version=stat.version))
                sent = None
                return True
            except (BadVersionError, NoNodeError):
                sent = None
                continue
        raise Contention(f"ZooKeeper compare-and-set {path} failed: changed by others "
                         f"{MAX_UPDATE_ROUNDS} times in a row")

    return storage._run("compare_and_set", path, attempt)  # noqa: SLF001


class ZkStore(Store):
    """The subtree below znode ``location`` of ``storage``; see :mod:`stormpy.state._base`.
    ``owns_storage``: :meth:`close` closes the storage (a store opened by :func:`open_zk_store`)."""

    def __init__(self, storage: ZkStorage, location: str, *, owns_storage: bool = False) -> None:
        self.storage = storage
        self.location = storage.check_path(location)
        self.timeout_secs = storage.operation_timeout_secs
        self._owns = owns_storage

    def _znode(self, key: str) -> str:
        segments = root_or_segments(self.location, key)
        return "/".join((self.location, *(paths.encode_segment(s) for s in segments)))

    def where(self, key: str) -> str:
        return self._znode(key)

    def get(self, key: str, default: Any = None) -> Any:
        path = self._znode(key)
        data = _call(path, lambda: self.storage.get(path))
        if not data:  # missing, or a parent without a value of its own
            return default
        return decode_state(path, data)

    def put(self, key: str, value: Any) -> None:
        path = self._znode(key)
        data = encode_state(path, value)
        _call(path, lambda: self.storage.set(path, data))

    def delete(self, key: str) -> bool:
        path = self._znode(key)
        return _call(path, lambda: self.storage.delete(path, recursive=True))

    def children(self, key: str = "") -> list[str]:
        path = self._znode(key)
        names = _call(path, lambda: self.storage.children(path))
        return sorted(paths.decode_segment(n) for n in names)

    def update(self, key: str, fn: Callable[[Any], Any]) -> bool:
        path = self._znode(key)

        def raw(data: bytes | None) -> bytes | None:
            new = fn(decode_state(path, data) if data else None)
            return None if new is None else encode_state(path, new)
        return _call(path, lambda: compare_and_set(self.storage, path, raw))

    def sub(self, *segments: str) -> ZkStore:
        check_segments(self.location, segments)
        return ZkStore(self.storage, "/".join((self.location, *(paths.encode_segment(s)
                                                                for s in segments))))

    def watch(self, key: str, callback: Callable[[Any], None]) -> Callable[[], None]:
        """``callback(value or None)`` on a kazoo thread now and after every change; a node that
        does not decode is logged and skipped."""
        path = self._znode(key)

        def changed(data: bytes | None) -> None:
            try:
                value = decode_state(path, data) if data else None
            except StateStoreError as exc:
                log.error("%s", exc)
                return
            callback(value)
        return _call(path, lambda: self.storage.watch_data(path, changed)).cancel

    def available(self) -> bool:
        return self.storage.connected

    def close(self) -> None:
        if self._owns:
            self.storage.close()


class ZkBackend:
    """Every topology's state areas, and the named state, in the ZooKeeper of ``storage`` (under
    its root), with a volatile :class:`~stormpy.state._memory.MemoryBackend` of the same owner
    (:attr:`memory`).

    The backend does not own the storage: whoever opened it closes it (a worker's ClusterState, a
    LocalCluster). The first store opened per (area, topology) is logged with its znode.
    """

    def __init__(self, storage: ZkStorage) -> None:
        self._storage = storage
        self.description = f"ZooKeeper {storage.hosts}{storage.root}"
        self._lock = threading.Lock()
        self._announced: set[tuple[str, str]] = set()
        self._memory = MemoryBackend(storage.operation_timeout_secs)

    @property
    def memory(self) -> MemoryBackend:
        return self._memory

    def store(self, area: str, topology_id: str) -> ZkStore:
        found = ZkStore(self._storage, area_path(area, topology_id, root=self._storage.root))
        with self._lock:
            if (area, topology_id) not in self._announced:
                self._announced.add((area, topology_id))
                log.info("topology %s: %s state in ZooKeeper %s at %s", topology_id, area,
                         self._storage.hosts, found.location)
        return found

    def named_store(self, area: str, owner: str, name: str) -> ZkStore:
        return ZkStore(self._storage,
                       paths.ZkPaths(self._storage.root).named_state(check_area(area), owner, name))

    def drop(self, topology_id: str) -> None:
        self._memory.drop(topology_id)
        for area in AREAS:
            path = area_path(area, topology_id, root=self._storage.root)
            _call(path, lambda p=path: self._storage.delete(p, recursive=True))  # type: ignore[misc]


def open_zk_store(hosts: str, root: str, location: str | None = None, *,
                  connect_timeout_secs: float = 15.0, session_timeout_secs: float = 20.0,
                  operation_timeout_secs: float | None = None) -> ZkStore:
    """A store at znode ``location`` (default: ``root``) on its own connection to ``hosts``,
    rooted at ``root``; StateUnavailableError naming the servers when ZooKeeper does not answer
    within ``connect_timeout_secs`` (no client left running). Closing the store closes the
    connection."""
    storage = ZkStorage(hosts, root, connect_timeout_secs=connect_timeout_secs,
                        session_timeout_secs=session_timeout_secs,
                        operation_timeout_secs=operation_timeout_secs)
    try:
        storage.start()
    except ClusterStateError as exc:
        storage.close()
        raise StateUnavailableError(f"ZooKeeper {hosts}{storage.root}",
                                    f"cannot connect ({exc})") from None
    return ZkStore(storage, location or storage.root, owns_storage=True)


def from_settings(settings: Mapping[str, Any]) -> dict[str, float]:
    """ZkStorage timeouts from ``storm.zookeeper.connection.timeout``/``session.timeout`` (ms)."""
    return {"connect_timeout_secs": float(setting(settings, "storm.zookeeper.connection.timeout"))
            / 1000,
            "session_timeout_secs": float(setting(settings, "storm.zookeeper.session.timeout"))
            / 1000}
