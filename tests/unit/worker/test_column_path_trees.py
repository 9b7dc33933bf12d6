"""A columnar bolt's ``emit_many``, observed through what completes, fails and arrives: a batch
anchored to several tuples of one tree, to one batch in one tree, to batches in several trees
(one child each, and a list repeating trees); on a stream with per-tuple subscribers anchored to
nothing, a tuple or a batch; ``emit`` and ``emit_direct`` anchored to a tuple on named streams;
the errors for an undeclared or direct stream and bad values; ``transferred`` over several
target tasks; the emits a debug topology shows. One worker, simulated time, no timeouts
reached: a tree that does not complete stays pending."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from stormpy import Bolt, EmitError, Stream, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology._columns import ColumnBatch
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.column_path import takes_columns

#: what the held bolt received; what the columnar sinks received; what the per-tuple bolts got
HELD: list[Any] = []
SUNK: list[ColumnBatch] = []
OUT: list[tuple[str, list[Any]]] = []


class PerWord(Bolt):
    """A tuple per word, each anchored to the sentence (so several tuples of one tree)."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        for w in tup.values[0].split():
            self.emit([w], tup)
        self.ack(tup)


class Split(Bolt):
    """One emit_many of the sentence's words anchored to it: a batch in one tree."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack(tup)


class RoundSplit(Bolt):
    """One emit_many of the round's words anchored to all its sentences (a batch in several
    trees); a second one when a sentence says "twice"."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        words = [[w] for t in tuples for w in t.values[0].split()]
        self.emit_many(words, tuples)
        if ["twice"] in words:
            self.emit_many(words, tuples)
        self.ack_many(tuples)


class Hold(Bolt):
    """Columnar; keeps every tuple and batch for the test to emit with and ack."""

    outputs = [Stream(["word"], name="cols"), Stream(["word"], name="wide"),
               Stream(["word"], name="plain"), Stream(["word"], name="picked", direct=True)]

    def execute(self, tup: Tuple) -> None:
        HELD.append(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        HELD.append(batch)


class Sink(Bolt):
    """Columnar; keeps its batches for the test to ack or fail."""

    def execute(self, tup: Tuple) -> None:
        raise AssertionError(f"a single tuple reached the sink: {tup!r}")

    def execute_columns(self, batch: ColumnBatch) -> None:
        SUNK.append(batch)


class Out(Bolt):
    """Records (stream, values); fails the tuples saying "fail", acks the others."""

    def execute(self, tup: Tuple) -> None:
        OUT.append((tup.stream, list(tup.values)))
        if tup.values[0] == "fail":
            self.fail(tup)
        else:
            self.ack(tup)


class Spouts:
    def __init__(self) -> None:
        self.words = FeederSpout(["sentence"])
        self.whole = FeederSpout(["sentence"])
        self.many = FeederSpout(["sentence"])


def _setup(observer: Any = None, debug: bool = False) -> tuple[Worker, Spouts, Any, Any]:
    HELD.clear()
    SUNK.clear()
    OUT.clear()
    spouts = Spouts()
    b = TopologyBuilder()
    b.set_spout("words", spouts.words)
    b.set_spout("whole", spouts.whole)
    b.set_spout("many", spouts.many)
    b.set_bolt("per_word", PerWord).shuffle_grouping("words")
    b.set_bolt("split", Split).shuffle_grouping("whole")
    b.set_bolt("round", RoundSplit).shuffle_grouping("many")
    b.set_bolt("hold", Hold).shuffle_grouping("per_word").shuffle_grouping("split") \
        .shuffle_grouping("round")
    b.set_bolt("sink", Sink).shuffle_grouping("hold", "cols")
    b.set_bolt("sinks", Sink, 2).all_grouping("hold", "wide")
    b.set_bolt("out", Out).shuffle_grouping("hold", "plain")
    b.set_bolt("picked", Out).direct_grouping("hold", "picked")
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.message.timeout.secs": 10, "topology.debug": debug}),
                    clock=SimulatedClock(), observer=observer)
    worker.open()
    (hold,) = worker.layout.component_tasks["hold"]
    (sink,) = worker.layout.component_tasks["sink"]
    return worker, spouts, worker.tasks[hold].instance, worker.tasks[sink].instance


def _rounds(worker: Worker, n: int = 6) -> None:
    for _ in range(n):
        worker.run_once()


def _held(kind: type) -> list[Any]:
    return [h for h in HELD if type(h) is kind]


def test_a_batch_anchored_to_two_tuples_of_one_tree_holds_that_tree() -> None:
    """As for a tuple (and in Storm): each anchor gets its own fresh edge, so two anchors in one
    tree add two different edges to it (they do not cancel out) and the tree waits for the
    child after its anchors were acked."""
    for outcome in ("ack", "fail"):
        worker, spouts, hold, sink = _setup()
        spouts.words.feed(["a b"], msg_id=1)
        _rounds(worker)
        a, b = _held(Tuple)
        assert a.root == b.root  # one tree
        hold.emit_many([["x"], ["y"]], [a, b], "cols")
        _rounds(worker)
        (child,) = SUNK
        assert child.column(0) == ["x", "y"] and list(child.tree_edges()) == [a.root]
        assert child.tree_edges()[a.root] != 0
        hold.ack_many([a, b])
        _rounds(worker)
        assert spouts.words.acked == [] and spouts.words.failed == []  # the child holds it
        getattr(sink, outcome)(child)
        _rounds(worker)
        if outcome == "ack":
            assert spouts.words.acked == [1] and spouts.words.failed == []
        else:
            assert spouts.words.failed == [1] and spouts.words.acked == []


def test_a_batch_anchored_to_a_batch_in_one_tree_is_in_that_tree() -> None:
    for outcome in ("ack", "fail"):
        worker, spouts, hold, sink = _setup()
        spouts.whole.feed(["a b"], msg_id=1)
        _rounds(worker)
        (batch,) = _held(ColumnBatch)
        hold.emit_many([["x"]], batch, "cols")
        hold.ack(batch)
        _rounds(worker)
        assert spouts.whole.acked == []  # the child holds the tree
        (child,) = SUNK
        assert list(child.tree_edges()) == list(batch.tree_edges())
        getattr(sink, outcome)(child)
        _rounds(worker)
        if outcome == "ack":
            assert spouts.whole.acked == [1] and spouts.whole.failed == []
        else:
            assert spouts.whole.failed == [1] and spouts.whole.acked == []


def test_batches_anchored_to_batches_in_several_trees_complete_or_fail_every_tree() -> None:
    """One child of one batch in two trees holds both trees until it is acked or failed; so
    does a child of two batches that are both in the same two trees (a fresh edge per anchor:
    each tree gets two different edges)."""
    for outcome in ("ack", "fail"):
        worker, spouts, hold, sink = _setup()
        spouts.many.feed(["x twice"], msg_id=3)
        spouts.many.feed(["z"], msg_id=4)
        _rounds(worker)
        first, second = _held(ColumnBatch)
        assert sorted(first.tree_edges()) == sorted(second.tree_edges()) and \
            len(first.tree_edges()) == 2
        hold.emit_many([["p"]], first, "cols")
        hold.emit_many([["q"]], [first, second], "cols")
        hold.ack_many([first, second])
        _rounds(worker)
        assert spouts.many.acked == [] and spouts.many.failed == []
        of_one, of_two = SUNK
        assert of_one.column(0) == ["p"] and sorted(of_one.tree_edges()) == \
            sorted(first.tree_edges())
        assert of_two.column(0) == ["q"] and \
            sorted(of_two.tree_edges()) == sorted(first.tree_edges()) and \
            all(of_two.tree_edges().values())
        getattr(sink, outcome)(of_one)
        _rounds(worker)
        if outcome == "ack":
            assert spouts.many.acked == [] and spouts.many.failed == []  # of_two holds them
            sink.ack(of_two)
            _rounds(worker)
            assert sorted(spouts.many.acked) == [3, 4] and spouts.many.failed == []
        else:
            assert sorted(spouts.many.failed) == [3, 4] and spouts.many.acked == []


def test_emit_many_on_a_stream_with_per_tuple_subscribers_keeps_the_anchors() -> None:
    worker, spouts, hold, _ = _setup()
    spouts.words.feed(["a"], msg_id=1)
    spouts.words.feed(["b"], msg_id=2)
    spouts.whole.feed(["c"], msg_id=3)
    _rounds(worker)
    a, b = _held(Tuple)
    (batch,) = _held(ColumnBatch)
    hold.emit_many([["free"], ["free too"]], None, "plain")
    hold.emit_many([["ok"]], a, "plain")
    hold.emit_many([["fail"]], b, "plain")
    hold.emit_many([["fail"]], batch, "plain")
    hold.ack_many([a, b, batch])
    _rounds(worker)
    assert OUT == [("plain", ["free"]), ("plain", ["free too"]), ("plain", ["ok"]),
                   ("plain", ["fail"]), ("plain", ["fail"])]
    assert spouts.words.acked == [1] and spouts.words.failed == [2]
    assert spouts.whole.failed == [3]


def test_emit_and_emit_direct_anchored_to_a_tuple_on_named_streams() -> None:
    worker, spouts, hold, _ = _setup()
    spouts.words.feed(["a"], msg_id=1)
    spouts.words.feed(["b"], msg_id=2)
    _rounds(worker)
    a, b = _held(Tuple)
    (out,) = worker.layout.component_tasks["out"]
    (picked,) = worker.layout.component_tasks["picked"]
    assert hold.emit(["fail"], a, "plain") == [out]
    hold.emit_direct(picked, ["fail"], b, "picked")
    hold.ack_many([a, b])
    _rounds(worker)
    assert sorted(OUT) == [("picked", ["fail"]), ("plain", ["fail"])]
    assert sorted(spouts.words.failed) == [1, 2] and spouts.words.acked == []


def test_emit_many_on_an_undeclared_or_direct_stream_or_with_bad_values_is_refused() -> None:
    worker, _, hold, _ = _setup()
    with pytest.raises(EmitError, match=r"^component 'hold' emitted on undeclared stream 'nope' "
                                        r"\(declared: \['cols', 'picked', 'plain', 'wide'\]\)$"):
        hold.emit_many([["x"]], None, "nope")
    with pytest.raises(EmitError, match=r"^component 'hold': stream 'picked' is direct; use "
                                        r"emit_direct\(task, values\)$"):
        hold.emit_many([["x"]], None, "picked")
    with pytest.raises(EmitError, match=r"^component 'hold', stream 'cols': emitted 2 values "
                                        r"for fields \['word'\]$"):
        hold.emit_many([["x", "y"]], None, "cols")
    _rounds(worker)
    assert SUNK == [] and OUT == []


def test_transferred_counts_the_rows_of_every_target_batch() -> None:
    worker, _, hold, _ = _setup()
    (runner,) = [r for r in worker.tasks.values() if r.component_id == "hold"]
    before = runner.stats.transferred
    hold.emit_many([["a"], ["b"], ["c"]], None, "wide")  # all grouping: two batches of three
    assert runner.stats.transferred - before == 6
    _rounds(worker)
    assert sorted((b.task, b.column(0)) for b in SUNK) == [(runner.task_id, ["a", "b", "c"])] * 2


def test_an_observed_or_debug_topology_sees_every_values_of_a_batch_with_its_targets(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[str, str, list[Any], list[int]]] = []
    worker, _, hold, _ = _setup(observer=lambda *emit: seen.append(emit))
    (hold_task,) = worker.layout.component_tasks["hold"]
    sinks = sorted(worker.layout.component_tasks["sinks"])
    hold.emit_many([["a"], ["b"]], None, "wide")
    assert [(c, s, v, sorted(t)) for c, s, v, t in seen] == \
        [("hold", "wide", ["a"], sinks), ("hold", "wide", ["b"], sinks)]
    worker, _, hold, _ = _setup(debug=True)
    (sink,) = worker.layout.component_tasks["sink"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="stormpy.worker"):
        hold.emit_many([["a"], ["b"]], None, "cols")
    emitted = [r.getMessage() for r in caplog.records if r.getMessage().startswith("emitted")]
    assert emitted == [f"emitted hold:{hold_task} cols ['a'] -> [{sink}]",
                       f"emitted hold:{hold_task} cols ['b'] -> [{sink}]"]


def test_takes_columns_is_whether_the_class_defines_execute_columns() -> None:
    assert takes_columns(Hold) and takes_columns(Sink)
    assert not takes_columns(Out) and not takes_columns(object)
