"""Window sizes (``Count``, ``Duration``) and a windowed bolt's whole configuration, validated the
way Storm 2.x validates ``BaseWindowedBolt`` (``WindowedBoltExecutor``): positive sizes, a sliding
interval no larger than the length when both are of one kind, and event-time options only where
they mean something.

A settings class in the one style of :mod:`stormpy._settings`: ``validate()`` raises
:class:`WindowConfigError` (a :class:`~stormpy.config.SettingError`) naming the setting as the
``with_*`` declarations call it (``window length``, ``sliding interval``, ``lag``, ...); the
builder adds the component. A configuration travels to the workers inside the component's keyword
arguments (:meth:`WindowConfig.to_doc`), so it holds plain data only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stormpy.config import SettingError

__all__ = ["Count", "Duration", "WindowConfig", "WindowConfigError", "size_from_doc"]

#: Storm's default watermark interval and lag.
DEFAULT_WATERMARK_INTERVAL_MS = 1000
DEFAULT_LAG_MS = 0


class WindowConfigError(SettingError):
    """A window configuration Storm would refuse; ``setting`` names the part (``window length``,
    ``sliding interval``, ``lag``, ...); the builder names the component."""


@dataclass(frozen=True)
class Count:
    """A window length or sliding interval of ``n`` tuples."""

    n: int

    def to_doc(self) -> list[Any]:
        return ["count", self.n]


@dataclass(frozen=True)
class Duration:
    """A window length, sliding interval, lag or watermark interval in time; kept in whole
    milliseconds (``Duration(seconds=1.5)``, ``Duration(ms=250)``, ``Duration.of_minutes(2)``)."""

    ms: int

    def __init__(self, seconds: float | None = None, *, ms: int | None = None,
                 minutes: float | None = None) -> None:
        given = [v for v in (seconds, ms, minutes) if v is not None]
        if len(given) != 1:
            raise WindowConfigError("Duration", "takes exactly one of seconds=, ms= or minutes=")
        value = given[0]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise WindowConfigError("Duration", f"needs a finite number, got {value!r}")
        total = value if ms is not None else value * (60_000 if minutes is not None else 1000)
        if total != int(total) and abs(total - round(total)) > 1e-6:
            raise WindowConfigError("Duration", f"must be a whole number of milliseconds, got "
                                                f"{total!r} ms")
        object.__setattr__(self, "ms", int(round(total)))

    @classmethod
    def of_minutes(cls, minutes: float) -> Duration:
        return cls(minutes=minutes)

    @property
    def seconds(self) -> float:
        return self.ms / 1000

    def positive(self, what: str) -> Duration:
        if self.ms <= 0:
            raise WindowConfigError(what, f"must be a positive duration, got {self.ms} ms")
        return self

    def to_doc(self) -> list[Any]:
        return ["duration", self.ms]


Size = Count | Duration


def size_to_doc(size: Any) -> list[Any]:
    """``["count", n]``, ``["duration", ms]``, or ``["invalid", repr]`` (refused when built)."""
    if isinstance(size, (Count, Duration)):
        return size.to_doc()
    return ["invalid", repr(size)[:80]]


def size_from_doc(doc: Any) -> Any:
    kind, value = doc
    if kind == "count":
        return Count(value)
    if kind == "duration":
        return Duration(ms=value)
    return value  # an invalid size, refused by WindowConfig.validate


def _check_size(value: Any, what: str) -> Size:
    if isinstance(value, Count):
        if not isinstance(value.n, int) or isinstance(value.n, bool) or value.n <= 0:
            raise WindowConfigError(what, f"must be a positive count, got Count({value.n!r})")
        return value
    if isinstance(value, Duration):
        return value.positive(what)
    raise WindowConfigError(what, f"must be Count(n) or Duration(seconds=...), got {value!r}")


@dataclass(frozen=True)
class WindowConfig:
    """Everything that shapes a window: ``length`` and ``slide`` (equal for a tumbling window),
    event time (``timestamp_field`` or ``timestamp_extractor``, an import path), ``lag`` and
    ``watermark_interval`` (event time only) and the ``late_stream`` for tuples behind the
    watermark (event time only; None drops and counts them)."""

    length: Size
    slide: Size
    timestamp_field: str | None = None
    timestamp_extractor: str | None = None
    lag: Duration | None = None
    watermark_interval: Duration | None = None
    late_stream: str | None = None

    @classmethod
    def sliding(cls, length: Any, slide: Any | None = None) -> WindowConfig:
        """Storm's ``withWindow(length, slide)``; ``slide`` defaults to one tuple (Count(1)),
        as in Storm, for a window given only its length. Checked by :meth:`validate` (the
        builder calls it and names the component)."""
        return cls(length, Count(1) if slide is None else slide)

    @classmethod
    def tumbling(cls, length: Any) -> WindowConfig:
        return cls(length, length)

    @property
    def event_time(self) -> bool:
        return self.timestamp_field is not None or self.timestamp_extractor is not None

    def with_(self, **changes: Any) -> WindowConfig:
        return replace(self, **changes)

    def validate(self) -> WindowConfig:
        """Self, or WindowConfigError for what Storm refuses: a size that is not a positive
        Count or Duration, a sliding interval larger than a length of the same kind, two
        timestamp sources, or an event-time option (lag, watermark interval, late stream)
        without event time."""
        size = _check_size(self.length, "window length")
        step = _check_size(self.slide, "sliding interval")
        if type(size) is type(step) and _value(step) > _value(size):
            raise WindowConfigError("sliding interval", f"{_show(step)} is larger than the "
                                                        f"window length {_show(size)}")
        if self.timestamp_field is not None and self.timestamp_extractor is not None:
            raise WindowConfigError("timestamp extractor", "give either a timestamp field or a "
                                                           "timestamp extractor, not both")
        if not self.event_time:
            for name, value in (("lag", self.lag), ("watermark interval", self.watermark_interval),
                                ("late tuple stream", self.late_stream)):
                if value is not None:
                    raise WindowConfigError(name, "needs event time: call "
                                                  "with_timestamp_field(...) or "
                                                  "with_timestamp_extractor(...) first")
        if self.lag is not None and self.lag.ms < 0:
            raise WindowConfigError("lag", f"must not be negative, got {self.lag.ms} ms")
        if self.watermark_interval is not None:
            self.watermark_interval.positive("watermark interval")
        if self.late_stream is not None and (not self.late_stream or
                                             self.late_stream.startswith("__")):
            raise WindowConfigError("late tuple stream", f"must be a non-empty name not starting "
                                                         f"with '__', got {self.late_stream!r}")
        return self

    @property
    def lag_ms(self) -> int:
        return self.lag.ms if self.lag is not None else DEFAULT_LAG_MS

    @property
    def watermark_ms(self) -> int:
        return (self.watermark_interval.ms if self.watermark_interval is not None
                else DEFAULT_WATERMARK_INTERVAL_MS)

    def tick_ms(self) -> int | None:
        """Period of the tick tuples that drive this window (None: no ticks needed). Event time
        ticks at the watermark interval; processing time at the greatest common divisor of its
        durations, which is also the resolution of processing timestamps."""
        if self.event_time:
            return self.watermark_ms
        durations = [s.ms for s in (self.length, self.slide) if isinstance(s, Duration)]
        if not durations:
            return None
        period = math.gcd(*durations)
        if isinstance(self.slide, Count):
            period = math.gcd(period, 1000)  # timestamp resolution of a time-evicted count window
        return max(period, 10)

    def required_timeout_secs(self) -> float:
        """The shortest ``topology.message.timeout.secs`` this window can live with: a tuple stays
        un-acked until it expires, up to length + sliding interval (Storm's check), plus the lag
        and one watermark interval in event time."""
        total = 0
        if isinstance(self.length, Duration):
            total += self.length.ms
        if isinstance(self.slide, Duration):
            total += self.slide.ms
        if total and self.event_time:
            total += self.lag_ms + self.watermark_ms
        return total / 1000

    def required_pending(self) -> int:
        """The smallest ``topology.max.spout.pending`` that lets a count window fill (Storm's
        ``ensureCountLessThanMaxPending``): length + sliding interval counts."""
        return sum(s.n for s in (self.length, self.slide) if isinstance(s, Count))

    def to_doc(self) -> dict[str, Any]:
        return {"length": size_to_doc(self.length), "slide": size_to_doc(self.slide),
                "timestamp_field": self.timestamp_field,
                "timestamp_extractor": self.timestamp_extractor,
                "lag": None if self.lag is None else self.lag.ms,
                "watermark_interval": (None if self.watermark_interval is None
                                       else self.watermark_interval.ms),
                "late_stream": self.late_stream}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> WindowConfig:
        return cls(size_from_doc(doc["length"]), size_from_doc(doc["slide"]),
                   doc.get("timestamp_field"), doc.get("timestamp_extractor"),
                   None if doc.get("lag") is None else Duration(ms=doc["lag"]),
                   None if doc.get("watermark_interval") is None
                   else Duration(ms=doc["watermark_interval"]),
                   doc.get("late_stream")).validate()


def _value(size: Size) -> int:
    return size.n if isinstance(size, Count) else size.ms


def _show(size: Size) -> str:
    return f"Count({size.n})" if isinstance(size, Count) else f"Duration({size.ms} ms)"
