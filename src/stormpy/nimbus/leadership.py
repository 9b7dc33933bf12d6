"""Nimbus leader election through ZooKeeper (kazoo's Lock recipe), as Storm's Nimbus HA does.

Contract of :class:`Leadership`:

* Every Nimbus of a cluster contends for the lock at :meth:`ZkPaths.nimbus_leader
  <stormpy.cluster.paths.ZkPaths.nimbus_leader>` with its RPC address ``host:port`` as contender
  identifier. The holder is the leader; the others stand by, queued in lock order, and the next in
  line takes over as soon as the leader's lock node goes (clean stop, or its ZooKeeper session
  expiring after a crash: ``storm.zookeeper.session.timeout``).
* ``on_elected()`` runs (on the election thread) when this Nimbus becomes leader, before
  :meth:`is_leader` turns true; ``on_deposed()`` runs when it stops being leader: its session was
  lost (the lock node is gone, another Nimbus may lead already) or :meth:`stop` was called. After a
  lost session it contends again once reconnected.
* :meth:`is_leader` is false while the ZooKeeper connection is suspended, so a leader cut off from
  ZooKeeper refuses writes at once rather than racing a successor.
* :meth:`leader_address` is the address of the current lock holder (first contender), or None when
  nobody holds it or ZooKeeper cannot be read: it reads with the storage's bounded operations
  (None at once without a connection), and :meth:`wait_settled` gives up once the storage is
  shutting down, so a daemon stopped during its start never waits on an unreachable ZooKeeper.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.exceptions import KazooException
from kazoo.recipe.lock import Lock

from stormpy.cluster import ZkStorage
from stormpy.cluster.errors import ClusterStateError
from stormpy.host.service import Service
from stormpy.host.waiting import WaitTimeout, wait_for

__all__ = ["Leadership"]

log = logging.getLogger(__name__)

_RETRY_SECS = 0.5


class Leadership:
    """One Nimbus's part in the election (see the module docstring)."""

    def __init__(self, storage: ZkStorage, path: str, address: str, *,
                 on_elected: Callable[[], None], on_deposed: Callable[[], None]) -> None:
        self.storage = storage
        self.path = path
        self.address = address
        self._on_elected = on_elected
        self._on_deposed = on_deposed
        self._leader = False
        self._suspended = False
        self._lost = threading.Event()
        self._lock: Lock | None = None
        # one round contends once: it blocks in the lock until elected, leads until deposed
        self._service = Service("nimbus-election", self._contend, interval=_RETRY_SECS, log=log)

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Leadership:
        """Start contending on a daemon thread (a :class:`~stormpy.host.service.Service`); return
        self."""
        self.storage.add_listener(self._on_state)
        self._service.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Give up leadership (``on_deposed`` runs if this Nimbus led) and stop contending."""
        self._service.request_stop()
        self._lost.set()
        lock = self._lock
        if lock is not None:
            lock.cancel()
        self._service.stop(timeout)

    def wait_settled(self, timeout_secs: float) -> bool:
        """Wait until this Nimbus leads or another one is known to; True when settled in time."""
        class Stopping(Exception):
            pass

        def settled() -> bool:
            if self.is_leader():
                return True
            leader = self.leader_address()
            return leader is not None and leader != self.address

        def check() -> None:
            if self._service.stopping or self.storage.shutting_down:
                raise Stopping

        try:
            return wait_for(settled, timeout_secs, "the leadership to settle", interval=0.05,
                            check=check)
        except (WaitTimeout, Stopping):
            return False

    # -- queries -----------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True while this Nimbus holds the lock and its ZooKeeper connection is not suspended
        (the kazoo client's own state is read too, not only the listener's record of it)."""
        return (self._leader and not self._suspended and not self._lost.is_set()
                and self.storage.connected)

    def leader_address(self) -> str | None:
        """``host:port`` of the lock holder, or None (no leader, or ZooKeeper unreadable)."""
        if self.is_leader():
            return self.address
        if not self.storage.connected:
            return None
        try:
            contenders = self.storage.lock_contenders(self.path)
        except (ClusterStateError, KazooException, OSError) as exc:
            log.debug("cannot read the Nimbus leader lock: %s", exc)
            return None
        return str(contenders[0]) if contenders else None

    # -- internals ---------------------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        if state == "LOST":
            self._lost.set()
        elif state == "SUSPENDED":
            self._suspended = True
        elif state == "CONNECTED":
            self._suspended = False

    def _contend(self) -> float:
        """One contention: wait for the lock, lead until deposed; the delay before the next."""
        if not self.storage.connected:
            return _RETRY_SECS
        self._lost.clear()
        lock = self._lock = self.storage.lock(self.path, self.address)
        try:
            acquired = lock.acquire(blocking=True)
        except Exception as exc:  # noqa: BLE001 - kazoo raises several types on connection trouble
            if self._service.stopping:
                return 0.0
            log.warning("Nimbus leader election on %s failed (%s); contending again", self.path, exc)
            self._release(lock)
            return _RETRY_SECS
        if not acquired or self._service.stopping:
            self._release(lock)
            return 0.0
        return self._lead(lock)

    def _lead(self, lock: Lock) -> float:
        """Lead until the session is lost or a stop is asked; the delay before contending again."""
        log.info("this Nimbus (%s) is now the leader", self.address)
        try:
            self._on_elected()
        except Exception:
            log.exception("Nimbus failed to take over as leader; stepping down")
            self._release(lock)
            return _RETRY_SECS
        self._leader = True
        while not self._lost.wait(1.0):
            pass
        self._leader = False
        if not self._service.stopping:
            log.warning("this Nimbus (%s) lost its ZooKeeper session and with it the leadership",
                        self.address)
        try:
            self._on_deposed()
        except Exception:
            log.exception("stepping down as leader failed")
        self._release(lock)
        return 0.0

    @staticmethod
    def _release(lock: Lock) -> None:
        try:
            lock.release()
        except Exception as exc:  # noqa: BLE001 - the node goes with the session anyway
            log.debug("releasing the leader lock failed: %s", exc)
