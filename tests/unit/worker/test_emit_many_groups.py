"""A bolt's ``emit_many`` to several target tasks, in each anchoring case (none, an input in no
tree, an input in one tree, a list of inputs, an input in several trees) and with an observer
(the debug path, one ``_send`` per values): what each target receives (values, stream, source
task and component, fields, tree), what the tree waits for, the task's counters, and the errors
of a bad stream or bad values, on a bolt's and on a spout's ``emit_many``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, Spout, Stream, TopologyBuilder, Tuple
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.errors import WorkerError

WORDS = Fields(["w", "i"])
#: what the observer saw: (component, stream, values, targets)
OBSERVED: list[tuple[str, str, list[Any], list[int]]] = []
#: message ids the spout saw acked and failed
ACKED: list[Any] = []
FAILED: list[Any] = []


class Numbers(Spout):
    """Emits ``[0]`` .. ``[count - 1]``, with the number as message id when ``track``."""

    outputs = ["n"]

    def __init__(self, count: int, track: bool) -> None:
        self.count = count
        self.track = track

    def open(self, conf: Mapping[str, Any], context: Any) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        if self.next < self.count:
            self.emit([self.next], self.next if self.track else None)
            self.next += 1

    def ack(self, msg_id: Any) -> None:
        ACKED.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        FAILED.append(msg_id)


class Fan(Bolt):
    """For each input: ``emit_many`` of three values, then of two, on stream ``words``, anchored
    as ``how`` says; then acks the input."""

    outputs = [Stream(["w", "i"], name="words")]

    def __init__(self, how: str) -> None:
        self.how = how

    def execute(self, tup: Tuple) -> None:
        anchors = {"none": None, "input": tup, "list": [tup]}[self.how]
        n = tup.values[0]
        self.emit_many([[f"a{n}", 0], [f"b{n}", 1], [f"c{n}", 2]], anchors, "words")
        self.emit_many(iter([[f"d{n}", 3], [f"e{n}", 4]]), anchors, "words")
        self.ack(tup)


class Join(Bolt):
    """Holds the first input; on the second emits their sum anchored to both (a tuple in two
    trees) and acks both."""

    outputs = ["n"]

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.first: Tuple | None = None

    def execute(self, tup: Tuple) -> None:
        if self.first is None:
            self.first = tup
            return
        self.emit([self.first.values[0] + tup.values[0] + 10], [self.first, tup])
        self.ack(self.first)
        self.ack(tup)


class Keep(Bolt):
    """Keeps what it receives; the test acks or fails it."""

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.got: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.got.append(tup)


def observe(component: str, stream: str, values: list[Any], targets: list[int]) -> None:
    OBSERVED.append((component, stream, values, targets))


def build(how: str, track: bool, observed: bool, count: int = 1,
          join: bool = False) -> tuple[Worker, list[int]]:
    """numbers -> [join ->] fan -> keep (all grouping, two tasks); returns the worker and the
    keep tasks."""
    OBSERVED.clear()
    ACKED.clear()
    FAILED.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"count": count, "track": track})
    if join:
        b.set_bolt("join", Join).global_grouping("numbers")
        b.set_bolt("fan", Fan, kwargs={"how": how}).shuffle_grouping("join")
    else:
        b.set_bolt("fan", Fan, kwargs={"how": how}).shuffle_grouping("numbers")
    b.set_bolt("keep", Keep, 2).all_grouping("fan", "words")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock(), observer=observe if observed else None)
    worker.open()
    worker.set_active(True)
    for _ in range(8):
        worker.run_once()
    return worker, list(worker.layout.component_tasks["keep"])


def kept(worker: Worker, keep: list[int]) -> list[tuple[int, Tuple]]:
    return [(t, tup) for t in keep for tup in worker.tasks[t].instance.got]


def fan_runner(worker: Worker) -> Any:
    (task,) = worker.layout.component_tasks["fan"]
    return worker.tasks[task]


EXPECTED = [["a0", 0], ["b0", 1], ["c0", 2], ["d0", 3], ["e0", 4]]


@pytest.mark.parametrize("observed", [False, True], ids=["plain", "observed"])
@pytest.mark.parametrize("how,track", [("none", True), ("input", False), ("list", False),
                                       ("none", False)])
def test_untracked_emit_many_reaches_every_target_with_its_metadata(how: str, track: bool,
                                                                    observed: bool) -> None:
    """No anchor, or anchors in no tree: plain tuples, each values to both keep tasks."""
    worker, keep = build(how, track, observed)
    fan = fan_runner(worker)
    got = kept(worker, keep)
    for task in keep:
        assert [tup.values for t, tup in got if t == task] == EXPECTED
    for _, tup in got:
        assert (tup.stream, tup.task, tup.component) == ("words", fan.task_id, "fan")
        assert tup.fields == WORDS and tup["w"] == tup.values[0]
        assert tup.root == 0 and not tup.anchors and tup.tree_edges() == {}
    assert fan.stats.transferred == 10 and fan.stats.emitted["words"] == 5
    if track:
        assert ACKED == [0]  # the fan acked its input: no child holds the tree
    if observed:
        assert [(c, s, v, sorted(t)) for c, s, v, t in OBSERVED if c == "fan"] == \
            [("fan", "words", v, keep) for v in EXPECTED]


@pytest.mark.parametrize("observed", [False, True], ids=["plain", "observed"])
@pytest.mark.parametrize("how", ["input", "list"])
def test_anchored_emit_many_puts_every_child_in_the_input_tree(how: str, observed: bool) -> None:
    worker, keep = build(how, True, observed)
    fan = fan_runner(worker)
    got = kept(worker, keep)
    assert sorted(tup.values for _, tup in got) == sorted(EXPECTED + EXPECTED)
    roots = {tup.root for _, tup in got}
    assert len(roots) == 1 and 0 not in roots
    edges = [tup.edge for _, tup in got]
    assert len(set(edges)) == 10 and 0 not in edges
    for _, tup in got:
        assert (tup.stream, tup.task, tup.component, tup.fields) == ("words", fan.task_id, "fan",
                                                                     WORDS)
        assert tup.tree_edges() == {tup.root: tup.edge}
    assert fan.stats.transferred == 10
    # the tree completes with the last of the ten children, not before
    for t, tup in got[:-1]:
        worker.tasks[t].instance.ack(tup)
    for _ in range(3):
        worker.run_once()
    assert ACKED == [] and FAILED == []
    t, tup = got[-1]
    worker.tasks[t].instance.ack(tup)
    for _ in range(3):
        worker.run_once()
    assert ACKED == [0]


@pytest.mark.parametrize("observed", [False, True], ids=["plain", "observed"])
@pytest.mark.parametrize("outcome", ["ack", "fail"])
def test_emit_many_anchored_to_a_tuple_in_two_trees(outcome: str, observed: bool) -> None:
    """The join's output is in the trees of both spout tuples: so is every child of the fan's
    emit_many. Failing one child fails both; acking all completes both."""
    worker, keep = build("input", True, observed, count=2, join=True)
    got = kept(worker, keep)
    assert sorted(tup.values for _, tup in got) == sorted([[f"{c}11", i] for c, i in
                                                           zip("abcde", range(5))] * 2)
    for _, tup in got:
        assert tup.root == 0 and len(tup.tree_edges()) == 2
    assert ACKED == [] and FAILED == []
    if outcome == "fail":
        t, tup = got[3]
        worker.tasks[t].instance.fail(tup)
    else:
        for t, tup in got:
            worker.tasks[t].instance.ack(tup)
    for _ in range(3):
        worker.run_once()
    assert sorted(ACKED if outcome == "ack" else FAILED) == [0, 1]
    assert (FAILED if outcome == "ack" else ACKED) == []


class BadEmits(Bolt):
    """``emit_many`` on the stream and with the values its input names."""

    outputs = [Stream(["w", "i"], name="words"), Stream(["w"], name="direct", direct=True)]

    def execute(self, tup: Tuple) -> None:
        stream, values = CASES[tup.values[0]]
        self.emit_many(values, tup, stream)


class BadSpoutEmits(Spout):
    outputs = [Stream(["w", "i"], name="words"), Stream(["w"], name="direct", direct=True)]

    def __init__(self, case: int) -> None:
        self.case = case

    def next_tuple(self) -> None:
        stream, values = CASES[self.case]
        self.emit_many(values, None if stream != "words" or self.case != 5 else ["m1"], stream)


CASES: dict[int, tuple[str, Any]] = {
    0: ("nope", [["x", 1]]),
    1: ("direct", [["x"]]),
    2: ("words", [["x", 1], ["y", object()]]),
    3: ("words", [["x", 1], ["y"]]),
    4: ("words", "xy"),
    5: ("words", [["x", 1], ["y", 2]]),
    6: ("words", [["x", 1], 5]),
    7: ("words", [["x", 1], ["y", 2 ** 64]]),
}
MESSAGES = {
    0: "component 'bad' emitted on undeclared stream 'nope' \\(declared: ",
    1: "component 'bad': stream 'direct' is direct; use emit_direct",
    2: "component 'bad', stream 'words': cannot serialise builtins.object",
    3: "component 'bad', stream 'words': emitted 1 values for fields \\['w', 'i'\\]",
    4: "component 'bad', stream 'words': emit_many takes a list of values lists, got str",
    5: "component 'bad', stream 'words': emit_many got 1 message ids for 2 tuples",
    6: "component 'bad', stream 'words': emit takes a list of values, got int",
    7: "component 'bad', stream 'words': cannot serialise integer 18446744073709551616 does not "
       "fit in 64 bits",
}


class Feed(Spout):
    outputs = ["n"]

    def __init__(self, case: int) -> None:
        self.case = case

    def open(self, conf: Mapping[str, Any], context: Any) -> None:
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            self.emit([self.case], "m")


def run_until_failure(b: TopologyBuilder) -> WorkerError:
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    with pytest.raises(WorkerError) as caught:
        for _ in range(5):
            worker.run_once()
    return caught.value


@pytest.mark.parametrize("case", [0, 1, 2, 3, 4, 6, 7])
def test_a_bolts_bad_emit_many_names_the_component_and_stream(case: int) -> None:
    b = TopologyBuilder()
    b.set_spout("feed", Feed, kwargs={"case": case})
    b.set_bolt("bad", BadEmits).shuffle_grouping("feed")
    b.set_bolt("keep", Keep).shuffle_grouping("bad", "words")
    b.set_bolt("direct_keep", Keep).direct_grouping("bad", "direct")
    failure = run_until_failure(b)
    assert failure.component == "bad"
    assert re.search(MESSAGES[case], str(failure)), str(failure)


@pytest.mark.parametrize("case", [0, 1, 2, 3, 4, 5, 6, 7])
def test_a_spouts_bad_emit_many_names_the_component_and_stream(case: int) -> None:
    b = TopologyBuilder()
    b.set_spout("bad", BadSpoutEmits, kwargs={"case": case})
    b.set_bolt("keep", Keep).shuffle_grouping("bad", "words")
    b.set_bolt("direct_keep", Keep).direct_grouping("bad", "direct")
    failure = run_until_failure(b)
    assert failure.component == "bad"
    assert re.search(MESSAGES[case], str(failure)), str(failure)


class NestedFan(Bolt):
    """emit_many of values that are not plain scalars (a list, a dict, a bool, a tuple as the
    values): each takes the full check and passes."""

    outputs = [Stream(["w", "i"], name="words")]

    def execute(self, tup: Tuple) -> None:
        self.emit_many([["x", [1, [2]]], ("y", {"k": 1}), ["z", True]], tup, "words")
        self.ack(tup)


def test_emit_many_of_nested_values_passes_the_full_check() -> None:
    ACKED.clear()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"count": 1, "track": True})
    b.set_bolt("fan", NestedFan).shuffle_grouping("numbers")
    b.set_bolt("keep", Keep).shuffle_grouping("fan", "words")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    for _ in range(5):
        worker.run_once()
    (keep,) = worker.layout.component_tasks["keep"]
    got = worker.tasks[keep].instance.got
    assert [list(t.values) for t in got] == [["x", [1, [2]]], ["y", {"k": 1}], ["z", True]]
    assert fan_runner(worker).stats.emitted["words"] == 3


class SpoutMany(Spout):
    """One emit_many of three values on stream ``words``: with message ids (an iterator of
    them) when ``track``."""

    outputs = [Stream(["w", "i"], name="words")]

    def __init__(self, track: bool) -> None:
        self.track = track

    def open(self, conf: Mapping[str, Any], context: Any) -> None:
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            ids = iter(["m0", "m1", "m2"]) if self.track else None
            self.emit_many([["a", 0], ["b", 1], ["c", 2]], ids, "words")

    def ack(self, msg_id: Any) -> None:
        ACKED.append(msg_id)


@pytest.mark.parametrize("track", [False, True], ids=["untracked", "tracked"])
def test_a_spouts_emit_many_sends_each_values_with_its_metadata(track: bool) -> None:
    ACKED.clear()
    b = TopologyBuilder()
    b.set_spout("spout", SpoutMany, kwargs={"track": track})
    b.set_bolt("keep", Keep, 2).all_grouping("spout", "words")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    for _ in range(3):
        worker.run_once()
    (spout,) = worker.layout.component_tasks["spout"]
    for task in worker.layout.component_tasks["keep"]:
        got = worker.tasks[task].instance.got
        assert [t.values for t in got] == [["a", 0], ["b", 1], ["c", 2]]
        for t in got:
            assert (t.stream, t.task, t.component, t.fields) == ("words", spout, "spout", WORDS)
            assert bool(t.root) is track
    runner = worker.tasks[spout]
    assert runner.stats.transferred == 6 and runner.stats.emitted["words"] == 3
    assert ACKED == []  # tracked: the keep tasks hold the tuples; untracked: nothing to ack
    if track:
        for task in worker.layout.component_tasks["keep"]:
            inst = worker.tasks[task].instance
            inst.ack_many(inst.got)
        for _ in range(3):
            worker.run_once()
        assert sorted(ACKED) == ["m0", "m1", "m2"]


def test_a_basic_bolt_with_a_batch_form_is_refused_with_the_way_out() -> None:
    class Basic(BasicBolt):
        outputs = ["n"]

        def process(self, tup: Tuple) -> None:
            pass

        def execute_batch(self, tuples: list[Tuple]) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"count": 1, "track": False})
    b.set_bolt("basic", Basic).shuffle_grouping("numbers")
    with pytest.raises(TypeError) as caught:
        Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    assert str(caught.value) == ("component 'basic': a BasicBolt has no batch form "
                                 "(execute_batch); subclass Bolt and ack each tuple")


def test_an_execute_batch_that_is_not_callable_is_refused() -> None:
    class NotCallable(Bolt):
        outputs = ["n"]
        execute_batch = 5

        def execute(self, tup: Tuple) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"count": 1, "track": False})
    b.set_bolt("odd", NotCallable).shuffle_grouping("numbers")
    with pytest.raises(TypeError) as caught:
        Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    assert str(caught.value) == "component 'odd': execute_batch is not callable"
