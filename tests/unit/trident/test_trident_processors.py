"""One batch through one Trident operation, in process: the processor a bolt runs for an
operation built with the stream API (its planned spec, its operations as a worker rebuilds them),
fed the batch's tuples and finished, and what it emits (Storm's ``trident.planner.processor``).
No cluster: each case is milliseconds, so every branch of a processor has its own case."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from trident_kit import ListOf, split_words

from stormpy.state import MemoryBackend
from stormpy.trident import (
    NON_TRANSACTIONAL,
    OPAQUE,
    TRANSACTIONAL,
    FixedBatchSpout,
    MapGet,
    MapPutUpdater,
    MapState,
    QueryFunction,
    StateFactory,
    Sum,
    TridentCollector,
    TridentTopology,
    TridentTuple,
)
from stormpy.trident._operation import op_from_doc
from stormpy.trident._processors import Aggregate, Each, Join, Persist, Processor, Query
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
