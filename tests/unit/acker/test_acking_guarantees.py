"""Guarantees of the at-least-once machinery that users rely on, each pinned by a test that fails
when the guarantee breaks: BasicBolt failures fail (and replay) the input, a fail that beats the
spout's init still fails, timed-out roots free their max-spout-pending slots, message timeouts are
honoured at every bucket phase (spout and acker side), and a tuple anchored to several roots
completes all of them. LocalCluster with simulated time throughout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, FailedException, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.testing import _registry as registry

TIMEOUT_SECS = 10
TIMEOUT = {"topology.message.timeout.secs": TIMEOUT_SECS}


class FailFirstAttempt(BasicBolt):
    """Raises FailedException the first time it sees a value; passes it on the second."""

    outputs = ["v"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.seen: set[Any] = set()

    def process(self, tup: Tuple) -> None:
        v = tup.values[0]
        if v not in self.seen:
            self.seen.add(v)
            self.emit([v])  # anchored to the input: failing the input fails this child's tree
            raise FailedException(f"first attempt of {v}")
        self.emit([v])


def test_basic_bolt_failed_exception_fails_the_input_and_its_replay_completes() -> None:
    """Guarantee: a BasicBolt raising FailedException fails its input (spout ``fail``, never
    ``ack``), so a reliable spout replays it; the replay then completes."""
    feeder = FeederSpout(["v"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("basic", FailFirstAttempt).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("basic")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        for i in range(3):
            feeder.feed([i], msg_id=i)
        cluster.wait_for(lambda: sorted(feeder.failed) == [0, 1, 2], 60, "3 failed first attempts")
        cluster.wait_until_quiet()
        assert feeder.acked == []
        for i in sorted(feeder.failed):  # what a reliable spout does with a failed tuple
            feeder.feed([i], msg_id=i)
        cluster.wait_for(lambda: sorted(feeder.acked) == [0, 1, 2], 60, "3 replays acked")
        assert sorted(feeder.failed) == [0, 1, 2]  # each failed exactly once


class FailAll(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.fail(tup)


def test_fail_reaching_a_remote_acker_before_the_spout_init_still_fails() -> None:
    """Guarantee: when the spout's acker runs in another worker, a bolt's fail may reach the
    acker before the spout's init; the spout must then get ``fail``, not ``ack``."""
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    # Tasks are laid out in sorted component order (__acker, a-feeder, b-failer) and spread round
    # robin over the two workers: the acker and the failing bolt share a worker, the spout is alone.
    b.set_spout("a-feeder", feeder)
    b.set_bolt("b-failer", FailAll).shuffle_grouping("a-feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 1},
                                b.create_topology(), workers=2)
        workers = cluster.workers_of("t")
        layout = workers[0].layout
        home = {t: i for i, w in enumerate(workers) for t in w.local_tasks}
        (spout,), (bolt,), (acker,) = (layout.component_tasks[c]
                                       for c in ("a-feeder", "b-failer", "__acker"))
        assert home[spout] != home[acker] and home[bolt] == home[acker], "layout precondition"
        for i in range(5):
            feeder.feed([i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.failed) == 5, 10, "5 fails")
        cluster.advance_time(2 * TIMEOUT_SECS)
        assert sorted(feeder.failed) == list(range(5))
        assert feeder.acked == []


class ReplayingSpout(Spout):
    """A reliable spout over the values in its shared state: emits each once, re-emits a value
    when it fails, records acks and fails in the state (registry ``key``)."""

    outputs = ["v"]

    def __init__(self, key: str) -> None:
        self.key = key

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.state: dict[str, list[Any]] = registry.lookup(self.key)

    def next_tuple(self) -> None:
        todo = self.state["todo"]
        if todo:
            v = todo.pop(0)
            self.state["emitted"].append(v)
            self.emit([v], msg_id=v)

    def ack(self, msg_id: Any) -> None:
        self.state["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.state["failed"].append(msg_id)
        self.state["todo"].append(msg_id)


class DropFirstAttempt(Bolt):
    """Never acks the first delivery of a value (it times out); acks every later one."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.seen: set[Any] = set()

    def execute(self, tup: Tuple) -> None:
        v = tup.values[0]
        if v in self.seen:
            self.ack(tup)
        self.seen.add(v)


def test_timed_out_roots_free_their_max_spout_pending_slots() -> None:
    """Guarantee: a root that times out no longer counts against ``topology.max.spout.pending``;
    with max pending 2 and 6 tuples that each time out once, all 6 are emitted and complete."""
    state: dict[str, list[Any]] = {"todo": list(range(6)), "emitted": [], "acked": [],
                                   "failed": []}
    key = registry.register(state)
    b = TopologyBuilder()
    b.set_spout("replaying", ReplayingSpout, kwargs={"key": key}).set_max_spout_pending(2)
    b.set_bolt("dropper", DropFirstAttempt).shuffle_grouping("replaying")
    try:
        with LocalCluster(simulated_time=True) as cluster:
            cluster.submit_topology("t", TIMEOUT, b.create_topology())
            cluster.wait_until_quiet()
            assert state["emitted"] == [0, 1]  # max pending holds the rest back
            for _ in range(12):  # at most 2 new roots per timeout period
                if len(state["acked"]) == 6:
                    break
                cluster.advance_time(TIMEOUT_SECS / 2)
            assert sorted(state["acked"]) == list(range(6)), state
            assert sorted(state["failed"]) == list(range(6))  # each timed out exactly once
    finally:
        registry.unregister(key)


STEP = 0.5
#: feed times spread over one timeout bucket (timeout / 2) and past it: every bucket phase
PHASES = 12


def _fed_over_a_bucket(cluster: LocalCluster, feeder: FeederSpout) -> dict[int, float]:
    """Feed message ids 0..PHASES-1 one STEP apart; returns each id's emit time."""
    emitted_at: dict[int, float] = {}
    for i in range(PHASES):
        feeder.feed([i], msg_id=i)
        cluster.wait_until_quiet()
        emitted_at[i] = cluster.clock.now()
        cluster.advance_time(STEP, step=STEP)
    return emitted_at


def test_message_timeout_fails_a_tuple_neither_before_the_timeout_nor_a_bucket_late() -> None:
    """Guarantee: ``topology.message.timeout.secs`` is honoured to the bucket: whatever the phase
    of its emit within the rotating buckets, an unacked tuple is not failed before the timeout has
    passed (just before the edge it is still pending) and is failed by timeout × 3/2 (one bucket
    after the edge, Storm's RotatingMap of 3 buckets)."""
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("black-hole", Capture(ack=False)).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        emitted_at = _fed_over_a_bucket(cluster, feeder)
        failed_at: dict[int, float] = {}
        end = max(emitted_at.values()) + TIMEOUT_SECS * 1.5 + 2 * STEP
        while cluster.clock.now() < end:
            for msg_id in feeder.failed:
                failed_at.setdefault(msg_id, cluster.clock.now())
            cluster.advance_time(STEP, step=STEP)
        for msg_id in feeder.failed:
            failed_at.setdefault(msg_id, cluster.clock.now())
    assert sorted(failed_at) == list(range(PHASES)), "every tuple times out"
    waited = {i: failed_at[i] - emitted_at[i] for i in range(PHASES)}
    early = {i: w for i, w in waited.items() if w < TIMEOUT_SECS}
    late = {i: w for i, w in waited.items() if w > TIMEOUT_SECS * 1.5}
    assert early == {}, f"failed before the {TIMEOUT_SECS}s timeout: {early}"
    assert late == {}, f"failed more than a bucket after the timeout: {late}"
    assert feeder.acked == []


class AckOnRequest(Bolt):
    """Holds data tuples; a tuple on the ``control`` stream acks the held tuple of that value."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.held: dict[Any, Tuple] = {}

    def execute(self, tup: Tuple) -> None:
        if tup.stream == "control":
            self.ack(self.held.pop(tup.values[0]))
            self.ack(tup)
        else:
            self.held[tup.values[0]] = tup


def test_an_ack_just_before_the_timeout_completes_the_tuple_at_every_bucket_phase() -> None:
    """Guarantee: the acker keeps a root at least as long as the spout's timeout: a tuple acked
    just before its timeout (whatever its bucket phase) is acked, never failed."""
    feeder, control = FeederSpout(["v"]), FeederSpout(["v"], streams={"control": ["v"]})
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_spout("control", control)
    b.set_bolt("holder", AckOnRequest).shuffle_grouping("feeder").all_grouping("control",
                                                                              "control")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        emitted_at = _fed_over_a_bucket(cluster, feeder)
        for i in range(PHASES):
            due = emitted_at[i] + TIMEOUT_SECS - STEP
            if cluster.clock.now() < due:
                cluster.advance_time(due - cluster.clock.now(), step=STEP)
            control.feed([i], stream="control")
            cluster.wait_until_quiet()
            assert feeder.failed == [], f"tuple {i} failed before its timeout"
        cluster.wait_for(lambda: len(feeder.acked) == PHASES, 10, "every tuple acked")
        assert sorted(feeder.acked) == list(range(PHASES))


class Join(Bolt):
    """Pairs the next left tuple with the next right one; emits one child anchored to both."""

    outputs = ["l", "r"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.pending: dict[str, list[Tuple]] = {"left": [], "right": []}

    def execute(self, tup: Tuple) -> None:
        self.pending[tup.component].append(tup)
        if self.pending["left"] and self.pending["right"]:
            a, b = self.pending["left"].pop(0), self.pending["right"].pop(0)
            self.emit([a.values[0], b.values[0]], anchors=[a, b])
            self.ack(a)
            self.ack(b)


class Relay(Bolt):
    """Emits a copy of each input anchored to it (one anchor in several trees), then acks it."""

    outputs = ["l", "r"]

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


@pytest.mark.parametrize("workers", [1, 2])
def test_anchored_emit_after_a_join_completes_both_roots(workers: int) -> None:
    """Guarantee: a tuple anchored to several roots (a join's output) can itself anchor further
    emits; once that tree is acked, every root completes (no timeout, no fail)."""
    left, right = FeederSpout(["v"]), FeederSpout(["v"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("left", left)
    b.set_spout("right", right)
    b.set_bolt("join", Join).global_grouping("left").global_grouping("right")
    b.set_bolt("relay", Relay, 2).shuffle_grouping("join")
    b.set_bolt("sink", sink).shuffle_grouping("relay")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology(), workers=workers)
        for i in range(4):
            left.feed([f"l{i}"], msg_id=f"l{i}")
            right.feed([f"r{i}"], msg_id=f"r{i}")
        cluster.wait_for(lambda: len(left.acked) == 4 and len(right.acked) == 4, 10,
                         "both roots of every join acked")
        cluster.advance_time(2 * TIMEOUT_SECS)
        assert sorted(sink.values) == [[f"l{i}", f"r{i}"] for i in range(4)]
        assert left.failed == [] and right.failed == []
