"""Ephemeral nodes that outlive a lost ZooKeeper session: created or replaced by this session, and
re-created once a new session is established.

* :func:`put_ephemeral` is one attempt to create ``path`` as an ephemeral node of the client's
  session or to take it over: a node of this session gets the new data; a node left by another
  (older) session at the same path is deleted and created again as ours. A node this storage put
  before (``ours``: a supervisor re-publishing its record every few seconds) is first simply
  rewritten: one request and one ZooKeeper transaction, where a create refused as existing, a
  read and a write are three requests and two transactions (the refused create counts too).
* :class:`EphemeralKeeper` remembers what was put (until forgotten) and, told the connection
  states (:meth:`EphemeralKeeper.on_state`), re-puts every remembered node after a session was
  LOST and a connection is back (on a thread of its own: the state listener must not block).
  A node that cannot be re-created is logged, never raised.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

from stormpy.cluster.zk_operations import Wait

__all__ = ["EphemeralKeeper", "put_ephemeral"]

log = logging.getLogger(__name__)


def put_ephemeral(client: KazooClient, wait: Wait, path: str, data: bytes, *, ours: bool = False) -> None:
    """Create ``path`` (parents included) as our ephemeral node with ``data``, or take it over
    (``ours``: it was put by this storage before, so it is most likely this session's node)."""
    if ours:
        try:
            stat = wait(client.set_async(path, data))
            client_id = client.client_id
            if client_id and stat.ephemeralOwner == client_id[0]:
                return
        except NoNodeError:
            pass  # gone with a lost session: create it below
    try:
        wait(client.create_async(path, data, ephemeral=True, makepath=True))
        return
    except NodeExistsError:
        pass
    try:
        _, stat = wait(client.get_async(path))
        client_id = client.client_id
        if client_id and stat.ephemeralOwner == client_id[0]:
            wait(client.set_async(path, data, version=stat.version))
            return
        wait(client.delete_async(path, version=stat.version))
    except NoNodeError:
        pass
    wait(client.create_async(path, data, ephemeral=True, makepath=True))


class EphemeralKeeper:
    """The ephemeral nodes of one storage, re-created after a session loss (see the module doc).

    ``put(path, data)`` re-creates one node (a bounded operation of the storage); ``spawn(fn)``
    runs ``fn`` off the connection thread.
    """

    def __init__(self, put: Callable[[str, bytes], None],
                 spawn: Callable[[Callable[[], None]], Any]) -> None:
        self._put = put
        self._spawn = spawn
        self._nodes: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._session_lost = False

    def remember(self, path: str, data: bytes) -> None:
        with self._lock:
            self._nodes[path] = data

    def remembers(self, path: str) -> bool:
        """True when ``path`` was put and not forgotten."""
        with self._lock:
            return path in self._nodes

    def forget(self, path: str) -> None:
        """Forget ``path`` and every node under it."""
        with self._lock:
            for tracked in [p for p in self._nodes if p == path or p.startswith(path + "/")]:
                del self._nodes[tracked]

    def clear(self) -> None:
        with self._lock:
            self._nodes.clear()

    def on_state(self, state: str) -> None:
        """The connection listener (kazoo's thread: it only notes and spawns)."""
        if state == KazooState.LOST:
            self._session_lost = True
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._spawn(self.restore)

    def restore(self) -> None:
        """Re-create every remembered node."""
        with self._lock:
            pending = dict(self._nodes)
        for path, data in pending.items():
            try:
                self._put(path, data)
                log.info("re-created ephemeral node %s after session loss", path)
            except Exception:
                log.exception("could not re-create ephemeral node %s after session loss", path)
