"""Exactly-once state: values stored with the transaction id that last changed them.

A committer applies a batch to a key only when the stored txid differs from the batch's (the
seed's ``UpdateGlobalCount``): commits happen in txid order, so an equal txid means this batch was
already applied by an earlier attempt of the same commit. ``TransactionalValue(txid, value)`` is
enough when a replayed batch is identical (transactional and partitioned spouts);
``OpaqueValue(txid, previous, current)`` also keeps the value before the last txid, so a replay
with different content (opaque spouts) recomputes from ``previous``.

Back ends: ``SqliteState`` (a file database, no server) and ``ZkState`` (ZooKeeper), both on the
stores of the state layer (:mod:`stormpy.state`) that stateful bolts use too; any other store of
the layer works as well (``TransactionalState(store)``, e.g. a memory backend's in tests). Values
are msgpack-serialisable data. Each update of a key is atomic; a batch's keys are independent, so a
crash between two keys is repaired by the replay (updated keys are skipped, the others applied).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormpy.cluster.paths import ZkPaths
from stormpy.config import setting
from stormpy.state._base import Store
from stormpy.state._sqlite import SqliteStore
from stormpy.state._zookeeper import open_zk_store
from stormpy.transactional._settings import transactional_settings
from stormpy.transactional._store import zookeeper_hosts


@dataclass(frozen=True)
class TransactionalValue:
    """``value`` as of transaction ``txid``."""

    txid: int
    value: Any


@dataclass(frozen=True)
class OpaqueValue:
    """``current`` as of transaction ``txid``; ``previous`` is the value before ``txid``."""

    txid: int
    previous: Any
    current: Any

    def next(self, txid: int, fn: Callable[[Any], Any]) -> OpaqueValue:
        """The value after applying batch ``txid`` with ``fn(base)``: from ``previous`` when
        ``txid`` is the stored one (a replay whose content may differ), else from ``current``."""
        base = self.previous if txid == self.txid else self.current
        return OpaqueValue(txid, base, fn(base))


class TransactionalState:
    """Key → ``[txid, previous, current]`` documents in ``store`` (a store of the state layer;
    the write of one key is atomic)."""

    def __init__(self, store: Store) -> None:
        self._docs = store

    def _read(self, key: str) -> list[Any] | None:
        doc = self._docs.get(key)
        return None if doc is None else list(doc)

    def _write(self, key: str, doc: list[Any]) -> None:
        self._docs.put(key, doc)

    def keys(self) -> Iterator[str]:
        return iter(self._docs.children())

    def close(self) -> None:
        """Release the back end; idempotent."""
        self._docs.close()

    @staticmethod
    def _key(key: str) -> str:
        if not isinstance(key, str) or not key or "/" in key:
            raise ValueError(f"state keys are non-empty strings without '/', got {key!r}")
        return key

    def get(self, key: str) -> TransactionalValue | None:
        doc = self._read(self._key(key))
        return None if doc is None else TransactionalValue(doc[0], doc[2])

    def put(self, key: str, value: TransactionalValue) -> None:
        self._write(self._key(key), [value.txid, None, value.value])

    def update(self, key: str, txid: int, fn: Callable[[Any], Any]) -> TransactionalValue:
        """Apply ``fn(old value or None)`` for batch ``txid`` unless the stored txid is ``txid``
        already; returns the stored value."""
        old = self.get(key)
        if old is not None and old.txid == txid:
            return old
        new = TransactionalValue(txid, fn(None if old is None else old.value))
        self.put(key, new)
        return new

    def get_opaque(self, key: str) -> OpaqueValue | None:
        doc = self._read(self._key(key))
        return None if doc is None else OpaqueValue(doc[0], doc[1], doc[2])

    def put_opaque(self, key: str, value: OpaqueValue) -> None:
        self._write(self._key(key), [value.txid, value.previous, value.current])

    def update_opaque(self, key: str, txid: int, fn: Callable[[Any], Any]) -> OpaqueValue:
        """Apply ``fn(base)`` for batch ``txid`` the opaque way (see ``OpaqueValue.next``)."""
        old = self.get_opaque(key) or OpaqueValue(0, None, None)
        new = old.next(txid, fn)
        self.put_opaque(key, new)
        return new


class SqliteState(TransactionalState):
    """State in a SQLite file (created when missing), table ``table`` (the state layer's
    :class:`~stormpy.state._sqlite.SqliteStore`)."""

    def __init__(self, path: str | Path, table: str = "transactional_state") -> None:
        super().__init__(SqliteStore(path, table))
        self.path = str(path)
        self.table = table


class ZkState(TransactionalState):
    """State in ZooKeeper, one znode per key under ``root`` on ``hosts`` (``"h:2181,..."``), on a
    connection of its own (the state layer's :func:`~stormpy.state._zookeeper.open_zk_store`)."""

    def __init__(self, hosts: str, root: str, *, operation_timeout_secs: float = 10.0) -> None:
        self.root = root.rstrip("/")
        super().__init__(open_zk_store(hosts, self.root,
                                       operation_timeout_secs=operation_timeout_secs))

    @classmethod
    def from_config(cls, conf: Mapping[str, Any], name: str) -> ZkState:
        """State ``name`` on the transactional ZooKeeper servers (``transactional.zookeeper.*``,
        default ``storm.zookeeper.*``): under ``<transactional.zookeeper.root>/state/<name>``
        when that root is set, else at ``<storm.zookeeper.root>/transactional/state:<name>``.
        SettingError naming a bad setting."""
        settings = transactional_settings(conf)
        cls._key(name)
        hosts = zookeeper_hosts(conf)
        if settings.root is not None:
            return cls(hosts, f"{settings.root}/state/{name}")
        root = str(setting(conf, "storm.zookeeper.root"))
        return cls(hosts, ZkPaths(root).named_state("transactional", "state", name))
