"""Where the coordinator and the partitioned emitters keep their state: a small key → document
store (msgpack documents under slash-separated keys), with a ZooKeeper and an in-memory back end.

The ZooKeeper store lives under ``<transactional.zookeeper.root>/<transactional id>`` on
``transactional.zookeeper.servers`` (default: ``storm.zookeeper.servers``); every operation is
bounded (``transactional.zookeeper.operation.timeout.secs``) so a lost ZooKeeper never wedges the
executor loop: operations raise ``StoreUnavailable`` instead, and callers retry later.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import msgpack

from stormpy.cluster import ClusterStateError, ZkStorage
from stormpy.cluster.zk_hosts import hosts_from_config


class StoreUnavailable(RuntimeError):
    """The store cannot be reached right now; try again later."""


class TransactionalStore:
    """Key → msgpack document. Keys are relative, slash-separated (``coordinator/meta/7``)."""

    def available(self) -> bool:
        """True when operations are expected to succeed now."""
        return True

    def get(self, key: str) -> Any:
        """The document at ``key``, or None."""
        raise NotImplementedError

    def put(self, key: str, value: Any) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove ``key`` and everything below it (no error when missing)."""
        raise NotImplementedError

    def children(self, key: str) -> list[str]:
        """Names directly below ``key`` (empty when missing)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections; idempotent."""


class MemoryStore(TransactionalStore):
    """In-process store (tests, ``transactional.store: memory``): shared by every task of the
    process under the same name, lost with the process."""

    _shared: dict[str, dict[str, Any]] = {}
    _lock = threading.Lock()

    def __init__(self, name: str) -> None:
        with self._lock:
            self._data = self._shared.setdefault(name, {})

    @classmethod
    def forget(cls, name: str) -> None:
        with cls._lock:
            cls._shared.pop(name, None)

    def get(self, key: str) -> Any:
        with self._lock:
            raw = self._data.get(key.strip("/"))
        return None if raw is None else msgpack.unpackb(raw, raw=False, strict_map_key=False)

    def put(self, key: str, value: Any) -> None:
        raw = msgpack.packb(value)
        with self._lock:
            self._data[key.strip("/")] = raw

    def delete(self, key: str) -> None:
        k = key.strip("/")
        with self._lock:
            for name in [n for n in self._data if n == k or n.startswith(k + "/")]:
                del self._data[name]

    def children(self, key: str) -> list[str]:
        prefix = key.strip("/") + "/"
        with self._lock:
            return sorted({n[len(prefix):].split("/")[0] for n in self._data
                           if n.startswith(prefix)})


class ZkStore(TransactionalStore):
    """The store on ZooKeeper, under ``root`` (an absolute znode path)."""

    def __init__(self, hosts: str, root: str, *, operation_timeout_secs: float = 2.0,
                 connect_timeout_secs: float = 15.0, session_timeout_secs: float = 20.0) -> None:
        self.root = root.rstrip("/")
        self._zk = ZkStorage(hosts, self.root, connect_timeout_secs=connect_timeout_secs,
                             session_timeout_secs=session_timeout_secs,
                             operation_timeout_secs=operation_timeout_secs)
        try:
            self._zk.start()
        except ClusterStateError as exc:
            raise StoreUnavailable(f"transactional state: {exc}") from exc

    def _path(self, key: str) -> str:
        key = key.strip("/")
        return f"{self.root}/{key}" if key else self.root

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ClusterStateError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def available(self) -> bool:
        return self._zk.connected

    def get(self, key: str) -> Any:
        raw = self._call(lambda: self._zk.get(self._path(key)))
        return None if not raw else msgpack.unpackb(raw, raw=False, strict_map_key=False)

    def put(self, key: str, value: Any) -> None:
        raw = msgpack.packb(value)
        self._call(lambda: self._zk.set(self._path(key), raw))

    def delete(self, key: str) -> None:
        self._call(lambda: self._zk.delete(self._path(key), recursive=True))

    def children(self, key: str) -> list[str]:
        return sorted(self._call(lambda: self._zk.children(self._path(key))))

    def close(self) -> None:
        self._zk.close()


def zookeeper_hosts(conf: Mapping[str, Any]) -> str:
    """``host:port,...`` from ``transactional.zookeeper.servers``/``.port``, falling back to
    ``storm.zookeeper.servers``/``.port``."""
    return hosts_from_config(conf, servers=conf.get("transactional.zookeeper.servers"),
                             port=conf.get("transactional.zookeeper.port"),
                             servers_setting="transactional.zookeeper.servers",
                             port_setting="transactional.zookeeper.port")


def open_store(conf: Mapping[str, Any], transactional_id: str) -> TransactionalStore:
    """The store of the transactional topology ``transactional_id`` as ``conf`` configures it
    (``transactional.store``: ``zookeeper``, the default, or ``memory``)."""
    kind = conf.get("transactional.store") or "zookeeper"
    if kind == "memory":
        return MemoryStore(transactional_id)
    if kind != "zookeeper":
        raise ValueError(f"transactional.store must be 'zookeeper' or 'memory', got {kind!r}")
    root = str(conf.get("transactional.zookeeper.root") or "/transactional").rstrip("/")
    if not root.startswith("/"):
        raise ValueError(f"transactional.zookeeper.root must be an absolute path, got {root!r}")
    return ZkStore(zookeeper_hosts(conf), f"{root}/{transactional_id}",
                   operation_timeout_secs=float(
                       conf.get("transactional.zookeeper.operation.timeout.secs") or 2.0),
                   connect_timeout_secs=float(
                       conf.get("storm.zookeeper.connection.timeout", 15000)) / 1000,
                   session_timeout_secs=float(
                       conf.get("storm.zookeeper.session.timeout", 20000)) / 1000)


class RotatingState:
    """Metadata per transaction id under one key of a store (Storm's rotating transactional
    state): written once when a transaction is first started, read back on replays, and dropped
    once transactions before it committed. Cached in memory; the store is the truth after a
    restart, and after a write that failed (it may have been applied all the same: a timed-out
    ZooKeeper write), so the cache is reloaded from the store before it is used again."""

    def __init__(self, store: TransactionalStore, key: str) -> None:
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
