"""One batch through one Trident operation, in process: the processor a bolt runs for an
operation built with the stream API (its planned spec, its operations as a worker rebuilds them),
fed the batch's tuples and finished, and what it emits (Storm's ``trident.planner.processor``).
No cluster: each case is milliseconds, so every branch of a processor has its own case."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from trident_kit import Double, Even, ListOf, Split, split_words

from stormpy.state import MemoryBackend
from stormpy.trident import (
    NON_TRANSACTIONAL,
    OPAQUE,
    TRANSACTIONAL,
    Aggregator,
    Consumer,
    Count,
    Filter,
    FixedBatchSpout,
    FlatMapFunction,
    Function,
    MapFunction,
    MapGet,
    MapPutUpdater,
    MapState,
    QueryFunction,
    StateFactory,
    StateUpdater,
    Sum,
    TridentCollector,
    TridentTopology,
    TridentTuple,
)
from stormpy.trident._operation import op_from_doc
from stormpy.trident._processors import Aggregate, AggRun, Each, Join, Persist, Processor, Query
from stormpy.trident._stream import Stream


def stream(*fields: str) -> Stream:
    return TridentTopology().new_stream("p", FixedBatchSpout(list(fields), 1, []))


def processor(out: Stream, *, state: MapState | None = None, txid: int = 7) -> Processor:
    """The processor a bolt builds for the node ``out`` ends in (as SubtopologyBolt does)."""
    node = out._node
    spec = node.spec
    docs = [a["fn"] for a in spec["aggs"]] if "aggs" in spec else [spec["fn"]] if "fn" in spec else []
    ops = [op_from_doc(d) for d in docs]
    in_fields = out._graph[node.parents[0]].fields
    kind = spec["op"]
    if kind == "agg":
        return Aggregate(spec, ops, in_fields, txid)
    if kind in ("persist_agg", "persist_updater"):
        assert state is not None
        return Persist(spec, ops, in_fields, state, txid)
    if kind == "query":
        assert state is not None
        return Query(spec, ops, in_fields, state)
    if kind == "join":
        return Join(spec, ops, in_fields)
    return Each(spec, ops, in_fields)


def batch(proc: Processor, rows: Sequence[Sequence[Any]], sides: Sequence[int] = ()) -> list[list[Any]]:
    """Feeds ``rows`` (each on its side, 0 by default), finishes the batch, returns the emits."""
    out: list[list[Any]] = []
    proc.targets.append(out.append)
    for i, row in enumerate(rows):
        proc.execute(list(row), sides[i] if sides else 0)
    proc.finish()
    return out


def test_a_plain_function_in_each_appends_each_of_its_outputs_and_may_return_none() -> None:
    s = stream("n", "sentence")
    proc = processor(s.each(["sentence"], split_words, ["word"]))
    assert batch(proc, [[1, "a b"], [2, ""], [3, "c"]]) == [[1, "a b", "a"], [1, "a b", "b"],
                                                            [3, "c", "c"]]
    assert batch(processor(s.each(["n"], returns_none, ["x"])), [[1, "a"]]) == []


def returns_none(tuple_: TridentTuple) -> None:
    """A plain ``each`` function that emits nothing (returns None)."""


def test_a_join_emits_only_keys_found_on_every_side_whatever_their_order() -> None:
    t = TridentTopology()
    s = t.new_stream("j", FixedBatchSpout(["k", "a", "b", "c"], 1, []))
    proc = processor(t.join(s.project(["k", "a"]), ["k"], s.project(["k", "b", "c"]), ["k"],
                            ["k", "a", "b", "c"]))
    rows = [["x", 1], ["y", 2], ["z", 3], ["x", 4],      # left: x twice, y only here, z
            ["z", 30, 31], ["x", 10, 11], ["w", 0, 0]]   # right: z, x, w only here
    got = batch(proc, rows, sides=[0, 0, 0, 0, 1, 1, 1])
    assert sorted(got) == [["x", 1, 10, 11], ["x", 4, 10, 11], ["z", 3, 30, 31]]


def test_a_three_way_join_needs_the_key_on_every_side() -> None:
    t = TridentTopology()
    s = t.new_stream("j3", FixedBatchSpout(["k", "a", "b", "c"], 1, []))
    a, b, c = (s.project(["k", f]) for f in ("a", "b", "c"))
    proc = processor(t.multi_join([a, b, c], [["k"], ["k"], ["k"]], ["k", "a", "b", "c"]))
    rows = [["x", 1], ["y", 2], ["x", 10], ["y", 20], ["x", 100]]  # y has no third side
    assert batch(proc, rows, sides=[0, 0, 1, 1, 2]) == [["x", 1, 10, 100]]


class FieldLookup(QueryFunction):
    """Looks each tuple up by its field ``word`` (by name, not position)."""

    def batch_retrieve(self, state: MapState, tuples: list[TridentTuple]) -> list[Any]:
        return state.multi_get([[t["word"]] for t in tuples])

    def execute(self, tuple_: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([f"{tuple_['word']}={result}"])


def memory_state(kind: str = TRANSACTIONAL) -> MapState:
    return MapState(MemoryBackend().at("p"), kind)


def test_state_query_hands_the_function_tuples_of_its_input_fields_by_name() -> None:
    state = memory_state()
    state.begin_commit(1)
    state.multi_put([["a"], ["b"]], [1, 2])
    state.commit(1)
    s = stream("n", "word")
    factory = StateFactory.memory("q")
    persisted = s.partition_persist(factory, ["word", "n"], MapPutUpdater(), ["word", "n"])
    proc = processor(s.state_query(persisted, ["word"], FieldLookup(), ["found"]), state=state)
    assert batch(proc, [[5, "b"], [6, "zz"]]) == [[5, "b", "b=2"], [6, "zz", "zz=None"]]
    get = processor(s.state_query(persisted, ["word"], MapGet(), ["v"]), state=state)
    assert batch(get, [[1, "a"]]) == [[1, "a", 1]]
    assert batch(processor(s.state_query(persisted, ["word"], MapGet(), ["v"]), state=state),
                 []) == []


@pytest.mark.parametrize("kind", [TRANSACTIONAL, OPAQUE, NON_TRANSACTIONAL])
def test_a_grouped_persistent_aggregate_stores_and_emits_each_groups_new_value(kind: str) -> None:
    state = memory_state(kind)
    s = stream("k", "n")
    persisted = s.group_by(["k"]).persistent_aggregate(StateFactory.memory("g", kind), ["n"],
                                                       ListOf(), ["l"])
    proc = _persist_processor(persisted, state, 1)
    assert sorted(batch(proc, [["a", 2], ["b", 5], ["a", 1]])) == [["a", [1, 2]], ["b", [5]]]
    again = _persist_processor(persisted, state, 2)
    assert sorted(batch(again, [["b", 4]])) == [["b", [4, 5]]]
    assert state.multi_get([["a"], ["b"]]) == [[1, 2], [4, 5]]


def _persist_processor(persisted: Any, state: MapState, txid: int) -> Processor:
    node = persisted._node
    return processor(Stream(persisted._graph, node), state=state, txid=txid)


def test_a_global_persistent_combiner_adds_each_batch_to_the_stored_value() -> None:
    state = memory_state(OPAQUE)
    s = stream("n")
    persisted = s.persistent_aggregate(StateFactory.memory("sum", OPAQUE), ["n"], Sum(), ["s"])
    partial = processor(Stream(persisted._graph, persisted._graph[persisted._graph[
        persisted._node.parents[0]].parents[0]]))
    parts = batch(partial, [[1], [2], [3]])
    assert parts == [[6]]
    assert batch(_persist_processor(persisted, state, 1), parts) == [[6]]
    assert batch(_persist_processor(persisted, state, 2), [[4], [5]]) == [[15]]
    assert batch(_persist_processor(persisted, state, 3), []) == [[15]]  # an empty batch too


class OwnState:
    """A state of one's own, as an ``external`` StateFactory makes: records what it is asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def begin_commit(self, txid: int) -> None:
        self.calls.append(("begin", txid))

    def commit(self, txid: int) -> None:
        self.calls.append(("commit", txid))


class RemoteCommitState(OwnState):
    """A state whose commit blocks on a remote system: it hands its commit back as a callable."""

    def commit_later(self, txid: int) -> Callable[[], None]:
        self.calls.append(("commit_later", txid))
        return lambda: self.calls.append(("committed", txid))


class RecordUpdates(StateUpdater):
    def update_state(self, state: Any, tuples: list[TridentTuple], collector: TridentCollector) -> None:
        state.calls.append(("update", [list(t) for t in tuples]))
        collector.emit([len(tuples)])


def own_state_persist(state: OwnState) -> Processor:
    s = stream("w", "n")
    persisted = s.partition_persist(StateFactory.memory("own"), ["n"], RecordUpdates(), ["rows"])
    return _persist_processor(persisted, state, 9)  # type: ignore[arg-type]


def test_partition_persist_commits_a_state_of_ones_own_with_the_batchs_txid() -> None:
    state = OwnState()
    proc = own_state_persist(state)
    assert batch(proc, [["a", 1], ["b", 2]]) == [[2]]
    assert state.calls == [("begin", 9), ("update", [[1], [2]]), ("commit", 9)]
    assert isinstance(proc, Persist) and proc.background is None


def test_a_state_with_a_remote_commit_is_committed_by_the_bolt_off_the_loop() -> None:
    state = RemoteCommitState()
    proc = own_state_persist(state)
    assert batch(proc, [["a", 1]]) == [[1]]
    assert state.calls == [("begin", 9), ("update", [[1]]), ("commit_later", 9)]  # not yet
    assert isinstance(proc, Persist) and proc.background is not None
    proc.background()
    assert state.calls[-1] == ("committed", 9)


class EmitsAtInit(Aggregator):
    """An Aggregator emitting a row from ``init`` (its collector is the batch's), one for each
    tuple from ``aggregate``, and its count at ``complete``."""

    def init(self, batch_id: Any, collector: TridentCollector) -> list[int]:
        collector.emit(["start", batch_id])
        return [0]

    def aggregate(self, state: Any, tuple_: TridentTuple, collector: TridentCollector) -> None:
        state[0] += 1
        collector.emit(["saw", tuple_[0]])

    def complete(self, state: Any, collector: TridentCollector) -> None:
        collector.emit(["count", state[0]])


def test_an_aggregator_emits_from_init_aggregate_and_complete_through_the_batchs_collector(
        ) -> None:
    s = stream("k", "n")
    proc = processor(s.group_by(["k"]).aggregate(["n"], EmitsAtInit(), ["what", "value"]), txid=4)
    assert sorted(batch(proc, [["a", 1], ["b", 2], ["a", 3]])) == [
        ["a", "count", 2], ["a", "saw", 1], ["a", "saw", 3], ["a", "start", 4],
        ["b", "count", 1], ["b", "saw", 2], ["b", "start", 4]]


def test_a_group_whose_key_is_none_is_a_group_of_its_own() -> None:
    s = stream("k", "n")
    proc = processor(s.group_by(["k"]).aggregate(["n"], Sum(), ["s"]))
    rows: list[list[Any]] = [[None, 1], ["a", 2], [None, 3], ["b", 4], ["a", 5]]
    assert sorted(batch(proc, rows), key=repr) == sorted([[None, 4], ["a", 7], ["b", 4]], key=repr)


def test_an_operation_that_is_no_aggregator_is_named_in_the_error() -> None:
    with pytest.raises(TypeError, match="^Split is not an aggregator$"):
        AggRun(Split(), "full", 1)


class Shout(Function):
    """Reads its input by field name."""

    def execute(self, tuple_: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([tuple_["word"].upper()])


def test_a_function_in_each_reads_its_input_fields_by_name() -> None:
    s = stream("n", "word")
    assert batch(processor(s.each(["word"], Shout(), ["loud"])), [[1, "hi"]]) == [[1, "hi", "HI"]]


def test_grouping_by_several_fields_keeps_every_combination_apart() -> None:
    s = stream("a", "b", "n")
    proc = processor(s.group_by(["a", "b"]).aggregate(["n"], ListOf(), ["l"]))
    rows = [["x", 1, 1], ["x", 2, 10], ["y", 1, 100], ["x", 1, 1000], [["l"], {"m": 1}, 5],
            [["l"], {"m": 2}, 6], [["l"], {"m": 1}, 7]]
    assert sorted(batch(proc, rows), key=repr) == sorted(
        [["x", 1, [1, 1000]], ["x", 2, [10]], ["y", 1, [100]], [["l"], {"m": 1}, [5, 7]],
         [["l"], {"m": 2}, [6]]], key=repr)
    by_list = processor(s.group_by(["a"]).aggregate(["n"], ListOf(), ["l"]))
    assert sorted(batch(by_list, [[[1, 2], 0, 1], [[1, 3], 0, 2], [[1, 2], 0, 4]])) == [
        [[1, 2], [1, 4]], [[1, 3], [2]]]  # a list value is a key of its own


class CountingLookup(QueryFunction):
    """Counts its look-ups (a remote look-up costs a round trip) and answers ``answers``."""

    def __init__(self, answers: int | None = None) -> None:
        self.calls = 0
        self.answers = answers

    def batch_retrieve(self, state: MapState, tuples: list[TridentTuple]) -> list[Any]:
        self.calls += 1
        return list(range(len(tuples) if self.answers is None else self.answers))

    def execute(self, tuple_: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])


def query_processor(function: QueryFunction) -> Query:
    s = stream("w")
    persisted = s.partition_persist(StateFactory.memory("cq"), ["w"], MapPutUpdater(), ["w"])
    spec = s.state_query(persisted, ["w"], function, ["r"])._node.spec
    return Query(spec, [function], ["w"], memory_state())


def test_state_query_looks_nothing_up_for_an_empty_batch() -> None:
    lookup = CountingLookup()
    assert batch(query_processor(lookup), []) == []
    assert lookup.calls == 0
    assert batch(query_processor(lookup), [["a"], ["b"]]) == [["a", 0], ["b", 1]]
    assert lookup.calls == 1  # one look-up for the whole batch


def test_a_query_function_answering_fewer_results_than_tuples_fails_the_batch() -> None:
    with pytest.raises(ValueError, match="shorter"):
        batch(query_processor(CountingLookup(answers=1)), [["a"], ["b"]])


def first_two_letters(tuple_: TridentTuple) -> str:
    """A map function returning one value, not a list of values."""
    return str(tuple_[0])[:2]


def test_a_map_function_returning_one_value_gives_a_one_field_tuple() -> None:
    proc = processor(stream("word").map(first_two_letters, ["start"]))
    assert batch(proc, [["hello"], ["a"]]) == [["he"], ["a"]]


class LongWord(Filter):
    """Reads its input by field name."""

    def is_keep(self, tuple_: TridentTuple) -> bool:
        return len(tuple_["word"]) > 2


class Initial(MapFunction):
    def execute(self, tuple_: TridentTuple) -> list[Any]:
        return [tuple_["word"][0]]


class Letters(FlatMapFunction):
    def execute(self, tuple_: TridentTuple) -> list[list[Any]]:
        return [[c] for c in tuple_["word"]]


SEEN_BY_NAME: list[Any] = []


class RecordWord(Consumer):
    def accept(self, tuple_: TridentTuple) -> None:
        SEEN_BY_NAME.append(tuple_["word"])


def record_first(tuple_: TridentTuple) -> None:
    SEEN_BY_NAME.append(tuple_[0])


def test_filter_map_flat_map_and_peek_operations_read_fields_by_name() -> None:
    s = stream("n", "word")
    rows = [[1, "ox"], [2, "cat"]]
    assert batch(processor(s.filter(["word"], LongWord())), rows) == [[2, "cat"]]
    assert batch(processor(s.map(Initial(), ["i"])), rows) == [["o"], ["c"]]
    assert batch(processor(s.flat_map(Letters(), ["l"])), rows) == [["o"], ["x"], ["c"], ["a"], ["t"]]
    SEEN_BY_NAME.clear()
    assert batch(processor(s.peek(RecordWord())), rows) == rows  # each tuple passes unchanged
    assert batch(processor(s.peek(record_first)), rows) == rows  # a plain function too
    assert SEEN_BY_NAME == ["ox", "cat", 1, 2]


def test_an_operation_kind_this_version_does_not_know_is_named() -> None:
    with pytest.raises(ValueError, match="^unknown trident operation 'teleport'$"):
        Each({"op": "teleport"}, [], ["n"])


def test_each_hands_the_operation_only_its_input_fields_or_all_of_them() -> None:
    s = stream("k", "n")
    rows = [["a", 1], ["b", 2]]
    assert batch(processor(s.each(["n"], Even())), rows) == [["b", 2]]  # a Filter in each
    assert batch(processor(stream("n").each(None, Double(), ["d"])), [[3]]) == [[3, 6]]


def test_a_grouped_combiner_aggregate_combines_each_partitions_partial_counts() -> None:
    s = stream("k", "n")
    final = s.group_by(["k"]).aggregate(Count(), ["c"])
    moved = final._graph[final._node.parents[0]]  # the partition by the group
    partial = Stream(final._graph, final._graph[moved.parents[0]])
    parts = batch(processor(partial), [["a", 1], ["b", 2], ["a", 3]]) + \
        batch(processor(partial), [["a", 4]])  # two partitions' partial counts
    assert sorted(batch(processor(final), parts)) == [["a", 3], ["b", 1]]


def test_a_chained_aggregate_answers_an_empty_batch() -> None:
    chained = stream("n").chained_agg().aggregate(Count(), ["c"]).aggregate(["n"], Sum(), ["s"]) \
        .chain_end()
    assert batch(processor(chained), []) == [[0, 0]]
    assert batch(processor(chained), [[2], [5]]) == [[2, 7]]


def test_a_whole_batch_aggregate_reads_only_its_input_fields() -> None:
    final = stream("k", "n").aggregate(["n"], ListOf(), ["l"])
    assert batch(processor(final), [["a", 2], ["b", 1]]) == [[[1, 2]]]
