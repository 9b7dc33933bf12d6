"""The windowed bolt's executor on its own (a RecordingCollector for the runtime, tick tuples by
hand): what it declares, the checks at prepare, the tick clock, watermarks over several input
streams, late tuples, anchoring of the user's emits and what the user bolt may not do."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.state import MemoryBackend
from stormpy.testing import RecordingCollector, test_tuple
from stormpy.topology import Tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._fields import Fields
from stormpy.topology._grouping import SHUFFLE, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import (
    BOLT,
    MIN_MESSAGE_TIMEOUT_KEY,
    MIN_SPOUT_PENDING_KEY,
    ComponentSpec,
    InputSpec,
    TopologySpec,
)
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import SYSTEM_COMPONENT, TICK_STREAM
from stormpy.windowing import (
    LATE_FIELDS,
    Count,
    Duration,
    Window,
    WindowConfigError,
    WindowedBolt,
    WindowedBoltSpec,
)
from stormpy.windowing._bolt import WindowedBoltExecutor


class Keep(WindowedBolt):
    """Records each window's tuples' first values; emits their sum (on ``default``) and, to
    task 7, their count (on ``direct``); ``anchored=True`` anchors the sum to the newest tuple."""

    outputs = [Stream(["sum"]), Stream(["n"], name="direct", direct=True)]
    prepared: list[Any] = []
    cleaned: list[str] = []

    def __init__(self, anchored: bool = False) -> None:
        self.anchored = anchored
        self.windows: list[tuple[list[Any], Any, Any]] = []

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"user.key": kwargs.get("anchored", False)}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        Keep.prepared.append((dict(conf), context.component_id))

    def cleanup(self) -> None:
        Keep.cleaned.append("cleaned")

    def execute(self, window: Window) -> None:
        values = [t.values[0] for t in window.get()]
        self.windows.append((values, window.start_timestamp, window.end_timestamp))
        self.emit([sum(values)], anchors=window.get()[-1] if self.anchored else None)
        self.emit_direct(7, [len(values)], stream="direct")


class Boom(WindowedBolt):
    outputs = ["x"]

    def execute(self, window: Window) -> None:
        raise KeyError("boom")


def ts_field(tup: Tuple) -> int:
    return int(tup.values[1])


def build(spec: WindowedBoltSpec, inputs: Sequence[tuple[str, str]] = (("src", "default"),),
          conf: Mapping[str, Any] | None = None, **user: Any
          ) -> tuple[WindowedBoltExecutor, RecordingCollector]:
    """The executor as component ``win`` of a topology where it reads ``inputs``, prepared."""
    kwargs = {**spec.component_kwargs, **user}
    ex = WindowedBoltExecutor(**kwargs)
    col = RecordingCollector()
    col.bind(ex, kwargs=kwargs, component_id="win")
    comp = ComponentSpec("win", BOLT, class_path(WindowedBoltExecutor), kwargs=kwargs,
                         streams=WindowedBoltExecutor.declare_outputs(kwargs),
                         inputs=[InputSpec(c, s, Grouping(SHUFFLE)) for c, s in inputs])
    layout = TaskLayout({"win": [1]}, {1: "win"}, [Executor("win", 1, 1)])
    context = TopologyContext("t-1", TopologySpec({"win": comp}), layout, 1, [1], {},
                              state=MemoryBackend())
    ex.prepare(dict(conf or {}), context)
    return ex, col


def tick() -> Tuple:
    return Tuple([0.1], TICK_STREAM, -1, SYSTEM_COMPONENT, Fields(["rate_secs"]))


def data(value: Any, ts: Any = None, component: str = "src", stream: str = "default") -> Tuple:
    if ts is None:
        return test_tuple([value], component, stream, fields=["v"])
    return test_tuple([value, ts], component, stream, fields=["v", "ts"])


# -- what the executor declares -----------------------------------------------------------------
def test_declared_streams_add_the_late_stream() -> None:
    plain = Keep.with_tumbling_window(Count(2)).component_kwargs
    assert sorted(WindowedBoltExecutor.declare_outputs(plain)) == ["default", "direct"]
    late = (Keep.with_tumbling_window(Count(2)).with_timestamp_field("ts")
            .with_late_tuple_stream("too-late").component_kwargs)
    streams = WindowedBoltExecutor.declare_outputs(late)
    assert sorted(streams) == ["default", "direct", "too-late"]
    assert list(streams["too-late"].fields) == list(LATE_FIELDS) == ["tuple", "timestamp"]
    assert streams["too-late"].name == "too-late"
    clash = (Keep.with_tumbling_window(Count(2)).with_timestamp_field("ts")
             .with_late_tuple_stream("direct").component_kwargs)
    with pytest.raises(WindowConfigError) as err:
        WindowedBoltExecutor.declare_outputs(clash)
    assert str(err.value) == "late tuple stream: 'direct' is also declared by Keep"


def test_declared_config_asks_for_ticks_timeout_and_pending() -> None:
    timed = Keep.with_window(Duration(seconds=3), Duration(ms=500)).component_kwargs
    assert WindowedBoltExecutor.declare_config({**timed, "anchored": True}) == {
        "user.key": True, "topology.tick.tuple.freq.secs": 0.5, MIN_MESSAGE_TIMEOUT_KEY: 3.5}
    counted = Keep.with_window(Count(5), Count(2)).component_kwargs
    assert WindowedBoltExecutor.declare_config(counted) == {"user.key": False,
                                                            MIN_SPOUT_PENDING_KEY: 7}


def test_the_spec_carries_the_configuration_to_the_executor() -> None:
    spec = (Keep.with_window(Count(4)).with_timestamp_extractor(ts_field)
            .with_lag(Duration(ms=5)).with_watermark_interval(Duration(ms=20))
            .with_late_tuple_stream("late"))
    assert spec.component_class is WindowedBoltExecutor and spec.bolt is Keep
    cfg = spec.config
    assert (cfg.length, cfg.slide, cfg.timestamp_extractor, cfg.lag, cfg.watermark_interval,
            cfg.late_stream) == (Count(4), Count(1), class_path(ts_field), Duration(ms=5),
                                 Duration(ms=20), "late")
    assert spec.component_kwargs == {"_window": cfg.to_doc(), "_bolt": class_path(Keep)}
    assert Keep.with_window(Count(4)).with_timestamp_extractor("a.b").config.timestamp_extractor \
        == "a.b"
    assert Keep.with_window(Count(4)).with_timestamp_field("t").config.timestamp_field == "t"
    assert Keep.with_window(Count(4), Count(2)).config.slide == Count(2)


def test_only_windowed_bolts_can_be_wrapped() -> None:
    window = Keep.with_tumbling_window(Count(2)).config.to_doc()
    for path in ("stormpy.testing._components.Capture",
                 "tests.unit.windowing.test_window_executor_unit.ts_field"):
        with pytest.raises(WindowConfigError, match="is not a WindowedBolt subclass") as err:
            WindowedBoltExecutor(_window=window, _bolt=path)
        assert err.value.setting == "WindowedBolt"  # the error names what was expected


# -- prepare ----------------------------------------------------------------------------------
def test_prepare_refuses_a_message_timeout_shorter_than_the_window() -> None:
    spec = Keep.with_window(Duration(seconds=20), Duration(seconds=15))
    with pytest.raises(SettingError) as err:
        build(spec, conf={"topology.message.timeout.secs": 34})
    assert str(err.value) == ("topology.message.timeout.secs: windowed bolt 'win' needs it >= 35.0, "
                              "the topology sets 34")
    with pytest.raises(ValueError, match="the topology sets 30$"):
        build(spec)  # Storm's default timeout
    build(spec, conf={"topology.message.timeout.secs": 35})  # exactly enough
    build(spec, conf={"topology.message.timeout.secs": "40"})
    build(spec, conf={"topology.message.timeout.secs": 1, "topology.enable.message.timeouts": False})
    build(Keep.with_tumbling_window(Count(3)), conf={"topology.message.timeout.secs": 1})


def test_prepare_hands_the_runtime_to_the_user_bolt_and_cleanup_reaches_it() -> None:
    Keep.prepared.clear()
    Keep.cleaned.clear()
    ex, col = build(Keep.with_tumbling_window(Count(2)), conf={"k": 1})
    assert Keep.prepared == [({"k": 1}, "win")]
    bolt: Any = ex.bolt
    t = data(1)
    bolt.report_error("oops")
    bolt.reset_timeout(t)
    bolt.call_soon_threadsafe(lambda: bolt.report_error("soon"))
    bolt.run_in_background(lambda: 5, lambda result, exc: bolt.report_error(result))
    assert col.errors == ["oops", "soon", 5] and col.timeouts_reset == [t]
    for name in ("ack", "fail"):
        with pytest.raises(RuntimeError) as err:
            getattr(bolt, name)(t)
        assert str(err.value) == (f"a WindowedBolt does not {name} its inputs: the window acks "
                                  "each tuple once it expired from every window")
    ex.cleanup()
    assert Keep.cleaned == ["cleaned"]


# -- processing time ----------------------------------------------------------------------------
def test_a_count_window_anchors_emits_to_its_tuples_and_acks_them_after() -> None:
    ex, col = build(Keep.with_tumbling_window(Count(2)))
    a, b, c = data(1), data(2), data(3)
    for t in (a, b, c):
        ex.execute(t)
    t0 = ex.now  # no ticks: every tuple is stamped with the time the bolt started
    assert ex.bolt.windows == [([1, 2], t0, t0)]  # type: ignore[attr-defined]
    assert [(e.values, e.stream, e.anchors, e.task) for e in col.emitted] == [
        ([3], "default", [a, b], None), ([2], "direct", [a, b], 7)]
    assert col.acked == [a, b] and col.failed == []
    col.clear()
    d = data(4)
    ex.execute(d)
    # the second window's emits anchor to its own tuples, not the first window's
    assert [e.anchors for e in col.emitted] == [[c, d], [c, d]] and col.acked == [c, d]


def test_a_sliding_window_anchors_emits_to_all_its_tuples_not_only_its_new_ones() -> None:
    ex, col = build(Keep.with_window(Count(3), Count(1)))
    a, b, c, d = data(1), data(2), data(3), data(4)
    for t in (a, b, c):
        ex.execute(t)
    col.clear()
    ex.execute(d)  # the window [b, c, d]: d is its only new tuple
    assert ex.bolt.windows[-1][0] == [2, 3, 4]  # type: ignore[attr-defined]
    assert [e.anchors for e in col.emitted] == [[b, c, d], [b, c, d]]
    assert col.acked == [b]  # b is in no later window (a went before); c and d are in the next


def test_explicit_anchors_are_kept_and_emits_outside_a_window_are_unanchored() -> None:
    ex, col = build(Keep.with_tumbling_window(Count(2)), anchored=True)
    a, b = data(1), data(2)
    ex.execute(a)
    ex.execute(b)
    assert [e.anchors for e in col.emitted] == [[b], [a, b]]
    col.clear()
    ex.bolt.emit([9])
    ex.bolt.emit_direct(7, [1], stream="direct")
    assert [e.anchors for e in col.emitted] == [[], []]


def test_an_error_in_execute_leaves_no_window_behind() -> None:
    ex, col = build(Boom.with_tumbling_window(Count(1)))
    with pytest.raises(KeyError):
        ex.execute(data(1))
    ex.bolt.emit([1])
    assert col.emitted[0].anchors == []


def test_processing_timestamps_are_epoch_milliseconds_as_in_storm() -> None:
    """Storm's TupleWindow end/start timestamps are epoch ms: a window formatted as a time of day
    is today's, not 00:00:10."""
    before = int(time.time() * 1000)
    ex, _ = build(Keep.with_tumbling_window(Duration(seconds=10)))
    assert before <= ex.now <= int(time.time() * 1000)
    ex.execute(data(1))
    ex.execute(tick())
    assert ex.bolt.windows == [([1], ex.now - 10_000, ex.now)]  # type: ignore[attr-defined]
    end = ex.bolt.windows[0][2]  # type: ignore[attr-defined]
    assert before + 10_000 <= end <= int(time.time() * 1000) + 10_000  # epoch ms, 10 s on


def test_processing_time_moves_with_ticks_and_stamps_tuples_with_the_period_end() -> None:
    ex, col = build(Keep.with_window(Duration(ms=200), Duration(ms=100)))
    assert ex.tick == 100
    t0 = ex.now
    ex.execute(data(1))          # stamped 100
    ex.execute(tick())           # now 100: window (-100, 100]
    ex.execute(data(2))          # stamped 200
    ex.execute(data(3))
    ex.execute(tick())           # now 200: window (0, 200]
    ex.execute(tick())           # now 300: (100, 300]
    ex.execute(tick())           # now 400: empty, skipped
    assert ex.now == t0 + 400
    assert ex.bolt.windows == [  # type: ignore[attr-defined]
        ([1], t0 - 100, t0 + 100), ([1, 2, 3], t0, t0 + 200), ([2, 3], t0 + 100, t0 + 300)]
    assert [t.values[0] for t in col.acked] == [1, 2, 3]


def test_a_count_window_takes_no_ticks() -> None:
    ex, _ = build(Keep.with_tumbling_window(Count(2)))
    assert ex.tick == 0
    t0 = ex.now
    ex.execute(tick())
    ex.execute(data(1))
    assert ex.now == t0 and ex.manager.events[0].ts == t0


# -- event time ---------------------------------------------------------------------------------
EVENT_INPUTS = (("a", "default"), ("b", "s"), ("$checkpointspout", "$checkpoint"))


def test_the_watermark_waits_for_every_data_stream_and_follows_the_slowest() -> None:
    spec = (Keep.with_tumbling_window(Duration(ms=1000)).with_timestamp_field("ts")
            .with_lag(Duration(ms=100)))
    ex, col = build(spec, inputs=EVENT_INPUTS)
    assert ex.sources == [("a", "default"), ("b", "s")]  # not the checkpoint stream
    ex.execute(data(1, 500, "a"))
    ex.execute(data(2, 5000, "a"))
    ex.execute(tick())
    assert ex.manager.watermark is None and ex.bolt.windows == []  # type: ignore[attr-defined]
    ex.execute(data(3, 1200, "b", "s"))
    ex.execute(data(4, 900, "b", "s"))  # older: stream b's newest stays 1200
    assert ex.max_ts == {("a", "default"): 5000, ("b", "s"): 1200}
    ex.execute(tick())
    assert ex.manager.watermark == 1100  # min(5000, 1200) - lag
    assert ex.bolt.windows == [([1, 4], 0, 1000)]  # type: ignore[attr-defined]
    assert [t.values[0] for t in col.acked] == [1, 4]


def test_timestamps_come_from_an_extractor_or_a_field_and_must_be_there() -> None:
    spec = Keep.with_tumbling_window(Duration(ms=1000)).with_timestamp_extractor(ts_field)
    ex, _ = build(spec)
    ex.execute(data(1, "1500"))
    assert ex.manager.events[0].ts == 1500 and ex.max_ts == {("src", "default"): 1500}
    field, _ = build(Keep.with_tumbling_window(Duration(ms=1000)).with_timestamp_field("ts"))
    with pytest.raises(ValueError) as err:
        field.execute(data(1))
    assert str(err.value).startswith("windowed bolt: no timestamp in tuple from src/default (")
    with pytest.raises(ValueError, match="from src/default"):
        field.execute(data(1, "soon"))


def test_late_tuples_go_to_the_late_stream_anchored_and_are_acked() -> None:
    spec = (Keep.with_tumbling_window(Duration(ms=1000)).with_timestamp_field("ts")
            .with_late_tuple_stream("late"))
    ex, col = build(spec)
    ex.execute(data(1, 3000))
    ex.execute(tick())  # watermark 3000
    late, edge = data(2, 2999), data(3, 3000)
    ex.execute(late)
    ex.execute(edge)  # at the watermark: not late
    assert [(e.values, e.stream, e.anchors) for e in col.emitted] == [([[2, 2999], 2999], "late",
                                                                        [late])]
    assert col.acked == [late] and ex.late_dropped == 0
    assert ex.max_ts == {("src", "default"): 3000}


def test_late_tuples_without_a_late_stream_are_counted_acked_and_logged_sparingly(
        caplog: pytest.LogCaptureFixture) -> None:
    ex, col = build(Keep.with_tumbling_window(Duration(ms=1000)).with_timestamp_field("ts"))
    ex.execute(data(1, 3000))
    ex.execute(tick())
    with caplog.at_level(logging.WARNING, logger="stormpy.windowing"):
        for i in range(2000):
            ex.execute(data(i, 10))
    assert ex.late_dropped == 2000 and len(col.acked) == 2000 and col.emitted == []
    assert [r.getMessage().split(" late")[0] for r in caplog.records] == [
        "windowed bolt: 1", "windowed bolt: 1000", "windowed bolt: 2000"]


class Streams(WindowedBolt):
    """Declares its output streams from its arguments; emits while being prepared (outside any
    window) and, per window, on its named stream and directly with explicit anchors."""

    def __init__(self, stream: str = "out") -> None:
        self.stream = stream

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        name = kwargs.get("stream", "out")
        return {name: Stream(["v"], name=name), "d": Stream(["v"], name="d", direct=True)}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.emit(["prepared"], stream=self.stream)

    def execute(self, window: Window) -> None:
        tuples = window.get()
        self.emit([len(tuples)], stream=self.stream)
        self.emit_direct(4, [len(tuples)], anchors=tuples[:1], stream="d")


def test_user_streams_come_from_the_users_arguments_and_emits_keep_stream_and_anchors() -> None:
    kwargs = {**Streams.with_tumbling_window(Count(2)).component_kwargs, "stream": "sums"}
    assert sorted(WindowedBoltExecutor.declare_outputs(kwargs)) == ["d", "sums"]
    ex, col = build(Streams.with_tumbling_window(Count(2)), stream="sums")
    assert [(e.values, e.stream, e.anchors) for e in col.emitted] == [(["prepared"], "sums", [])]
    a, b = data(1), data(2)
    ex.execute(a)
    ex.execute(b)
    assert [(e.values, e.stream, e.anchors, e.task) for e in col.emitted[1:]] == [
        ([2], "sums", [a, b], None), ([2], "d", [a], 4)]
