"""WindowConfig: each configuration Storm refuses gets its own message; the tick period, the
message timeout and spout pending a window needs; the document a configuration travels in."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.windowing import Count, Duration, WindowConfig
from stormpy.windowing._config import WindowConfigError, size_from_doc, size_to_doc

EVENT = {"timestamp_field": "ts"}


def refused(cfg: WindowConfig) -> str:
    with pytest.raises(WindowConfigError) as err:
        cfg.validate()
    return str(err.value)


# -- sizes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"seconds": 1, "ms": 1000}, {"ms": 5, "minutes": 1}])
def test_a_duration_takes_exactly_one_unit(kwargs: dict[str, Any]) -> None:
    with pytest.raises(WindowConfigError) as err:
        Duration(**kwargs)
    assert str(err.value) == "Duration: takes exactly one of seconds=, ms= or minutes="


def test_duration_units_seconds_and_positive() -> None:
    assert Duration(ms=1500).seconds == 1.5 and Duration(minutes=0.001).ms == 60
    assert Duration(seconds=0).ms == 0 and Duration(ms=-3).ms == -3
    one = Duration(ms=1)
    assert one.positive("x") is one
    with pytest.raises(WindowConfigError) as err:
        Duration(ms=0).positive("the gap")
    assert str(err.value) == "the gap: must be a positive duration, got 0 ms"


def test_sizes_travel_as_documents() -> None:
    assert size_to_doc(Count(4)) == ["count", 4] and size_to_doc(Duration(ms=250)) == ["duration", 250]
    assert size_from_doc(["count", 4]) == Count(4) and size_from_doc(["duration", 250]) == Duration(ms=250)
    long = "x" * 200
    assert size_to_doc(long) == ["invalid", repr(long)[:80]] and len(size_to_doc(long)[1]) == 80
    assert size_from_doc(["invalid", "'x'"]) == "'x'"  # kept, and refused when validated


@pytest.mark.parametrize(("length", "message"), [
    (Count(0), "window length: must be a positive count, got Count(0)"),
    (Count(-2), "window length: must be a positive count, got Count(-2)"),
    (Count(True), "window length: must be a positive count, got Count(True)"),
    (Count(1.5), "window length: must be a positive count, got Count(1.5)"),  # type: ignore[arg-type]
    (Duration(ms=0), "window length: must be a positive duration, got 0 ms"),
    (3, "window length: must be Count(n) or Duration(seconds=...), got 3"),
    (None, "window length: must be Count(n) or Duration(seconds=...), got None"),
])
def test_a_bad_length_is_named(length: Any, message: str) -> None:
    assert refused(WindowConfig(length, Count(1))) == message


def test_a_bad_sliding_interval_is_named() -> None:
    assert refused(WindowConfig(Count(3), Count(0))) == \
        "sliding interval: must be a positive count, got Count(0)"
    assert refused(WindowConfig(Count(3), "1s")) == \
        "sliding interval: must be Count(n) or Duration(seconds=...), got '1s'"


def test_the_interval_may_equal_but_not_exceed_a_length_of_its_kind() -> None:
    assert refused(WindowConfig.sliding(Count(2), Count(3))) == \
        "sliding interval: Count(3) is larger than the window length Count(2)"
    assert refused(WindowConfig.sliding(Duration(ms=1000), Duration(ms=1001))) == \
        "sliding interval: Duration(1001 ms) is larger than the window length Duration(1000 ms)"
    for ok in (WindowConfig.tumbling(Count(3)), WindowConfig.tumbling(Duration(ms=7)),
               WindowConfig.sliding(Count(2), Duration(seconds=60)),
               WindowConfig.sliding(Duration(ms=5), Count(500))):
        assert ok.validate() is ok


def test_sliding_defaults_to_one_tuple_and_tumbling_repeats_the_length() -> None:
    assert WindowConfig.sliding(Duration(seconds=2)).slide == Count(1)
    assert WindowConfig.sliding(Count(5), Count(2)).slide == Count(2)
    t = WindowConfig.tumbling(Duration(seconds=2))
    assert t.length == t.slide == Duration(seconds=2) and not t.event_time
    assert t.with_(timestamp_extractor="m.f").event_time and t.with_(timestamp_field="ts").event_time
    assert t.with_(lag=Duration(ms=1)) is not t and t.lag is None


def test_event_time_options_need_event_time_and_sane_values() -> None:
    base = WindowConfig.tumbling(Count(3))
    after = ": needs event time: call with_timestamp_field(...) or with_timestamp_extractor(...) first"
    assert refused(base.with_(lag=Duration(ms=0))) == "lag" + after
    assert refused(base.with_(watermark_interval=Duration(ms=5))) == \
        "watermark interval" + after
    assert refused(base.with_(late_stream="late")) == "late tuple stream" + after
    assert refused(base.with_(timestamp_field="ts", timestamp_extractor="m.f")) == \
        "timestamp extractor: give either a timestamp field or a timestamp extractor, not both"
    event = base.with_(**EVENT)
    assert refused(event.with_(lag=Duration(ms=-1))) == "lag: must not be negative, got -1 ms"
    assert event.with_(lag=Duration(ms=0)).validate().lag_ms == 0
    assert refused(event.with_(watermark_interval=Duration(ms=0))) == \
        "watermark interval: must be a positive duration, got 0 ms"
    for bad in ("", "__late"):
        assert refused(event.with_(late_stream=bad)) == (
            f"late tuple stream: must be a non-empty name not starting with '__', got {bad!r}")
    ok = event.with_(late_stream="_late", lag=Duration(ms=3),
                     watermark_interval=Duration(ms=1)).validate()
    assert (ok.late_stream, ok.lag_ms, ok.watermark_ms) == ("_late", 3, 1)


def test_lag_and_watermark_defaults_are_storms() -> None:
    cfg = WindowConfig.tumbling(Count(2)).with_(**EVENT)
    assert (cfg.lag_ms, cfg.watermark_ms) == (0, 1000)


# -- what a window needs from its topology ----------------------------------------------------
@pytest.mark.parametrize(("cfg", "tick"), [
    (WindowConfig.tumbling(Count(3)), None),
    (WindowConfig.sliding(Count(9), Count(3)).with_(**EVENT), 1000),
    (WindowConfig.tumbling(Count(3)).with_(watermark_interval=Duration(ms=250), **EVENT), 250),
    (WindowConfig.sliding(Duration(seconds=3), Duration(seconds=1)), 1000),
    (WindowConfig.sliding(Duration(ms=1500), Duration(ms=500)), 500),
    (WindowConfig.sliding(Count(4), Duration(ms=2500)), 2500),
    (WindowConfig.sliding(Duration(ms=2500), Count(4)), 500),  # timestamps by the second
    (WindowConfig.sliding(Duration(ms=3000), Count(4)), 1000),
    (WindowConfig.sliding(Duration(ms=6), Duration(ms=4)), 10),  # ticks no faster than 10 ms
    (WindowConfig.tumbling(Duration(ms=10)), 10),
    (WindowConfig.tumbling(Duration(ms=11)), 11),
])
def test_tick_period(cfg: WindowConfig, tick: int | None) -> None:
    assert cfg.tick_ms() == tick


@pytest.mark.parametrize(("cfg", "secs", "pending"), [
    (WindowConfig.sliding(Duration(seconds=10), Duration(seconds=5)), 15.0, 0),
    (WindowConfig.sliding(Duration(seconds=10), Duration(seconds=5))
     .with_(lag=Duration(seconds=2), **EVENT), 18.0, 0),  # + lag + the default watermark second
    (WindowConfig.sliding(Duration(seconds=10), Duration(seconds=5))
     .with_(watermark_interval=Duration(ms=500), **EVENT), 15.5, 0),
    (WindowConfig.sliding(Count(50), Count(10)), 0.0, 60),
    (WindowConfig.sliding(Count(50), Count(10)).with_(lag=Duration(seconds=2), **EVENT), 0.0, 60),
    (WindowConfig.sliding(Count(5), Duration(ms=2500)), 2.5, 5),
    (WindowConfig.sliding(Duration(ms=2500), Count(7)), 2.5, 7),
])
def test_required_timeout_and_pending(cfg: WindowConfig, secs: float, pending: int) -> None:
    assert cfg.required_timeout_secs() == secs and cfg.required_pending() == pending


def test_a_configuration_round_trips_through_its_document() -> None:
    full = WindowConfig.sliding(Duration(seconds=10), Count(3)).with_(
        timestamp_extractor="pkg.mod.ts", lag=Duration(ms=20), watermark_interval=Duration(ms=40),
        late_stream="late")
    doc = full.to_doc()
    assert doc == {"length": ["duration", 10_000], "slide": ["count", 3], "timestamp_field": None,
                   "timestamp_extractor": "pkg.mod.ts", "lag": 20, "watermark_interval": 40,
                   "late_stream": "late"}
    assert WindowConfig.from_doc(doc) == full
    plain = WindowConfig.tumbling(Count(2))
    assert plain.to_doc()["lag"] is None and plain.to_doc()["watermark_interval"] is None
    assert WindowConfig.from_doc({"length": ["count", 2], "slide": ["count", 2]}) == plain
    with pytest.raises(WindowConfigError, match="larger than the window length"):
        WindowConfig.from_doc({"length": ["count", 2], "slide": ["count", 3]})
