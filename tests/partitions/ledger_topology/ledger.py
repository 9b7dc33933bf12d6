"""A reliable topology whose source of truth is an SQLite ledger outside the cluster.

The ledger (``<dir>/ledger.db``, WAL mode, shared by the test and every worker through the file
system) holds:

* ``messages(id, emits, acks)``: the test inserts the ids to process (:func:`add_ids`); the spout
  counts each emit and each ack of an id there. An id is done when ``acks > 0``.
* ``emitted(id, task, pid, at)``: one row per spout emit; ``processed(id, task, pid, at)``: one row
  per tuple the sink processed (task id, worker pid, unix time).

``LedgerSpout`` (task ``i`` of ``n`` owns the ids ``id % n == i``) emits every id of its share not
acked yet, at most ``rate`` per second, re-reading the ledger for new ids every 0.3 s and at
``open`` (so a restarted or moved task replays everything not acked); a failed id is emitted again.
``Relay`` passes ids on (anchored), ``Sink`` records and acks them. The topology is
``source (2) -shuffle-> relay (2) -fields(id)-> sink (2)``, on two workers, so tuples cross the
link between the supervisors' hosts.

At-least-once, checked by :func:`audit`: every id acked (lost = 0) and no id processed by the sink
more times than the spout emitted it (more would be a tuple doubled inside the cluster).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stormpy import BasicBolt, Bolt, Spout, TopologyBuilder, TopologyContext, TopologySpec, Tuple

SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, emits INTEGER NOT NULL DEFAULT 0,
                                     acks INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS emitted (id INTEGER NOT NULL, task INTEGER NOT NULL, pid INTEGER NOT NULL,
                                    at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS processed (id INTEGER NOT NULL, task INTEGER NOT NULL, pid INTEGER NOT NULL,
                                      at REAL NOT NULL);
"""


def connect(directory: str | os.PathLike[str]) -> sqlite3.Connection:
    """A connection to the ledger in ``directory`` (created when missing), autocommit, WAL."""
    db = sqlite3.connect(Path(directory) / "ledger.db", timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def add_ids(directory: str | os.PathLike[str], ids: Iterable[int]) -> None:
    """Put ``ids`` into the ledger for the spout to emit."""
    db = connect(directory)
    try:
        db.executemany("INSERT OR IGNORE INTO messages (id) VALUES (?)", [(i,) for i in ids])
    finally:
        db.close()


class LedgerSpout(Spout):
    outputs = ["id", "pad"]

    def __init__(self, ledger_dir: str, rate: float = 20.0, pad: int = 0) -> None:
        self.ledger_dir = ledger_dir
        self.rate = rate
        self.pad = "x" * pad

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.index, self.n = context.task_index, len(context.component_tasks)
        self.task = context.task_id
        self.pid = os.getpid()
        self.db = connect(self.ledger_dir)
        self.pending: list[int] = []
        self.in_flight: set[int] = set()
        self.replay: list[int] = []
        self.next_at = time.monotonic()
        self.read_at = 0.0

    def _refresh(self) -> None:
        rows = self.db.execute("SELECT id FROM messages WHERE acks = 0 AND id % ? = ? ORDER BY id",
                               (self.n, self.index)).fetchall()
        queued = set(self.pending) | self.in_flight | set(self.replay)
        self.pending.extend(i for (i,) in rows if i not in queued)
        self.pending.sort(reverse=True)

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now >= self.read_at:
            self.read_at = now + 0.3
            self._refresh()
        if now < self.next_at:
            return
        i = self.replay.pop() if self.replay else (self.pending.pop() if self.pending else None)
        if i is None:
            return
        self.next_at = max(self.next_at + 1.0 / self.rate, now - 1.0)
        self.in_flight.add(i)
        self.db.execute("UPDATE messages SET emits = emits + 1 WHERE id = ?", (i,))
        self.db.execute("INSERT INTO emitted VALUES (?, ?, ?, ?)", (i, self.task, self.pid, time.time()))
        self.emit([i, self.pad], msg_id=i)

    def ack(self, msg_id: int) -> None:
        self.in_flight.discard(msg_id)
        self.db.execute("UPDATE messages SET acks = acks + 1 WHERE id = ?", (msg_id,))

    def fail(self, msg_id: int) -> None:
        self.in_flight.discard(msg_id)
        self.replay.append(msg_id)

    def close(self) -> None:
        self.db.close()


class Relay(BasicBolt):
    outputs = ["id"]

    def process(self, tup: Tuple) -> None:
        self.emit([tup.values[0]])


class Sink(Bolt):
    def __init__(self, ledger_dir: str) -> None:
        self.ledger_dir = ledger_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.task = context.task_id
        self.pid = os.getpid()
        self.db = connect(self.ledger_dir)

    def execute(self, tup: Tuple) -> None:
        self.db.execute("INSERT INTO processed VALUES (?, ?, ?, ?)",
                        (tup.values[0], self.task, self.pid, time.time()))
        self.ack(tup)

    def cleanup(self) -> None:
        self.db.close()


def build(ledger_dir: str, rate: float = 20.0, pad: int = 0) -> TopologySpec:
    """``pad``: characters of padding each spout tuple carries (to the relay only), to make the
    traffic between workers heavy enough to fill the transfer buffers during a cut."""
    builder = TopologyBuilder()
    builder.set_spout("source", LedgerSpout, 2, kwargs={"ledger_dir": ledger_dir, "rate": rate, "pad": pad})
    builder.set_bolt("relay", Relay, 2).shuffle_grouping("source")
    builder.set_bolt("sink", Sink, 2, kwargs={"ledger_dir": ledger_dir}).fields_grouping("relay", ["id"])
    return builder.create_topology()


def topology() -> TopologySpec:
    """For ``stormpy jar``: the ledger directory from ``LEDGER_DIR``."""
    return build(os.environ["LEDGER_DIR"], float(os.environ.get("LEDGER_RATE", "20")))


# -- reading the ledger (the tests; never the workers) ----------------------------------------------------
@dataclass
class Audit:
    """What the ledger says after a run."""

    expected: int
    acked: int
    lost: list[int]
    emits: int
    processed: int
    replayed: int                               # ids emitted more than once
    duplicates: int                             # sink deliveries beyond the first, all ids
    doubled: list[int] = field(default_factory=list)   # ids the sink saw more often than emitted

    def summary(self) -> str:
        return (f"ids={self.expected} acked={self.acked} lost={len(self.lost)} emits={self.emits} "
                f"replayed ids={self.replayed} processed={self.processed} duplicates={self.duplicates} "
                f"doubled beyond at-least-once={len(self.doubled)}")


def acked_count(directory: str | os.PathLike[str]) -> int:
    db = connect(directory)
    try:
        return int(db.execute("SELECT COUNT(*) FROM messages WHERE acks > 0").fetchone()[0])
    finally:
        db.close()


def audit(directory: str | os.PathLike[str]) -> Audit:
    db = connect(directory)
    try:
        messages = {i: (e, a) for i, e, a in db.execute("SELECT id, emits, acks FROM messages")}
        seen = Counter(i for (i,) in db.execute("SELECT id FROM processed"))
    finally:
        db.close()
    lost = sorted(i for i, (_, a) in messages.items() if a == 0)
    doubled = sorted(i for i, n in seen.items() if n > messages.get(i, (0, 0))[0])
    return Audit(expected=len(messages), acked=len(messages) - len(lost), lost=lost,
                 emits=sum(e for e, _ in messages.values()), processed=sum(seen.values()),
                 replayed=sum(1 for e, _ in messages.values() if e > 1),
                 duplicates=sum(n - 1 for n in seen.values() if n > 1), doubled=doubled)


def overlaps(directory: str | os.PathLike[str], table: str = "processed") -> dict[int, float]:
    """task → the longest time two worker processes were both active for it (seconds; from the
    first to the last row each process wrote for the task), for tasks run by several processes."""
    if table not in ("processed", "emitted"):
        raise ValueError(f"table must be processed or emitted, got {table!r}")
    db = connect(directory)
    try:
        spans = db.execute(f"SELECT task, pid, MIN(at), MAX(at) FROM {table} GROUP BY task, pid").fetchall()
    finally:
        db.close()
    by_task: dict[int, list[tuple[float, float]]] = {}
    for task, _pid, start, end in spans:
        by_task.setdefault(task, []).append((start, end))
    out = {}
    for task, runs in by_task.items():
        if len(runs) > 1:
            out[task] = max(max(0.0, min(e1, e2) - max(s1, s2))
                            for k, (s1, e1) in enumerate(runs) for (s2, e2) in runs[k + 1:])
    return out


def pids_by_task(directory: str | os.PathLike[str], table: str = "processed") -> dict[int, set[int]]:
    db = connect(directory)
    try:
        rows = db.execute(f"SELECT DISTINCT task, pid FROM {table}").fetchall()  # noqa: S608 - fixed names
    finally:
        db.close()
    out: dict[int, set[int]] = {}
    for task, pid in rows:
        out.setdefault(task, set()).add(pid)
    return out


config = {"topology.workers": 2, "topology.message.timeout.secs": 6}


def rows_of_pids(directory: str | os.PathLike[str], table: str, pids: set[int]) -> list[float]:
    """Times of the rows of ``table`` (processed or emitted) written by the processes ``pids``."""
    if table not in ("processed", "emitted"):
        raise ValueError(f"table must be processed or emitted, got {table!r}")
    db = connect(directory)
    try:
        return [at for (pid, at) in db.execute(f"SELECT pid, at FROM {table}") if pid in pids]
    finally:
        db.close()


def acked_among(directory: str | os.PathLike[str], ids: range) -> int:
    """How many of ``ids`` are acked."""
    db = connect(directory)
    try:
        return int(db.execute("SELECT COUNT(*) FROM messages WHERE acks > 0 AND id >= ? AND id < ?",
                              (ids.start, ids.stop)).fetchone()[0])
    finally:
        db.close()
