"""Test topology for fields grouping across processes (bundled and run by real workers).

``keyed(out_dir, keys)``: two spout tasks each emit every key ``(word, n)`` once, tagged with the
emitting task; four sink tasks, fields-grouped on both key fields, append ``word n emitter`` lines
to ``<out_dir>/sink-<task>.log``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple


class KeySpout(Spout):
    """Emits ``[word, n, emitter task]`` for ``keys`` distinct (word, n) keys, once each."""

    outputs = ["word", "n", "emitter"]

    def __init__(self, keys: int = 40) -> None:
        self.keys = keys

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.task = context.task_id
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.keys:
            self.emit([f"word-{self.i % 7}", self.i, self.task], msg_id=self.i)
            self.i += 1


class KeyLog(Bolt):
    """Appends each tuple's key and emitter to its task's log file, then acks it."""

    outputs: list[str] = []

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.file = open(Path(self.out_dir) / f"sink-{context.task_id}.log", "a")  # noqa: SIM115

    def execute(self, tup: Tuple) -> None:
        word, n, emitter = tup.values
        self.file.write(f"{word} {n} {emitter}\n")
        self.file.flush()
        self.ack(tup)

    def cleanup(self) -> None:
        self.file.close()


def keyed(out_dir: str, keys: int = 40) -> Any:
    b = TopologyBuilder()
    b.set_spout("keys", KeySpout, 2, kwargs={"keys": keys})
    b.set_bolt("sink", KeyLog, 4, kwargs={"out_dir": out_dir}).fields_grouping("keys", ["word", "n"])
    return b.create_topology()
