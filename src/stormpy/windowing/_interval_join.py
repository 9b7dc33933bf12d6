"""IntervalJoinBolt: an event-time interval join of two keyed streams (Flink's
``intervalJoin(...).between(lower, upper)``, Bytewax's ``join_window`` shape), on the windowed
executor's event time: timestamps, watermarks, lag, late tuples and acking.

Contract:

* ``IntervalJoinBolt(left, left_key, right, right_key, selector="source")
  .between(Duration(seconds=-5), Duration(seconds=5)).select("left:a, b")
  .with_timestamp_field("ts")`` joins each left tuple ``l`` with every right tuple ``r`` of equal
  key and ``l.ts + lower <= r.ts <= l.ts + upper`` (both bounds inclusive, Flink's default). Event
  time is required (a timestamp field or extractor); ``select`` and the output stream work as for
  :class:`~stormpy.windowing.JoinBolt` (a two-stream inner join; a key that is None or missing
  never matches).
* A pair is emitted as soon as its second tuple arrives, once, anchored to both tuples; no window
  boundary cuts a pair. The watermark is the windowed bolts' (every watermark interval: the
  smallest over the input streams of the largest timestamp seen, minus the lag); a tuple below it
  is late (sent on the late tuple stream, or dropped and counted) and acked.
* A tuple is buffered, un-acked, until the watermark shows no future tuple can match it: a left
  tuple once ``l.ts + upper`` is below the watermark, a right one once ``r.ts - lower`` is; then
  it is acked. The submit check asks for a message timeout covering twice the interval's width
  plus lag and watermark interval (the executor's window is a tumbling one of that width).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from stormpy.topology._imports import class_path
from stormpy.topology._tuple import Tuple
from stormpy.windowing._config import Duration, WindowConfig, WindowConfigError
from stormpy.windowing._join import (
    INNER,
    SOURCE,
    JoinBoltExecutor,
    JoinDeclaration,
    JoinPlan,
    JoinWindowBolt,
    hashable,
    lookup,
    project,
)

__all__ = ["IntervalJoinBolt", "IntervalJoinExecutor"]


class IntervalJoinBolt(JoinDeclaration):
    """Declare an interval join (module doc); pass it to ``TopologyBuilder.set_bolt``. Every
    method returns a new declaration."""

    def __init__(self, left: str, left_key: str, right: str, right_key: str,
                 selector: str = SOURCE) -> None:
        super().__init__(left, left_key, selector)
        self._streams = (*self._streams, (right, right_key, INNER, left))
        self._between: tuple[Any, Any] | None = None

    def between(self, lower: Duration, upper: Duration) -> IntervalJoinBolt:
        """Right tuples stamped within ``[left.ts + lower, left.ts + upper]`` match."""
        return self._with(_between=(lower, upper))

    def between_doc(self) -> list[Any] | None:
        """``[lower ms, upper ms]``; what is not two Durations is kept as text, refused when the
        bolt is added."""
        if self._between is None:
            return None
        if all(isinstance(b, Duration) for b in self._between):
            return [b.ms for b in self._between]
        return [repr(b)[:80] for b in self._between]

    def window_doc(self) -> dict[str, Any] | None:
        """The executor's window: tumbling, as wide as the interval (at least 1 ms)."""
        between = self.between_doc()
        if between is None or not all(isinstance(b, int) for b in between):
            return None
        width = Duration(ms=max(1, between[1] - between[0]))
        return WindowConfig.tumbling(width).with_(**self._time).to_doc()

    @property
    def component_class(self) -> type[IntervalJoinExecutor]:
        return IntervalJoinExecutor

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"_window": self.window_doc(), "_bolt": class_path(JoinWindowBolt),
                "join": self.to_doc(), "between": self.between_doc()}


class IntervalJoinExecutor(JoinBoltExecutor):
    """Runs an :class:`IntervalJoinBolt` (not for direct use)."""

    OWN_KWARGS = frozenset({"_window", "_bolt", "join", "between"})

    @classmethod
    def _check(cls, kwargs: Mapping[str, Any]) -> JoinPlan:
        between = kwargs.get("between")
        if between is None:
            raise WindowConfigError("between", "an IntervalJoinBolt needs between(lower, upper)")
        lower, upper = between
        if not all(isinstance(b, int) for b in between):
            raise WindowConfigError("between", f"takes two Durations, got {lower}, {upper}")
        if lower > upper:
            raise WindowConfigError("between", f"the lower bound ({lower} ms) is above the upper "
                                               f"bound ({upper} ms)")
        window = kwargs.get("_window") or {}
        if not (window.get("timestamp_field") or window.get("timestamp_extractor")):
            raise WindowConfigError("timestamp field", "an interval join runs in event time: "
                                                       "call with_timestamp_field(...) or "
                                                       "with_timestamp_extractor(...)")
        return super()._check(kwargs)

    def __init__(self, _window: Mapping[str, Any], _bolt: str, join: Mapping[str, Any],
                 between: list[int]) -> None:
        super().__init__(_window, _bolt, join=join)
        self.plan = JoinPlan(join)
        self.lower, self.upper = between
        left, right = self.plan.steps
        self.left, self.right = left.stream, right.stream
        self.keys = {left.stream: left.key.path, right.stream: right.key.path}
        # per side: key -> buffered (ts, tuple); expiry heap of (expiry, seq, side, key, entry)
        self.buffers: dict[str, dict[Any, list[tuple[int, Tuple]]]] = {left.stream: {},
                                                                        right.stream: {}}
        self.expiry: list[tuple[int, int, str, Any, tuple[int, Tuple]]] = []
        self.seq = 0

    @property
    def buffered(self) -> int:
        """Tuples held (un-acked) for pairs still to come."""
        return len(self.expiry)

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            watermark = self._watermark()
            if watermark is not None and (self.manager.watermark is None
                                          or watermark > self.manager.watermark):
                self.manager.watermark = watermark
                self._expire(watermark)
            return
        ts = self._accept_event(tup, "interval join")  # event time is required
        if ts is None:
            return
        side = self.plan.stream_of(tup)
        if side not in self.buffers:
            self.bolt.note_unknown(tup)  # type: ignore[attr-defined]
            self.ack(tup)
            return
        value = lookup(tup, self.keys[side])
        if value is None:
            self.ack(tup)  # a missing key matches nothing
            return
        key = hashable(value)
        is_left = side == self.left
        other = self.buffers[self.right if is_left else self.left].get(key, ())
        lo, hi = (ts + self.lower, ts + self.upper) if is_left else (ts - self.upper,
                                                                     ts - self.lower)
        stream = self.plan.output_stream
        for other_ts, other_tup in other:
            if lo <= other_ts <= hi:
                row: list[Tuple | None] = [tup, other_tup] if is_left else [other_tup, tup]
                self.emit(project(self.plan, row), [tup, other_tup], stream)
        entry = (ts, tup)
        self.buffers[side].setdefault(key, []).append(entry)
        self.seq += 1
        heapq.heappush(self.expiry, (ts + self.upper if is_left else ts - self.lower, self.seq,
                                     side, key, entry))

    def _expire(self, watermark: int) -> None:
        """Ack what no tuple at or above ``watermark`` can match any more."""
        while self.expiry and self.expiry[0][0] < watermark:
            _at, _seq, side, key, entry = heapq.heappop(self.expiry)
            bucket = self.buffers[side][key]
            for i, held in enumerate(bucket):
                if held is entry:
                    del bucket[i]
                    break
            if not bucket:
                del self.buffers[side][key]
            self.ack(entry[1])
