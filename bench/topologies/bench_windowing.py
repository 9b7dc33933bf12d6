"""Benchmark topologies for windows and state (used by ``python -m bench.windowing_state``).

Keyed event-time sliding sum: ``events`` emits ``[key, value, ts]`` (generated timestamps), then
one sentinel far in event time that pushes the watermark past every real window; ``sums`` (a
WindowedBolt, 10 s length, 1 s slide) keeps a running sum per key from each window's new and
expired tuples and emits ``[key, window end, sum]`` for every key present; ``sink`` collects.

Stateful word count: the bench word count with the counting bolt a StatefulBolt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_wordcount import BenchSentenceSpout, BenchSplit

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.state import KeyValueState, StatefulBolt
from stormpy.testing import _registry as registry
from stormpy.windowing import Duration, Window, WindowedBolt

SENTINEL = "~end"


def events(n: int, keys: int) -> list[tuple[str, int, int]]:
    """``n`` events over ``keys`` keys, 999 per second of event time, never on a whole second
    (so a window (end - 10 s, end] and Bytewax's [start, start + 10 s) hold the same events)."""
    return [(f"k{i % keys}", i % 100, (i // 999) * 1000 + i % 999 + 1) for i in range(n)]


class EventSpout(Spout):
    outputs = ["key", "value", "ts"]

    def __init__(self, key: str, reliable: bool = False) -> None:
        self.key = key
        self.reliable = reliable

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.rows = registry.lookup(self.key)["events"]
        self.i = 0

    def next_tuple(self) -> None:
        emit, rows = self.emit, self.rows
        for _ in range(64):
            if self.i < len(rows):
                k, v, ts = rows[self.i]
                emit([k, v, ts], msg_id=self.i if self.reliable else None)
                self.i += 1
            elif self.i == len(rows):
                emit([SENTINEL, 0, rows[-1][2] + 30_000])
                self.i += 1
                return
            else:
                return


class SlidingSum(WindowedBolt):
    """``anchor``: "window" (Storm's default: every emit anchored to all the window's tuples, so
    each emit costs O(window) when acking is on) or "new" (to the window's new tuples only)."""

    outputs = ["key", "end", "sum"]

    def __init__(self, anchor: str = "window") -> None:
        self.anchor = anchor

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sums: dict[str, int] = {}
        self.counts: dict[str, int] = {}

    def execute(self, window: Window) -> None:
        sums, counts = self.sums, self.counts
        for t in window.get_new():
            k, v = t.values[0], t.values[1]
            sums[k] = sums.get(k, 0) + v
            counts[k] = counts.get(k, 0) + 1
        for t in window.get_expired():
            k, v = t.values[0], t.values[1]
            sums[k] -= v
            counts[k] -= 1
            if not counts[k]:
                del counts[k], sums[k]
        end = window.end_timestamp
        emit = self.emit
        anchors = window.get_new() if self.anchor == "new" else None
        for k, s in sums.items():
            if k != SENTINEL:
                emit([k, end, s], anchors)


class Sink(Bolt):
    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.out: list[tuple[str, int, int]] = registry.lookup(self.key)["out"]

    def execute(self, tup: Tuple) -> None:
        self.out.append((tup.values[0], tup.values[1], tup.values[2]))
        self.ack(tup)


def build_window(key: str, reliable: bool = False, anchor: str = "window") -> Any:
    b = TopologyBuilder()
    b.set_spout("events", EventSpout, kwargs={"key": key, "reliable": reliable})
    b.set_bolt("sums", SlidingSum.with_window(Duration(seconds=10), Duration(seconds=1))
               .with_timestamp_field("ts").with_watermark_interval(Duration(ms=100)),
               kwargs={"anchor": anchor}).fields_grouping("events", "key")
    b.set_bolt("sink", Sink, kwargs={"key": key}).shuffle_grouping("sums")
    return b.create_topology()


class StatefulCount(StatefulBolt):
    outputs = ["word", "count"]

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Tuple) -> None:
        word = tup.values[0]
        self.counts.put(word, self.counts.get(word, 0) + 1)
        self.ack(tup)


def build_stateful(count: int) -> Any:
    """The bench word count (sentences → split → count) with a stateful counting bolt."""
    b = TopologyBuilder()
    b.set_spout("sentences", BenchSentenceSpout, kwargs={"count": count, "reliable": True})
    b.set_bolt("split", BenchSplit).shuffle_grouping("sentences")
    b.set_bolt("count", StatefulCount).fields_grouping("split", ["word"])
    return b.create_topology()
