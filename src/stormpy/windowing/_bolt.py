"""WindowedBolt (Storm's ``BaseWindowedBolt``), how it is declared, and the executor that runs it
(Storm's ``WindowedBoltExecutor``): an ordinary bolt wrapping the user's, so windowed topologies
run wherever topologies run.

Declaring::

    builder.set_bolt("sums", SumBolt.with_window(Duration(seconds=10), Duration(seconds=1))
                     .with_timestamp_field("ts").with_lag(Duration(seconds=2)),
                     kwargs={...}).fields_grouping("events", "key")

Time: processing time advances with tick tuples (period :meth:`WindowConfig.tick_ms`), so it
follows ``LocalCluster(simulated_time=True)``; a tuple's processing timestamp is the end of the
tick period it arrived in. Processing timestamps are epoch milliseconds (Storm's
``TupleWindow.getEndTimestamp``): they start from the wall clock when the bolt is prepared; under
simulated time they start from a simulated epoch 0 at that moment, so tests compute them by hand.
Event time reads each tuple's timestamp (ms) from a field or an extractor; every watermark interval
the watermark becomes the smallest, over the input streams, of the largest timestamp seen, minus
the lag, and windows below it are evaluated.

Acking (Storm's): the executor acks an input once it left every window it can belong to (late
tuples once routed or dropped); ``emit`` inside ``execute(window)`` anchors to the window's
tuples unless anchors are given. The user bolt must not ack or fail inputs itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.config import SettingError, message_timeout_secs, setting
from stormpy.topology._component import Bolt, require_entry_point
from stormpy.topology._context import TopologyContext
from stormpy.topology._imports import class_path, import_object
from stormpy.topology._spec import MIN_MESSAGE_TIMEOUT_KEY, MIN_SPOUT_PENDING_KEY
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.windowing._config import Duration, WindowConfig, WindowConfigError
from stormpy.windowing._manager import Window, WindowManager

__all__ = ["LATE_FIELDS", "WindowedBolt", "WindowedBoltExecutor", "WindowedBoltSpec"]

log = logging.getLogger("stormpy.windowing")

#: Fields of the late-tuple stream: the late tuple's values and its timestamp (ms).
LATE_FIELDS = ("tuple", "timestamp")


class WindowedBolt(Bolt):
    """Subclass and implement :meth:`execute` taking a :class:`~stormpy.windowing.Window`; declare
    with :meth:`with_window` / :meth:`with_tumbling_window` (see the module doc). ``prepare``,
    ``cleanup``, ``outputs``, ``emit`` and ``report_error`` work as for any bolt."""

    def execute(self, window: Window) -> None:  # type: ignore[override]
        """Evaluate one window."""

    @classmethod
    def with_window(cls, length: Any, sliding_interval: Any | None = None) -> WindowedBoltSpec:
        """A sliding window (Storm's ``withWindow``): Count(n) or Duration(...) for each."""
        return WindowedBoltSpec(cls, WindowConfig.sliding(length, sliding_interval))

    @classmethod
    def with_tumbling_window(cls, length: Any) -> WindowedBoltSpec:
        """A tumbling window: the sliding interval equals the length."""
        return WindowedBoltSpec(cls, WindowConfig.tumbling(length))


class WindowedBoltSpec:
    """What ``with_window`` returns: pass it to ``TopologyBuilder.set_bolt`` like a class (its
    ``kwargs`` reach the user bolt's constructor). Every ``with_*`` returns a new spec; the
    builder validates the whole configuration and names the component in any error."""

    def __init__(self, bolt: type[WindowedBolt], config: WindowConfig) -> None:
        self.bolt = bolt
        self.config = config

    def _with(self, **changes: Any) -> WindowedBoltSpec:
        return WindowedBoltSpec(self.bolt, self.config.with_(**changes))

    def with_timestamp_field(self, name: str) -> WindowedBoltSpec:
        """Event time: each tuple's timestamp (ms, an integer) is the value of field ``name``."""
        return self._with(timestamp_field=name)

    def with_timestamp_extractor(self, extractor: Callable[[Tuple], int] | str) -> WindowedBoltSpec:
        """Event time: ``extractor(tuple)`` gives the timestamp (ms); a module-level function or
        its import path (workers import it)."""
        path = extractor if isinstance(extractor, str) else class_path(extractor)  # type: ignore[arg-type]
        return self._with(timestamp_extractor=path)

    def with_lag(self, lag: Duration) -> WindowedBoltSpec:
        """How far behind the newest timestamp a tuple may arrive and still count."""
        return self._with(lag=lag)

    def with_watermark_interval(self, interval: Duration) -> WindowedBoltSpec:
        """How often the watermark advances (default 1 s)."""
        return self._with(watermark_interval=interval)

    def with_late_tuple_stream(self, stream: str) -> WindowedBoltSpec:
        """Send tuples behind the watermark on ``stream`` (fields ``tuple``, ``timestamp``)
        instead of dropping them."""
        return self._with(late_stream=stream)

    @property
    def component_class(self) -> type[Bolt]:
        return WindowedBoltExecutor

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"_window": self.config.to_doc(), "_bolt": class_path(self.bolt)}


def _target(kwargs: Mapping[str, Any]) -> tuple[Any, WindowConfig, dict[str, Any]]:
    bolt = import_object(kwargs["_bolt"])
    if not (isinstance(bolt, type) and issubclass(bolt, WindowedBolt)):
        raise WindowConfigError("WindowedBolt", f"{bolt!r} is not a WindowedBolt subclass")
    cfg = WindowConfig.from_doc(kwargs["_window"])
    user = {k: v for k, v in kwargs.items() if k not in ("_window", "_bolt")}
    return bolt, cfg, user


class WindowedBoltExecutor(Bolt):
    """Runs a :class:`WindowedBolt` (built by ``WindowedBoltSpec``; not for direct use)."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        bolt, cfg, user = _target(kwargs)
        require_entry_point(bolt, WindowedBolt, ("execute",), "execute(window)")
        streams = dict(bolt.declare_outputs(user))
        if cfg.late_stream is not None:
            if cfg.late_stream in streams:
                raise WindowConfigError("late tuple stream", f"{cfg.late_stream!r} is also declared "
                                                             f"by {bolt.__qualname__}")
            streams[cfg.late_stream] = Stream(LATE_FIELDS, name=cfg.late_stream)
        return streams

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        bolt, cfg, user = _target(kwargs)
        conf = dict(bolt.declare_config(user))
        tick = cfg.tick_ms()
        if tick is not None:
            conf["topology.tick.tuple.freq.secs"] = tick / 1000
        if cfg.required_timeout_secs():
            conf[MIN_MESSAGE_TIMEOUT_KEY] = cfg.required_timeout_secs()
        if cfg.required_pending():
            conf[MIN_SPOUT_PENDING_KEY] = cfg.required_pending()
        return conf

    def __init__(self, _window: Mapping[str, Any], _bolt: str, **kwargs: Any) -> None:
        bolt_cls, self.cfg, user = _target({"_window": _window, "_bolt": _bolt, **kwargs})
        self.bolt: WindowedBolt = bolt_cls(**user)
        self.manager = WindowManager(self.cfg, on_window=self._evaluate)
        self.now = 0  # processing time, epoch ms (set at prepare)
        tick = self.cfg.tick_ms()
        self.tick = tick or 0
        self.late_dropped = 0
        self.max_ts: dict[tuple[str, str], int] = {}
        self._current: Window | None = None
        self._current_anchors: list[Any] | None = None
        self._extract: Callable[[Tuple], Any] | None = None

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        me = context.component_id
        # processing time: epoch ms from now on (a simulated epoch 0 when time is simulated)
        self.now = 0 if context.clock.simulated else int(time.time() * 1000)
        self.manager.origin = self.now
        self.check_timeout(conf, me)
        # data inputs only: '$' streams belong to machinery (checkpoints, transactions)
        self.sources = sorted({(i.component, i.stream) for i in context.spec.components[me].inputs
                               if not i.stream.startswith("$")})
        if self.cfg.timestamp_extractor is not None:
            self._extract = import_object(self.cfg.timestamp_extractor)
        elif self.cfg.timestamp_field is not None:
            field = self.cfg.timestamp_field
            self._extract = lambda tup: tup[field]
        bolt: Any = self.bolt
        bolt.emit = self._emit
        bolt.emit_direct = self._emit_direct
        bolt.ack = _refuse("ack")
        bolt.fail = _refuse("fail")
        bolt.reset_timeout = self.reset_timeout
        bolt.report_error = self.report_error
        bolt.run_in_background = self.run_in_background
        bolt.call_soon_threadsafe = self.call_soon_threadsafe
        bolt.prepare(conf, context)

    def check_timeout(self, conf: Mapping[str, Any], me: str) -> None:
        """Refuse a message timeout shorter than a tuple can stay un-acked in the window."""
        timeout = message_timeout_secs(conf)
        need = self.cfg.required_timeout_secs()
        if need and setting(conf, "topology.enable.message.timeouts") and timeout < need:
            raise SettingError("topology.message.timeout.secs",
                               f"windowed bolt {me!r} needs it >= {need}, the topology sets {timeout:g}")

    def cleanup(self) -> None:
        self.bolt.cleanup()

    def held_tuples(self) -> int:
        """The input tuples that wait for a timer to be evaluated: in processing time with a
        duration interval, those no window took yet (the worker reports them,
        ``Worker.held_tuples``: a run waiting for its next window is not idle). Tuples waiting
        for more input (count intervals, event-time watermarks) are not counted."""
        if self.cfg.event_time or not isinstance(self.cfg.slide, Duration):
            return 0
        return self.manager.unevaluated()

    def window_tuples(self) -> int:
        """Every input tuple the bolt holds un-acked: a window acks a tuple once it has left
        every window (``Worker.window_tuples``; the tail of a finite input waits there for more
        input, or for its message timeout). A plain read, any thread."""
        return len(self.manager)

    # -- emits -----------------------------------------------------------------------------------
    def _anchors(self, anchors: Any) -> Any:
        if anchors is None and self._current is not None:
            if self._current_anchors is None:
                self._current_anchors = self._current.get()
            return self._current_anchors
        return anchors

    def _emit(self, values: Any, anchors: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        return self.emit(values, self._anchors(anchors), stream)

    def _emit_direct(self, task: int, values: Any, anchors: Any = None,
                     stream: str = DEFAULT_STREAM) -> None:
        self.emit_direct(task, values, self._anchors(anchors), stream)

    # -- input -----------------------------------------------------------------------------------
    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.now += self.tick
            if self.cfg.event_time:
                watermark = self._watermark()
                if watermark is not None:
                    self._run(*self.manager.advance_watermark(watermark))
            else:
                self._run(*self.manager.advance_time(self.now))
            return
        if self._extract is None:
            self._run(*self.manager.add(tup, self.now + self.tick))
            return
        ts = self._accept_event(tup, "windowed bolt")
        if ts is not None:
            self._run(*self.manager.add(tup, ts))

    def _accept_event(self, tup: Tuple, what: str) -> int | None:
        """An event-time tuple's timestamp, its source's highest timestamp raised to it; None
        (and the tuple routed as late) when the watermark has passed it. ValueError naming
        ``what`` and the tuple's source when it has no timestamp."""
        assert self._extract is not None
        try:
            ts = int(self._extract(tup))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ValueError(f"{what}: no timestamp in tuple from {tup.component}/"
                             f"{tup.stream} ({exc})") from None
        if self.manager.is_late(ts):
            self._late(tup, ts)
            return None
        src = (tup.component, tup.stream)
        if ts > self.max_ts.get(src, ts - 1):
            self.max_ts[src] = ts
        return ts

    def _watermark(self) -> int | None:
        """Smallest over the input streams of the largest timestamp seen, minus the lag; None
        until every input stream delivered a tuple (Storm's WaterMarkEventGenerator)."""
        if len(self.max_ts) < len(self.sources):
            return None
        return min(self.max_ts.values()) - self.cfg.lag_ms

    def _late(self, tup: Tuple, ts: int) -> None:
        self.route_late(tup, ts)
        self.ack(tup)

    def route_late(self, tup: Tuple, ts: int) -> None:
        """Emit a late tuple on the late stream, or count it as dropped."""
        if self.cfg.late_stream is not None:
            self.emit([list(tup.values), ts], tup, self.cfg.late_stream)
        else:
            self.late_dropped += 1
            if self.late_dropped == 1 or self.late_dropped % 1000 == 0:
                log.warning("windowed bolt: %d late tuple(s) dropped (timestamp behind the "
                            "watermark %s); set with_late_tuple_stream to keep them",
                            self.late_dropped, self.manager.watermark)

    def _evaluate(self, window: Window) -> None:
        self._current, self._current_anchors = window, None
        try:
            self.bolt.execute(window)
        finally:
            self._current, self._current_anchors = None, None

    def _run(self, windows: list[Window], evicted: list[Any]) -> None:
        """Windows were evaluated as they completed; ack what left every window."""
        for window in windows:
            self._evaluate(window)
        for tup in evicted:
            self.ack(tup)


def _refuse(name: str) -> Callable[..., Any]:
    def method(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"a WindowedBolt does not {name} its inputs: the window acks each "
                           "tuple once it expired from every window")
    return method
