"""Where the coordinator and the partitioned emitters keep their state: a store of the state
layer (:mod:`stormpy.state`), msgpack documents under slash-separated keys
(``coordinator/meta/7``), named by the transactional id so a redeployed topology with the same id
continues where it stopped.

:func:`open_store` picks it from ``transactional.*`` (:mod:`stormpy.transactional._settings`):

* by default, the topology's state backend (``context.state_backend.named_store("transactional",
  "tx", id)``): in a LocalCluster its own memory, fresh for each LocalCluster and shared with no
  other (or the ZooKeeper its conf names); on a cluster ZooKeeper at
  ``<storm.zookeeper.root>/transactional/tx:<id>``, on the worker's connection;
* ``transactional.store: memory``: the memory of the LocalCluster (or worker process);
* ``transactional.store: redis``: the Redis of ``topology.state.provider.config`` (Storm's
  ``jedisPoolConfig`` shape), hash ``<keyPrefix>/transactional/tx:<id>``, on a connection pool of
  its own;
* ``transactional.store: zookeeper``, or ``transactional.zookeeper.servers``/``.root`` set: a
  connection of its own to those servers (default ``storm.zookeeper.*``), at
  ``<transactional.zookeeper.root>/<id>`` when the root is set, else at the default place above;
  every operation bounded by ``transactional.zookeeper.operation.timeout.secs``.

A store that cannot be reached raises :class:`~stormpy.topology._state.StateUnavailableError`
(``StoreUnavailable`` is one); callers retry later, so a lost ZooKeeper never wedges the executor
loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stormpy.cluster.paths import ZkPaths, encode_segment
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.config import setting
from stormpy.state._base import Store
from stormpy.state._redis_store import open_redis_store, redis_config
from stormpy.state._settings import state_settings
from stormpy.state._zookeeper import from_settings, open_zk_store
from stormpy.topology._context import TopologyContext
from stormpy.topology._state import TRANSACTIONAL, StateStore, StateUnavailableError
from stormpy.transactional._settings import transactional_settings

__all__ = ["OWNER", "RotatingState", "StoreUnavailable", "TransactionalStore", "open_store",
           "zookeeper_hosts"]

#: The owner of transactional state among named stores (``transactional/tx:<id>``).
OWNER = "tx"

class StoreUnavailable(StateUnavailableError):
    """The transactional store cannot be reached right now; try again later. A store raising it
    (or any :class:`~stormpy.topology._state.StateUnavailableError`, which is what the state layer
    raises and what the transactional machinery catches) pauses transactions until it returns."""

    def __init__(self, problem: str, path: str = "transactional store") -> None:
        super().__init__(path, problem)
#: What the transactional machinery keeps its state in: a store of the state layer.
TransactionalStore = Store


def open_store(conf: Mapping[str, Any], context: TopologyContext,
               transactional_id: str) -> StateStore:
    """The store of the transactional topology ``transactional_id`` as ``conf`` configures it
    (see the module doc); SettingError naming a bad setting, StoreUnavailable when a ZooKeeper
    of its own cannot be reached."""
    settings = transactional_settings(conf)
    if settings.store == "memory":
        return context.state_backend.memory.named_store(TRANSACTIONAL, OWNER, transactional_id)
    if settings.store is None:
        return context.state_backend.named_store(TRANSACTIONAL, OWNER, transactional_id)
    if settings.store == "redis":
        return open_redis_store(redis_config(state_settings(conf).config),
                                TRANSACTIONAL, f"{OWNER}:{transactional_id}")
    hosts = zookeeper_hosts(conf)
    if settings.root is not None:
        root, location = settings.root, f"{settings.root}/{encode_segment(transactional_id)}"
    else:
        root = str(setting(conf, "storm.zookeeper.root"))
        location = ZkPaths(root).named_state(TRANSACTIONAL, OWNER, transactional_id)
    return open_zk_store(hosts, root, location,
                         operation_timeout_secs=settings.operation_timeout_secs,
                         **from_settings(conf))


def zookeeper_hosts(conf: Mapping[str, Any]) -> str:
    """``host:port,...`` from ``transactional.zookeeper.servers``/``.port``, falling back to
    ``storm.zookeeper.servers``/``.port``."""
    return hosts_from_config(conf, servers=conf.get("transactional.zookeeper.servers"),
                             port=conf.get("transactional.zookeeper.port"),
                             servers_setting="transactional.zookeeper.servers",
                             port_setting="transactional.zookeeper.port")


def available(store: StateStore) -> bool:
    """True when operations on ``store`` are expected to succeed now."""
    return store.available() if isinstance(store, Store) else True


def close(store: StateStore | None) -> None:
    """Close ``store`` when it owns something (a connection of its own)."""
    if isinstance(store, Store):
        store.close()


class RotatingState:
    """Metadata per transaction id under one key of a store (Storm's rotating transactional
    state): written once when a transaction is first started, read back on replays, and dropped
    once transactions before it committed. Cached in memory; the store is the truth after a
    restart, and after a write that failed (it may have been applied all the same: a timed-out
    ZooKeeper write), so the cache is reloaded from the store before it is used again."""

    def __init__(self, store: StateStore, key: str) -> None:
        self.store = store
        self.key = key.strip("/")
        self.cache: dict[int, Any] = {}
        self._stale = True
        self._fresh()

    def _fresh(self) -> dict[int, Any]:
        """The cache, reloaded from the store first when a write failed (raises
        ``StoreUnavailable`` while the store cannot be read; it stays stale then)."""
        if self._stale:
            cache: dict[int, Any] = {}
            for name in self.store.children(self.key):
                if name.isdigit():
                    cache[int(name)] = self.store.get(f"{self.key}/{name}")
            self.cache = cache
            self._stale = False
        return self.cache

    def reload(self) -> None:
        """Read the store again before the cache is next used (another writer changed it)."""
        self._stale = True

    def has(self, txid: int) -> bool:
        return txid in self._fresh()

    def has_later(self, txid: int) -> bool:
        """True when a transaction id above ``txid`` has a state."""
        return any(t > txid for t in self._fresh())

    def get(self, txid: int) -> Any:
        return self._fresh().get(txid)

    def last_before(self, txid: int) -> Any:
        """The state of the highest transaction id below ``txid``, or None."""
        cache = self._fresh()
        lower = [t for t in cache if t < txid]
        return cache[max(lower)] if lower else None

    def last(self) -> Any:
        cache = self._fresh()
        return cache[max(cache)] if cache else None

    def get_or_create(self, txid: int, init: Callable[[int, Any], Any]) -> tuple[Any, bool]:
        """(state, created): the stored state of ``txid``, or ``init(txid, previous state)``
        stored first."""
        cache = self._fresh()
        if txid in cache:
            return cache[txid], False
        value = init(txid, self.last_before(txid))
        self.put(txid, value)
        return value, True

    def put(self, txid: int, value: Any) -> None:
        try:
            self.store.put(f"{self.key}/{txid}", value)
        except BaseException:
            self._stale = True  # the write may have been applied: the store decides
            raise
        self._fresh()[txid] = value

    def remove(self, txid: int) -> None:
        if txid in self._fresh():
            self._delete(txid)

    def cleanup_before(self, txid: int) -> None:
        """Forget every transaction below ``txid`` (the last committed one is kept)."""
        for t in sorted(t for t in self._fresh() if t < txid):
            self._delete(t)

    def _delete(self, txid: int) -> None:
        try:
            self.store.delete(f"{self.key}/{txid}")
        except BaseException:
            self._stale = True
            raise
        self.cache.pop(txid, None)
