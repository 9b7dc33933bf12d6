"""ZkStorage: thin, raw access to ZooKeeper (bytes in, bytes out) through kazoo.

Contract:

* :meth:`ZkStorage.start` connects within ``connect_timeout_secs`` or raises
  :class:`~stormpy.cluster.errors.ZkConnectionError` naming the hosts; it then ensures ``root`` exists.
* Every path must lie under ``root`` (a ValueError otherwise), so no caller can touch another
  application's znodes, and ``delete(root_of_everything)`` is impossible by construction.
* Reads of missing nodes return ``None`` / ``[]``; deletes of missing nodes return False. Connection
  problems become ZkConnectionError, other ZooKeeper failures ClusterStateError, each naming the path.
  Operations are retried on connection loss a few times (``command_retries``) before failing.
* :meth:`ZkStorage.create_ephemeral` nodes are re-created automatically after the session is lost and
  a new one established, until :meth:`ZkStorage.delete` or :meth:`ZkStorage.close`.
* Persistent watches (:meth:`watch_data`, :meth:`watch_children`) use kazoo's DataWatch/ChildrenWatch:
  the callback runs once at once and then after every change, on a kazoo thread, until cancelled.
  One-shot native watches are available through the ``watch=`` argument of :meth:`get`/:meth:`children`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import RetryFailedError

from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.cluster.paths import DEFAULT_ROOT, normalize_root

__all__ = ["Watch", "ZkStorage", "hosts_from_config"]

log = logging.getLogger(__name__)

NativeWatcher = Callable[[WatchedEvent], Any]
_CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, ConnectionClosedError, RetryFailedError,
                      KazooTimeoutError)


def hosts_from_config(conf: Mapping[str, Any]) -> str:
    """``host:port,...`` from ``storm.zookeeper.servers`` and ``storm.zookeeper.port``.

    A server entry that already names a port (``"zk1:2182"``) keeps it.
    """
    servers = conf.get("storm.zookeeper.servers") or ["127.0.0.1"]
    if isinstance(servers, str):
        servers = [servers]
    port = int(conf.get("storm.zookeeper.port", 2181))
    return ",".join(s if ":" in str(s) else f"{s}:{port}" for s in servers)


class Watch:
    """Handle of a persistent watch: :meth:`cancel` stops further callbacks (idempotent)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """No callback starts after this returns, except one already running."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled.is_set()


class ZkStorage:
    """Raw byte access to the ZooKeeper subtree ``root`` on ``hosts`` (``"h1:2181,h2:2181"``)."""

    def __init__(self, hosts: str, root: str = DEFAULT_ROOT, *, connect_timeout_secs: float = 15.0,
                 session_timeout_secs: float = 20.0, command_retries: int = 3) -> None:
        self.hosts = hosts
        self.root = normalize_root(root)
        self.connect_timeout_secs = connect_timeout_secs
        self._client = KazooClient(
            hosts=hosts, timeout=session_timeout_secs,
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 2.0},
            command_retry={"max_tries": command_retries, "delay": 0.1, "max_delay": 2.0,
                           "ignore_expire": False},
        )
        self._ephemerals: dict[str, bytes] = {}
        self._ephemeral_lock = threading.Lock()
        self._session_lost = False
        self._started = False
        self._closed = False

    @classmethod
    def from_config(cls, conf: Mapping[str, Any], root: str | None = None) -> ZkStorage:
        """A storage configured from stormpy config keys (not yet started)."""
        return cls(hosts_from_config(conf), root or conf.get("storm.zookeeper.root", DEFAULT_ROOT),
                   connect_timeout_secs=float(conf.get("storm.zookeeper.connection.timeout", 15000)) / 1000,
                   session_timeout_secs=float(conf.get("storm.zookeeper.session.timeout", 20000)) / 1000)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ZkStorage:
        """Connect and ensure ``root`` exists; return self. Raises ZkConnectionError on timeout."""
        if self._started:
            return self
        try:
            self._client.start(timeout=self.connect_timeout_secs)
        except KazooTimeoutError as exc:
            raise ZkConnectionError(f"could not connect to ZooKeeper at {self.hosts} within "
                                    f"{self.connect_timeout_secs:g} s") from exc
        self._started = True
        self._client.add_listener(self._on_state)
        self.ensure_path(self.root)
        return self

    def close(self) -> None:
        """End the session (its ephemeral nodes vanish at once) and free the connection; idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._ephemeral_lock:
            self._ephemerals.clear()
        try:
            self._client.stop()
        finally:
            self._client.close()

    def __enter__(self) -> ZkStorage:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """True while the session is connected."""
        return bool(self._client.connected)

    @property
    def client(self) -> KazooClient:
        """The underlying kazoo client, for recipes (Election, Lock); paths must still stay under root."""
        return self._client

    @property
    def session_id(self) -> int | None:
        """The current ZooKeeper session id, or None when not connected."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        """Call ``listener(state)`` (``"CONNECTED"``, ``"SUSPENDED"``, ``"LOST"``) on every state change.

        It runs on kazoo's connection thread: it must not block or call ZooKeeper.
        """
        self._client.add_listener(lambda state: listener(str(state)))

    # -- helpers -------------------------------------------------------------------------------
    def check_path(self, path: str) -> str:
        """Return ``path`` when it is ``root`` or below it; raise ValueError otherwise."""
        if path != self.root and not path.startswith(self.root.rstrip("/") + "/"):
            raise ValueError(f"ZooKeeper path {path!r} is outside this storage's root {self.root!r}")
        return path

    @contextmanager
    def _op(self, op: str, path: str) -> Iterator[None]:
        self.check_path(path)
        try:
            yield
        except _CONNECTION_ERRORS as exc:
            raise ZkConnectionError(f"ZooKeeper {op} {path} failed: no usable connection to {self.hosts} "
                                    f"({type(exc).__name__})") from exc
        except KazooException as exc:
            raise ClusterStateError(f"ZooKeeper {op} {path} failed: {type(exc).__name__} {exc}") from exc

    # -- reads ---------------------------------------------------------------------------------
    def exists(self, path: str, watch: NativeWatcher | None = None) -> bool:
        """True when the node exists. ``watch`` (one-shot) fires when it is created, changed or deleted."""
        with self._op("exists", path):
            return self._client.retry(self._client.exists, path, watch=watch) is not None

    def get(self, path: str, watch: NativeWatcher | None = None) -> bytes | None:
        """The node's data, or None when it does not exist (then no watch is left either).

        ``watch`` is a one-shot ZooKeeper watch: called once with a WatchedEvent at the next change.
        """
        with self._op("get", path):
            try:
                data, _ = self._client.retry(self._client.get, path, watch=watch)
            except NoNodeError:
                return None
            return bytes(data)

    def children(self, path: str, watch: NativeWatcher | None = None) -> list[str]:
        """Sorted child names, or ``[]`` when the node does not exist; ``watch`` as in :meth:`get`."""
        with self._op("get_children", path):
            try:
                return sorted(self._client.retry(self._client.get_children, path, watch=watch))
            except NoNodeError:
                return []

    # -- writes --------------------------------------------------------------------------------
    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing parents (empty data)."""
        with self._op("ensure_path", path):
            self._client.retry(self._client.ensure_path, path)

    def set(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path``, creating it (and parents) when missing."""

        def upsert() -> None:
            try:
                self._client.set(path, data)
            except NoNodeError:
                try:
                    self._client.create(path, data, makepath=True)
                except NodeExistsError:
                    self._client.set(path, data)

        with self._op("set", path):
            self._client.retry(upsert)

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequence: bool = False,
               makepath: bool = True) -> str:
        """Create a node and return its actual path (with the sequence suffix when ``sequence``).

        Raises ClusterStateError naming the path when it already exists.
        """
        with self._op("create", path):
            try:
                return str(self._client.retry(self._client.create, path, data, ephemeral=ephemeral,
                                              sequence=sequence, makepath=makepath))
            except NodeExistsError as exc:
                raise ClusterStateError(f"ZooKeeper node {path} already exists") from exc

    def create_ephemeral(self, path: str, data: bytes) -> None:
        """Create or replace the ephemeral node ``path`` owned by this session.

        A node left by another (older) session at the same path is replaced. The node is re-created
        automatically after a session loss, until it is deleted through this storage or it closes.
        """
        with self._op("create_ephemeral", path):
            self._client.retry(self._put_ephemeral, path, data)
        with self._ephemeral_lock:
            self._ephemerals[path] = data

    def _put_ephemeral(self, path: str, data: bytes) -> None:
        try:
            self._client.create(path, data, ephemeral=True, makepath=True)
            return
        except NodeExistsError:
            pass
        try:
            _, stat = self._client.get(path)
            if stat.ephemeralOwner == self._client.client_id[0]:
                self._client.set(path, data, version=stat.version)
                return
            self._client.delete(path, version=stat.version)
        except NoNodeError:
            pass
        self._client.create(path, data, ephemeral=True, makepath=True)

    def delete(self, path: str, *, recursive: bool = True) -> bool:
        """Delete ``path`` (and everything under it when ``recursive``); False when it did not exist.

        Retries when writers add children while a recursive delete runs.
        """
        with self._ephemeral_lock:
            for tracked in [p for p in self._ephemerals if p == path or p.startswith(path + "/")]:
                del self._ephemerals[tracked]
        with self._op("delete", path):
            if recursive and self._client.retry(self._client.exists, path) is None:
                return False  # kazoo's recursive delete does not report a missing node
            for attempt in range(10):
                try:
                    self._client.retry(self._client.delete, path, recursive=recursive)
                    return True
                except NoNodeError:
                    return attempt > 0
                except NotEmptyError:
                    if not recursive or attempt == 9:
                        raise
        return True

    # -- persistent watches --------------------------------------------------------------------
    def watch_data(self, path: str, callback: Callable[[bytes | None], Any]) -> Watch:
        """Call ``callback(data or None)`` now and after every change of ``path`` until cancelled."""
        self.check_path(path)
        handle = Watch(path)

        def on_change(data: bytes | None, _stat: Any) -> bool | None:
            if handle.cancelled:
                return False
            try:
                callback(bytes(data) if data is not None else None)
            except Exception:
                log.exception("data watch callback for %s failed", path)
            return None

        DataWatch(self._client, path, on_change)
        return handle

    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> Watch:
        """Call ``callback(sorted children)`` now and after every change, until cancelled.

        ``path`` is created first when missing (ZooKeeper cannot watch children of a missing node).
        """
        self.ensure_path(path)
        handle = Watch(path)

        def on_change(children: list[str]) -> bool | None:
            if handle.cancelled:
                return False
            try:
                callback(sorted(children))
            except Exception:
                log.exception("children watch callback for %s failed", path)
            return None

        ChildrenWatch(self._client, path, on_change)
        return handle

    # -- session recovery ----------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._client.handler.spawn(self._restore_ephemerals)

    def _restore_ephemerals(self) -> None:
        with self._ephemeral_lock:
            pending = dict(self._ephemerals)
        for path, data in pending.items():
            try:
                self._client.retry(self._put_ephemeral, path, data)
                log.info("re-created ephemeral node %s after session loss", path)
            except Exception:
                log.exception("could not re-create ephemeral node %s after session loss", path)
