"""The bolts a Trident topology is planned into (``SubtopologyBolt``, ``TridentCommitterBolt``),
run in the test's thread as the transactional layer runs them: one instance per batch and task,
``prepare`` with the batch's attempt, the batch's tuples, ``finish_batch``; what they emit and on
which stream, which operations and states a task builds (once, reused by its batches, released
by ``cleanup_task``), and a state's remote commit handed to the loop's background work. No
cluster: each case is milliseconds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from trident_kit import Double, Split, upper

from stormpy.state import MemoryBackend
from stormpy.testing import test_tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import TopologySpec
from stormpy.topology._streams import Stream as Declared
from stormpy.transactional._api import BatchOutputCollector
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.trident import (
    Aggregator,
    Count,
    FixedBatchSpout,
    Function,
    MapGet,
    MapState,
    StateFactory,
    StateUpdater,
    Sum,
    TridentCollector,
    TridentTopology,
    TridentTuple,
)
from stormpy.trident._bolt import SubtopologyBolt, TridentCommitterBolt
from stormpy.trident._stream import Stream

#: what the recording operations and states below saw, by name
EVENTS: list[tuple[Any, ...]] = []


class Tagged(Function):
    """Appends its instance's serial number (one per construction); records prepare and cleanup
    under ``name``."""

    built = 0

    def __init__(self, name: str) -> None:
        self.name = name
        Tagged.built += 1
        self.serial = Tagged.built

    def prepare(self, conf: Any, context: Any) -> None:
        EVENTS.append(("prepare", self.name, conf.get("k"), context.task_id))

    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([self.serial])

    def cleanup(self) -> None:
        EVENTS.append(("cleanup", self.name))


class ClosingMemory(StateFactory):
    """A memory map state whose ``close`` is recorded (the task's states are closed at
    ``cleanup_task``)."""

    def __init__(self, name: str) -> None:
        super().__init__("memory", name)

    def doc(self) -> dict[str, Any]:
        return {**super().doc(), "factory": f"{__name__}:ClosingMemory"}

    @classmethod
    def from_doc(cls, doc: Any) -> StateFactory:
        return cls(doc["name"])

    def make_state(self, conf: Any, context: Any) -> Any:
        state = super().make_state(conf, context)
        name = self.name

        class Closing(MapState):
            def close(self) -> None:
                EVENTS.append(("close", name))
                super().close()
        state.__class__ = Closing
        return state


class RemoteState:
    """A state of one's own whose commit blocks on a remote system (``commit_later``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def begin_commit(self, txid: int) -> None:
        EVENTS.append(("begin", self.name, txid))

    def commit_later(self, txid: int) -> Callable[[], None]:
        EVENTS.append(("commit_later", self.name, txid))
        return lambda: EVENTS.append(("committed", self.name, txid))

    def close(self) -> None:
        EVENTS.append(("close", self.name))


class LocalState(RemoteState):
    """A state of one's own committed on the loop."""

    commit_later = None  # type: ignore[assignment]

    def commit(self, txid: int) -> None:
        EVENTS.append(("commit", self.name, txid))


class OwnFactory(StateFactory):
    def __init__(self, name: str, remote: bool) -> None:
        super().__init__("external", name)
        self.remote = remote

    def doc(self) -> dict[str, Any]:
        return {**super().doc(), "remote": self.remote, "factory": f"{__name__}:OwnFactory"}

    @classmethod
    def from_doc(cls, doc: Any) -> StateFactory:
        return cls(doc["name"], doc["remote"])

    def make_state(self, conf: Any, context: Any) -> Any:
        EVENTS.append(("made", self.name, conf.get("k"), context.task_id))
        return RemoteState(self.name) if self.remote else LocalState(self.name)


class Record(StateUpdater):
    def update_state(self, state: Any, tuples: list[TridentTuple], collector: TridentCollector) -> None:
        EVENTS.append(("update", state.name, [list(t) for t in tuples]))
        collector.emit([len(tuples)])


class Batch:
    """A collector of one batch: what the bolt emits (stream, values on the wire) and the work
    it hands to the background."""

    def __init__(self) -> None:
        self.emitted: list[tuple[str, list[Any]]] = []
        self.deferred: list[tuple[Callable[[], Any], Any]] = []
        self.collector = BatchOutputCollector(self._emit, self._direct, self._error,
                                              lambda work, then: self.deferred.append((work, then)))

    def _emit(self, values: list[Any], stream: str) -> list[int]:
        self.emitted.append((stream, values))
        return []

    def _direct(self, task: int, values: list[Any], stream: str) -> None:
        raise AssertionError("a Trident bolt emits no direct tuples")

    def _error(self, error: Any) -> None:
        raise AssertionError(f"reported {error!r}")


def bolts(topology: TridentTopology) -> dict[str, tuple[type, dict[str, Any]]]:
    """The planned Trident bolts: component id -> (class, its keyword arguments)."""
    spec = topology.build()
    out = {}
    for cid, comp in spec.components.items():
        target = comp.kwargs.get("target", "")
        if target.startswith("stormpy.trident._bolt:"):
            cls = TridentCommitterBolt if target.endswith("TridentCommitterBolt") else SubtopologyBolt
            out[cid] = (cls, comp.kwargs["target_kwargs"])
    return out


#: the tasks' contexts a test made: their tasks are cleaned up after it (as the worker does when
#: a topology stops), so no task's operations outlive the test
CONTEXTS: list[TopologyContext] = []


def context(component: str, task: int = 1, topology: str = "t-1",
            state: MemoryBackend | None = None) -> TopologyContext:
    layout = TaskLayout({component: [task]}, {task: component}, [Executor(component, task, task)])
    ctx = TopologyContext(topology, TopologySpec({}), layout, task, [task], {},
                          state=state or MemoryBackend())
    CONTEXTS.append(ctx)
    return ctx


def run(cls: type, kwargs: dict[str, Any], ctx: TopologyContext,
        tuples: Sequence[tuple[str, str, list[Any]]], txid: int = 1, attempt: int = 0,
        conf: dict[str, Any] | None = None) -> Batch:
    """One batch of ``tuples`` (source component, stream, values after the attempt) through a
    new instance of the bolt on the task ``ctx``."""
    batch = Batch()
    bolt = cls(**kwargs)
    tx = TransactionAttempt(txid, attempt)
    bolt.prepare(conf if conf is not None else {"k": "v"}, ctx, batch.collector, tx)
    for component, stream, values in tuples:
        bolt.execute(test_tuple([tx, *values], component, stream))
    bolt.finish_batch()
    return batch


def new_stream(t: TridentTopology, *fields: str) -> Stream:
    return t.new_stream("w", FixedBatchSpout(list(fields), 2, []))


@pytest.fixture(autouse=True)
def _fresh() -> Any:
    EVENTS.clear()
    yield
    for ctx in CONTEXTS:
        SubtopologyBolt.cleanup_task({}, ctx)
    CONTEXTS.clear()
    EVENTS.clear()


def word_count() -> dict[str, tuple[type, dict[str, Any]]]:
    t = TridentTopology()
    counts = new_stream(t, "sentence").each(["sentence"], Split(), ["word"]).group_by(["word"]) \
        .persistent_aggregate(ClosingMemory("wc"), Count(), ["count"])
    counts.new_values_stream().shuffle().each(["count"], Double(), ["twice"])
    return bolts(t)


def test_a_bolt_runs_its_chain_and_emits_its_exit_stream_with_the_batchs_attempt() -> None:
    planned = word_count()
    assert sorted(planned) == ["b-0", "b-1", "b-2"]
    cls, kwargs = planned["b-0"]
    assert cls is SubtopologyBolt and not cls.committer
    assert cls.declare_outputs(kwargs) == {"s2": Declared(["tx", "word", "$partial"])}
    batch = run(cls, kwargs, context("b-0"), [("spout-w", "default", ["a b a"]),
                                              ("spout-w", "default", ["b c"])], txid=4, attempt=2)
    assert batch.emitted == [("s2", [[4, 2], "a", 2]), ("s2", [[4, 2], "b", 2]),
                             ("s2", [[4, 2], "c", 1])]
    assert batch.deferred == []
    # a tuple of a stream no node reads is an error, not silently dropped
    with pytest.raises(KeyError):
        run(cls, kwargs, context("b-0", 2), [("spout-w", "other", ["x"])])


def test_the_committer_bolt_updates_its_state_and_emits_the_new_values() -> None:
    planned = word_count()
    cls, kwargs = planned["b-1"]
    assert cls is TridentCommitterBolt and cls.committer
    assert cls.declare_outputs(kwargs) == {"s4": Declared(["tx", "word", "count"])}
    ctx = context("b-1")
    first = run(cls, kwargs, ctx, [("b-0", "s2", ["a", 2]), ("b-0", "s2", ["b", 1])])
    assert first.emitted == [("s4", [[1, 0], "a", 2]), ("s4", [[1, 0], "b", 1])]
    # the next batch of the same task reads the same state
    second = run(cls, kwargs, ctx, [("b-0", "s2", ["a", 3])], txid=2)
    assert second.emitted == [("s4", [[2, 0], "a", 5])]
    assert first.deferred == second.deferred == []
    cls2, kwargs2 = planned["b-2"]
    assert run(cls2, kwargs2, context("b-2"), [("b-1", "s4", ["a", 5])]).emitted == []


def test_a_tasks_operations_are_prepared_once_and_shared_by_its_batches() -> None:
    t = TridentTopology()
    new_stream(t, "n").each(["n"], Tagged("tag"), ["serial"]).shuffle().each(["n"], Double(), ["d"])
    cls, kwargs = bolts(t)["b-0"]
    ctx = context("b-0", task=3)
    first = run(cls, kwargs, ctx, [("spout-w", "default", [1])], conf={"k": "first"})
    second = run(cls, kwargs, ctx, [("spout-w", "default", [2])], txid=2, conf={"k": "second"})
    assert EVENTS == [("prepare", "tag", "first", 3)]
    (_, [_, _, serial]), = first.emitted
    assert second.emitted == [("s1", [[2, 0], 2, serial])]
    # another task, and the same task id of another topology or cluster, build their own
    for other in (context("b-0", task=4), context("b-0", task=3, topology="t-2"), context("b-0", task=3)):
        (_, [_, _, own]), = run(cls, kwargs, other, [("spout-w", "default", [1])]).emitted
        assert own != serial
    assert [e[3] for e in EVENTS] == [3, 4, 3, 3]
    EVENTS.clear()
    SubtopologyBolt.cleanup_task({}, ctx)
    assert EVENTS == [("cleanup", "tag")]
    SubtopologyBolt.cleanup_task({}, ctx)  # nothing left to release
    assert EVENTS == [("cleanup", "tag")]
    # a batch after the clean-up builds the operations again
    (_, [_, _, again]), = run(cls, kwargs, ctx, [("spout-w", "default", [1])]).emitted
    assert again != serial and EVENTS[-1] == ("prepare", "tag", "v", 3)


def test_cleanup_closes_the_tasks_states() -> None:
    planned = word_count()
    cls, kwargs = planned["b-1"]
    ctx = context("b-1")
    run(cls, kwargs, ctx, [("b-0", "s2", ["a", 1])])
    assert EVENTS == []
    TridentCommitterBolt.cleanup_task({}, ctx)
    assert EVENTS == [("close", "wc")]


def test_a_remote_commit_runs_in_the_background_after_every_operation_of_the_batch() -> None:
    t = TridentTopology()
    s = new_stream(t, "k", "n")
    one = s.partition_persist(OwnFactory("one", remote=True), ["n"], Record(), ["rows"])
    two = one.new_values_stream().partition_persist(OwnFactory("two", remote=False), ["rows"],
                                                    Record(), ["rows"])
    two.new_values_stream().partition_persist(OwnFactory("three", remote=True), ["rows"], Record(),
                                              ["rows"])
    planned = bolts(t)
    assert len(planned) == 1
    (cls, kwargs), = planned.values()
    assert cls is TridentCommitterBolt
    batch = run(cls, kwargs, context("b-0"), [("spout-w", "default", ["a", 1]),
                                              ("spout-w", "default", ["b", 2])], txid=6)
    assert [e for e in EVENTS if e[0] == "made"] == [("made", "one", "v", 1), ("made", "two", "v", 1),
                                                     ("made", "three", "v", 1)]
    del EVENTS[:3]
    assert EVENTS == [("begin", "one", 6), ("update", "one", [[1], [2]]), ("commit_later", "one", 6),
                      ("begin", "two", 6), ("update", "two", [[2]]), ("commit", "two", 6),
                      ("begin", "three", 6), ("update", "three", [[1]]), ("commit_later", "three", 6)]
    assert len(batch.deferred) == 1
    work, then = batch.deferred[0]
    assert then is None
    EVENTS.clear()
    work()
    assert EVENTS == [("committed", "one", 6), ("committed", "three", 6)]


class BatchIds(Aggregator):
    """Emits the batch id its ``init`` was given and the values it saw."""

    def init(self, batch_id: Any, collector: TridentCollector) -> list[Any]:
        return [batch_id, []]

    def aggregate(self, state: Any, tuple_: TridentTuple, collector: TridentCollector) -> None:
        state[1].append(tuple_[0])

    def complete(self, state: Any, collector: TridentCollector) -> None:
        collector.emit([state[0], state[1]])


def test_joins_merges_queries_and_plain_functions_run_in_their_bolts() -> None:
    t = TridentTopology()
    s = t.new_stream("orders|v2", FixedBatchSpout(["k", "n"], 2, []))  # a txid may hold a '|'
    a = s.each(["n"], Double(), ["x"]).project(["k", "x"])
    b = s.each(["k"], upper, ["y"]).project(["k", "y"])
    joined = t.join(a, ["k"], b, ["k"], ["k", "x", "y"])
    merged = t.merge(joined.project(["k", "x"]), s.project(["k", "n"]))
    counts = merged.group_by(["k"]).persistent_aggregate(StateFactory.memory("q"), ["x"], Sum(), ["sum"])
    merged.state_query(counts, ["k"], MapGet(), ["sum"]).aggregate(["sum"], BatchIds(), ["id", "sums"]) \
        .shuffle().project(["id"])
    planned = bolts(t)
    spout = "spout-orders|v2"
    rows = [(spout, "default", ["a", 1]), (spout, "default", ["b", 2])]
    assert run(*planned["b-0"], context("b-0"), rows).emitted == [
        ("s2", [[1, 0], "a", 2]), ("s2", [[1, 0], "b", 4])]
    assert run(*planned["b-1"], context("b-1"), rows).emitted == [
        ("s4", [[1, 0], "a", "A"]), ("s4", [[1, 0], "b", "B"])]
    SubtopologyBolt.cleanup_task({}, context("b-1"))  # a plain function has nothing to clean up
    # the join's sides: b-0's tuples are its first side, b-1's its second
    assert run(*planned["b-2"], context("b-2"), [("b-1", "s4", ["a", "A"]), ("b-0", "s2", ["a", 2]),
                                                 ("b-0", "s2", ["c", 6])]).emitted == [
        ("s6", [[1, 0], "a", 2])]  # projected onto k, x
    # a merge passes both inputs on; the grouped partial sums leave on s9, the query on s12
    state = MemoryBackend()
    merge = run(*planned["b-4"], context("b-4", state=state), [("b-2", "s6", ["a", 2]),
                                                               ("b-3", "s7", ["a", 1])])
    assert merge.emitted == [("s9", [[1, 0], "a", 3]), ("s12", [[1, 0], "a", 2, None]),
                             ("s12", [[1, 0], "a", 1, None])]  # finished in plan order
    run(*planned["b-5"], context("b-5", state=state), [("b-4", "s9", ["a", 3])])
    again = run(*planned["b-4"], context("b-4", task=2, state=state), [("b-3", "s7", ["a", 1])], txid=2)
    assert again.emitted == [("s9", [[2, 0], "a", 1]), ("s12", [[2, 0], "a", 1, 3])]
    # an aggregator's init gets the batch's transaction id
    assert run(*planned["b-6"], context("b-6"), [("b-4", "s12", ["a", 1, 3]), ("b-4", "s12", ["b", 2, None])],
               txid=8, attempt=1).emitted == [("s14", [[8, 1], 8, [3, None]])]
