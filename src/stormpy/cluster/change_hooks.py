"""ChangeHooks: the one-shot "something changed" callbacks of :class:`~stormpy.cluster.state.ClusterState`.

Each kind of read (a *slot*) keeps its latest callback; the storage's persistent watches (kazoo's
DataWatch / ChildrenWatch recipes, set up once per node read) pop and run it at the next change.
A watch also keeps what it last delivered, a node's data or child list
(:meth:`ChangeHooks.latest`): kazoo's recipe reads the node at every change anyway, so a watched
node is read from ZooKeeper once per change, not once per read (a supervisor re-reads every
assignment at each sync).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from stormpy.cluster.storage import ZkStorage
from stormpy.cluster.watches import Watch

__all__ = ["Callback", "ChangeHooks", "drop_path"]

#: the façade's logger: a failing callback is logged as the cluster state's
log = logging.getLogger("stormpy.cluster.state")

#: a one-shot "something changed" hook, run on a kazoo thread
Callback = Callable[[], Any]


class ChangeHooks:
    """One-shot "something changed" callbacks per slot, fed by the storage's persistent watches
    (kazoo's DataWatch / ChildrenWatch recipes).

    A slot keeps one watch per (kind, path) it ever read, so re-reading never piles up watches; the
    first call of a watch (its set-up) is not a change. A change pops the slot's callback and runs
    it. :meth:`retain` drops the data watches of children that are gone.
    """

    def __init__(self, storage: ZkStorage) -> None:
        self._storage = storage
        self._lock = threading.Lock()
        self._callbacks: dict[str, Callback] = {}
        self._watches: dict[tuple[str, str, str], Watch | None] = {}  # None: being set up
        # path → (slot, kind) → the data or child list a watch delivered
        self._latest: dict[str, dict[tuple[str, str], Any]] = {}

    def set_callback(self, slot: str, callback: Callback) -> None:
        with self._lock:
            self._callbacks[slot] = callback

    def watch(self, slot: str, kind: str, path: str) -> None:
        """Make sure a ``kind`` (``"data"`` or ``"children"``) watch on ``path`` feeds ``slot``.

        Bounded like a storage operation; when it fails nothing stays registered, so the next read
        tries again.
        """
        key = (slot, kind, path)
        with self._lock:
            if key in self._watches:
                return
            self._watches[key] = None
        started = [False]

        def changed(value: Any) -> None:
            with self._lock:  # first: a callback's re-read sees this value
                if key in self._watches:
                    self._latest.setdefault(path, {})[(slot, kind)] = value
            if not started[0]:
                started[0] = True  # the recipe's first call reports the current value, not a change
                return
            with self._lock:
                callback = self._callbacks.pop(slot, None)
            if callback is not None:
                try:
                    callback()
                except Exception:
                    log.exception("cluster-state callback for %s failed", slot)

        try:
            handle = (self._storage.watch_data(path, changed) if kind == "data"
                      else self._storage.watch_children(path, changed))
        except BaseException:
            with self._lock:
                self._watches.pop(key, None)
            raise
        with self._lock:
            if key in self._watches:
                self._watches[key] = handle
                return
        handle.cancel()  # cancelled (close) while it was being set up

    def latest(self, slot: str, kind: str, path: str) -> tuple[bool, Any]:
        """``(True, value)``: what the ``kind`` watch of ``slot`` on ``path`` last delivered (data,
        None for no node, or the sorted child list); ``(False, None)`` when it has delivered
        nothing (no watch, or one being set up or dropped)."""
        with self._lock:
            delivered = self._latest.get(path)
            if delivered is not None and (slot, kind) in delivered:
                return True, delivered[(slot, kind)]
        return False, None

    def forget_latest(self, path: str, *, tree: bool = False) -> None:
        """Forget what the watches delivered for ``path`` (and, with ``tree``, every node under
        it): this client wrote there, so its next read goes to ZooKeeper and sees its write."""
        with self._lock:
            drop_path(self._latest, path, tree=tree)

    def retain(self, slot: str, parent: str, children: list[str]) -> None:
        """Cancel the data watches of ``slot`` on children of ``parent`` not in ``children``."""
        keep = {f"{parent}/{child}" for child in children}
        prefix = parent + "/"
        with self._lock:
            gone = [k for k in self._watches
                    if k[0] == slot and k[1] == "data" and k[2].startswith(prefix) and k[2] not in keep]
            handles = [self._watches.pop(k) for k in gone]
            for _, _, path in gone:
                self._latest.get(path, {}).pop((slot, "data"), None)
                if not self._latest.get(path, True):
                    del self._latest[path]
        for handle in handles:
            if handle is not None:
                handle.cancel()

    def cancel_all(self) -> None:
        with self._lock:
            handles = list(self._watches.values())
            self._watches.clear()
            self._callbacks.clear()
            self._latest.clear()
        for handle in handles:
            if handle is not None:
                handle.cancel()


def drop_path(by_path: dict[str, Any], path: str, *, tree: bool = False) -> None:
    """Remove ``path`` from ``by_path`` (a map keyed by ZooKeeper path) and, with ``tree``,
    every path under it; the caller holds the map's lock."""
    by_path.pop(path, None)
    if tree:
        prefix = path + "/"
        for key in [k for k in by_path if k.startswith(prefix)]:
            del by_path[key]
