"""The figures the UI shows for a topology's windows (``stormpy.ui._windows``), exactly: what a
heartbeat's counters become, which deltas fall in which window at the edges of its buckets, the
spans rates are taken over, and the per-executor, per-component and topology figures (emitted on
user streams only, latencies weighted by their counts, capacity of the busiest executor)."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.cluster import WorkerHeartbeat
from stormpy.ui._windows import (
    ALL_TIME,
    WINDOWS,
    ComponentFigures,
    TopologyFigures,
    TopologyWindows,
    WindowFigures,
    beat_counters,
    emitted,
    latency_ms,
    parse_window,
    per_component,
    stream_counts,
    window_pretty,
)


def hb(time: float, uptime: float, tasks: tuple[dict[str, Any], ...] = (), *, port: int = 6700,
       node: str = "sup-a", stats: dict[str, Any] | None = None,
       process: dict[str, Any] | None = None) -> WorkerHeartbeat:
    return WorkerHeartbeat(topology_id="t-1", node=node, port=port, time=time, uptime=uptime,
                           tasks=tasks, stats=stats or {}, process=process or {})


def entry(task: int, component: str = "spout", **counters: Any) -> dict[str, Any]:
    return {"task": task, "component": component, **counters}


def test_window_names_and_their_titles() -> None:
    assert WINDOWS == ("600", "10800", "86400", ":all-time")
    assert [window_pretty(w) for w in WINDOWS] == ["10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"]
    assert parse_window(None) == "600" and parse_window("") == "600"
    assert [parse_window(w) for w in WINDOWS] == list(WINDOWS)
    with pytest.raises(ValueError) as caught:
        parse_window("60")
    assert str(caught.value) == "window '60' is not one of 600, 10800, 86400, :all-time"


def test_a_heartbeats_counters_per_task_leave_out_names_and_levels() -> None:
    beat = hb(10, 5, (entry(1, emitted={"default": 7, "__ack_init": 2}, acked=3, receive_queue=9,
                            latency_sum=0.25),
                      entry(2, "count", executed=4)))
    assert beat_counters(beat) == {
        ("spout", 1): {"emitted:default": 7.0, "emitted:__ack_init": 2.0, "acked": 3.0, "latency_sum": 0.25},
        ("count", 2): {"executed": 4.0}}


def test_a_heartbeat_without_tasks_counts_per_component() -> None:
    beat = hb(10, 5, stats={"spout": {"emitted": 7, "acked": 3, "tasks": 2, "complete_latency_ms": 5.0},
                            "count": {"executed": 6}})
    assert beat_counters(beat) == {("spout", -1): {"acked": 3.0, "emitted:default": 7.0},
                                   ("count", -1): {"executed": 6.0, "emitted:default": 0.0}}


def test_the_ten_minute_window_drops_a_bucket_once_all_of_it_is_older() -> None:
    w = TopologyWindows(now=995.0)
    w.observe([hb(1000, 1, (entry(1, acked=5),))], 1000.0)  # accrued in [999, 1000]: bucket 990
    w.observe([hb(1005, 6, (entry(1, acked=8),))], 1005.0)  # +3 at 1005: bucket 1000
    assert w.totals("600", 1599.9)[("spout", 1)] == {"acked": 8.0}
    assert w.totals("600", 1600.0)[("spout", 1)] == {"acked": 3.0}  # bucket 990 ended at 1000
    assert w.totals("600", 1610.0) == {}
    # the 3-hour window files by 5 minutes: both in bucket 900, kept until 900 + 300 + 10800
    assert w.totals("10800", 11999.0)[("spout", 1)] == {"acked": 8.0}
    assert w.totals("10800", 12000.0) == {}
    assert w.totals("86400", 87599.0)[("spout", 1)] == {"acked": 8.0}
    assert w.totals("86400", 87600.0) == {}
    assert w.totals(ALL_TIME, 10 ** 6)[("spout", 1)] == {"acked": 8.0}


def test_a_worker_whose_uptime_went_down_restarted_even_with_higher_counters() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([hb(1000, 1000, (entry(1, acked=10),))], 1000.0)  # since 0
    w.observe([hb(1010, 5, (entry(1, acked=12),))], 1010.0)  # a new worker, 12 since its start
    w.observe([hb(1020, 15, (entry(1, acked=12),))], 1020.0)  # nothing new
    w.observe([hb(1030, 25, (entry(1, acked=11),))], 1030.0)  # lower, same worker: from zero
    assert w.totals(ALL_TIME, 1030.0)[("spout", 1)] == {"acked": 33.0}
    assert w.totals("600", 1030.0)[("spout", 1)] == {"acked": 23.0}  # the first 10 predate the window


def test_a_task_new_in_a_known_worker_counts_now_and_a_quiet_task_not_at_all() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([hb(1000, 1, (entry(1, acked=0),))], 1000.0)
    assert w.totals(ALL_TIME, 1000.0) == {}
    w.observe([hb(1300, 301, (entry(1, acked=0), entry(2, "count", executed=40)))], 1300.0)
    assert w.totals("600", 1300.0) == {("count", 2): {"executed": 40.0}}
    assert w.totals("600", 1899.0) == {("count", 2): {"executed": 40.0}}  # filed at 1300, not 999
    assert w.totals("600", 1910.0) == {}


def test_carried_counters_of_an_unknown_launch_count_in_all_time_only() -> None:
    w = TopologyWindows(now=1000.0)
    carried = hb(1001, 1, (entry(1, acked=50),), process={"counters_carried": 1})
    w.observe([carried], 1001.0)
    assert w.totals(ALL_TIME, 1001.0)[("spout", 1)] == {"acked": 50.0}
    assert [w.totals(window, 1001.0) for window in ("600", "10800", "86400")] == [{}, {}, {}]
    assert w.span(ALL_TIME, 1001.0) == 1.0  # the tracker's age: nothing older was filed


def test_carried_counters_reach_back_to_the_launch_and_rates_with_them() -> None:
    w = TopologyWindows(now=2000.0, launched=1500.0)
    w.observe([hb(2001, 1, (entry(1, acked=50),), process={"counters_carried": 1})], 2002.0)
    assert w.totals("600", 2002.0)[("spout", 1)] == {"acked": 50.0}
    assert w.totals("600", 2110.0) == {}  # filed at the launch, 1500: out of the window at 2110
    assert w.span(ALL_TIME, 2002.0) == 502.0 and w.span("600", 2002.0) == 502.0
    assert w.span("600", 2200.0) == 600.0 and w.span("86400", 2200.0) == 700.0


def test_a_first_heartbeat_files_its_counters_at_the_workers_start() -> None:
    w = TopologyWindows(now=5000.0)
    # stamped after the sample (clocks apart): the start is taken from the sample's time
    w.observe([hb(5010, 400, (entry(1, acked=9),))], 5000.0)
    assert w.span(ALL_TIME, 5000.0) == 400.0
    assert w.totals("600", 5000.0)[("spout", 1)] == {"acked": 9.0}
    # a negative uptime (a clock step) counts as just started
    v = TopologyWindows(now=5000.0)
    v.observe([hb(4990, -30, (entry(1, acked=9),))], 5000.0)
    assert v.span(ALL_TIME, 5000.0) == 10.0


def test_spans_are_the_window_or_the_age_and_at_least_a_second() -> None:
    w = TopologyWindows(now=100.0)
    assert w.span(ALL_TIME, 100.0) == 1.0 and w.span("600", 100.5) == 1.0
    assert w.span("600", 400.0) == 300.0 and w.span(ALL_TIME, 900.0) == 800.0
    assert w.span("600", 900.0) == 600.0


def test_stream_sums_and_latency_averages() -> None:
    c = {"emitted:default": 5.0, "emitted:words": 2.0, "emitted:__ack_init": 7.0, "acked": 1.0,
         "latency_sum": 0.3, "latency_count": 4.0, "execute_latency_sum": 0.02, "execute_latency_count": 0.0}
    assert emitted(c) == 7.0 and emitted(c, system=True) == 14.0
    assert stream_counts(c) == {"default": 5.0, "words": 2.0, "__ack_init": 7.0}
    assert latency_ms(c) == pytest.approx(75.0)
    assert latency_ms(c, "execute_latency") is None and latency_ms({}) is None
    assert latency_ms({"latency_count": 2.0}) == 0.0  # counted, no time recorded
    assert latency_ms({"process_latency_sum": 0.5, "process_latency_count": 2.0}, "process_latency") == 250.0
    assert per_component({("a", 1): {"x": 1.0}, ("a", 2): {"x": 2.0, "y": 1.0}, ("b", 3): {"x": 5.0}}) == {
        "a": {"x": 3.0, "y": 1.0}, "b": {"x": 5.0}}


def test_component_figures_from_counters() -> None:
    c = {"emitted:default": 10.0, "emitted:__metrics": 3.0, "transferred": 9.0, "acked": 8.0,
         "failed": 1.0, "executed": 200.0, "latency_sum": 2.0, "latency_count": 8.0,
         "execute_latency_sum": 0.5, "execute_latency_count": 100.0,
         "process_latency_sum": 1.0, "process_latency_count": 100.0}
    figures = ComponentFigures.of(c, 10.0)
    assert figures == ComponentFigures(
        emitted=10, transferred=9, acked=8, failed=1, executed=200,
        streams={"default": 10, "__metrics": 3}, complete_latency_ms=250.0, execute_latency_ms=5.0,
        process_latency_ms=10.0, capacity=0.1)  # 200 executed x 5 ms over 10 s
    assert ComponentFigures.of(c, 10.0, busiest=0.7).capacity == 0.7
    assert ComponentFigures.of({}, 10.0) == ComponentFigures(0, 0, 0, 0, 0, {}, None, None, None, None)


def timed(executed: float, latency_secs: float, samples: float, **more: float) -> dict[str, float]:
    return {"executed": executed, "execute_latency_sum": latency_secs,
            "execute_latency_count": samples, **more}


def test_a_components_capacity_is_its_busiest_executors() -> None:
    # over 10 s: executor (1, 2) executed 200 at 0.8 s / 20 samples = 40 ms (8 s: 0.8, the
    # busiest; each of its tasks alone would be 0.4), executor (3, 3) 300 at 20 ms (6 s: 0.6),
    # task 9, in no known executor, 10 at 10 ms (0.01)
    totals = {("count", 1): timed(100, 0.4, 10), ("count", 2): timed(100, 0.4, 10),
              ("count", 3): timed(300, 0.2, 10), ("count", 9): timed(10, 0.1, 10),
              ("spout", 4): {"emitted:default": 1.0}}
    figures = WindowFigures("600", totals, 10.0, [(1, 2), (3, 3), (4, 4)])
    assert figures.span == 10.0 and figures.window == "600" and figures.pretty == "10m 0s"
    count = figures.component("count")
    assert count.capacity == pytest.approx(0.8) and count.executed == 510
    assert count.execute_latency_ms == pytest.approx(27.5)  # 1.1 s / 40 samples
    assert figures.component("spout").capacity is None
    assert figures.component("nobody") == ComponentFigures(0, 0, 0, 0, 0, {}, None, None, None, None)
    pair = figures.executor("count", 1, 2)
    assert pair is not None and pair.executed == 200 and pair.execute_latency_ms == pytest.approx(40.0)
    assert pair.capacity == pytest.approx(0.8)
    assert figures.executor("count", 5, 8) is None


def test_tasks_in_no_known_executor_count_one_by_one() -> None:
    # each 10 at 10 ms over 10 s: 0.01 each (the component as one would be 0.02)
    totals = {("count", 9): timed(10, 0.1, 10), ("count", 10): timed(10, 0.1, 10)}
    assert WindowFigures("600", totals, 10.0, [(1, 2)]).component("count").capacity == pytest.approx(0.01)


def test_timed_tuples_with_none_executed_in_the_window_is_no_load() -> None:
    figures = WindowFigures("600", {("count", 1): {"execute_latency_sum": 0.5, "execute_latency_count": 5.0}},
                            10.0, [(1, 1)])
    count = figures.component("count")
    assert count.capacity == 0.0 and count.execute_latency_ms == 100.0 and count.executed == 0


def test_the_topologys_figures_count_user_components_and_weigh_latencies_by_count() -> None:
    totals = {("spout", 1): {"emitted:default": 10.0, "emitted:__ack_init": 10.0, "transferred": 10.0,
                             "acked": 6.0, "failed": 2.0, "latency_sum": 0.6, "latency_count": 6.0},
              ("spout", 2): {"emitted:default": 4.0, "transferred": 4.0, "acked": 2.0,
                             "latency_sum": 1.0, "latency_count": 2.0},
              ("quiet", 5): {"emitted:default": 3.0},  # a spout with nothing acked or failed yet
              ("count", 3): {"emitted:default": 5.0, "transferred": 5.0, "acked": 14.0},
              ("sink", 6): {"executed": 5.0},  # emits nothing
              ("__acker", 4): {"emitted:__ack_ack": 8.0, "transferred": 8.0, "acked": 99.0}}
    figures = WindowFigures(ALL_TIME, totals, 60.0)
    assert figures.topology({"spout", "quiet"}) == TopologyFigures(
        emitted=22, transferred=19, acked=8, failed=2, complete_latency_ms=200.0)  # 1.6 s / 8
    assert figures.topology({"quiet"}) == TopologyFigures(22, 19, 0, 0, None)
    assert figures.topology(set()) == TopologyFigures(22, 19, 0, 0, None)


def test_figures_of_a_window_come_from_its_totals_and_span() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([hb(1000, 10, (entry(3, "count", **timed(50, 0.5, 5)),
                             entry(4, "count", **timed(0, 0, 0))))], 1000.0)
    w.observe([hb(1010, 20, (entry(3, "count", **timed(150, 1.5, 15)),
                             entry(4, "count", **timed(50, 0.5, 5))))], 1010.0)
    figures = w.figures("600", 1010.0, [(3, 4)])
    assert figures.span == 20.0 and figures.window == "600"
    count = figures.component("count")
    assert count.executed == 200 and count.execute_latency_ms == pytest.approx(100.0)
    assert count.capacity == pytest.approx(1.0)  # one executor: 200 x 100 ms over 20 s
    assert w.figures("600", 1010.0).component("count").capacity == pytest.approx(0.75)  # tasks alone


def test_a_repeated_heartbeat_does_not_hide_the_next_workers() -> None:
    w = TopologyWindows(now=1000.0)
    first = hb(1000, 1, (entry(1, acked=5),))
    w.observe([first], 1000.0)
    w.observe([first, hb(1001, 1, (entry(2, acked=7),), port=6701)], 1001.0)
    assert w.totals(ALL_TIME, 1001.0) == {("spout", 1): {"acked": 5.0}, ("spout", 2): {"acked": 7.0}}


def test_a_new_heartbeat_keeps_the_buckets_still_in_the_window() -> None:
    w = TopologyWindows(now=995.0)
    w.observe([hb(1000, 1, (entry(1, acked=5),))], 1000.0)  # bucket 990
    w.observe([hb(1585, 586, (entry(1, acked=6),))], 1585.0)  # bucket 1580; 990 ends at 1000 > 985
    assert w.totals("600", 1585.0)[("spout", 1)] == {"acked": 6.0}
    assert w.totals("600", 1600.0)[("spout", 1)] == {"acked": 1.0}


def test_a_worker_whose_uptime_stood_still_did_not_restart() -> None:
    w = TopologyWindows(now=1000.0)
    w.observe([hb(1000, 10, (entry(1, acked=5),))], 1000.0)
    w.observe([hb(1001, 10, (entry(1, acked=8),))], 1001.0)  # uptime in whole seconds: not yet 11
    assert w.totals(ALL_TIME, 1001.0)[("spout", 1)] == {"acked": 8.0}
