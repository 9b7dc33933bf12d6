"""Benchmark topology for a persistent window (used by ``python -m bench.persistent_window``):
``numbers`` emits 0..n-1 reliably (message id = the number) and counts acks in the registry;
``window`` (a StatefulWindowedBolt with persistence) keeps a running count and sum of its
sliding count window from each window's new and expired tuples, in its checkpointed state, and
records the last window's (end, count, sum) in the registry."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from stormpy import Spout, TopologyBuilder, TopologyContext
from stormpy.state import KeyValueState
from stormpy.testing import _registry as registry
from stormpy.windowing import Count, StatefulWindowedBolt, Window


class Numbers(Spout):
    outputs = ["v"]

    def __init__(self, key: str, n: int) -> None:
        self.key = key
        self.n = n

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.log: dict[str, Any] = registry.lookup(self.key)
        self.i = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        emit = self.emit
        for _ in range(64):
            if self.replay:
                i = self.replay.pop()
            elif self.i < self.n:
                i = self.i
                self.i += 1
            else:
                return
            emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.log["acked"] += 1

    def fail(self, msg_id: Any) -> None:
        self.log["failed"] += 1
        self.replay.append(msg_id)


class RunningWindowSum(StatefulWindowedBolt):
    outputs = ["end", "count", "sum"]

    def __init__(self, key: str) -> None:
        self.key = key

    def init_state(self, state: KeyValueState) -> None:
        self.state = state
        self.log: dict[str, Any] = registry.lookup(self.key)

    def execute(self, window: Window) -> None:
        n, total = self.state.get("run", [0, 0])
        for t in window.get_new():
            n, total = n + 1, total + t.values[0]
        for t in window.get_expired():
            n, total = n - 1, total - t.values[0]
        self.state.put("run", [n, total])
        self.log["windows"] += 1
        self.log["last"] = (n, total)


def build(key: str, n: int, length: int, slide: int, max_events: int) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"key": key, "n": n})
    b.set_bolt("window", RunningWindowSum.with_window(Count(length), Count(slide))
               .with_persistence().with_max_events_in_memory(max_events),
               kwargs={"key": key}).shuffle_grouping("numbers")
    return b.create_topology()


# -- the kill -9 run (``python -m bench.persistent_window --kill-at F``) ---------------------------
# A process that is killed and started again keeps what must survive in SQLite (``log``): the
# spout's acked ids (so a restarted spout emits only what was never acked, each failed id
# recorded, as in Storm a replay follows a fail) and one row per evaluated window.


def _log_db(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=60)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # survives the process's kill -9 (not the host's)
    db.execute("CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY)")
    db.execute("CREATE TABLE IF NOT EXISTS failed (id INTEGER)")
    db.execute("CREATE TABLE IF NOT EXISTS windows (run INTEGER, count INTEGER, sum INTEGER, "
               "held INTEGER, held_sum INTEGER)")
    return db


class DurableNumbers(Spout):
    """Emits 0..n-1 that are not acked yet (message id = the number), recording acks and fails
    in the log database."""

    outputs = ["v"]

    def __init__(self, log: str, n: int) -> None:
        self.log_path, self.n = log, n

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.db = _log_db(self.log_path)
        done = {r[0] for r in self.db.execute("SELECT id FROM acked")}
        self.todo = [i for i in range(self.n - 1, -1, -1) if i not in done]

    def next_tuple(self) -> None:
        for _ in range(64):
            if not self.todo:
                return
            i = self.todo.pop()
            self.emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("INSERT OR IGNORE INTO acked (id) VALUES (?)", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.db.execute("INSERT INTO failed (id) VALUES (?)", (msg_id,))
        self.todo.append(msg_id)

    def close(self) -> None:
        self.db.close()


class CheckedWindowSum(StatefulWindowedBolt):
    """The running count and sum of ``RunningWindowSum``, and per window, beside them, the count
    and sum of the events the window holds (iterated from the persisted window): one row per
    window in the log database, tagged with the run (0 before the kill, 1 after)."""

    outputs = ["count", "sum"]

    def __init__(self, log: str, run: int) -> None:
        self.log_path, self.run = log, run

    def init_state(self, state: KeyValueState) -> None:
        self.state = state
        self.db = _log_db(self.log_path)

    def execute(self, window: Window) -> None:
        n, total = self.state.get("run", [0, 0])
        for t in window.get_new():
            n, total = n + 1, total + t.values[0]
        for t in window.get_expired():
            n, total = n - 1, total - t.values[0]
        self.state.put("run", [n, total])
        held = held_sum = 0
        for t in window:
            held, held_sum = held + 1, held_sum + t.values[0]
        self.db.execute("INSERT INTO windows VALUES (?, ?, ?, ?, ?)",
                        (self.run, n, total, held, held_sum))


def build_killable(log: str, run: int, n: int, length: int, slide: int, max_events: int) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", DurableNumbers, kwargs={"log": log, "n": n})
    b.set_bolt("window", CheckedWindowSum.with_window(Count(length), Count(slide))
               .with_persistence().with_max_events_in_memory(max_events),
               kwargs={"log": log, "run": run}).shuffle_grouping("numbers")
    return b.create_topology()
