"""What users touch directly: a batch's ``TransactionAttempt``, the ``BatchOutputCollector``
(the attempt as the first value, sent in its wire form), the base classes' defaults and the
builder's wiring of the generated topology."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy import Bolt, InvalidTopologyError
from stormpy.topology._errors import EmitError
from stormpy.topology._grouping import ALL, DIRECT
from stormpy.transactional import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
    TransactionalTopologyBuilder,
    TransactionAttempt,
)
from stormpy.transactional._coordinated import BASIC, BATCH, EMITTER
from stormpy.transactional._coordinator import CoordinatorSpout
from transactional_kit import CountingBolt, FlakyOpaqueSpout, SizedSpout, Splitter, SumCommitter


def test_an_attempt_from_its_wire_form_equals_the_attempt() -> None:
    attempt = TransactionAttempt.of([7, 3])
    assert attempt == TransactionAttempt(7, 3)
    assert (attempt.transaction_id, attempt.attempt_id) == (7, 3)
    assert attempt.wire == [7, 3] and attempt.to_wire() == [7, 3]
    assert TransactionAttempt.of((7, 3)) == attempt
    assert TransactionAttempt.of(attempt) is attempt
    assert attempt.key == (7, 3)
    assert repr(attempt) == "TransactionAttempt(7, 3)"


def test_attempts_compare_and_hash_by_both_ids() -> None:
    assert TransactionAttempt(7, 3) != TransactionAttempt(7, 4)
    assert TransactionAttempt(7, 3) != TransactionAttempt(8, 3)
    assert TransactionAttempt(7, 3) != [7, 3]
    assert hash(TransactionAttempt(7, 3)) == hash((7, 3))
    assert len({TransactionAttempt(7, 3), TransactionAttempt(7, 3), TransactionAttempt(7, 4)}) == 2


def test_an_attempts_wire_form_is_fresh_each_time() -> None:
    attempt = TransactionAttempt(True, 2.0)  # type: ignore[arg-type]
    assert attempt.wire == [1, 2] and type(attempt.wire[0]) is int and type(attempt.wire[1]) is int
    wire = attempt.to_wire()
    wire.append(9)
    assert attempt.to_wire() == [1, 2] and attempt.to_wire() is not attempt.wire


@pytest.mark.parametrize("value", [[1], [1, 2, 3], [1, True], [True, 1], [1.0, 2], [1, 2.0],
                                   "12", None, {1: 2}])
def test_what_is_not_an_attempt_is_refused_naming_the_value(value: object) -> None:
    with pytest.raises(ValueError) as raised:
        TransactionAttempt.of(value)
    assert str(raised.value) == (
        f"{value!r:.80} is not a transaction attempt: the first value of every tuple in a "
        "transactional topology must be the batch's TransactionAttempt")


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(ValueError) as raised:
        TransactionAttempt.of(list(range(100)))
    assert str(raised.value).startswith(repr(list(range(100)))[:80] + " is not a transaction")


# -- the collector ---------------------------------------------------------------------------

class Sent:
    """What a collector handed to the runtime."""

    def __init__(self) -> None:
        self.emitted: list[tuple[Any, ...]] = []
        self.errors: list[Any] = []
        self.deferred: list[tuple[Any, Any]] = []

    def emit(self, values: list[Any], stream: str) -> list[int]:
        self.emitted.append(("emit", values, stream))
        return [4, 5]

    def emit_direct(self, task: int, values: list[Any], stream: str) -> None:
        self.emitted.append(("direct", task, values, stream))

    def collector(self, defer: bool = True) -> BatchOutputCollector:
        return BatchOutputCollector(self.emit, self.emit_direct, self.errors.append,
                                    (lambda work, then: self.deferred.append((work, then)))
                                    if defer else None)


def test_the_collector_sends_the_attempt_in_its_wire_form() -> None:
    sent = Sent()
    collector = sent.collector()
    attempt = TransactionAttempt(3, 1)
    assert collector.emit((attempt, "a")) == [4, 5]
    collector.emit([attempt, "b"], "other")
    assert collector.emit_direct(9, [attempt, "c"]) is None
    collector.emit_direct(8, (attempt, "d"), "side")
    assert sent.emitted == [("emit", [[3, 1], "a"], "default"), ("emit", [[3, 1], "b"], "other"),
                            ("direct", 9, [[3, 1], "c"], "default"),
                            ("direct", 8, [[3, 1], "d"], "side")]
    assert sent.emitted[0][1][0] is attempt.wire


def test_the_callers_values_are_left_alone() -> None:
    sent = Sent()
    attempt = TransactionAttempt(3, 1)
    values = [attempt, "a"]
    sent.collector().emit(values)
    assert values[0] is attempt


@pytest.mark.parametrize("values", [[], [[3, 1], "a"], ["a"], "ab", None])
def test_a_tuple_without_the_attempt_first_is_refused(values: Any) -> None:
    sent = Sent()
    for emit in (lambda c: c.emit(values, "s"), lambda c: c.emit_direct(2, values, "s")):
        with pytest.raises(EmitError) as raised:
            emit(sent.collector())
        assert str(raised.value) == (
            "stream 's': the first value of every tuple of a transactional topology must be the "
            f"batch's TransactionAttempt, got {values!r:.80}")
    assert sent.emitted == []


def test_a_subclass_of_attempt_is_not_the_attempt() -> None:
    class Other(TransactionAttempt):
        pass
    with pytest.raises(EmitError):
        Sent().collector().emit([Other(1, 1), "x"])


def test_errors_and_background_work_reach_the_runtime() -> None:
    sent = Sent()
    collector = sent.collector()
    collector.report_error("broken")
    work, then = (lambda: 1), (lambda result: None)
    collector.finish_in_background(work, then)
    collector.finish_in_background(work)
    assert sent.errors == ["broken"]
    assert sent.deferred == [(work, then), (work, None)]


def test_background_work_is_only_for_batch_bolts() -> None:
    with pytest.raises(RuntimeError) as raised:
        Sent().collector(defer=False).finish_in_background(lambda: 1)
    assert str(raised.value) == "finish_in_background is only available to batch bolts"


def test_a_batch_bolt_keeps_its_collector_and_id_and_emits_through_them() -> None:
    sent = Sent()
    bolt = BatchBolt()
    attempt = TransactionAttempt(2, 5)
    bolt.prepare({}, None, sent.collector(), attempt)  # type: ignore[arg-type]
    assert bolt.id is attempt
    assert bolt.emit([attempt, 1]) == [4, 5]
    bolt.emit([attempt, 2], "s")
    bolt.emit_direct(3, [attempt, 3])
    bolt.emit_direct(3, [attempt, 4], "d")
    assert sent.emitted == [("emit", [[2, 5], 1], "default"), ("emit", [[2, 5], 2], "s"),
                            ("direct", 3, [[2, 5], 3], "default"), ("direct", 3, [[2, 5], 4], "d")]
    assert BatchBolt.committer is False and Committer.committer is True
    assert bolt.execute(None) is None and bolt.finish_batch() is None  # type: ignore[arg-type]
    assert BatchBolt.prepare_task({}, None) is None  # type: ignore[arg-type]
    assert BatchBolt.cleanup_task({}, None) is None  # type: ignore[arg-type]


def test_the_spout_bases_defaults() -> None:
    assert TransactionalSpout.Coordinator().is_ready() is True
    assert PartitionedTransactionalSpout.Coordinator().is_ready() is True
    assert OpaquePartitionedTransactionalSpout.Coordinator().is_ready() is True
    with pytest.raises(NotImplementedError):
        TransactionalSpout.Coordinator().initialize_transaction(1, None)
    with pytest.raises(NotImplementedError):
        TransactionalSpout().get_coordinator({}, None)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        TransactionalSpout().get_emitter({}, None)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        PartitionedTransactionalSpout().get_emitter({}, None)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        OpaquePartitionedTransactionalSpout().get_emitter({}, None)  # type: ignore[arg-type]
    coordinator = OpaquePartitionedTransactionalSpout().get_coordinator({}, None)  # type: ignore[arg-type]
    assert type(coordinator) is OpaquePartitionedTransactionalSpout.Coordinator


def test_an_opaque_replay_by_default_emits_the_batch_after_the_same_place() -> None:
    calls: list[tuple[Any, ...]] = []

    class Emitter(OpaquePartitionedTransactionalSpout.Emitter):
        def emit_partition_batch(self, attempt: TransactionAttempt, collector: Any,
                                 partition: int, last_meta: Any) -> Any:
            calls.append((attempt, collector, partition, last_meta))
            return {"after": last_meta}

    attempt = TransactionAttempt(4, 2)
    got = Emitter().emit_partition_batch_again(attempt, "collector", 3, {"end": 5}, {"end": 9})
    assert got == {"after": {"end": 5}}
    assert calls == [(attempt, "collector", 3, {"end": 5})]


# -- the builder ----------------------------------------------------------------------------

def inputs(spec: Any, cid: str) -> list[tuple[str, str, str]]:
    return [(i.component, i.stream, i.grouping.type) for i in spec.components[cid].inputs]


def test_the_generated_coordinator_and_emitter() -> None:
    b = TransactionalTopologyBuilder("tx-a", "words", SizedSpout, 3, kwargs={"sizes": [2]})
    assert (b.id, b.spout_id, b.coordinator_id) == ("tx-a", "words", "words-coordinator")
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("words")
    spec = b.create_topology()
    coordinator = spec.components["words-coordinator"]
    assert coordinator.class_path == f"{CoordinatorSpout.__module__}:CoordinatorSpout"
    assert coordinator.parallelism == 1
    assert coordinator.kwargs == {"transactional_id": "tx-a",
                                  "spout": "transactional_kit:SizedSpout",
                                  "spout_kwargs": {"sizes": [2]}}
    emitter = spec.components["words"]
    assert emitter.parallelism == 3
    assert emitter.kwargs == {"role": EMITTER, "target": "transactional_kit:SizedSpout",
                              "target_kwargs": {"sizes": [2]}, "transactional_id": "tx-a"}
    assert inputs(spec, "words") == [("words-coordinator", "$batch", ALL)]
    count = spec.components["count"]
    assert count.kwargs == {"role": BATCH, "target": "transactional_kit:CountingBolt",
                            "target_kwargs": {"log": "x"}, "transactional_id": "tx-a",
                            "committer": False}
    assert inputs(spec, "count") == [("words", "default", "shuffle"), ("words", "$coord", DIRECT)]


def test_an_opaque_spouts_emitter_also_gets_the_commits() -> None:
    b = TransactionalTopologyBuilder("t", "s", FlakyOpaqueSpout, kwargs={
        "data": [[1]], "take": 1, "log": "x", "batches": 1})
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("s")
    spec = b.create_topology()
    assert inputs(spec, "s") == [("s-coordinator", "$batch", ALL), ("s-coordinator", "$commit", ALL)]


@pytest.mark.parametrize("bad", ["", "a/b", 5, None])
def test_a_bad_transactional_id_is_refused(bad: Any) -> None:
    with pytest.raises(InvalidTopologyError) as raised:
        TransactionalTopologyBuilder(bad, "s", SizedSpout, kwargs={"sizes": [1]})
    assert str(raised.value) == f"transactional id must be a non-empty string without '/', got {bad!r}"


def test_a_plain_class_as_spout_is_refused_naming_it() -> None:
    class NotASpout:
        pass
    with pytest.raises(InvalidTopologyError) as raised:
        TransactionalTopologyBuilder("t", "s", Splitter)
    assert str(raised.value) == (
        f"spout 's': {Splitter!r} is not a transactional spout; batch bolts can only be fed by a "
        "TransactionalSpout, PartitionedTransactionalSpout or OpaquePartitionedTransactionalSpout")


def test_set_bolt_wiring_and_roles() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("split", Splitter, 2, tasks=4, config={"k": 1}).shuffle_grouping("s")
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("split") \
        .fields_grouping("s", ["n"])
    b.set_bolt("sum", SumCommitter, kwargs={"log": "x"}).global_grouping("count") \
        .global_grouping("count", "default")
    spec = b.create_topology()
    split = spec.components["split"]
    assert split.kwargs == {"role": BASIC, "target": "transactional_kit:Splitter",
                            "target_kwargs": {}, "transactional_id": "t", "committer": False}
    assert (split.parallelism, split.tasks, split.config["k"]) == (2, 4, 1)
    assert inputs(spec, "count") == [("split", "default", "shuffle"), ("s", "default", "fields"),
                                     ("split", "$coord", DIRECT), ("s", "$coord", DIRECT)]
    assert spec.components["sum"].kwargs["committer"] is True
    assert inputs(spec, "sum") == [("count", "default", "global"), ("count", "default", "global"),
                                   ("count", "$coord", DIRECT), ("s-coordinator", "$commit", ALL)]


def test_a_bolt_subscribing_to_a_reserved_stream_is_refused_naming_it() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).direct_grouping("s", "$coord")
    with pytest.raises(InvalidTopologyError) as raised:
        b.create_topology()
    assert str(raised.value) == ("bolt 'count' subscribes to s/$coord, a stream of the "
                                 "transactional machinery")
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).all_grouping("s-coordinator", "$batch")
    with pytest.raises(InvalidTopologyError) as raised:
        b.create_topology()
    assert str(raised.value) == ("bolt 'count' subscribes to s-coordinator/$batch, a stream of "
                                 "the transactional machinery")


def test_bad_bolts_are_refused_with_exact_messages() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    with pytest.raises(InvalidTopologyError) as raised:
        b.set_bolt("basic", Splitter, committer=True)
    assert str(raised.value) == "bolt 'basic': only a BatchBolt can be a committer (Splitter is a BasicBolt)"
    with pytest.raises(InvalidTopologyError) as raised:
        b.set_bolt("s-coordinator", CountingBolt, kwargs={"log": "x"})
    assert str(raised.value) == "duplicate component id 's-coordinator'"
    b.set_bolt("x", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("nowhere")
    with pytest.raises(InvalidTopologyError) as raised:
        b.create_topology()
    assert str(raised.value) == "bolt 'x' subscribes to unknown component 'nowhere'"


def test_batch_bolts_may_follow_a_committer_through_several_paths() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("sum", SumCommitter, kwargs={"log": "x"}).global_grouping("s")
    b.set_bolt("a", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("sum")
    b.set_bolt("b", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("sum").shuffle_grouping("a")
    b.set_bolt("c", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("a").shuffle_grouping("b")
    spec = b.create_topology()
    assert sorted(spec.components) == ["a", "b", "c", "s", "s-coordinator", "sum"]


def test_a_basic_bolt_two_steps_after_a_committer_is_refused_with_the_message() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("early", Splitter).shuffle_grouping("s")  # a basic bolt before any committer
    b.set_bolt("sum", SumCommitter, kwargs={"log": "x"}).global_grouping("early")
    b.set_bolt("a", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("sum")
    b.set_bolt("z-basic", Splitter).shuffle_grouping("a")
    with pytest.raises(InvalidTopologyError) as raised:
        b.create_topology()
    assert str(raised.value) == ("committer 'sum' is upstream of 'z-basic', which is not a batch "
                                 "bolt; only batch bolts may follow a committer")


def test_a_second_committer_is_checked_too() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("a-sum", SumCommitter, kwargs={"log": "x"}).global_grouping("s")
    b.set_bolt("b-sum", SumCommitter, kwargs={"log": "x"}).global_grouping("s")
    b.set_bolt("basic", Splitter).shuffle_grouping("b-sum")
    with pytest.raises(InvalidTopologyError, match="committer 'b-sum' is upstream of 'basic'"):
        b.create_topology()


def test_a_committer_flag_false_leaves_a_batch_bolt_out_of_the_commit_phase() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("count", CountingBolt, committer=False, kwargs={"log": "x"}).shuffle_grouping("s")
    spec = b.create_topology()
    assert spec.components["count"].kwargs["committer"] is False
    assert ("s-coordinator", "$commit", ALL) not in inputs(spec, "count")


def test_the_emitter_runs_one_task_unless_told_otherwise() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("s")
    spec = b.create_topology()
    assert (spec.components["s"].parallelism, spec.components["s-coordinator"].parallelism) == (1, 1)
    assert spec.components["count"].parallelism == 1


def test_an_instance_instead_of_a_class_is_refused_naming_the_component() -> None:
    with pytest.raises(InvalidTopologyError) as raised:
        TransactionalTopologyBuilder("t", "s", SizedSpout([1]))
    assert str(raised.value).startswith("spout 's': pass the class and its constructor arguments")
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    with pytest.raises(InvalidTopologyError) as raised:
        b.set_bolt("count", CountingBolt(log="x"))
    assert str(raised.value).startswith("bolt 'count': pass the class and its constructor arguments")


def test_classes_defined_in_a_function_are_refused_naming_the_component() -> None:
    class LocalSpout(SizedSpout):
        pass

    class LocalBolt(CountingBolt):
        pass
    with pytest.raises(InvalidTopologyError) as raised:
        TransactionalTopologyBuilder("t", "s", LocalSpout, kwargs={"sizes": [1]})
    assert str(raised.value).startswith(
        "spout 's': test_classes_defined_in_a_function_are_refused_naming_the_component.<locals>"
        ".LocalSpout is defined inside a function")
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    with pytest.raises(InvalidTopologyError) as raised:
        b.set_bolt("count", LocalBolt, kwargs={"log": "x"})
    assert str(raised.value).startswith(
        "bolt 'count': test_classes_defined_in_a_function_are_refused_naming_the_component.<locals>"
        ".LocalBolt is defined inside a function")


def test_a_refused_duplicate_leaves_the_builder_as_it_was() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("count", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("s")
    before = b.create_topology().to_doc()
    for cid in ("s", "count", "s-coordinator"):
        with pytest.raises(InvalidTopologyError):
            b.set_bolt(cid, Splitter)
        with pytest.raises(InvalidTopologyError):
            b.set_bolt(cid, SumCommitter, kwargs={"log": "x"})
    assert b.create_topology().to_doc() == before


def test_every_bolt_after_a_committer_is_checked_whatever_the_order_of_its_subscribers() -> None:
    # a batch bolt b reached twice (from the committer and from a) and a basic bolt z after a:
    # when a is looked at, b is already seen, and z must still be found (names vary, so do the
    # orders in which the subscribers of a are looked at)
    for i in range(12):
        b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
        b.set_bolt(f"c{i}", SumCommitter, kwargs={"log": "x"}).global_grouping("s")
        b.set_bolt(f"a{i}", CountingBolt, kwargs={"log": "x"}).shuffle_grouping(f"c{i}")
        b.set_bolt(f"b{i}", CountingBolt, kwargs={"log": "x"}).shuffle_grouping(f"c{i}") \
            .shuffle_grouping(f"a{i}")
        b.set_bolt(f"z{i}", Splitter).shuffle_grouping(f"a{i}")
        with pytest.raises(InvalidTopologyError, match=f"^committer 'c{i}' is upstream of 'z{i}'"):
            b.create_topology()


@pytest.mark.timeout(20)
def test_a_cycle_after_a_committer_is_walked_once() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    b.set_bolt("sum", SumCommitter, kwargs={"log": "x"}).global_grouping("s")
    b.set_bolt("a", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("sum") \
        .shuffle_grouping("b")
    b.set_bolt("b", CountingBolt, kwargs={"log": "x"}).shuffle_grouping("a")
    spec = b.create_topology()
    assert inputs(spec, "a") == [("sum", "default", "shuffle"), ("b", "default", "shuffle"),
                                 ("sum", "$coord", DIRECT), ("b", "$coord", DIRECT)]


class PerTupleBolt(Bolt):
    outputs = ["x"]


def test_a_bolt_that_is_neither_batch_nor_basic_is_refused_with_the_message() -> None:
    b = TransactionalTopologyBuilder("t", "s", SizedSpout, kwargs={"sizes": [1]})
    with pytest.raises(InvalidTopologyError) as raised:
        b.set_bolt("plain", PerTupleBolt)
    assert str(raised.value) == (
        f"bolt 'plain': {PerTupleBolt!r} is neither a BatchBolt nor a BasicBolt; a transactional "
        "topology runs batch bolts (or basic bolts, per tuple)")
