"""Watches on ZooKeeper nodes: kazoo's ``DataWatch`` and ``ChildrenWatch`` recipes behind a
cancellable :class:`Watch` handle (see :meth:`stormpy.cluster.storage.ZkStorage.watch_data`).

:func:`data_watch` and :func:`children_watch` only prepare a watch; :meth:`Watch.run` sets the
recipe up (kazoo's first read happens there, so the storage runs it on a kazoo thread and waits
for :attr:`Watch.first_call` within its operation bound). A callback that raises is logged and
the watch goes on; once cancelled, the recipe stops at its next call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

__all__ = ["Watch", "children_watch", "data_watch"]

log = logging.getLogger(__name__)


class Watch:
    """Handle of a watch on ``path``: :meth:`cancel` stops further callbacks (idempotent)."""

    def __init__(self, path: str, recipe: Callable[[Watch], Any] | None = None) -> None:
        self.path = path
        self.first_call = threading.Event()
        self._recipe = recipe
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """No callback starts after this returns, except one already running."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled.is_set()

    def run(self) -> None:
        """Set the recipe up (blocks for kazoo's first read; done once, by the storage)."""
        if self._recipe is not None:
            recipe, self._recipe = self._recipe, None
            recipe(self)

    def _deliver(self, what: str, callback: Callable[[Any], Any], value: Any) -> bool | None:
        if self.cancelled:
            return False  # tells the recipe to stop
        try:
            callback(value)
        except Exception:
            log.exception("%s watch callback for %s failed", what, self.path)
        self.first_call.set()
        return None


def data_watch(client: KazooClient, path: str, callback: Callable[[bytes | None], Any]) -> Watch:
    """A watch calling ``callback(data or None)`` at set-up and after every change of ``path``."""

    def recipe(handle: Watch) -> None:
        DataWatch(client, path, lambda data, _stat: handle._deliver(
            "data", callback, bytes(data) if data is not None else None))

    return Watch(path, recipe)


def children_watch(client: KazooClient, path: str, callback: Callable[[list[str]], Any]) -> Watch:
    """A watch calling ``callback(sorted children)`` at set-up and after every change (``path``
    must exist when it is set up)."""

    def recipe(handle: Watch) -> None:
        ChildrenWatch(client, path, lambda children: handle._deliver("children", callback,
                                                                      sorted(children)))

    return Watch(path, recipe)
