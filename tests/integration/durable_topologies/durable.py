"""The durable spout of the cluster topologies whose workers the tests kill (statecount,
wincount, joinpairs; checked by ``killed_worker_kit``).

Contract: :class:`DurableSpout` emits the ids ``0 .. n-1`` (as the values :meth:`values` gives,
each id its own message id) and records every acked id in the SQLite table ``acked`` and every
fail in the table ``failed`` (one row per fail, as every replay follows one), so a restarted
spout emits only what was never acked and a test reads from the file what was acked and
replayed."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, ClassVar

from stormpy import TopologyContext
from stormpy.topology import Spout


def connect(path: str, wal: bool = False) -> sqlite3.Connection:
    """An autocommit connection to the SQLite file ``path`` (in WAL mode if ``wal``)."""
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    return db


class DurableSpout(Spout):
    """Emits ids ``0 .. n-1`` once each until acked; the ack and fail log in ``database``."""

    #: the ack log in WAL mode (a reader of the file never holds the spout's writes back)
    wal: ClassVar[bool] = False

    def __init__(self, database: str, n: int) -> None:
        self.database = database
        self.n = n

    def values(self, i: int) -> list[Any]:
        """The tuple emitted for id ``i``."""
        raise NotImplementedError

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.db = connect(self.database, self.wal)
        self.db.execute("CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY)")
        self.db.execute("CREATE TABLE IF NOT EXISTS failed (id INTEGER)")
        done = {r[0] for r in self.db.execute("SELECT id FROM acked")}
        self.todo = [i for i in range(self.n) if i not in done]
        self.todo.reverse()

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
            self.emit(self.values(i), msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.db.execute("INSERT INTO failed (id) VALUES (?)", (msg_id,))
        self.todo.append(msg_id)

    def close(self) -> None:
        self.db.close()
