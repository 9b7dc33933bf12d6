"""Durable key → document stores shared by stateful bolts (:mod:`stormpy.state`) and transactional
topologies (:mod:`stormpy.transactional.state`): SQLite (a file, embedded), ZooKeeper (small
state, one znode per key) and memory (one process).

Contract: keys are non-empty strings without ``/``; values are msgpack data; each ``put`` or
``delete`` of one key is atomic (``put_many``/``delete_many`` are atomic as a whole on SQLite and
memory, key by key on ZooKeeper). A back end that cannot be reached raises
:class:`~stormpy.topology.state.StateUnavailableError`, bytes that do not decode raise
:class:`~stormpy.topology.state.CorruptStateError`; both name the store and the key.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgpack

from stormpy.cluster import ClusterStateError, ZkStorage
from stormpy.topology.state import CorruptStateError, StateKeyError, StateUnavailableError

__all__ = ["DocStore", "MemoryDocStore", "SqliteDocStore", "ZkDocStore", "pack", "unpack"]

#: how long opening a SQLite store waits for a lock held by another connection (the busy
#: timeout, and the retries of the journal-mode switch)
OPEN_TIMEOUT_SECS = 30.0
LOCKED_RETRY_SECS = 0.01


def pack(value: Any) -> bytes:
    return msgpack.packb(value)


def unpack(raw: bytes) -> Any:
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


class DocStore:
    """Key → msgpack document (see the module contract). ``location`` names the store in
    errors."""

    location = "store"

    def get(self, key: str) -> Any:
        """The document at ``key``, or None."""
        raise NotImplementedError

    def put(self, key: str, value: Any) -> None:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error when missing)."""
        raise NotImplementedError

    def names(self) -> list[str]:
        """Every key, sorted."""
        raise NotImplementedError

    def put_many(self, items: Mapping[str, Any]) -> None:
        for key, value in items.items():
            self.put(key, value)

    def delete_many(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.delete(key)

    def close(self) -> None:
        """Release the back end; idempotent."""

    def check_key(self, key: str) -> str:
        if not isinstance(key, str) or not key or "/" in key:
            raise StateKeyError(self.location, f"keys are non-empty strings without '/', got "
                                f"{key!r}")
        return key

    def _decode(self, key: str, raw: bytes) -> Any:
        try:
            return unpack(raw)
        except Exception as exc:  # noqa: BLE001 - any decoding failure means corrupt bytes
            raise CorruptStateError(f"{self.location} key {key!r}",
                                    f"stored bytes do not decode ({exc})") from None


class MemoryDocStore(DocStore):
    """In-process store, shared by every user of the same ``name`` in this process, lost with
    it (local mode)."""

    _shared: dict[str, dict[str, bytes]] = {}
    _lock = threading.Lock()

    def __init__(self, name: str) -> None:
        self.location = f"memory store {name!r}"
        with self._lock:
            self._data = self._shared.setdefault(name, {})

    @classmethod
    def forget(cls, name: str) -> None:
        with cls._lock:
            cls._shared.pop(name, None)

    def get(self, key: str) -> Any:
        with self._lock:
            raw = self._data.get(self.check_key(key))
        return None if raw is None else self._decode(key, raw)

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def put_many(self, items: Mapping[str, Any]) -> None:
        packed = {self.check_key(k): pack(v) for k, v in items.items()}
        with self._lock:
            self._data.update(packed)

    def delete(self, key: str) -> None:
        self.delete_many([key])

    def delete_many(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._data.pop(key, None)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._data)


class SqliteDocStore(DocStore):
    """Documents in table ``table`` of the SQLite file ``path`` (created when missing), under
    ``prefix`` (several stores may share a table). Safe across processes (WAL, busy timeout)."""

    def __init__(self, path: str | Path, table: str = "stormpy_state", prefix: str = "") -> None:
        if not table.replace("_", "").isalnum():
            raise ValueError(f"table name must be letters, digits and '_', got {table!r}")
        self.path = str(path)
        self.table = table
        self.prefix = prefix
        self.location = f"sqlite {self.path} table {table}" + (f" prefix {prefix!r}" if prefix
                                                                else "")
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                       timeout=OPEN_TIMEOUT_SECS)
            self._set_up(self._db, table)
        except sqlite3.OperationalError as exc:  # locked or unreachable: not a damaged file
            self.close()
            raise StateUnavailableError(self.location, f"cannot open ({exc})") from None
        except sqlite3.DatabaseError as exc:
            self.close()
            raise CorruptStateError(self.location, f"cannot open ({exc})") from None
        except sqlite3.Error as exc:
            self.close()
            raise StateUnavailableError(self.location, f"cannot open ({exc})") from None

    @staticmethod
    def _set_up(db: sqlite3.Connection, table: str) -> None:
        """WAL mode and the table. Switching the journal mode can answer "database is locked"
        at once, without the busy timeout, while another connection opens or closes the same
        file (its last close checkpoints the WAL): retried until OPEN_TIMEOUT_SECS."""
        deadline = time.monotonic() + OPEN_TIMEOUT_SECS
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                           "(key TEXT PRIMARY KEY, doc BLOB NOT NULL)")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(LOCKED_RETRY_SECS)

    def _run(self, key: str, sql: str, args: Any = (), many: bool = False) -> list[Any]:
        with self._lock:
            if self._db is None:
                raise StateUnavailableError(f"{self.location} key {key!r}", "store is closed")
            try:
                if many:
                    self._db.execute("BEGIN IMMEDIATE")
                    try:
                        self._db.executemany(sql, args)
                    except BaseException:
                        self._db.execute("ROLLBACK")
                        raise
                    self._db.execute("COMMIT")
                    return []
                return self._db.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                raise CorruptStateError(f"{self.location} key {key!r}", str(exc)) from None

    def get(self, key: str) -> Any:
        rows = self._run(key, f"SELECT doc FROM {self.table} WHERE key = ?",
                         (self.prefix + self.check_key(key),))
        return self._decode(key, rows[0][0]) if rows else None

    def put(self, key: str, value: Any) -> None:
        self._run(key, f"INSERT OR REPLACE INTO {self.table} (key, doc) VALUES (?, ?)",
                  (self.prefix + self.check_key(key), pack(value)))

    def put_many(self, items: Mapping[str, Any]) -> None:
        if items:
            rows = [(self.prefix + self.check_key(k), pack(v)) for k, v in items.items()]
            self._run(rows[0][0], f"INSERT OR REPLACE INTO {self.table} (key, doc) VALUES (?, ?)",
                      rows, many=True)

    def delete(self, key: str) -> None:
        self._run(key, f"DELETE FROM {self.table} WHERE key = ?", (self.prefix + key,))

    def delete_many(self, keys: Iterable[str]) -> None:
        rows = [(self.prefix + k,) for k in keys]
        if rows:
            self._run(rows[0][0], f"DELETE FROM {self.table} WHERE key = ?", rows, many=True)

    def names(self) -> list[str]:
        n = len(self.prefix)
        rows = self._run("*", f"SELECT key FROM {self.table} WHERE substr(key, 1, ?) = ? "
                         "ORDER BY key", (n, self.prefix))
        return [r[0][n:] for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class ZkDocStore(DocStore):
    """One znode per key under ``root`` on ``hosts`` (``"h:2181,..."``); every call bounded by
    ``operation_timeout_secs``. Documents stay small (ZooKeeper refuses nodes near 1 MiB)."""

    def __init__(self, hosts: str, root: str, *, operation_timeout_secs: float = 10.0,
                 connect_timeout_secs: float = 15.0) -> None:
        self.root = root.rstrip("/")
        self.location = f"zookeeper {hosts} {self.root}"
        try:
            self._zk = ZkStorage(hosts, self.root, operation_timeout_secs=operation_timeout_secs,
                                 connect_timeout_secs=connect_timeout_secs).start()
        except ClusterStateError as exc:
            raise StateUnavailableError(self.location, f"cannot connect ({exc})") from None

    def _call(self, key: str, fn: Any) -> Any:
        try:
            return fn()
        except ClusterStateError as exc:
            raise StateUnavailableError(f"{self.location} key {key!r}", str(exc)) from None

    def get(self, key: str) -> Any:
        path = f"{self.root}/{self.check_key(key)}"
        raw = self._call(key, lambda: self._zk.get(path))
        return self._decode(key, raw) if raw else None

    def put(self, key: str, value: Any) -> None:
        path, raw = f"{self.root}/{self.check_key(key)}", pack(value)
        self._call(key, lambda: self._zk.set(path, raw))

    def delete(self, key: str) -> None:
        path = f"{self.root}/{self.check_key(key)}"
        self._call(key, lambda: self._zk.delete(path, recursive=False))

    def names(self) -> list[str]:
        return sorted(self._call("*", lambda: self._zk.children(self.root)))

    def close(self) -> None:
        self._zk.close()
