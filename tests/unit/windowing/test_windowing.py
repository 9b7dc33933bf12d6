"""Windowed bolts: sliding and tumbling windows by count and duration, processing and event time,
watermarks, lag and late tuples, compared with hand-computed windows; acking of expired tuples;
configurations Storm refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from window_kit import Collect

from stormpy.config import SettingError
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.topology import Bolt, InvalidTopologyError, TopologyBuilder, Tuple
from stormpy.windowing import Count, Duration, Window, WindowConfig, WindowedBolt, WindowManager


def manager(length: Any, slide: Any, **event: Any) -> WindowManager:
    return WindowManager(WindowConfig.sliding(length, slide).with_(**event).validate())


def contents(windows: list[Window]) -> list[list[Any]]:
    return [w.get() for w in windows]


# -- the window manager, by hand ---------------------------------------------------------------
def test_count_sliding_and_tumbling_windows() -> None:
    m = manager(Count(3), Count(2))
    got, acked = [], []
    for i in range(8):
        w, e = m.add(i, 0)
        got += contents(w)
        acked += e
    assert got == [[0, 1], [1, 2, 3], [3, 4, 5], [5, 6, 7]]
    assert acked == [0, 1, 2, 3, 4, 5, 6]  # what the next window (2 further) cannot reach
    assert len(m) == 1  # bounded: at most N - S kept between windows

    t = manager(Count(3), Count(3))
    out, acked = [], []
    for i in range(7):
        w, e = t.add(i, 0)
        out += contents(w)
        acked += e
    assert out == [[0, 1, 2], [3, 4, 5]]
    assert acked == [0, 1, 2, 3, 4, 5]  # tumbling: acked right after evaluation
    assert len(t) == 1


def test_new_and_expired_tuples_of_a_sliding_count_window() -> None:
    m = manager(Count(3), Count(1))
    windows = [w for i in range(5) for w in m.add(i, 0)[0]]
    assert [(w.get(), w.get_new(), w.get_expired()) for w in windows] == [
        ([0], [0], []), ([0, 1], [1], []), ([0, 1, 2], [2], []), ([1, 2, 3], [3], [0]),
        ([2, 3, 4], [4], [1])]


def test_duration_windows_in_processing_time() -> None:
    m = manager(Duration(seconds=3), Duration(seconds=1))
    seen = []
    for second in range(6):
        m.add(f"v{second}", second * 1000 + 1000)  # stamped with the end of its tick period
        w, _ = m.advance_time((second + 1) * 1000)
        seen += [(x.start_timestamp, x.end_timestamp, x.get()) for x in w]
    assert seen == [(-2000, 1000, ["v0"]), (-1000, 2000, ["v0", "v1"]),
                    (0, 3000, ["v0", "v1", "v2"]), (1000, 4000, ["v1", "v2", "v3"]),
                    (2000, 5000, ["v2", "v3", "v4"]), (3000, 6000, ["v3", "v4", "v5"])]
    w, e = m.advance_time(20_000)
    assert contents(w) == [["v4", "v5"], ["v5"]] and e == ["v4", "v5"]  # v3 went at 6000
    assert len(m) == 0


def test_count_length_with_duration_interval_and_duration_length_with_count_interval() -> None:
    m = manager(Count(2), Duration(seconds=2))
    for i in range(3):
        m.add(i, 1000)
    w, _ = m.advance_time(2000)
    assert contents(w) == [[1, 2]]
    m.add(3, 3000)
    w, _ = m.advance_time(4000)
    assert contents(w) == [[2, 3]]

    d = manager(Duration(seconds=5), Count(2))
    out = []
    for i, ts in enumerate([1000, 2000, 4000, 7000, 9000, 12000]):
        out += contents(d.add(i, ts)[0])
    # at 2000: (-3000, 2000]; at 7000: (2000, 7000]; at 12000: (7000, 12000]
    assert out == [[0, 1], [2, 3], [4, 5]]


def test_event_time_windows_follow_the_watermark_with_lag_and_late_tuples() -> None:
    m = manager(Duration(seconds=10), Duration(seconds=5), timestamp_field="ts")
    for ts in (1000, 4000, 6000, 12000):
        m.add(ts, ts)
    w, e = m.advance_watermark(12000 - 2000)  # lag 2 s
    assert [(x.end_timestamp, x.get()) for x in w] == [(5000, [1000, 4000])]
    assert m.is_late(3000) and m.is_late(9999) and not m.is_late(10000)
    for ts in (16000, 11000):  # out of order, but not behind the watermark
        m.add(ts, ts)
    w, e = m.advance_watermark(14000)
    assert [(x.end_timestamp, x.get()) for x in w] == [(10000, [1000, 4000, 6000])]
    assert e == [1000, 4000]  # the window ending at 15000 starts after 5000
    m.add(30000, 30000)
    w, e = m.advance_watermark(28000)
    assert [(x.end_timestamp, x.get()) for x in w] == [
        (15000, [6000, 11000, 12000]), (20000, [11000, 12000, 16000]), (25000, [16000])]
    w, _ = m.advance_watermark(30000)
    assert w == []  # the window ending at 30000 waits: a tuple stamped 30000 may still come
    w, _ = m.advance_watermark(30001)
    assert [(x.end_timestamp, x.get()) for x in w] == [(30000, [30000])]


def test_event_time_count_windows() -> None:
    m = manager(Count(2), Count(2), timestamp_field="ts")
    for ts in (5, 1, 3, 2, 9):
        m.add(ts, ts)
    w, e = m.advance_watermark(4)
    assert contents(w) == [[1, 2]] and e == [1, 2]
    w, e = m.advance_watermark(10)
    assert contents(w) == [[3, 5]]


# -- windowed bolts in a topology, under simulated time ----------------------------------------
class Late(WindowedBolt):
    outputs = ["values", "start", "end"]

    def execute(self, window: Window) -> None:
        self.emit([[t["ts"] for t in window.get()], window.start_timestamp, window.end_timestamp])


def ts_of(tup: Tuple) -> int:
    return int(tup.values[1])


def run(spec: Any, conf: Mapping[str, Any] | None = None) -> tuple[LocalCluster, str]:
    lc = LocalCluster(simulated_time=True)
    lc.submit_topology("w", conf, spec)
    return lc, "w"


def topology(window: Any, fields: list[str], late: Capture | None = None
             ) -> tuple[FeederSpout, Capture, Any]:
    feeder, capture = FeederSpout(fields), Capture()
    b = TopologyBuilder()
    b.set_spout("src", feeder)
    b.set_bolt("win", window).shuffle_grouping("src")
    b.set_bolt("out", capture).shuffle_grouping("win")
    if late is not None:
        b.set_bolt("late", late).shuffle_grouping("win", "late")
    return feeder, capture, b.create_topology()


def test_sliding_duration_window_in_processing_time_and_acks_after_expiry() -> None:
    feeder, capture, spec = topology(Collect.with_window(Duration(seconds=3),
                                                         Duration(seconds=1)), ["v"])
    lc, name = run(spec)
    try:
        for second in range(5):
            feeder.feed([second], msg_id=second)
            lc.wait_for(lambda: feeder.pending_feed == 0)
            lc.wait_until_quiet(name)
            if second == 2:
                assert feeder.acked == []  # each tuple is still in some window
            lc.advance_time(1.0)
        lc.advance_time(4.0)
        assert [v for v in capture.values[:5]] == [
            [[0], -2000, 1000], [[0, 1], -1000, 2000], [[0, 1, 2], 0, 3000],
            [[1, 2, 3], 1000, 4000], [[2, 3, 4], 2000, 5000]]
        assert sorted(feeder.acked) == [0, 1, 2, 3, 4] and feeder.failed == []
    finally:
        lc.shutdown()


def test_tumbling_count_window_acks_its_tuples_once_evaluated() -> None:
    feeder, capture, spec = topology(Collect.with_tumbling_window(Count(2)), ["v"])
    lc, name = run(spec)
    try:
        feeder.feed([0], msg_id=0)
        lc.wait_for(lambda: feeder.pending_feed == 0)
        lc.wait_until_quiet(name)
        assert feeder.acked == [] and capture.values == []
        feeder.feed([1], msg_id=1)
        lc.wait_for(lambda: sorted(feeder.acked) == [0, 1], what="acks of the first window")
        assert capture.values == [[[0, 1], 0, 0]]
        # the emit was anchored to the window's tuples: they were acked after the capture acked it
        assert len(capture.tuples[0].tree_edges()) == 2
    finally:
        lc.shutdown()


class FailTheWindowOf123(Bolt):
    """Fails the result of the window holding 1, 2 and 3; acks every other result."""

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == [1, 2, 3]:
            self.fail(tup)
        else:
            self.ack(tup)


def test_a_failed_result_of_a_sliding_window_fails_its_older_tuples_too() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("src", feeder)
    b.set_bolt("win", Collect.with_window(Count(3), Count(1))).shuffle_grouping("src")
    b.set_bolt("out", FailTheWindowOf123).shuffle_grouping("win")
    lc, name = run(b.create_topology())
    try:
        for i in range(4):  # windows [0], [0, 1], [0, 1, 2], [1, 2, 3]: 3 is the last one's new tuple
            feeder.feed([i], msg_id=i)
        lc.wait_for(lambda: 3 in feeder.failed, what="the failure of the window [1, 2, 3]")
        lc.wait_until_quiet(name)
        # the failed result was anchored to 1 and 2 as well, so their spout tuples fail (and are
        # replayed by a spout that replays); 0 left every window and was acked
        assert sorted(feeder.failed) == [1, 2, 3] and feeder.acked == [0]
    finally:
        lc.shutdown()


def test_event_time_window_with_lag_watermarks_and_a_late_tuple_stream() -> None:
    late = Capture()
    spec_ = (Late.with_window(Duration(seconds=10), Duration(seconds=5))
             .with_timestamp_field("ts").with_lag(Duration(seconds=2))
             .with_watermark_interval(Duration(seconds=1)).with_late_tuple_stream("late"))
    feeder, capture, spec = topology(spec_, ["key", "ts"], late)
    lc, name = run(spec)

    def feed(*stamps: int) -> None:
        for ts in stamps:
            feeder.feed(["k", ts], msg_id=ts)
        lc.wait_for(lambda: feeder.pending_feed == 0)
        lc.wait_until_quiet(name)
        lc.advance_time(1.0)
    try:
        feed(1000, 4000, 6000, 12000)            # watermark 10000: window ending at 5000
        feed(3000, 9000, 11000, 16000)           # 3000, 9000 late; watermark 14000
        feed(30000)                              # watermark 28000
        assert capture.values == [
            [[1000, 4000], -5000, 5000], [[1000, 4000, 6000], 0, 10000],
            [[6000, 11000, 12000], 5000, 15000], [[11000, 12000, 16000], 10000, 20000],
            [[16000], 15000, 25000]]
        assert late.values == [[["k", 3000], 3000], [["k", 9000], 9000]]
        assert sorted(feeder.acked) == [1000, 3000, 4000, 6000, 9000, 11000, 12000, 16000]
    finally:
        lc.shutdown()


def test_event_time_with_an_extractor_drops_and_counts_late_tuples() -> None:
    spec_ = Late.with_tumbling_window(Duration(seconds=5)).with_timestamp_extractor(ts_of)
    feeder, capture, spec = topology(spec_, ["key", "ts"])
    lc, name = run(spec)
    try:
        for stamps in ((1000, 7000), (2000, 12000)):
            for ts in stamps:
                feeder.feed(["k", ts], msg_id=ts)
            lc.wait_for(lambda: feeder.pending_feed == 0)
            lc.wait_until_quiet(name)
            lc.advance_time(1.0)
        assert capture.values == [[[1000], 0, 5000], [[7000], 5000, 10000]]
        assert 2000 in feeder.acked  # dropped (and counted), acked all the same
    finally:
        lc.shutdown()


# -- configurations Storm refuses --------------------------------------------------------------
@pytest.mark.parametrize(("window", "message"), [
    (Collect.with_window(Count(2), Count(3)), "sliding interval: Count(3) is larger"),
    (Collect.with_window(Duration(seconds=1), Duration(seconds=2)), "larger than the window"),
    (Collect.with_window(Count(0)), "window length: must be a positive count"),
    (Collect.with_window(Duration(seconds=-1), Count(1)), "must be a positive duration"),
    (Collect.with_tumbling_window(Duration(seconds=0)), "must be a positive duration"),
    (Collect.with_window(3, Count(1)), "must be Count(n) or Duration"),
    (Collect.with_window(Count(3)).with_lag(Duration(seconds=1)), "lag: needs event time"),
    (Collect.with_window(Count(3)).with_late_tuple_stream("late"), "needs event time"),
    (Collect.with_window(Count(3)).with_timestamp_field("ts").with_late_tuple_stream("default"),
     "also declared"),
])
def test_refused_window_configurations_name_the_component(window: Any, message: str) -> None:
    b = TopologyBuilder()
    b.set_spout("src", FeederSpout(["v", "ts"]))
    with pytest.raises(InvalidTopologyError) as err:
        b.set_bolt("my-window", window).shuffle_grouping("src")
    assert "'my-window'" in str(err.value) and message in str(err.value)


def test_a_message_timeout_shorter_than_the_window_is_refused_at_submit() -> None:
    _f, _c, spec = topology(Collect.with_window(Duration(seconds=20), Duration(seconds=5)), ["v"])
    with LocalCluster(simulated_time=True) as lc:
        with pytest.raises(SettingError, match=r"^topology.message.timeout.secs: must be >= 25 "
                                               r"for component 'win' .*got 10"):
            lc.submit_topology("w", {"topology.message.timeout.secs": 10}, spec)
        with pytest.raises(SettingError, match=r"^topology.max.spout.pending: must be >= 60 for "
                                               r"component 'win' .*got 20"):
            _g, _d, counted = topology(Collect.with_window(Count(50), Count(10)), ["v"])
            lc.submit_topology("c", {"topology.max.spout.pending": 20}, counted)
        lc.submit_topology("ok", {"topology.message.timeout.secs": 30}, spec)


@pytest.mark.parametrize(("length", "slide"), [
    (Duration(seconds=10), Duration(seconds=1)), (Duration(seconds=3), Duration(seconds=3)),
    (Count(7), Count(3)), (Count(5), Duration(seconds=2)), (Duration(seconds=4), Count(4))])
def test_event_time_windows_match_brute_force_and_new_expired_add_up(length: Any,
                                                                     slide: Any) -> None:
    import random
    rnd = random.Random(11)
    stamps = sorted(rnd.randrange(0, 60_000) for _ in range(400))
    stamps += [stamps[-1] + 30_000]  # a gap: windows with nothing in them are skipped
    stamps += sorted(stamps[-1] + rnd.randrange(1, 9000) for _ in range(50))
    seen: list[Window] = []
    m = WindowManager(WindowConfig.sliding(length, slide).with_(timestamp_field="t").validate(),
                      on_window=lambda w: seen.append(w.detach()))
    held: list[int] = []
    for i, ts in enumerate(stamps):
        m.add(ts, ts)
        if i % 17 == 0:
            m.advance_watermark(ts - 500)
    m.advance_watermark(10**9)
    assert seen
    running: list[int] = []
    for w in seen:
        end = w.end_timestamp
        upto = [t for t in stamps if t <= end]
        want = ([t for t in upto if t > end - length.ms] if isinstance(length, Duration)
                else upto[-length.n:])
        if isinstance(slide, Count):  # count triggers end at the triggering tuple
            assert w.get() == want[:len(w.get())] or w.get() == want
        else:
            assert w.get() == want, end
        for t in w.get_expired():
            running.remove(t)
        running += w.get_new()
        assert sorted(running) == w.get()
        held = w.get()
    assert held
