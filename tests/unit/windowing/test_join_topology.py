"""JoinBolt in a running topology (LocalCluster, simulated time): rows of each window, inputs
acked only once they left every window, rows anchored to exactly the tuples they join (a failed
row fails those inputs and no other), event time with watermarks and late tuples."""

from __future__ import annotations

from typing import Any

from stormpy.state import KeyValueState, StatefulBolt
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.topology import Bolt, TopologyBuilder, Tuple
from stormpy.windowing import Count, Duration, JoinBolt

USERS = ["userId", "name", "ts"]
ORDERS = ["orderId", "userId", "price", "ts"]


def build(bolt: JoinBolt, out: Any, late: Capture | None = None
          ) -> tuple[FeederSpout, FeederSpout, Any]:
    users, orders = FeederSpout(USERS), FeederSpout(ORDERS)
    b = TopologyBuilder()
    b.set_spout("users", users)
    b.set_spout("orders", orders)
    b.set_bolt("join", bolt).fields_grouping("users", "userId").fields_grouping("orders",
                                                                                "userId")
    b.set_bolt("out", out).shuffle_grouping("join")
    if late is not None:
        b.set_bolt("late", late).shuffle_grouping("join", "late")
    return users, orders, b.create_topology()


JOIN = JoinBolt("users", "userId").join("orders", "userId", "users").select("userId,name,price")


def test_tumbling_count_window_joins_acks_after_the_rows_and_anchors_each_row() -> None:
    capture = Capture()
    users, orders, spec = build(JOIN.with_tumbling_window(Count(4)), capture)
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("j", None, spec)
        users.feed([1, "ann", 0], msg_id="u1")
        users.feed([2, "bob", 0], msg_id="u2")
        orders.feed([10, 1, 5, 0], msg_id="o10")
        lc.wait_for(lambda: users.pending_feed == 0 and orders.pending_feed == 0)
        lc.wait_until_quiet("j")
        assert capture.values == [] and users.acked == [] and orders.acked == []
        orders.feed([11, 1, 7, 0], msg_id="o11")  # the fourth tuple closes the window
        lc.wait_for(lambda: len(users.acked) == 2 and len(orders.acked) == 2,
                    what="the window's four inputs acked")
        assert sorted(capture.values) == [[1, "ann", 5], [1, "ann", 7]]
        # each row is anchored to its user and its order only (two trees), not to the window
        assert all(len(t.tree_edges()) == 2 for t in capture.tuples)
        assert users.failed == [] and orders.failed == []


class FailPrice7(Bolt):
    def execute(self, tup: Tuple) -> None:
        (self.fail if tup["price"] == 7 else self.ack)(tup)


def test_a_failed_row_fails_exactly_the_inputs_it_joins() -> None:
    users, orders, spec = build(JOIN.with_tumbling_window(Count(5)), FailPrice7)
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("j", None, spec)
        users.feed([1, "ann", 0], msg_id="u1")
        users.feed([2, "bob", 0], msg_id="u2")
        orders.feed([10, 1, 5, 0], msg_id="o10")
        orders.feed([11, 2, 7, 0], msg_id="o11")
        orders.feed([12, 3, 9, 0], msg_id="o12")  # no such user: joins nothing, acked
        lc.wait_for(lambda: len(users.acked) + len(users.failed) == 2
                    and len(orders.acked) + len(orders.failed) == 3, what="every input settled")
        assert users.failed == ["u2"] and orders.failed == ["o11"]
        assert users.acked == ["u1"] and sorted(orders.acked) == ["o10", "o12"]


def test_sliding_window_emits_a_row_once_per_window_and_acks_when_it_expired() -> None:
    capture = Capture()
    users, orders, spec = build(JOIN.with_window(Duration(seconds=2), Duration(seconds=1)),
                                capture)
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("j", None, spec)

        def second(*feeds: tuple[FeederSpout, list[Any], str]) -> None:
            for feeder, values, msg_id in feeds:
                feeder.feed(values, msg_id=msg_id)
            lc.wait_for(lambda: users.pending_feed == 0 and orders.pending_feed == 0)
            lc.wait_until_quiet("j")
            lc.advance_time(1.0)
            lc.wait_until_quiet("j")

        second((users, [1, "ann", 0], "u1"), (orders, [10, 1, 5, 0], "o10"))
        assert capture.values == [[1, "ann", 5]]  # window (-1 s, 1 s]
        assert users.acked == []  # still in the next window
        second((orders, [11, 1, 6, 0], "o11"))
        assert capture.values == [[1, "ann", 5], [1, "ann", 5], [1, "ann", 6]]
        lc.wait_for(lambda: users.acked == ["u1"] and orders.acked == ["o10"],
                    what="the first second's tuples acked after their last window")
        second()
        assert capture.values[3:] == []  # u1 left: o11 alone joins nothing
        lc.wait_for(lambda: sorted(orders.acked) == ["o10", "o11"], what="o11 acked")


def test_event_time_join_with_watermark_lag_and_late_tuples() -> None:
    capture, late = Capture(), Capture()
    bolt = (JOIN.with_tumbling_window(Duration(seconds=10)).with_timestamp_field("ts")
            .with_lag(Duration(seconds=1)).with_late_tuple_stream("late"))
    users, orders, spec = build(bolt, capture, late)
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("j", None, spec)

        def tick() -> None:
            lc.wait_for(lambda: users.pending_feed == 0 and orders.pending_feed == 0)
            lc.wait_until_quiet("j")
            lc.advance_time(1.0)
            lc.wait_until_quiet("j")

        users.feed([1, "ann", 1000], msg_id="u1")
        orders.feed([10, 1, 5, 9000], msg_id="o10")     # same window (0, 10 s]
        users.feed([2, "bob", 12000], msg_id="u2")
        tick()
        assert capture.values == []  # watermark: min(12000, 9000) - 1000, window not complete
        orders.feed([11, 2, 6, 15000], msg_id="o11")
        orders.feed([12, 1, 7, 11500], msg_id="o12")    # out of order, not late
        tick()                                          # watermark 11000: first window done
        assert capture.values == [[1, "ann", 5]]
        orders.feed([13, 1, 8, 4000], msg_id="o13")     # behind the watermark: late
        users.feed([3, "cy", 30000], msg_id="u3")
        orders.feed([14, 3, 9, 30000], msg_id="o14")
        tick()                                          # watermark 29000: second window done
        assert capture.values == [[1, "ann", 5], [2, "bob", 6]]  # o12 has no user 1 there
        assert late.values == [[[13, 1, 8, 4000], 4000]]
        lc.wait_for(lambda: sorted(orders.acked) == ["o10", "o11", "o12", "o13"]
                    and sorted(users.acked) == ["u1", "u2"], what="acks of the closed windows")


class Stateful(StatefulBolt):
    outputs = ["x"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_a_join_in_a_topology_with_checkpointed_state_is_checked_and_runs() -> None:
    for stateful_first in (True, False):  # the builder's wiring may come before the join's check
        users, orders, capture = FeederSpout(USERS), FeederSpout(ORDERS), Capture()
        b = TopologyBuilder()
        b.set_spout("users", users)
        b.set_spout("orders", orders)
        if stateful_first:
            b.set_bolt("state", Stateful).shuffle_grouping("users")
        b.set_bolt("join", JOIN.with_tumbling_window(Count(2))).shuffle_grouping(
            "users").shuffle_grouping("orders")
        if not stateful_first:
            b.set_bolt("state", Stateful).shuffle_grouping("users")
        b.set_bolt("out", capture).shuffle_grouping("join")
        with LocalCluster(simulated_time=True) as lc:
            lc.submit_topology("j", None, b.create_topology())
            users.feed([1, "ann", 0], msg_id="u1")
            orders.feed([10, 1, 5, 0], msg_id="o10")
            lc.wait_for(lambda: users.acked == ["u1"] and orders.acked == ["o10"],  # noqa: B023
                        what="the window's inputs acked")
            assert capture.values == [[1, "ann", 5]]


class SplitRecord(Bolt):
    """One record (one spout tuple) split into its two joined halves, as in the cluster test."""

    outputs = {"users": ["userId", "name"], "orders": ["userId", "price"]}

    def execute(self, tup: Tuple) -> None:
        i = tup["id"]
        self.emit([i, f"user{i}"], tup, "users")
        self.emit([i, i * 10], tup, "orders")
        self.ack(tup)


HELD: list[list[Any]] = []


class HoldRows(Bolt):
    """Keeps every row un-acked (a sink that has not written it yet, or died before)."""

    def execute(self, tup: Tuple) -> None:
        HELD.append(list(tup.values))


def test_a_row_joining_two_halves_of_one_record_holds_the_record_until_it_is_acked() -> None:
    """Both halves of the row are in one tuple tree: the row holds that tree after the join
    acked the halves (it left the window), so a row lost downstream fails the record (replayed)
    instead of the record being acked without its row."""
    HELD.clear()
    records = FeederSpout(["id"])
    b = TopologyBuilder()
    b.set_spout("records", records)
    b.set_bolt("split", SplitRecord).shuffle_grouping("records")
    join = (JoinBolt("users", "userId", selector="stream").join("orders", "userId", "users")
            .select("userId, name, price").with_tumbling_window(Count(2)))
    b.set_bolt("join", join).fields_grouping("split", "userId", "users").fields_grouping(
        "split", "userId", "orders")
    b.set_bolt("sink", HoldRows).shuffle_grouping("join")
    with LocalCluster(simulated_time=True) as lc:
        lc.submit_topology("j", {"topology.message.timeout.secs": 30}, b.create_topology())
        records.feed([7], msg_id="r7")
        lc.wait_for(lambda: HELD == [[7, "user7", 70]], what="the joined row at the sink")
        lc.wait_until_quiet("j")  # the join evaluated the window and acked both halves
        assert records.acked == [] and records.failed == []
        lc.advance_time(46)  # past the message timeout (1x to 1.5x of it)
        lc.wait_for(lambda: records.failed == ["r7"], what="the record failed by its lost row")
        assert records.acked == []
