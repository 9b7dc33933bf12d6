"""The batch form of the tuple path: ``execute_batch`` (every tuple ready for a bolt in a loop
round, in one call), ``emit_many`` and ``ack_many`` on the bolt collector, ``emit_many`` with
message ids on the spout collector. Each does what the per-tuple calls would: anchoring, acking,
failing one tuple of a batch, fields grouping across workers, checks before anything is sent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import Capture, FeederSpout, LocalCluster

TIMEOUT = {"topology.message.timeout.secs": 10}
#: batch sizes seen by the BatchSplit tasks of the running test, and counts of BatchCount
BATCHES: list[int] = []
COUNTS: Counter[str] = Counter()


class BatchSplit(Bolt):
    """Splits each sentence; all its words anchored to it with one emit_many; acks the batch."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        BATCHES.append(len(tuples))
        for tup in tuples:
            self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack_many(tuples)


class BatchCount(Bolt):
    """Counts words in batches; fails every tuple whose word is ``"bad"``, acks the rest."""

    def execute_batch(self, tuples: list[Tuple]) -> None:
        good = []
        for tup in tuples:
            if tup.is_tick():
                continue
            if tup.values[0] == "bad":
                self.fail(tup)
            else:
                COUNTS[tup.values[0]] += 1
                good.append(tup)
        self.ack_many(good)


def _topology(feeder: FeederSpout, split: int = 1, count: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", BatchSplit, split).shuffle_grouping("feeder")
    b.set_bolt("count", BatchCount, count).fields_grouping("split", ["word"])
    return b.create_topology()


@pytest.fixture(autouse=True)
def _clear() -> None:
    BATCHES.clear()
    COUNTS.clear()


def test_execute_batch_gets_several_tuples_per_call_and_every_tree_completes() -> None:
    feeder = FeederSpout(["sentence"])
    sentences = [f"a b c w{i}" for i in range(200)]
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology(feeder))
        for i, s in enumerate(sentences):
            feeder.feed([s], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 200, 10, "200 sentences acked")
        cluster.wait_until_quiet()
    assert sorted(feeder.acked) == list(range(200)) and feeder.failed == []
    assert sum(BATCHES) == 200 and max(BATCHES) > 1
    assert COUNTS["a"] == COUNTS["b"] == COUNTS["c"] == 200 and COUNTS["w7"] == 1


def test_failing_one_tuple_of_a_batch_fails_only_its_tree() -> None:
    """A child emitted by emit_many and failed downstream fails its root; roots whose children
    were all acked in the same batches complete."""
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology(feeder))
        for i in range(50):
            feeder.feed(["x y bad" if i % 10 == 3 else "x y z"], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) + len(feeder.failed) == 50, 10,
                         "50 sentences acked or failed")
        cluster.wait_until_quiet()
    assert sorted(feeder.failed) == [3, 13, 23, 33, 43]
    assert sorted(feeder.acked) == [i for i in range(50) if i % 10 != 3]


def test_an_unacked_tuple_of_a_batch_times_out_while_the_others_complete() -> None:
    class AckAllButLast(Bolt):
        def execute_batch(self, tuples: list[Tuple]) -> None:
            self.ack_many([t for t in tuples if t.values[0] != "keep"])

    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("b", AckAllButLast).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        for i, v in enumerate(["a", "keep", "b"]):
            feeder.feed([v], msg_id=i)
        cluster.wait_for(lambda: sorted(feeder.acked) == [0, 2], 10, "two acked")
        cluster.advance_time(TIMEOUT["topology.message.timeout.secs"] * 2 + 1)
        cluster.wait_for(lambda: feeder.failed == [1], 10, "the unacked one timed out")


def test_emit_many_with_fields_grouping_across_two_workers() -> None:
    feeder = FeederSpout(["sentence"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 2},
                                _topology(feeder, split=2, count=2), workers=2)
        for i in range(100):
            feeder.feed([f"k{i % 7} k{i % 5} same"], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 100, 20, "100 sentences acked")
        cluster.wait_until_quiet()
    expected = Counter(w for i in range(100) for w in f"k{i % 7} k{i % 5} same".split())
    assert dict(COUNTS) == dict(expected)


def test_emit_many_untracked_and_the_per_tuple_api_agree() -> None:
    """emit_many without anchors sends the same tuples emit would (order kept per target)."""

    class Many(Bolt):
        outputs = ["v"]

        def execute(self, tup: Tuple) -> None:
            self.emit_many([[v] for v in range(tup.values[0])])
            self.ack(tup)

    feeder = FeederSpout(["n"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("many", Many).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).global_grouping("many")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed([5], msg_id=1)
        cluster.wait_for(lambda: feeder.acked == [1], 10, "acked")
        cluster.wait_until_quiet()
    assert sink.values == [[0], [1], [2], [3], [4]]


def test_emit_many_checks_every_values_before_sending_any() -> None:
    class BadMiddle(Bolt):
        outputs = ["v"]

        def execute(self, tup: Tuple) -> None:
            self.emit_many([[1], [object()], [3]], tup)

    feeder = FeederSpout(["n"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("bad", BadMiddle).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("bad")
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, b.create_topology())
        feeder.feed([1], msg_id=1)
        cluster.wait_for(lambda: worker.failure is not None, 10, "the worker stops")
    assert "bad" in str(worker.failure)
    assert sink.values == []


class BatchSpout(Spout):
    outputs = ["v"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sent = False
        self.acked: list[Any] = []

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit_many([[i] for i in range(10)], msg_ids=[f"m{i}" for i in range(10)])

    def ack(self, msg_id: Any) -> None:
        ACKED.append(msg_id)


ACKED: list[Any] = []


def test_spout_emit_many_tracks_each_message_id() -> None:
    ACKED.clear()
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("spout", BatchSpout)
    b.set_bolt("sink", sink).shuffle_grouping("spout")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        cluster.wait_for(lambda: len(ACKED) == 10, 10, "10 acked")
    assert sorted(ACKED) == sorted(f"m{i}" for i in range(10))
    assert sorted(v[0] for v in sink.values) == list(range(10))


def test_a_basic_bolt_with_execute_batch_is_refused() -> None:
    class Basic(BasicBolt):
        def process(self, tup: Tuple) -> None:
            pass

        def execute_batch(self, tuples: list[Tuple]) -> None:
            pass

    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("basic", Basic).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster, pytest.raises(TypeError, match="BasicBolt"):
        cluster.submit_topology("t", TIMEOUT, b.create_topology())


def test_choose_many_routes_a_batch_as_choose_routes_each_values() -> None:
    from stormpy.topology._fields import Fields
    from stormpy.worker.routing import FieldsRouter, ShuffleRouter

    batch = [["a", 1], ["b", 2], [3, 3], ["a", 4], [1.5, 5], ["c", 6], ["b", 7]]
    for key in (["w"], ["w", "n"]):
        router = FieldsRouter([4, 5, 6], Fields(["w", "n"]), key)
        fresh = FieldsRouter([4, 5, 6], Fields(["w", "n"]), key)
        assert router.choose_many(batch) == [fresh.choose(v) for v in batch]
    shuffle, again = ShuffleRouter([1, 2, 3]), ShuffleRouter([1, 2, 3])
    again.singles = list(shuffle.singles)
    assert shuffle.choose_many(batch) == [again.choose(v) for v in batch]


def test_the_recording_collector_records_emit_many_and_ack_many() -> None:
    from stormpy.testing._unit import RecordingCollector, test_tuple

    collector = RecordingCollector()
    bolt = collector.prepare(BatchSplit())
    tuples = [test_tuple(["a b"]), test_tuple(["c"])]
    bolt.execute_batch(tuples)
    assert [e.values for e in collector.emitted] == [["a"], ["b"], ["c"]]
    assert [e.anchors for e in collector.emitted] == [[tuples[0]], [tuples[0]], [tuples[1]]]
    assert collector.acked == tuples
