"""User metrics of a task (Storm's metrics v2): counters, gauges, histograms, meters and timers.

Contract: a task registers them on its context (``context.register_counter(name)`` ...
``register_timer``, Storm's ``registerCounter`` ... in snake case) and updates them from its own
code on the executor loop. An update is a few attribute operations, with no lock and no clock read
(a timer's ``time()`` reads the clock twice): aggregation (quantiles, rates) happens when the
runtime takes a :meth:`snapshot`, once per worker heartbeat and off the tuple path. Snapshots are
plain msgpack data with the field names of Storm's (Codahale's) reporters, tagged with ``type``:

- counter ``{"type": "counter", "count"}``
- gauge ``{"type": "gauge", "value"}`` (whatever the gauge's function returns)
- histogram ``{"type": "histogram", "count", "sum", "min", "max", "mean", "stddev", "p50", "p75",
  "p95", "p98", "p99", "p999"}`` (``count``/``sum`` over all updates; the others over the latest
  :data:`RESERVOIR` updates)
- meter ``{"type": "meter", "count", "m1_rate", "m5_rate", "m15_rate", "mean_rate"}`` (events per
  second; the m*_rate are exponentially weighted moving averages over 1, 5 and 15 minutes)
- timer: a histogram of durations in milliseconds plus a meter of calls, ``"type": "timer"``.

A snapshot is taken by one thread at a time (the worker's heartbeat); updates may run meanwhile.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["KINDS", "RESERVOIR", "Counter", "Gauge", "Histogram", "Meter", "Timer", "UserMetric"]

#: how many of the latest updates a histogram keeps for its quantiles
RESERVOIR = 1028

_QUANTILES = (("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p98", 0.98), ("p99", 0.99),
              ("p999", 0.999))
_EWMA_WINDOWS = (("m1_rate", 60.0), ("m5_rate", 300.0), ("m15_rate", 900.0))


class Counter:
    """A count that goes up (and down): ``inc(n=1)``, ``dec(n=1)``, ``count``."""

    kind = "counter"
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def dec(self, n: int = 1) -> None:
        self.count -= n

    def get_count(self) -> int:
        return self.count

    def snapshot(self) -> dict[str, Any]:
        return {"type": "counter", "count": self.count}


class Gauge:
    """A value read when the snapshot is taken: ``fn()``, cheap and non-blocking."""

    kind = "gauge"
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"a gauge needs a function returning its value, got {fn!r}")
        self.fn = fn

    def get_value(self) -> Any:
        return self.fn()

    def snapshot(self) -> dict[str, Any]:
        return {"type": "gauge", "value": self.fn()}


class Histogram:
    """The distribution of values: ``update(value)``."""

    kind = "histogram"
    __slots__ = ("count", "sum", "_recent")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self._recent: deque[float] = deque(maxlen=RESERVOIR)

    def update(self, value: float) -> None:
        self.count += 1
        self.sum += value
        self._recent.append(value)

    def snapshot(self) -> dict[str, Any]:
        return {"type": "histogram", **self._figures(1.0)}

    def _figures(self, scale: float) -> dict[str, Any]:
        count, total = self.count, self.sum
        values = sorted(v * scale for v in list(self._recent))
        out: dict[str, Any] = {"count": count, "sum": total * scale}
        if not values:
            return {**out, "min": 0.0, "max": 0.0, "mean": 0.0, "stddev": 0.0,
                    **{key: 0.0 for key, _ in _QUANTILES}}
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
        out.update({"min": values[0], "max": values[-1], "mean": mean, "stddev": math.sqrt(var)})
        for key, q in _QUANTILES:
            out[key] = values[min(len(values) - 1, int(q * len(values)))]
        return out


class Meter:
    """A rate of events: ``mark(n=1)``."""

    kind = "meter"
    __slots__ = ("count", "_start", "_last", "_last_count", "_rates")

    def __init__(self) -> None:
        self.count = 0
        self._start = self._last = time.monotonic()
        self._last_count = 0
        self._rates: dict[str, float | None] = {key: None for key, _ in _EWMA_WINDOWS}

    def mark(self, n: int = 1) -> None:
        self.count += n

    def snapshot(self) -> dict[str, Any]:
        return {"type": "meter", **self._figures()}

    def _figures(self) -> dict[str, Any]:
        now, count = time.monotonic(), self.count
        elapsed = now - self._last
        if elapsed > 0:
            instant = (count - self._last_count) / elapsed
            for key, window in _EWMA_WINDOWS:
                old = self._rates[key]
                self._rates[key] = instant if old is None else \
                    old + (1.0 - math.exp(-elapsed / window)) * (instant - old)
            self._last, self._last_count = now, count
        lifetime = now - self._start
        return {"count": count, **{k: v or 0.0 for k, v in self._rates.items()},
                "mean_rate": count / lifetime if lifetime > 0 else 0.0}


class _Timing:
    """One running measurement of a :class:`Timer` (``with timer.time():`` or ``.stop()``)."""

    __slots__ = ("_timer", "_start")

    def __init__(self, timer: Timer) -> None:
        self._timer = timer
        self._start = time.perf_counter()

    def stop(self) -> float:
        """Record the time since the start; returns it in seconds."""
        elapsed = time.perf_counter() - self._start
        self._timer.update(elapsed)
        return elapsed

    def __enter__(self) -> _Timing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Timer:
    """Durations and their rate: ``update(seconds)`` or ``with timer.time(): ...``."""

    kind = "timer"
    __slots__ = ("_histogram", "_meter")

    def __init__(self) -> None:
        self._histogram = Histogram()
        self._meter = Meter()

    @property
    def count(self) -> int:
        return self._histogram.count

    def update(self, seconds: float) -> None:
        self._histogram.update(seconds)
        self._meter.count += 1

    def time(self) -> _Timing:
        return _Timing(self)

    def snapshot(self) -> dict[str, Any]:
        return {"type": "timer", **self._meter._figures(), **self._histogram._figures(1000.0),
                "duration_units": "milliseconds", "rate_units": "calls/second"}


UserMetric = Counter | Gauge | Histogram | Meter | Timer

#: the kinds of user metric, by the ``type`` of their snapshots
KINDS: dict[str, type[Counter] | type[Gauge] | type[Histogram] | type[Meter] | type[Timer]] = {
    "counter": Counter, "gauge": Gauge, "histogram": Histogram, "meter": Meter, "timer": Timer}
