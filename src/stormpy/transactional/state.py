"""Exactly-once state: values stored with the transaction id that last changed them.

A committer applies a batch to a key only when the stored txid differs from the batch's (the
seed's ``UpdateGlobalCount``): commits happen in txid order, so an equal txid means this batch was
already applied by an earlier attempt of the same commit. ``TransactionalValue(txid, value)`` is
enough when a replayed batch is identical (transactional and partitioned spouts);
``OpaqueValue(txid, previous, current)`` also keeps the value before the last txid, so a replay
with different content (opaque spouts) recomputes from ``previous``.

Back ends: ``SqliteState`` (a file database, no server) and ``ZkState`` (ZooKeeper), both on the
document stores of :mod:`stormpy.state.stores` that stateful bolts use too. Values are
msgpack-serialisable data. Each update of a key is atomic; a batch's keys are independent, so a
crash between two keys is repaired by the replay (updated keys are skipped, the others applied).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormpy.state.stores import SqliteDocStore, ZkDocStore
from stormpy.transactional.store import zookeeper_hosts


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
    """Key → ``[txid, previous, current]`` documents; subclasses provide ``_read``/``_write``
    (``_write`` of one key is atomic)."""

    def _read(self, key: str) -> list[Any] | None:
        raise NotImplementedError

    def _write(self, key: str, doc: list[Any]) -> None:
        raise NotImplementedError

    def keys(self) -> Iterator[str]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the back end; idempotent."""

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
    """State in a SQLite file (created when missing), table ``table`` (the shared
    :class:`~stormpy.state.stores.SqliteDocStore`)."""

    def __init__(self, path: str | Path, table: str = "transactional_state") -> None:
        self._docs = SqliteDocStore(path, table)
        self.path = self._docs.path
        self.table = table

    def _read(self, key: str) -> list[Any] | None:
        doc = self._docs.get(key)
        return None if doc is None else list(doc)

    def _write(self, key: str, doc: list[Any]) -> None:
        self._docs.put(key, doc)

    def keys(self) -> Iterator[str]:
        return iter(self._docs.names())

    def close(self) -> None:
        self._docs.close()


class ZkState(TransactionalState):
    """State in ZooKeeper, one znode per key under ``root`` on ``hosts`` (``"h:2181,..."``; the
    shared :class:`~stormpy.state.stores.ZkDocStore`)."""

    def __init__(self, hosts: str, root: str, *, operation_timeout_secs: float = 10.0) -> None:
        self.root = root.rstrip("/")
        self._docs = ZkDocStore(hosts, self.root, operation_timeout_secs=operation_timeout_secs)

    @classmethod
    def from_config(cls, conf: Mapping[str, Any], name: str) -> ZkState:
        """State ``name`` under ``<transactional.zookeeper.root>/state/`` on the transactional
        ZooKeeper servers."""
        root = str(conf.get("transactional.zookeeper.root") or "/transactional").rstrip("/")
        return cls(zookeeper_hosts(conf), f"{root}/state/{cls._key(name)}")

    def _read(self, key: str) -> list[Any] | None:
        doc = self._docs.get(key)
        return None if doc is None else list(doc)

    def _write(self, key: str, doc: list[Any]) -> None:
        self._docs.put(key, doc)

    def keys(self) -> Iterator[str]:
        return iter(self._docs.names())

    def close(self) -> None:
        self._docs.close()
