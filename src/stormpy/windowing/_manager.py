"""The window bookkeeping behind a windowed bolt (Storm's ``WindowManager`` with its trigger and
eviction policies), free of any runtime so it can be tested with hand-computed windows.

Events are kept in timestamp order (arrival order in processing time). A window is evaluated at a
*reference time* R (and, for count triggers, up to the triggering event):

* length ``Duration(L)``: the events with ``R - L < ts <= R``;
* length ``Count(N)``: the last N events with ``ts <= R``.

Triggers: a ``Count(S)`` interval fires on every S-th event (processing time: as it arrives; event
time: once the watermark passed it, at its timestamp); a ``Duration(S)`` interval fires every S
(processing time: as tick time passes; event time: at window ends aligned to multiples of S, as
the watermark passes them). An empty window is not evaluated (Storm skips those too).

Once an event falls out of a window it can never be part of a later one (reference times only
grow), so it is *evicted*: removed and handed back to be acked; when length and interval are of
one kind the next window is known, so what it cannot reach is evicted right after this one (a
tumbling window's tuples are acked as soon as it was evaluated). Memory is bounded by what windows
still need: N (+S) events for count windows, the events of the last L (+S, + lag) for time ones.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any

from stormpy.windowing._config import Count, Duration, WindowConfig

__all__ = ["Event", "Window", "WindowManager"]


class Event:
    """One tuple with its timestamp (ms) and arrival sequence number."""

    __slots__ = ("ts", "seq", "tup")

    def __init__(self, ts: int, seq: int, tup: Any) -> None:
        self.ts = ts
        self.seq = seq
        self.tup = tup

    def key(self) -> tuple[int, int]:
        return (self.ts, self.seq)


class Window:
    """What ``WindowedBolt.execute`` receives: ``get()`` every tuple in the window (oldest first),
    ``get_new()`` those not in the previous window, ``get_expired()`` those of the previous window
    that left it; ``end_timestamp`` is the reference time (ms: epoch ms of processing time, as
    Storm's ``TupleWindow``, or event time) and ``start_timestamp`` ``end - length`` for time
    windows, the oldest tuple's timestamp for count windows. ``get()`` builds its list when
    called (so a bolt that only uses ``get_new``/``get_expired`` pays for what changed, not for
    the whole window); a window is valid during ``execute`` only."""

    __slots__ = ("_events", "_begin", "_stop", "_new", "_expired", "start_timestamp",
                 "end_timestamp")

    def __init__(self, events: list[Event], begin: int, stop: int, new: list[Event],
                 expired: list[Event], start: int | None, end: int) -> None:
        self._events = events
        self._begin = begin
        self._stop = stop
        self._new = new
        self._expired = expired
        self.start_timestamp = start
        self.end_timestamp = end

    def detach(self) -> Window:
        """A copy that stays valid after the manager moves on."""
        return Window(self._events[self._begin:self._stop], 0, self._stop - self._begin,
                      self._new, self._expired, self.start_timestamp, self.end_timestamp)

    def get(self) -> list[Any]:
        return [e.tup for e in self._events[self._begin:self._stop]]

    def get_new(self) -> list[Any]:
        return [e.tup for e in self._new]

    def get_expired(self) -> list[Any]:
        return [e.tup for e in self._expired]

    def __len__(self) -> int:
        return self._stop - self._begin

    def __iter__(self) -> Iterator[Any]:
        """Every tuple in the window, oldest first, one at a time (no list of the window built:
        over persisted events only what is being read is loaded)."""
        events = self._events
        return (events[i].tup for i in range(self._begin, self._stop))

    def __repr__(self) -> str:
        return (f"Window({self.start_timestamp}..{self.end_timestamp}, {len(self)} tuples, "
                f"{len(self._new)} new, {len(self._expired)} expired)")


class WindowManager:
    """Feed events with :meth:`add`; move time with :meth:`advance_time` (processing time) or
    :meth:`advance_watermark` (event time). Each returns ``(windows, evicted)``: the windows to
    evaluate, in order, and the tuples that left every window for good (to ack after)."""

    def __init__(self, config: WindowConfig,
                 on_window: Callable[[Window], None] | None = None, origin: int = 0) -> None:
        """With ``on_window``, each window is handed to it as soon as it is complete (valid during
        the call) and the returned window lists stay empty; without, windows are detached copies
        returned to the caller. ``origin`` (ms) is where processing time starts: duration
        intervals fire at ``origin + k * interval``."""
        self.cfg = config
        self.origin = origin
        self.on_window = on_window
        self.events: list[Event] = []
        self._keys: list[tuple[int, int]] = []
        self._seq = 0
        self._prev: tuple[tuple[int, int], tuple[int, int]] | None = None  # its first/last key
        self._gone: list[Event] = []  # evicted at the last evaluation
        self._counted = 0  # events counted towards the next count trigger
        self._count_pos: tuple[int, int] | None = None  # event time: last counted event key
        self._next_end: int | None = None  # processing: next fire time; event: next window end
        self._last_end: int | None = None
        self.watermark: int | None = None

    def __len__(self) -> int:
        return len(self.events)

    def unevaluated(self) -> int:
        """How many held events no window evaluated yet (they arrived after the last one)."""
        prev = self._prev
        if prev is None:
            return len(self.events)
        return len(self.events) - bisect.bisect_right(self._keys, prev[1])

    # -- persistence hooks (stormpy.windowing._persistent) --------------------------------------
    def use_events(self, events: Any, keys: Any) -> None:
        """Keep events in ``events`` (a list-like of :class:`Event` in key order: len, int and
        slice indexing, append, insert, ``del [:n]``, clear) with ``keys`` its read-only view of
        event keys (mutations of ``keys`` are ignored: ``events`` keeps them); before any add."""
        self.events = events
        self._keys = keys

    def bookkeeping(self) -> dict[str, Any]:
        """Where the triggers and the last window stand, as plain data (events and the tuples
        that left at the last evaluation are not included)."""
        return {"seq": self._seq, "prev": self._prev, "counted": self._counted,
                "count_pos": self._count_pos, "next_end": self._next_end,
                "last_end": self._last_end, "watermark": self.watermark}

    def restore_bookkeeping(self, doc: dict[str, Any], gone: list[Event]) -> None:
        """Undo of :meth:`bookkeeping` (keys given back as lists are accepted), with ``gone`` the
        events that left the window at the last evaluation."""
        def key(v: Any) -> tuple[int, int] | None:
            return None if v is None else (int(v[0]), int(v[1]))
        prev = doc.get("prev")
        self._seq = int(doc.get("seq", 0))
        self._prev = None if prev is None else (key(prev[0]), key(prev[1]))  # type: ignore[assignment]
        self._counted = int(doc.get("counted", 0))
        self._count_pos = key(doc.get("count_pos"))
        self._next_end = doc.get("next_end")
        self._last_end = doc.get("last_end")
        self.watermark = doc.get("watermark")
        self._gone = gone

    @property
    def gone(self) -> list[Event]:
        """The events that left the window at the last evaluation (the next window's expired)."""
        return self._gone

    # -- input -----------------------------------------------------------------------------------
    def add(self, tup: Any, ts: int) -> tuple[list[Window], list[Any]]:
        """Add one tuple with timestamp ``ts`` (ms). In processing time a count trigger may fire
        right away; in event time nothing fires before the watermark passes."""
        self._seq += 1
        ev = Event(ts, self._seq, tup)
        key = ev.key()
        if not self._keys or key >= self._keys[-1]:
            self.events.append(ev)
            self._keys.append(key)
        else:
            i = bisect.bisect_right(self._keys, key)
            self.events.insert(i, ev)
            self._keys.insert(i, key)
        if self.cfg.event_time or not isinstance(self.cfg.slide, Count):
            return [], []
        self._counted += 1
        if self._counted < self.cfg.slide.n:
            return [], []
        self._counted = 0
        return self._fire(ts, key)

    # -- processing time -----------------------------------------------------------------------
    def advance_time(self, now: int) -> tuple[list[Window], list[Any]]:
        """Processing time is ``now`` (ms): a duration interval fires for every boundary passed."""
        if not isinstance(self.cfg.slide, Duration):
            return [], []
        step = self.cfg.slide.ms
        if self._next_end is None:
            self._next_end = self.origin + step
        windows: list[Window] = []
        evicted: list[Any] = []
        while self._next_end <= now:
            w, e = self._fire(self._next_end, None)
            windows += w
            evicted += e
            self._next_end += step
        return windows, evicted

    # -- event time ------------------------------------------------------------------------------
    def is_late(self, ts: int) -> bool:
        """Behind the last watermark: no window can take it any more (Storm's late tuple)."""
        return self.watermark is not None and ts < self.watermark

    def advance_watermark(self, watermark: int) -> tuple[list[Window], list[Any]]:
        """The watermark says no tuple older than ``watermark`` will come: every window whose
        reference time is below it is complete and evaluated (a tuple at exactly the watermark
        may still come, so a window ending there waits for the next watermark)."""
        if self.watermark is not None and watermark <= self.watermark:
            return [], []
        self.watermark = watermark
        windows: list[Window] = []
        evicted: list[Any] = []
        if isinstance(self.cfg.slide, Count):
            n = self.cfg.slide.n
            while True:  # by key: evaluating a window evicts, which shifts positions
                i = 0 if self._count_pos is None else bisect.bisect_right(self._keys,
                                                                          self._count_pos)
                if i >= len(self.events) or self.events[i].ts >= watermark:
                    break
                ev = self.events[i]
                self._counted += 1
                self._count_pos = ev.key()
                if self._counted == n:
                    self._counted = 0
                    w, e = self._fire(ev.ts, ev.key())
                    windows += w
                    evicted += e
            return windows, evicted
        step = self.cfg.slide.ms
        length = self.cfg.length
        while True:
            floor = (self._next_end - length.ms if isinstance(length, Duration)
                     else self._last_end) if self._next_end is not None else None
            first = self._first_after(floor)
            if first is None:
                break
            aligned = -(-first.ts // step) * step
            if self._next_end is None or aligned > self._next_end:
                self._next_end = aligned
            if self._next_end >= watermark:
                break
            w, e = self._fire(self._next_end, None)
            windows += w
            evicted += e
            self._last_end = self._next_end
            self._next_end += step
        return windows, evicted

    def _first_after(self, ts: int | None) -> Event | None:
        if not self.events:
            return None
        if ts is None:
            return self.events[0]
        i = bisect.bisect_right(self._keys, (ts, 1 << 62))
        return self.events[i] if i < len(self.events) else None

    # -- evaluation ------------------------------------------------------------------------------
    def _fire(self, ref: int, upto: tuple[int, int] | None) -> tuple[list[Window], list[Any]]:
        """Evaluate the window at reference time ``ref`` (up to event key ``upto`` when a count
        trigger fired), evict what fell out for good."""
        stop = bisect.bisect_right(self._keys, upto if upto is not None else (ref, 1 << 62))
        length = self.cfg.length
        if isinstance(length, Count):
            begin = max(0, stop - length.n)
            start_ts = self.events[begin].ts if begin < stop else None
        else:
            begin = bisect.bisect_right(self._keys, (ref - length.ms, 1 << 62), 0, stop)
            start_ts = ref - length.ms
        prev = self._prev
        if prev is None:
            new = self.events[begin:stop]
            expired: list[Event] = []
        else:
            # events added since the last window all sort after it (arrival order, or event time
            # beyond the watermark that closed it), so what changed is found by key, not by set
            first_new = bisect.bisect_right(self._keys, prev[1], begin, stop)
            new = self.events[first_new:stop]
            head = self._keys[begin] if begin < stop else (ref + 1, 0)
            expired = [e for e in self._gone if prev[0] <= e.key() <= prev[1] and e.key() < head]
            lo = bisect.bisect_left(self._keys, prev[0], 0, begin)
            hi = bisect.bisect_right(self._keys, prev[1], lo, begin)
            expired += self.events[lo:hi]
        windows: list[Window] = []
        if begin < stop:  # an empty window is skipped; the next one reports what left since
            window = Window(self.events, begin, stop, new, expired, start_ts, ref)
            if self.on_window is not None:
                self.on_window(window)
            else:
                windows.append(window.detach())
            self._prev = (self._keys[begin], self._keys[stop - 1])
        dead = max(begin, self._dead_before(ref, stop))
        gone = self.events[:dead]
        if begin < stop or gone:
            self._gone = gone if begin < stop else self._gone + gone
        if dead:
            del self.events[:dead]
            del self._keys[:dead]
        return windows, [e.tup for e in gone]

    def _dead_before(self, ref: int, stop: int) -> int:
        """Index below which no later window can reach, when length and interval are of one
        kind: the next window is the interval further (tumbling windows ack right away)."""
        length, slide = self.cfg.length, self.cfg.slide
        if isinstance(length, Count) and isinstance(slide, Count):
            return max(0, min(stop, stop + slide.n - length.n))
        if isinstance(length, Duration) and isinstance(slide, Duration):
            return bisect.bisect_right(self._keys, (ref + slide.ms - length.ms, 1 << 62), 0, stop)
        return 0

    def drain(self) -> list[Any]:
        """Forget every event (shutdown); returns their tuples."""
        out = [e.tup for e in self.events]
        self.events.clear()
        self._keys.clear()
        self._prev, self._gone = None, []
        return out
