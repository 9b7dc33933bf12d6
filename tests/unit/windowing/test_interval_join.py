"""IntervalJoinBolt: pairs of equal key within [left.ts + lower, left.ts + upper] emitted once,
as soon as both arrived, anchored to both; compared with a brute-force join of the same input;
tuples acked once the watermark shows nothing can match them any more; late tuples; refused
configurations."""

from __future__ import annotations

import random
from typing import Any

import pytest

from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.topology import InvalidTopologyError, TopologyBuilder
from stormpy.windowing import Count, Duration, IntervalJoinBolt

CLICKS = ["user", "page", "ts"]
VIEWS = ["user", "ad", "ts"]

BOLT = (IntervalJoinBolt("clicks", "user", "views", "user")
        .between(Duration(seconds=-2), Duration(seconds=1))
        .select("user, page, ad, clicks:ts, views:ts").with_timestamp_field("ts")
        .with_watermark_interval(Duration(seconds=1)))


def build(bolt: Any, late: Capture | None = None) -> tuple[FeederSpout, FeederSpout, Capture, Any]:
    clicks, views, out = FeederSpout(CLICKS), FeederSpout(VIEWS), Capture()
    b = TopologyBuilder()
    b.set_spout("clicks", clicks)
    b.set_spout("views", views)
    b.set_bolt("join", bolt).fields_grouping("clicks", "user").fields_grouping("views", "user")
    b.set_bolt("out", out).shuffle_grouping("join")
    if late is not None:
        b.set_bolt("late", late).shuffle_grouping("join", "late")
    return clicks, views, out, b.create_topology()


def test_pairs_within_the_interval_match_brute_force_each_once() -> None:
    rnd = random.Random(7)
    clicks_in = [[f"u{rnd.randrange(4)}", f"p{i}", rnd.randrange(0, 20_000)] for i in range(60)]
    views_in = [[f"u{rnd.randrange(4)}", f"a{i}", rnd.randrange(0, 20_000)] for i in range(60)]
    want = sorted([c[0], c[1], v[1], c[2], v[2]] for c in clicks_in for v in views_in
                  if c[0] == v[0] and c[2] - 2000 <= v[2] <= c[2] + 1000)
    clicks, views, out, spec = build(BOLT.with_lag(Duration(seconds=20)))  # nothing late
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("ij", None, spec)
        for i in range(60):
            clicks.feed(clicks_in[i], msg_id=("c", i))
            views.feed(views_in[i], msg_id=("v", i))
        lc.wait_for(lambda: clicks.pending_feed == 0 and views.pending_feed == 0)
        lc.wait_until_quiet("ij")
        assert sorted(out.values) == want  # emitted on arrival, before any watermark
        assert all(len(t.tree_edges()) == 2 for t in out.tuples)  # anchored to both
        assert clicks.acked == [] and views.acked == []  # all still matchable
        clicks.feed(["u9", "end", 100_000], msg_id="end-c")
        views.feed(["u9", "end", 100_000], msg_id="end-v")
        lc.wait_for(lambda: clicks.pending_feed == 0 and views.pending_feed == 0)
        lc.wait_until_quiet("ij")
        lc.advance_time(1.0)  # watermark 70 s: every earlier tuple expired
        lc.wait_for(lambda: len(clicks.acked) == 60 and len(views.acked) == 60,
                    what="acks of the expired tuples")
        assert sorted(out.values) == sorted(want + [["u9", "end", "end", 100_000, 100_000]])


def test_tuples_are_acked_when_the_watermark_passes_their_bound_and_late_ones_routed() -> None:
    late = Capture()
    clicks, views, out, spec = build(BOLT.with_late_tuple_stream("late"), late)
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("ij", None, spec)

        def step() -> None:
            lc.wait_for(lambda: clicks.pending_feed == 0 and views.pending_feed == 0)
            lc.wait_until_quiet("ij")
            lc.advance_time(1.0)
            lc.wait_until_quiet("ij")

        clicks.feed(["a", "p1", 10_000], msg_id="c1")   # matches views in [8 s, 11 s]
        views.feed(["a", "ad1", 9_000], msg_id="v1")    # matches clicks in [8 s, 11 s]
        views.feed(["a", "ad2", 11_500], msg_id="v2")   # outside c1's interval
        step()  # watermark min(10 s, 11.5 s) = 10 s
        assert out.values == [["a", "p1", "ad1", 10_000, 9_000]]
        assert clicks.acked == [] and views.acked == []  # v1 waits for ts - lower = 11 s
        clicks.feed(["a", "p2", 12_400], msg_id="c2")   # matches v2 (11.5 s in [10.4, 13.4])
        step()  # watermark 11.5 s: c1 (bound 11 s) and v1 (bound 11 s) expire
        assert out.values[1:] == [["a", "p2", "ad2", 12_400, 11_500]]
        lc.wait_for(lambda: clicks.acked == ["c1"] and views.acked == ["v1"],
                    what="c1 and v1 acked")
        clicks.feed(["a", "old", 5_000], msg_id="c0")   # behind the watermark
        step()
        assert late.values == [[["a", "old", 5_000], 5_000]]
        lc.wait_for(lambda: sorted(clicks.acked) == ["c0", "c1"], what="the late tuple acked")


@pytest.mark.parametrize(("bolt", "message"), [
    (IntervalJoinBolt("clicks", "user", "views", "user").select("page")
     .with_timestamp_field("ts"), "between: an IntervalJoinBolt needs between"),
    (BOLT.between(Duration(seconds=1), Duration(seconds=-1)), "the lower bound (1000 ms) is above"),
    (BOLT.between(Count(1), Duration(seconds=1)), "between: takes two Durations"),
    (IntervalJoinBolt("clicks", "user", "views", "user").select("page")
     .between(Duration(seconds=-1), Duration(seconds=1)), "an interval join runs in event time"),
    (BOLT.select("user, user"), "'user' is selected twice"),
])
def test_refused_interval_joins_name_the_component(bolt: Any, message: str) -> None:
    with pytest.raises(InvalidTopologyError) as err:
        TopologyBuilder().set_bolt("ij", bolt)
    assert "'ij'" in str(err.value) and message in str(err.value), str(err.value)


def test_an_interval_join_of_an_unsubscribed_stream_is_refused() -> None:
    b = TopologyBuilder()
    b.set_spout("clicks", FeederSpout(CLICKS))
    b.set_bolt("ij", BOLT).shuffle_grouping("clicks")
    with pytest.raises(InvalidTopologyError, match="joined source 'views' is not one of its"):
        b.create_topology()


def test_a_tuple_without_a_key_matches_nothing_and_is_acked_at_once() -> None:
    clicks, views, out, spec = build(BOLT)
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("ij", None, spec)
        clicks.feed([None, "p", 1000], msg_id="c-none")
        views.feed([None, "ad", 1000], msg_id="v-none")
        lc.wait_for(lambda: clicks.acked == ["c-none"] and views.acked == ["v-none"],
                    what="the keyless tuples acked")
        lc.wait_until_quiet("ij")
        assert out.values == []
