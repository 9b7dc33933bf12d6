"""ZkStorage: thin, raw access to ZooKeeper (bytes in, bytes out) through kazoo.

Contract:

* :meth:`ZkStorage.start` connects within ``connect_timeout_secs`` or raises
  :class:`~stormpy.cluster.errors.ZkConnectionError` naming the hosts; it then ensures ``root`` exists.
* Every path must lie under ``root`` (a ValueError otherwise), so no caller can touch another
  application's znodes, and ``delete(root_of_everything)`` is impossible by construction.
* Reads of missing nodes return ``None`` / ``[]``; deletes of missing nodes return False. Other
  ZooKeeper failures raise ClusterStateError naming the path.
* No operation blocks forever. Each one runs under the kazoo client's configured ``client.retry``
  (a :class:`kazoo.retry.KazooRetry` with a deadline of ``operation_timeout_secs``, default: the
  session timeout, after which a disconnected session is dead on the server anyway, and an
  interrupt): while the connection is down it backs off and tries again, and when the deadline
  passes it raises ZkConnectionError naming the operation, the path, the hosts and the wait.
  Requests are only *sent* while connected, and an answer is awaited no longer than the deadline;
  a request that was already sent when its wait ran out may still be applied by ZooKeeper later
  (ZooKeeper cannot withdraw a request).
* :meth:`ZkStorage.begin_shutdown` (for daemons' stop paths) makes every operation fail fast
  instead of waiting for a lost connection: without a connection it raises ZkConnectionError at
  once, and operations already waiting are woken with it (the retry's interrupt); connected
  operations still run. :meth:`ZkStorage.close` implies it, and returns within
  ``close_timeout_secs`` even when ZooKeeper is unreachable (the session's teardown then finishes
  in the background).
* :meth:`ZkStorage.create_ephemeral` nodes are re-created automatically after the session is lost and
  a new one established, until :meth:`ZkStorage.delete` or :meth:`ZkStorage.close`
  (:mod:`.zk_ephemerals`).
* :meth:`ZkStorage.lock` is kazoo's Lock recipe; :meth:`ZkStorage.lock_contenders` reads it with
  the bounded operations (:mod:`.zk_locks`). The connect string comes from :mod:`.zk_hosts`;
  the attempts of ``set`` and recursive ``delete`` are :mod:`.zk_writes`; the bounded runner of
  every operation and watch set-up is :mod:`.zk_operations`.
* ``identity`` (:mod:`.zk_acls`, from the ``storm.zookeeper.*auth*`` keys) authenticates the
  session and gives every node it creates its ACL; ``start`` creates the root and the workers'
  directories with the identity's shared ACL (missing ancestors of the root open). A write
  ZooKeeper refuses is a ClusterStateError (``NoAuthError``).
* Watches are kazoo's recipes, and only them: :meth:`watch_data` (``DataWatch``) and
  :meth:`watch_children` (``ChildrenWatch``) call back once with the current value before they
  return and then after every change, on a kazoo thread, until cancelled; they survive reconnections
  and session losses. Setting one up is bounded like an operation (kazoo's first read runs on a
  kazoo thread; a watch whose first read did not finish in time is cancelled and the call raises
  ZkConnectionError).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.lock import Lock

from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.cluster.paths import DEFAULT_ROOT, normalize_root
from stormpy.cluster.watches import Watch, children_watch, data_watch
from stormpy.cluster.zk_acls import ZkIdentity, start_paths, zk_identity
from stormpy.cluster.zk_ephemerals import EphemeralKeeper, put_ephemeral
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.cluster.zk_locks import lock_contenders
from stormpy.cluster.zk_operations import Attempt, Wait, ZkOperations
from stormpy.cluster.zk_writes import delete_tree, ensure_path, set_or_create
from stormpy.config import DEFAULTS

__all__ = ["ZkStorage"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Back-off of ``client.retry`` between attempts while the connection is down (doubling up to the max).
_RETRY_DELAY_SECS = 0.1
_RETRY_DELAY_MAX_SECS = 0.5


class ZkStorage:
    """Raw byte access to the ZooKeeper subtree ``root`` on ``hosts`` (``"h1:2181,h2:2181"``).

    ``operation_timeout_secs`` bounds every operation and watch set-up (default:
    ``session_timeout_secs``); ``close_timeout_secs`` bounds :meth:`close`.
    """

    def __init__(self, hosts: str, root: str = DEFAULT_ROOT, *, connect_timeout_secs: float = 15.0,
                 session_timeout_secs: float = 20.0, operation_timeout_secs: float | None = None,
                 close_timeout_secs: float = 5.0, identity: ZkIdentity | None = None) -> None:
        self.hosts = hosts
        self.identity = identity
        self.root = normalize_root(root)
        self.connect_timeout_secs = connect_timeout_secs
        self.operation_timeout_secs = float(session_timeout_secs if operation_timeout_secs is None
                                            else operation_timeout_secs)
        if self.operation_timeout_secs <= 0:
            raise ValueError("operation_timeout_secs must be positive")
        self.close_timeout_secs = close_timeout_secs
        self._ops = ZkOperations(hosts, self.operation_timeout_secs)
        self._client = KazooClient(
            hosts=hosts, timeout=session_timeout_secs,
            connection_retry={"max_tries": -1, "delay": 0.1, "max_delay": 1.0},
            command_retry={"max_tries": -1, "delay": _RETRY_DELAY_SECS,
                           "max_delay": _RETRY_DELAY_MAX_SECS, "ignore_expire": True,
                           "deadline": self.operation_timeout_secs, "interrupt": self._ops.interrupted},
            auth_data=identity.auth_data if identity else None,
            default_acl=list(identity.acl) if identity else None,
        )
        self._ephemerals = EphemeralKeeper(self._recreate_ephemeral, self._client.handler.spawn)
        self._client.add_listener(self._ephemerals.on_state)
        self._ops.client = self._client
        self._started = False
        self._closed = False

    @classmethod
    def from_config(cls, conf: Mapping[str, Any], root: str | None = None) -> ZkStorage:
        """A storage configured from stormpy config keys (not yet started): connect timeout from
        ``storm.zookeeper.connection.timeout``, session (and operation) timeout from
        ``storm.zookeeper.session.timeout`` (both in ms), identity and ACLs from the
        ``storm.zookeeper.*auth*`` keys (:mod:`.zk_acls`)."""
        def setting(key: str) -> Any:
            value = conf.get(key)
            return DEFAULTS[key] if value is None else value

        return cls(hosts_from_config(conf), root or setting("storm.zookeeper.root"),
                   connect_timeout_secs=float(setting("storm.zookeeper.connection.timeout")) / 1000,
                   session_timeout_secs=float(setting("storm.zookeeper.session.timeout")) / 1000,
                   identity=zk_identity(conf))

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ZkStorage:
        """Connect and ensure ``root`` exists; return self. Raises ZkConnectionError on timeout."""
        if self._closed:  # also after a start: a closed storage never pretends to be started
            raise ZkConnectionError(f"ZooKeeper storage for {self.hosts} is closed")
        if self._started:
            return self
        try:
            self._client.start(timeout=self.connect_timeout_secs)
        except KazooTimeoutError as exc:
            self.close()  # stop kazoo's reconnect attempts in the background
            raise ZkConnectionError(f"could not connect to ZooKeeper at {self.hosts} within "
                                    f"{self.connect_timeout_secs:g} s") from exc
        self._started = True
        for path, acl in start_paths(self.root, self.identity):
            # named by the root: the first path may be its parent
            self._run("ensure_path", self.root, functools.partial(ensure_path, self._client, path=path,
                                                                  acl=acl))
        return self

    def begin_shutdown(self) -> None:
        """From now on no operation waits for a lost connection (see the module contract).

        Idempotent and irreversible; safe from any thread and from a signal handler (it only sets
        a flag, noticed within 0.1 s). Daemons call it first thing when they stop.
        """
        self._ops.shutting_down = True

    @property
    def shutting_down(self) -> bool:
        """True after :meth:`begin_shutdown` or :meth:`close`."""
        return self._ops.shutting_down

    def close(self) -> None:
        """End the session (its ephemeral nodes vanish at once) and free the connection; idempotent.

        Operations still running in other threads fail with ZkConnectionError. Returns within
        ``close_timeout_secs``; when ZooKeeper is unreachable the session simply expires on the
        server later.
        """
        if self._closed:
            return
        self._closed = True
        self._ops.shutting_down = True
        self._ops.closing = True
        self._ephemerals.clear()
        closer = threading.Thread(target=self._stop_client, name="zk-close", daemon=True)
        closer.start()
        closer.join(self.close_timeout_secs)
        if closer.is_alive():
            log.warning("the ZooKeeper client for %s did not stop within %g s; it finishes in the "
                        "background", self.hosts, self.close_timeout_secs)

    def _stop_client(self) -> None:
        try:
            self._client.stop()
            self._client.close()
        except Exception:  # noqa: BLE001 - closing must not fail the caller
            log.warning("stopping the ZooKeeper client for %s failed", self.hosts, exc_info=True)

    def __enter__(self) -> ZkStorage:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        """True while the session is connected."""
        return bool(self._client.connected)

    @property
    def session_id(self) -> int | None:
        """The current ZooKeeper session id, or None when not connected."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    @property
    def session_credentials(self) -> tuple[int, bytes] | None:
        """``(session id, password)`` of the current session (what another client needs to join
        it, e.g. to expire it on purpose), or None when not connected."""
        client_id = self._client.client_id
        return (int(client_id[0]), bytes(client_id[1])) if client_id else None

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        """Call ``listener(state)`` (``"CONNECTED"``, ``"SUSPENDED"``, ``"LOST"``) on every state change.

        It runs on kazoo's connection thread: it must not block or call ZooKeeper.
        """
        self._client.add_listener(lambda state: listener(str(state)))

    def lock(self, path: str, identifier: str) -> Lock:
        """kazoo's Lock recipe on ``path`` (under ``root``) for contender ``identifier``: the
        recipe behind Nimbus leader election. Its calls are kazoo's own (not bounded like the
        operations here); the lock's node is ephemeral, so it is lost with the session."""
        return Lock(self._client, self.check_path(path), identifier)

    def lock_contenders(self, path: str) -> list[str]:
        """The contender identifiers of the kazoo Lock at ``path``, in lock order (the holder
        first), like ``Lock.contenders()`` but read with this storage's bounded operations: it
        fails with ZkConnectionError instead of waiting for ZooKeeper without end, and at once
        after :meth:`begin_shutdown` when there is no connection. ``[]`` when nobody contends."""
        return lock_contenders(self, path)

    # -- helpers -------------------------------------------------------------------------------
    def check_path(self, path: str) -> str:
        """Return ``path`` when it is ``root`` or below it; raise ValueError otherwise."""
        if path != self.root and not path.startswith(self.root.rstrip("/") + "/"):
            raise ValueError(f"ZooKeeper path {path!r} is outside this storage's root {self.root!r}")
        return path

    def _run(self, op: str, path: str, attempt: Attempt[T]) -> T:
        """Run one operation on ``path`` (under ``root``) within its bounds (:mod:`.zk_operations`)."""
        self.check_path(path)
        return self._ops.run(op, path, attempt)

    # -- reads ---------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        """True when the node exists."""
        return self._run("exists", path, lambda wait: wait(self._client.exists_async(path)) is not None)

    def get(self, path: str) -> bytes | None:
        """The node's data, or None when it does not exist."""

        def attempt(wait: Wait) -> bytes | None:
            try:
                data, _ = wait(self._client.get_async(path))
            except NoNodeError:
                return None
            return bytes(data)

        return self._run("get", path, attempt)

    def get_many(self, paths: Sequence[str]) -> list[bytes | None]:
        """The data of each node of ``paths`` in order (None for a missing one), every request
        sent at once on the session's connection (pipelined: one round trip's wait for all of
        them instead of one per node) within one operation's bounds; a lost connection retries
        the whole batch. What Nimbus's monitor and the UI read every round (every heartbeat)."""
        if not paths:
            return []
        for path in paths:
            self.check_path(path)

        def attempt(wait: Wait) -> list[bytes | None]:
            requests = [self._client.get_async(path) for path in paths]
            found: list[bytes | None] = []
            for request in requests:
                try:
                    data, _ = wait(request)
                except NoNodeError:
                    found.append(None)
                    continue
                found.append(bytes(data))
            return found

        return self._ops.run("get", f"{paths[0]} (and {len(paths) - 1} more)", attempt)

    def children_many(self, paths: Sequence[str]) -> list[list[str]]:
        """The sorted child names of each node of ``paths`` in order (``[]`` for a missing one),
        every request sent at once, like :meth:`get_many`."""
        if not paths:
            return []
        for path in paths:
            self.check_path(path)

        def attempt(wait: Wait) -> list[list[str]]:
            requests = [self._client.get_children_async(path) for path in paths]
            found: list[list[str]] = []
            for request in requests:
                try:
                    found.append(sorted(wait(request)))
                except NoNodeError:
                    found.append([])
            return found

        return self._ops.run("get_children", f"{paths[0]} (and {len(paths) - 1} more)", attempt)

    def children(self, path: str) -> list[str]:
        """Sorted child names, or ``[]`` when the node does not exist."""

        def attempt(wait: Wait) -> list[str]:
            try:
                return sorted(wait(self._client.get_children_async(path)))
            except NoNodeError:
                return []

        return self._run("get_children", path, attempt)

    # -- writes --------------------------------------------------------------------------------
    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its missing parents (empty data)."""
        self._run("ensure_path", path, lambda wait: wait(self._client.ensure_path_async(path)))

    def set(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path``, creating it (and parents) when missing."""

        self._run("set", path, functools.partial(set_or_create, self._client, path=path, data=data))

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequence: bool = False,
               makepath: bool = True) -> str:
        """Create a node and return its actual path (with the sequence suffix when ``sequence``).

        Raises ClusterStateError naming the path when it already exists.
        """

        def attempt(wait: Wait) -> str:
            try:
                return str(wait(self._client.create_async(path, data, ephemeral=ephemeral,
                                                          sequence=sequence, makepath=makepath)))
            except NodeExistsError as exc:
                raise ClusterStateError(f"ZooKeeper node {path} already exists") from exc

        return self._run("create", path, attempt)

    def create_ephemeral(self, path: str, data: bytes) -> None:
        """Create or replace the ephemeral node ``path`` owned by this session.

        A node left by another (older) session at the same path is replaced. The node is re-created
        automatically after a session loss, until it is deleted through this storage or it closes.
        """
        self._run("create_ephemeral", path, functools.partial(
            put_ephemeral, self._client, path=path, data=data, ours=self._ephemerals.remembers(path)))
        self._ephemerals.remember(path, data)

    def _recreate_ephemeral(self, path: str, data: bytes) -> None:
        self._run("create_ephemeral", path,
                  functools.partial(put_ephemeral, self._client, path=path, data=data))

    def delete(self, path: str, *, recursive: bool = True) -> bool:
        """Delete ``path`` (and everything under it when ``recursive``); False when it did not exist.

        Starts over when writers add children while a recursive delete runs (a few times, then
        ClusterStateError). A non-recursive delete of a node with children is a ClusterStateError.
        """
        self.check_path(path)
        self._ephemerals.forget(path)

        def attempt(wait: Wait) -> bool:
            if recursive:
                return delete_tree(self._client, wait, path)
            try:
                wait(self._client.delete_async(path))
            except NoNodeError:
                return False
            return True

        return self._run("delete", path, attempt)

    # -- watches (kazoo's recipes) ---------------------------------------------------------------
    def watch_data(self, path: str, callback: Callable[[bytes | None], Any]) -> Watch:
        """Call ``callback(data or None)`` now and after every change of ``path`` (its creation and
        deletion included) until cancelled; see the module contract."""
        return self._ops.arm("watch_data", data_watch(self._client, self.check_path(path), callback))

    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> Watch:
        """Call ``callback(sorted children)`` now and after every change, until cancelled.

        ``path`` is created first when missing (ZooKeeper cannot watch children of a missing node).
        """
        self.ensure_path(path)
        return self._ops.arm("watch_children", children_watch(self._client, path, callback))
