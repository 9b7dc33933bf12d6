"""A columnar bolt's collector methods, called on what it holds: ``fail`` and ``reset_timeout``
of a batch reach every spout tuple in it (and count its tuples), of a single tuple the task's own
methods; ``ack_many`` of batches and tuples mixed; ``emit`` and ``emit_direct`` anchored to
nothing, a tuple or a batch. One worker, simulated time."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, Stream, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology._columns import ColumnBatch
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig

TIMEOUT = 10
#: what the held bolt received, and what the bolts after it received: (stream, values)
HELD: list[Any] = []
OUT: list[tuple[str, list[Any]]] = []


class Split(Bolt):
    """One emit_many of a sentence's words anchored to it; a second one when it says "twice"."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        words = [[w] for w in tup.values[0].split()]
        self.emit_many(words, tup)
        if ["twice"] in words:
            self.emit_many(words, tup)
        self.ack(tup)


class RoundSplit(Bolt):
    """One emit_many of the words of all the round's sentences, anchored to all of them."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.emit_many([[w] for t in tuples for w in t.values[0].split()], tuples)
        self.ack_many(tuples)


class Hold(Bolt):
    """Columnar; keeps every batch and tuple for the test to ack, fail or emit with."""

    outputs = [Stream(["word"]), Stream(["word"], name="side"),
               Stream(["word"], name="picked", direct=True)]

    def execute(self, tup: Tuple) -> None:
        HELD.append(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        HELD.append(batch)


class Out(Bolt):
    """Records what it gets; fails the tuples saying "fail", acks the others."""

    def execute(self, tup: Tuple) -> None:
        OUT.append((tup.stream, list(tup.values)))
        if tup.values[0] == "fail":
            self.fail(tup)
        else:
            self.ack(tup)


MANY = FeederSpout(["sentence"])


def _setup() -> tuple[Worker, SimulatedClock, FeederSpout, FeederSpout, Any]:
    global MANY
    HELD.clear()
    OUT.clear()
    sentences, single, MANY = FeederSpout(["sentence"]), FeederSpout(["word"]), \
        FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("sentences", sentences)
    b.set_spout("single", single)
    b.set_spout("many", MANY)
    b.set_bolt("split", Split).shuffle_grouping("sentences")
    b.set_bolt("round", RoundSplit).shuffle_grouping("many")
    b.set_bolt("hold", Hold).shuffle_grouping("split").shuffle_grouping("single") \
        .shuffle_grouping("round")
    b.set_bolt("out", Out).shuffle_grouping("hold").shuffle_grouping("hold", "side")
    b.set_bolt("picked", Out).direct_grouping("hold", "picked")
    clock = SimulatedClock()
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.message.timeout.secs": TIMEOUT}), clock=clock)
    worker.open()
    (hold,) = worker.layout.component_tasks["hold"]
    return worker, clock, sentences, single, worker.tasks[hold].instance


def _rounds(worker: Worker, n: int = 6) -> None:
    for _ in range(n):
        worker.run_once()


def _batches() -> list[ColumnBatch]:
    return [h for h in HELD if type(h) is ColumnBatch]


def _tuples() -> list[Tuple]:
    return [h for h in HELD if type(h) is Tuple]


def test_failing_batches_fails_their_spout_tuples_and_counts_every_tuple() -> None:
    worker, _, sentences, _, hold = _setup()
    sentences.feed(["a b c"], msg_id=1)
    sentences.feed(["d e"], msg_id=2)
    _rounds(worker)
    first, second = _batches()
    hold.fail(first)
    hold.fail(second)
    _rounds(worker)
    assert sorted(sentences.failed) == [1, 2] and sentences.acked == []
    stats = worker.stats()["hold"]
    assert stats["failed"] == 5 and stats["acked"] == 0


def test_failing_a_single_tuple_fails_its_spout_tuple() -> None:
    worker, _, _, single, hold = _setup()
    single.feed(["w"], msg_id=7)
    _rounds(worker)
    (tup,) = _tuples()
    hold.fail(tup)
    _rounds(worker)
    assert single.failed == [7] and worker.stats()["hold"]["failed"] == 1


def test_a_timeout_reset_keeps_a_batch_and_a_tuple_alive_past_the_timeout() -> None:
    worker, clock, sentences, single, hold = _setup()
    sentences.feed(["a b"], msg_id=1)
    single.feed(["w"], msg_id=2)
    _rounds(worker)
    (batch,), (tup,) = _batches(), _tuples()
    clock.advance(TIMEOUT * 0.8)
    _rounds(worker)
    hold.reset_timeout(batch)
    hold.reset_timeout(tup)
    _rounds(worker)
    for _ in range(8):  # past the first timeout, not past the reset one
        clock.advance(1)
        _rounds(worker, 2)
    assert sentences.failed == [] and single.failed == []
    hold.ack_many([batch, tup])
    _rounds(worker)
    assert sentences.acked == [1] and single.acked == [2]
    assert worker.stats()["hold"]["acked"] == 3


def test_without_a_reset_the_same_batch_and_tuple_time_out() -> None:
    worker, clock, sentences, single, _ = _setup()
    sentences.feed(["a b"], msg_id=1)
    single.feed(["w"], msg_id=2)
    _rounds(worker)
    for _ in range(TIMEOUT * 2):
        clock.advance(1)
        _rounds(worker, 2)
    assert sentences.failed == [1] and single.failed == [2]


def test_emits_anchored_to_nothing_a_tuple_or_a_batch_reach_their_stream() -> None:
    worker, _, sentences, single, hold = _setup()
    sentences.feed(["a b"], msg_id=1)
    single.feed(["w"], msg_id=2)
    _rounds(worker)
    (batch,), (tup,) = _batches(), _tuples()
    (picked,) = worker.layout.component_tasks["picked"]
    (out,) = worker.layout.component_tasks["out"]
    assert hold.emit(["free"]) == [out]
    assert hold.emit(["of tuple"], tup) == [out]
    assert hold.emit(["of batch"], batch) == [out]
    assert hold.emit(["of both"], [batch, tup]) == [out]
    hold.emit_direct(picked, ["d free"], stream="picked")
    hold.emit_direct(picked, ["d of tuple"], tup, "picked")
    hold.emit_direct(picked, ["d of batch"], batch, "picked")
    hold.ack_many([batch, tup])
    _rounds(worker)
    assert sorted(OUT) == sorted([
        ("default", ["free"]), ("default", ["of tuple"]), ("default", ["of batch"]),
        ("default", ["of both"]), ("picked", ["d free"]), ("picked", ["d of tuple"]),
        ("picked", ["d of batch"])])
    # the children anchored to the batch and the tuple were acked by out and picked: both trees
    # complete
    assert sentences.acked == [1] and single.acked == [2]
    assert sentences.failed == [] and single.failed == []


def test_children_of_a_batch_on_any_stream_hold_its_trees_until_acked() -> None:
    """Children emitted anchored to a batch in one tree and to a batch in two trees, on a
    second stream and directly: failing them fails every root of their batch."""
    worker, _, sentences, _, hold = _setup()
    sentences.feed(["a b"], msg_id=1)
    sentences.feed(["c"], msg_id=2)
    MANY.feed(["x y"], msg_id=3)
    MANY.feed(["z"], msg_id=4)
    _rounds(worker)
    one, two = [b for b in _batches() if b.component == "split"]
    (both,) = [b for b in _batches() if b.component == "round"]
    assert both.anchors and len(both.tree_edges()) == 2  # one batch, two trees
    (picked,) = worker.layout.component_tasks["picked"]
    hold.emit(["fail"], one, "side")
    hold.emit_direct(picked, ["fail"], two, "picked")
    hold.emit(["fail"], both, "side")
    hold.ack_many([one, two, both])
    _rounds(worker)
    assert sorted(OUT) == [("picked", ["fail"]), ("side", ["fail"]), ("side", ["fail"])]
    assert sorted(sentences.failed) == [1, 2] and sorted(MANY.failed) == [3, 4]
    assert sentences.acked == [] and MANY.acked == []


def test_a_batch_of_several_trees_fails_every_one() -> None:
    worker, _, _, _, hold = _setup()
    MANY.feed(["x y"], msg_id=3)
    MANY.feed(["z"], msg_id=4)
    _rounds(worker)
    (both,) = _batches()
    hold.fail(both)
    _rounds(worker)
    assert sorted(MANY.failed) == [3, 4]


def test_two_batches_anchored_to_one_tuple_both_count_in_its_tree() -> None:
    worker, _, sentences, _, hold = _setup()
    sentences.feed(["once twice"], msg_id=1)
    _rounds(worker)
    first, second = _batches()
    hold.ack(first)
    _rounds(worker)
    assert sentences.acked == []  # the second batch is still pending
    hold.ack(second)
    _rounds(worker)
    assert sentences.acked == [1]


def test_bad_anchors_are_refused_naming_the_component_and_a_tuple_of_anchors_is_taken() -> None:
    worker, _, sentences, single, hold = _setup()
    sentences.feed(["a"], msg_id=1)
    single.feed(["w"], msg_id=2)
    _rounds(worker)
    (batch,), (tup,) = _batches(), _tuples()
    with pytest.raises(TypeError, match="component 'hold': anchors must be a Tuple, a "
                                        "ColumnBatch or a list of them, got str"):
        hold.emit(["x"], "not an anchor")
    hold.emit(["fail"], (batch, tup), "side")
    hold.ack_many([batch, tup])
    _rounds(worker)
    assert sentences.failed == [1] and single.failed == [2]


def test_a_bad_anchor_in_a_columnar_emit_many_is_named() -> None:
    worker, _, _, _, _ = _setup()
    (split,) = worker.layout.component_tasks["split"]
    with pytest.raises(TypeError, match="^component 'split': an anchor must be a Tuple or a "
                                        "ColumnBatch, got int$"):
        worker.tasks[split].instance.emit_many([["w"]], [5])


class BasicColumns(BasicBolt):
    def process(self, tup: Tuple) -> None:
        pass

    def execute_columns(self, batch: ColumnBatch) -> None:
        pass


class NotCallable(Bolt):
    execute_columns = 5

    def execute(self, tup: Tuple) -> None:
        pass


def test_columnar_bolts_that_cannot_be_are_refused_with_the_reason() -> None:
    for cls, message in [
            (BasicColumns, "component 'b': a BasicBolt has no columnar form (execute_columns); "
                           "subclass Bolt and ack each batch"),
            (NotCallable, "component 'b': execute_columns is not callable")]:
        b = TopologyBuilder()
        b.set_spout("feeder", FeederSpout(["w"]))
        b.set_bolt("b", cls).shuffle_grouping("feeder")
        with pytest.raises(TypeError) as info:
            Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
        assert str(info.value) == message
