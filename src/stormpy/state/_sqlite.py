"""The state layer's SQLite backend: a store in a file, embedded, no server (stateful bolts'
``topology.state.provider: sqlite``, transactional ``SqliteState``).

One row per key path in table ``table`` (``key TEXT PRIMARY KEY, doc BLOB``; any name
:func:`is_table_name` accepts, quoted in every statement, so ``order`` is a name too); a key path
is the store's base path and the key's segments, each percent-encoded
(:func:`~stormpy.cluster.paths.encode_segment`) and joined by ``/``, so ``children`` and recursive
``delete`` are range queries (every path below ``p`` sorts between ``p/`` and ``p0``). Several
stores may share a table under different bases. Safe across processes (WAL, busy timeout);
``put_many``/``delete_many``, ``write_batch``/``write_encoded`` and ``update`` are one
transaction each. A file that cannot be opened because it is locked raises
:class:`~stormpy.topology._state.StateUnavailableError`, a damaged one
:class:`~stormpy.topology._state.CorruptStateError`; both name the file.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from stormpy.cluster.paths import decode_segment, encode_segment
from stormpy.config.state import DEFAULT_TABLE, TABLE_NAME_RULE, is_table_name
from stormpy.state._base import Store, check_segments, root_or_segments
from stormpy.topology._state import (
    CorruptStateError,
    StateUnavailableError,
    decode_state,
    encode_state,
)

__all__ = ["DEFAULT_TABLE", "OPEN_TIMEOUT_SECS", "SqliteStore", "TABLE_NAME_RULE", "is_table_name"]

#: how long opening a SQLite store waits for a lock held by another connection (the busy
#: timeout, and the retries of the journal-mode switch)
OPEN_TIMEOUT_SECS = 30.0
LOCKED_RETRY_SECS = 0.01


class _Db:
    """One connection shared by a store and its ``sub`` stores, used under one lock."""

    def __init__(self, path: str, table: str, location: str) -> None:
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        try:
            self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None,
                                        timeout=OPEN_TIMEOUT_SECS)
            SqliteStore._set_up(self.conn, table)
        except sqlite3.OperationalError as exc:  # locked or unreachable: not a damaged file
            self.close()
            raise StateUnavailableError(location, f"cannot open ({exc})") from None
        except sqlite3.DatabaseError as exc:
            self.close()
            raise CorruptStateError(location, f"cannot open ({exc})") from None
        except sqlite3.Error as exc:
            self.close()
            raise StateUnavailableError(location, f"cannot open ({exc})") from None

    def close(self) -> None:
        with self.lock:
            if self.conn is not None:
                self.conn.close()
                self.conn = None


class SqliteStore(Store):
    """The keys below ``base`` (a ``/``-separated path; ``""``: the whole table; or given as
    ``segments``, each one segment that may hold a ``/``) of table ``table`` in the SQLite file
    ``path`` (created when missing)."""

    def __init__(self, path: str | Path, table: str = DEFAULT_TABLE, base: str = "", *,
                 prefix: str | None = None, segments: tuple[str, ...] | None = None,
                 _db: _Db | None = None) -> None:
        if not is_table_name(table):
            raise ValueError(f"table name must be {TABLE_NAME_RULE}, got {table!r}")
        self.file = str(path)
        self.table = table
        self._sql_table = f'"{table}"'  # quoted: a keyword is a name like any other
        if prefix is not None:  # the name of earlier releases: a base given as "a/b/"
            base = prefix
        if segments is None:
            segments = tuple(s for s in base.split("/") if s)
        self._segments = check_segments(f"sqlite {self.file}", tuple(segments))
        self._base = "/".join(encode_segment(s) for s in segments)
        self.location = f"sqlite {self.file} table {table}" + (
            f" at {'/'.join(segments)}" if segments else "")
        self.timeout_secs = OPEN_TIMEOUT_SECS
        self._db = _db if _db is not None else _Db(self.file, table, self.location)
        self._owner = _db is None

    @staticmethod
    def _set_up(db: sqlite3.Connection, table: str) -> None:
        """WAL mode and the table. Switching the journal mode can answer "database is locked"
        at once, without the busy timeout, while another connection opens or closes the same
        file (its last close checkpoints the WAL): retried until OPEN_TIMEOUT_SECS."""
        deadline = time.monotonic() + OPEN_TIMEOUT_SECS
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f'CREATE TABLE IF NOT EXISTS "{table}" '
                           "(key TEXT PRIMARY KEY, doc BLOB NOT NULL)")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(LOCKED_RETRY_SECS)

    # -- key paths -----------------------------------------------------------------------------
    def _row(self, key: str) -> str:
        encoded = [encode_segment(s) for s in root_or_segments(self.location, key)]
        return "/".join(([self._base] if self._base else []) + encoded)

    @staticmethod
    def _below(row: str) -> tuple[str, str]:
        """The range of rows strictly below ``row`` (``""``: every row)."""
        return (row + "/", row + "0") if row else ("", "\U0010ffff")

    def _run(self, path: str, work: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._db.lock:
            conn = self._db.conn
            if conn is None:
                raise StateUnavailableError(path, "store is closed")
            try:
                return work(conn)
            except sqlite3.OperationalError as exc:
                raise StateUnavailableError(path, str(exc)) from None
            except sqlite3.DatabaseError as exc:
                raise CorruptStateError(path, str(exc)) from None

    def _transaction(self, path: str, work: Callable[[sqlite3.Connection], Any]) -> Any:
        def run(conn: sqlite3.Connection) -> Any:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result
        return self._run(path, run)

    # -- the store -----------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        row, path = self._row(key), self.where(key)
        rows = self._run(path, lambda c: c.execute(
            f"SELECT doc FROM {self._sql_table} WHERE key = ?", (row,)).fetchall())
        return decode_state(path, rows[0][0]) if rows else default

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def put_many(self, items: Mapping[str, Any]) -> None:
        rows = [(self._row(k), encode_state(self.where(k), v)) for k, v in items.items()]
        if rows:
            self._transaction(self.location, lambda c: c.executemany(
                f"INSERT OR REPLACE INTO {self._sql_table} (key, doc) VALUES (?, ?)", rows))

    def _delete(self, conn: sqlite3.Connection, row: str) -> bool:
        low, high = self._below(row)
        gone = conn.execute(f"DELETE FROM {self._sql_table} WHERE key = ? OR (key >= ? AND key < ?)",
                            (row, low, high)).rowcount
        return bool(gone)

    def delete(self, key: str) -> bool:
        row = self._row(key)
        return bool(self._transaction(self.where(key), lambda c: self._delete(c, row)))

    def delete_many(self, keys: Iterable[str]) -> None:
        rows = [self._row(k) for k in keys]
        if rows:
            self._transaction(self.location, lambda c: [self._delete(c, r) for r in rows])

    def write_batch(self, puts: Mapping[str, Any], deletes: Iterable[str] = ()) -> None:
        """Puts, then deletes, in one transaction."""
        self.write_encoded([(k, encode_state(self.where(k), v)) for k, v in puts.items()],
                           deletes)

    def write_encoded(self, puts: Iterable[tuple[str, bytes]], deletes: Iterable[str] = ()
                      ) -> None:
        """``write_batch`` of documents already encoded, in one transaction."""
        rows = [(self._row(k), data) for k, data in puts]
        gone = [self._row(k) for k in deletes]

        def work(conn: sqlite3.Connection) -> None:
            conn.executemany(f"INSERT OR REPLACE INTO {self._sql_table} (key, doc) VALUES (?, ?)",
                             rows)
            for row in gone:
                self._delete(conn, row)
        if rows or gone:
            self._transaction(self.location, work)

    def children(self, key: str = "") -> list[str]:
        row = self._row(key)
        low, high = self._below(row)
        found = self._run(self.where(key), lambda c: c.execute(
            f"SELECT key FROM {self._sql_table} WHERE key >= ? AND key < ?", (low, high)).fetchall())
        start = len(low)
        return sorted({decode_segment(r[0][start:].split("/", 1)[0]) for r in found})

    def scan(self, key: str = "", *, prefix: str = "", page: int = 1000
             ) -> Iterator[tuple[str, Any]]:
        """``key``'s children with values, ``page`` rows per query in key order (never the
        whole table in memory)."""
        row = self._row(key)
        low, high = self._below(row)
        start = low + quote(prefix, safe="")
        end = start + "\U0010ffff" if prefix else high
        after = ""
        query = (f"SELECT key, doc FROM {self._sql_table} WHERE key >= ? AND key < ? AND key > ? "
                 "ORDER BY key LIMIT ?")
        while True:
            bounds = (start, end, after, page)
            rows: list[tuple[str, bytes]] = self._run(
                self.where(key), lambda c: c.execute(query, bounds).fetchall())  # noqa: B023
            for name, doc in rows:
                child = name[len(low):]
                if "/" not in child:
                    decoded = decode_segment(child)
                    yield decoded, decode_state(f"{self.where(key)}/{decoded}", doc)
            if len(rows) < page:
                return
            after = rows[-1][0]

    def update(self, key: str, fn: Callable[[Any], Any]) -> bool:
        row, path = self._row(key), self.where(key)

        def work(conn: sqlite3.Connection) -> bool:
            rows = conn.execute(f"SELECT doc FROM {self._sql_table} WHERE key = ?", (row,)).fetchall()
            new = fn(decode_state(path, rows[0][0]) if rows else None)
            if new is None:
                return False
            conn.execute(f"INSERT OR REPLACE INTO {self._sql_table} (key, doc) VALUES (?, ?)",
                         (row, encode_state(path, new)))
            return True
        return bool(self._transaction(path, work))

    def sub(self, *segments: str) -> SqliteStore:
        check_segments(self.location, segments)
        return SqliteStore(self.file, self.table, _db=self._db,
                           segments=self._segments + segments)

    def close(self) -> None:
        """Close the file (a ``sub`` store leaves it to the store it came from)."""
        if self._owner:
            self._db.close()
