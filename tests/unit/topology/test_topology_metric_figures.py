"""The exact figures of user metrics: a counter's count, a gauge's value, a histogram's count,
sum, min, max, mean, standard deviation and each quantile (over the latest updates), a meter's
count, moving rates and mean rate on a driven clock, a timer's durations in milliseconds with its
call rate."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from stormpy.topology import _user_metrics as um
from stormpy.topology._user_metrics import KINDS, RESERVOIR, Counter, Gauge, Histogram, Meter, Timer

QUANTILES = ("p50", "p75", "p95", "p98", "p99", "p999")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Drives both clocks the metrics read (monotonic for meters, perf_counter for timings)."""
    clock = Clock(100.0)
    monkeypatch.setattr(um, "time", SimpleNamespace(monotonic=clock, perf_counter=clock))
    return clock


def test_counter() -> None:
    counter = Counter()
    assert counter.get_count() == 0 and counter.snapshot() == {"type": "counter", "count": 0}
    counter.inc()
    counter.inc()
    counter.inc(5)
    counter.dec()
    counter.dec(2)
    assert counter.get_count() == 4 and counter.count == 4
    assert counter.snapshot() == {"type": "counter", "count": 4}


def test_gauge() -> None:
    box = [1.5]
    gauge = Gauge(lambda: box[0])
    assert gauge.get_value() == 1.5
    box[0] = 2
    assert gauge.snapshot() == {"type": "gauge", "value": 2}
    with pytest.raises(TypeError) as err:
        Gauge(5)  # type: ignore[arg-type]
    assert str(err.value) == "a gauge needs a function returning its value, got 5"


def test_an_empty_histogram() -> None:
    snap = Histogram().snapshot()
    assert snap == {"type": "histogram", "count": 0, "sum": 0.0, "min": 0.0, "max": 0.0, "mean": 0.0,
                    "stddev": 0.0, **{q: 0.0 for q in QUANTILES}}


def test_a_histogram_of_one_value() -> None:
    histogram = Histogram()
    histogram.update(7)
    assert histogram.snapshot() == {"type": "histogram", "count": 1, "sum": 7.0, "min": 7, "max": 7,
                                    "mean": 7.0, "stddev": 0.0, **{q: 7 for q in QUANTILES}}


def test_histogram_figures() -> None:
    histogram = Histogram()
    for v in (4, 1, 3, 2):
        histogram.update(v)
    snap = histogram.snapshot()
    assert (snap["count"], snap["sum"], snap["min"], snap["max"], snap["mean"]) == (4, 10.0, 1, 4, 2.5)
    assert snap["stddev"] == pytest.approx(math.sqrt(5 / 3))  # sample deviation (n - 1)
    assert [snap[q] for q in QUANTILES] == [3, 4, 4, 4, 4, 4]


def test_histogram_quantiles() -> None:
    histogram = Histogram()
    for v in range(1000, 0, -1):
        histogram.update(v)
    snap = histogram.snapshot()
    assert [snap[q] for q in QUANTILES] == [501, 751, 951, 981, 991, 1000]
    assert snap["mean"] == 500.5 and snap["sum"] == 500500.0


def test_histogram_quantiles_cover_the_latest_updates_only() -> None:
    histogram = Histogram()
    for v in range(RESERVOIR + 100):
        histogram.update(v)
    snap = histogram.snapshot()
    assert snap["count"] == RESERVOIR + 100
    assert snap["sum"] == float(sum(range(RESERVOIR + 100)))
    assert (snap["min"], snap["max"]) == (100, RESERVOIR + 99)


def test_meter_rates_on_a_driven_clock(clock: Clock) -> None:
    meter = Meter()
    assert meter.snapshot() == {"type": "meter", "count": 0, "m1_rate": 0.0, "m5_rate": 0.0,
                                "m15_rate": 0.0, "mean_rate": 0.0}
    meter.mark()
    meter.mark(5)
    clock.now = 102.0
    assert meter.snapshot() == {"type": "meter", "count": 6, "m1_rate": 3.0, "m5_rate": 3.0,
                                "m15_rate": 3.0, "mean_rate": 3.0}
    assert meter.snapshot()["m1_rate"] == 3.0  # no time passed: the rates stay
    meter.mark(4)
    clock.now = 104.0
    snap = meter.snapshot()
    assert snap["count"] == 10 and snap["mean_rate"] == 2.5
    for key, window in (("m1_rate", 60.0), ("m5_rate", 300.0), ("m15_rate", 900.0)):
        assert snap[key] == pytest.approx(3.0 + (1.0 - math.exp(-2.0 / window)) * (2.0 - 3.0), rel=1e-12)
    clock.now = 106.0
    snap = meter.snapshot()  # nothing marked since: the instant rate is 0
    m1 = 3.0 + (1.0 - math.exp(-2.0 / 60.0)) * (2.0 - 3.0)
    assert snap["m1_rate"] == pytest.approx(m1 + (1.0 - math.exp(-2.0 / 60.0)) * (0.0 - m1), rel=1e-12)
    assert snap["mean_rate"] == pytest.approx(10 / 6)


def test_a_meter_rate_of_zero_stays_zero(clock: Clock) -> None:
    meter = Meter()
    clock.now = 101.0
    assert meter.snapshot()["m1_rate"] == 0.0
    meter.mark(60)
    clock.now = 102.0
    assert meter.snapshot()["m1_rate"] == pytest.approx(0.0 + (1.0 - math.exp(-1 / 60)) * 60.0, rel=1e-12)


def test_timer_figures_in_milliseconds(clock: Clock) -> None:
    timer = Timer()
    timer.update(0.5)
    timing = timer.time()
    clock.now = 100.25
    assert timing.stop() == 0.25
    with timer.time() as inside:
        assert isinstance(inside, um._Timing)
        clock.now = 101.25
    assert timer.count == 3
    clock.now = 102.0
    snap = timer.snapshot()
    assert snap["type"] == "timer" and snap["count"] == 3
    assert (snap["min"], snap["max"], snap["sum"], snap["mean"]) == (250.0, 1000.0, 1750.0,
                                                                    pytest.approx(1750 / 3))
    assert snap["p50"] == 500.0 and snap["p999"] == 1000.0
    assert snap["mean_rate"] == 1.5 and snap["m1_rate"] == 1.5
    assert (snap["duration_units"], snap["rate_units"]) == ("milliseconds", "calls/second")


def test_kinds_by_snapshot_type() -> None:
    assert {"counter": Counter, "gauge": Gauge, "histogram": Histogram, "meter": Meter,
                     "timer": Timer} == KINDS
    for name, kind in KINDS.items():
        assert kind.kind == name


def test_the_deviation_of_two_values() -> None:
    histogram = Histogram()
    histogram.update(1)
    histogram.update(3)
    snap = histogram.snapshot()
    assert snap["stddev"] == pytest.approx(math.sqrt(2)) and snap["mean"] == 2.0
    assert [snap[q] for q in QUANTILES] == [3, 3, 3, 3, 3, 3]
