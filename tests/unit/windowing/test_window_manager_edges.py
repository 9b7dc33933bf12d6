"""WindowManager edges: the Window a bolt receives (length, iteration, a detached copy, its
description), watermarks that do not move, time that does not apply, shutdown, and windows handed
to a callback instead of returned."""

from __future__ import annotations

from typing import Any

from stormpy.windowing import Count, Duration, Window, WindowConfig, WindowManager


def manager(length: Any, slide: Any, **event: Any) -> WindowManager:
    return WindowManager(WindowConfig.sliding(length, slide).with_(**event).validate())


def test_a_window_reads_as_a_sequence_and_describes_itself() -> None:
    m = manager(Count(3), Count(1))
    for v in "abcd":
        windows, _ = m.add(v, 0)
    [w] = windows
    assert len(w) == 3 and list(w) == ["b", "c", "d"] == w.get()
    assert (w.get_new(), w.get_expired()) == (["d"], ["a"])
    assert repr(w) == "Window(0..0, 3 tuples, 1 new, 1 expired)"


def test_a_detached_window_outlives_the_manager_moving_on() -> None:
    seen: list[Window] = []
    kept: list[Window] = []
    m = WindowManager(WindowConfig.tumbling(Count(2)).validate(),
                      on_window=lambda w: (seen.append(w), kept.append(w.detach())))
    out: list[Any] = []
    for v in range(6):
        windows, evicted = m.add(v, v * 10)
        assert windows == []  # handed to the callback instead
        out += evicted
    assert [w.get() for w in kept] == [[0, 1], [2, 3], [4, 5]]
    assert [(w.start_timestamp, w.end_timestamp, len(w)) for w in kept] == [
        (0, 10, 2), (20, 30, 2), (40, 50, 2)]
    assert out == [0, 1, 2, 3, 4, 5] and len(m) == 0


def test_time_that_does_not_apply_and_watermarks_that_do_not_move_change_nothing() -> None:
    counted = manager(Count(2), Count(1))
    counted.add("x", 0)
    assert counted.advance_time(10_000) == ([], [])
    timed = manager(Duration(ms=100), Duration(ms=100), timestamp_field="ts")
    assert timed.add("a", 50) == ([], [])  # event time: nothing fires on arrival
    windows, _ = timed.advance_watermark(150)
    assert [w.get() for w in windows] == [["a"]] and timed.watermark == 150
    timed.add("b", 160)
    assert timed.advance_watermark(150) == ([], []) and timed.advance_watermark(100) == ([], [])
    assert timed.watermark == 150 and not timed.is_late(150) and timed.is_late(149)
    assert not manager(Count(1), Count(1)).is_late(-10**9)  # no watermark yet


def test_the_first_duration_window_ends_one_interval_after_time_zero() -> None:
    m = manager(Duration(ms=300), Duration(ms=100))
    m.add("a", 100)
    assert m.advance_time(99) == ([], [])
    windows, _ = m.advance_time(100)
    assert [(w.start_timestamp, w.end_timestamp, w.get()) for w in windows] == [(-200, 100, ["a"])]


def test_drain_returns_every_held_tuple_and_starts_over() -> None:
    m = manager(Count(3), Count(1))
    for v in "abcd":
        m.add(v, 0)
    assert m.drain() == ["c", "d"] and len(m) == 0  # b cannot be in the next window: acked
    windows, _ = m.add("e", 0)
    # after a drain the next window has no previous one: everything in it is new, nothing expired
    assert [(w.get(), w.get_new(), w.get_expired()) for w in windows] == [(["e"], ["e"], [])]


def test_out_of_order_event_times_are_kept_sorted() -> None:
    m = manager(Count(10), Count(10), timestamp_field="ts")
    for ts in (30, 10, 20, 10, 40):
        m.add(ts, ts)
    assert [(e.ts, e.seq) for e in m.events] == [(10, 2), (10, 4), (20, 3), (30, 1), (40, 5)]


def test_a_detached_window_that_starts_inside_the_held_events_keeps_its_size() -> None:
    m = manager(Duration(ms=100), Count(1))  # a time length with a count interval
    m.add("a", 0)
    windows, evicted = m.add("b", 500)  # "a" left the window (400, 500]
    [w] = windows
    assert (len(w), w.get(), w.get_new(), w.get_expired(), evicted) == (1, ["b"], ["b"], ["a"],
                                                                        ["a"])
    assert repr(w) == "Window(400..500, 1 tuples, 1 new, 1 expired)"


def test_a_live_window_handed_to_the_callback_knows_its_size() -> None:
    sizes: list[tuple[int, list[Any]]] = []
    m = WindowManager(WindowConfig.sliding(Duration(ms=100), Count(1)).validate(),
                      on_window=lambda w: sizes.append((len(w), w.get())))
    m.add("a", 0)
    m.add("b", 500)  # the live window starts after "a", still held while it is evaluated
    assert sizes == [(1, ["a"]), (1, ["b"])]


def test_a_count_window_fired_by_time_before_any_tuple_is_skipped() -> None:
    m = manager(Count(2), Duration(ms=1000))
    assert m.advance_time(3000) == ([], [])
    m.add("a", 3500)
    windows, _ = m.advance_time(4000)
    assert [(w.start_timestamp, w.get()) for w in windows] == [(3500, ["a"])]


def test_a_tuple_no_time_window_can_hold_is_acked_at_the_first_window() -> None:
    m = manager(Duration(ms=100), Duration(ms=100))
    m.add("zero", 0)  # (0, 100] is the first window: nothing ever holds time 0
    assert m.advance_time(100) == ([], ["zero"])
    m.add("b", 150)
    windows, evicted = m.advance_time(200)
    assert [(w.get(), w.get_new(), w.get_expired()) for w in windows] == [(["b"], ["b"], [])]
    assert evicted == ["b"]


def test_evicted_tuples_are_not_kept_alive() -> None:
    import gc
    import weakref

    class Item:
        pass

    m = manager(Duration(ms=300), Duration(ms=100))
    refs = []
    for i in range(50):
        item = Item()
        refs.append(weakref.ref(item))
        m.add(item, (i + 1) * 100)
        m.advance_time((i + 1) * 100)
        del item
    gc.collect()
    alive = [i for i, r in enumerate(refs) if r() is not None]
    assert alive == [47, 48, 49]  # only what the next windows still need


def test_event_time_count_windows_fire_once_the_watermark_passed_their_tuple() -> None:
    m = manager(Count(1), Count(1), timestamp_field="ts")
    for ts in (1, 2, 3, 10):
        m.add(ts, ts)
    windows, evicted = m.advance_watermark(10)  # the tuple at 10 waits: another may share it
    assert [w.get() for w in windows] == [[1], [2], [3]] and evicted == [1, 2, 3]
    windows, evicted = m.advance_watermark(11)
    assert [w.get() for w in windows] == [[10]] and evicted == [10]


def test_an_event_time_count_trigger_ends_the_window_at_its_own_tuple() -> None:
    m = manager(Count(2), Count(2), timestamp_field="ts")
    for v in ("a", "b", "c"):
        m.add(v, 5)  # one timestamp, three tuples
    windows, _ = m.advance_watermark(6)
    assert [w.get() for w in windows] == [["a", "b"]]


def test_an_event_time_count_window_fires_only_when_new_tuples_arrived() -> None:
    m = manager(Count(2), Duration(ms=1000), timestamp_field="ts")
    for ts in (500, 700, 5500):
        m.add(ts, ts)
    windows, _ = m.advance_watermark(10_000)
    # no window between 1000 and 6000: nothing arrived in (1000, 5000]
    assert [(w.end_timestamp, w.get()) for w in windows] == [(1000, [500, 700]),
                                                             (6000, [700, 5500])]
    m.add(10_000, 10_000)
    windows, _ = m.advance_watermark(20_000)
    assert [(w.end_timestamp, w.get()) for w in windows] == [(10_000, [5500, 10_000])]
