"""Benchmark topology for windowed joins (used by ``python -m bench.join``).

``events`` emits every generated event on its stream (``clicks`` or ``views``) as ``[key, id,
ts]``, then a sentinel on each stream far ahead in event time that pushes the watermark past every
real window; ``join`` (a JoinBolt, 1 s tumbling event-time windows) joins clicks and views of a
key within each window and emits ``[key, click id, view id]``; ``sink`` collects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import _registry as registry
from stormpy.topology._streams import Stream
from stormpy.windowing import Duration, JoinBolt

SENTINEL = "~end"
Event = tuple[str, str, int, int]  # stream, key, id, ts


def events(n: int, keys: int) -> list[Event]:
    """``n`` events, clicks and views alternating, over ``keys`` keys, 999 per second of event
    time, never on a whole second (each falls in one window (end - 1 s, end]); a click and the
    view after it share a key."""
    return [("clicks" if i % 2 == 0 else "views", f"k{(i // 2 * 7919) % keys}", i,
             (i // 999) * 1000 + i % 999 + 1) for i in range(n)]


class EventSpout(Spout):
    outputs = [Stream(["key", "id", "ts"], name="clicks"), Stream(["key", "id", "ts"], name="views")]

    def __init__(self, key: str, reliable: bool = False) -> None:
        self.key = key
        self.reliable = reliable

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.rows: list[Event] = registry.lookup(self.key)["events"]
        self.i = 0

    def next_tuple(self) -> None:
        emit, rows = self.emit, self.rows
        for _ in range(64):
            if self.i < len(rows):
                stream, k, ident, ts = rows[self.i]
                emit([k, ident, ts], msg_id=self.i if self.reliable else None, stream=stream)
                self.i += 1
            elif self.i == len(rows):
                for stream in ("clicks", "views"):
                    emit([SENTINEL, -1, rows[-1][3] + 30_000], stream=stream)
                self.i += 1
                return
            else:
                return


class Sink(Bolt):
    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.out: list[tuple[str, int, int]] = registry.lookup(self.key)["out"]

    def execute(self, tup: Tuple) -> None:
        self.out.append((tup.values[0], tup.values[1], tup.values[2]))
        self.ack(tup)


def build_join(key: str, reliable: bool = False) -> Any:
    join = (JoinBolt("clicks", "key", selector="stream").join("views", "key", "clicks")
            .select("key, clicks:id, views:id").with_tumbling_window(Duration(seconds=1))
            .with_timestamp_field("ts").with_watermark_interval(Duration(ms=100)))
    b = TopologyBuilder()
    b.set_spout("events", EventSpout, kwargs={"key": key, "reliable": reliable})
    b.set_bolt("join", join).fields_grouping("events", "key", "clicks").fields_grouping(
        "events", "key", "views")
    b.set_bolt("sink", Sink, kwargs={"key": key}).shuffle_grouping("join")
    return b.create_topology()
