"""Build-time checks of Trident topologies (each error names what is wrong) and the built-in
aggregators on their own."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from trident_kit import CountAndSum, Double, Even, ListOf, Split, times_ten, twice

from stormpy.topology._errors import InvalidTopologyError
from stormpy.trident import (
    Count,
    FixedBatchSpout,
    MapGet,
    MapPutUpdater,
    Max,
    Min,
    StateFactory,
    Stream,
    Sum,
    TridentTopology,
    TridentTuple,
)
from stormpy.trident._builtin import FirstNAgg
from stormpy.trident._operation import TridentCollector, op_doc, op_from_doc


def stream(t: TridentTopology, txid: str = "s") -> Stream:
    return t.new_stream(txid, FixedBatchSpout(["sentence"], 2, [["a b"]]))


def test_operations_travel_as_import_paths_with_their_arguments() -> None:
    doc = op_doc(Max("n"), "x")
    assert doc == {"cls": "stormpy.trident:Max", "args": ["n"], "kwargs": {}}
    again = op_from_doc(doc)
    assert isinstance(again, Max) and again.field == "n"
    with pytest.raises(InvalidTopologyError, match="lambda"):
        TridentTopology().new_stream("s", FixedBatchSpout(["n"], 1, [[1]])).map(lambda t: t)


@pytest.mark.parametrize("make, message", [
    (lambda s: s.each(["nope"], Split(), ["word"]), r"no field\(s\) \['nope'\]"),
    (lambda s: s.each(["sentence"], Split(), ["sentence"]), "already in the stream"),
    (lambda s: s.group_by(["sentence"]).persistent_aggregate(
        StateFactory.memory("x"), CountAndSum(), ["c"]), "CombinerAggregator or a Reducer"),
    (lambda s: s.aggregate(Split(), ["c"]), "is not a CombinerAggregator"),
    (lambda s: s.parallelism_hint(0), "parallelism_hint"),
    (lambda s: s.name("a b"), "name must be"),
    (lambda s: s.partition_persist(StateFactory.memory("x"), ["sentence"], Count()),
     "not a StateUpdater"),
])
def test_bad_operations_are_refused_with_a_clear_error(make: object, message: str) -> None:
    t = TridentTopology()
    with pytest.raises(InvalidTopologyError, match=message):
        make(stream(t))  # type: ignore[operator]


def test_topology_level_checks() -> None:
    t = TridentTopology()
    s = stream(t)
    with pytest.raises(InvalidTopologyError, match="used twice"):
        stream(t)
    with pytest.raises(InvalidTopologyError, match="not an instance of a transactional spout"):
        t.new_stream("other", Split())
    with pytest.raises(InvalidTopologyError, match="different numbers of fields"):
        t.merge(s, s.each(["sentence"], Split(), ["word"]))
    with pytest.raises(InvalidTopologyError, match="3 output fields given, the join has 1"):
        t.join(s, ["sentence"], s, ["sentence"], ["a", "b", "c"])
    with pytest.raises(InvalidTopologyError, match="needs a new_stream"):
        TridentTopology().build()
    u = TridentTopology()
    a, b = stream(u, "a"), stream(u, "b")
    u.merge(a, b)
    with pytest.raises(InvalidTopologyError, match="different new_stream spouts"):
        u.build()
    with pytest.raises(Exception, match="trident state kind"):
        StateFactory.memory("x", "exactly-twice")


def tup(*values: object) -> TridentTuple:
    return TridentTuple(values, ["v"])


def test_combiners_and_first_n() -> None:
    assert Count().combine(Count().zero(), Count().init(tup(9))) == 1
    assert Sum().combine(Sum().init(tup(2)), Sum().init(tup(3))) == 5
    assert Min().combine(Min().zero(), 4) == 4 and Min().combine(4, 2) == 2
    assert Max().combine(None, None) is None and Max().combine(1, 3) == 3
    out: list[Any] = []
    agg = FirstNAgg(2, "v", reverse=True)
    collector = TridentCollector(out.append)
    state = agg.init(None, collector)
    for v in (3, 9, 1, 7):
        agg.aggregate(state, tup(v), collector)
    agg.complete(state, collector)
    assert out == [[9], [7]]
    with pytest.raises(ValueError, match="n >= 1"):
        FirstNAgg(0)
    assert tup(5)["v"] == 5 and tup(5).get("w", 1) == 1
    with pytest.raises(KeyError, match="no field 'w'"):
        tup(5)["w"]
    assert Double()._init_args == ((), {})


def test_merge_and_join_name_what_is_wrong() -> None:
    t = TridentTopology()
    s = t.new_stream("mj", FixedBatchSpout(["k", "v"], 2, [["a", 1]]))
    other = s.each(["v"], Double(), ["d"]).project(["k", "d"])

    def refused(call: Any, message: str) -> None:
        with pytest.raises(InvalidTopologyError) as error:
            call()
        assert str(error.value) == message

    refused(lambda: t.merge(s), "merge needs at least two streams")
    both = "join needs two or more streams and one key list per stream"
    refused(lambda: t.multi_join([s], [["k"]], ["k", "v"]), both)
    refused(lambda: t.multi_join([s, other], [["k"]], ["k", "v", "d"]), both)
    refused(lambda: t.multi_join([s, other], [["k"], ["k"], ["k"]], ["k", "v", "d"]), both)
    refused(lambda: t.join(s, ["k", "v"], other, ["k"], ["k", "v", "d"]),
            "join: key lists of different lengths")
    refused(lambda: t.join(s, [""], other, ["k"], ["k", "v", "d"]),
            "join: field names are non-empty strings, got ['']")
    refused(lambda: t.join(s, ["x"], other, ["k"], ["k", "v", "d"]),
            "join: no field(s) ['x'] in the stream (fields: ['k', 'v'])")
    refused(lambda: t.join(s, ["k"], other, ["k"], ["k", 1, "d"]),  # type: ignore[list-item]
            "join: field names are non-empty strings, got ['k', 1, 'd']")
    refused(lambda: t.join(s, ["k"], other, ["k"], ["k", "v"]),
            "join: 2 output fields given, the join has 3 (the keys, then the other fields of "
            "each stream in order)")
    refused(lambda: t.join(s, [], other, [], ["k"]),
            "join: 1 output fields given, the join has 4 (the keys, then the other fields of "
            "each stream in order)")  # no key: every field of both streams


def test_a_merge_is_named_after_its_first_stream_and_runs_with_what_follows_it() -> None:
    t = TridentTopology()
    s = t.new_stream("m", FixedBatchSpout(["n"], 2, [[1]]))
    doubled = s.each(["n"], Double(), ["d"]).project(["d"])
    merged = t.merge(s, doubled)
    assert merged.fields == ["n"]
    merged.each(["n"], Double(), ["d2"])
    bolts = [c for c in t.build().bolts if c.startswith("b-")]
    assert len(bolts) == 2  # the first each (with its project), then the merge with its each
    u = TridentTopology()
    first = u.new_stream("m", FixedBatchSpout(["n"], 2, [[1]]))
    assert u.merge(first, first.project(["n"]), output_fields=["x"]).fields == ["x"]


def test_the_plan_runs_the_spout_at_its_hint_and_shuffles_into_a_merge() -> None:
    with pytest.raises(InvalidTopologyError) as empty:
        TridentTopology().build()
    assert str(empty.value) == "a Trident topology needs a new_stream"
    t = TridentTopology()
    s = t.new_stream("p", FixedBatchSpout(["n"], 1, [[1]]))
    t.merge(s.each(["n"], Double(), ["d"]), s.each(["n"], Double(), ["e"]))
    spec = t.build()
    assert spec.components["spout-p"].parallelism == 1  # one emitter unless hinted
    merge = spec.components["b-2"]
    data = [i for i in merge.inputs if not i.stream.startswith("$")]
    assert sorted(i.component for i in data) == ["b-0", "b-1"]
    assert {i.grouping.type for i in data} == {"shuffle"}
    hinted = TridentTopology()
    hinted.new_stream("p", FixedBatchSpout(["n"], 1, [[1]])).parallelism_hint(4) \
        .each(["n"], Double(), ["d"])
    assert hinted.build().components["spout-p"].parallelism == 4


def data_inputs(spec: Any, component: str) -> list[tuple[str, str, str]]:
    return [(i.component, i.stream, i.grouping.type) for i in spec.components[component].inputs
            if not i.stream.startswith("$")]


def test_each_bolt_subscribes_once_to_each_stream_it_reads_with_its_grouping() -> None:
    t = TridentTopology()
    s = t.new_stream("p", FixedBatchSpout(["k", "v"], 1, [[1, 2]]))
    x, y = s.each(["v"], Double(), ["d"]), s.each(["v"], Double(), ["e"])
    t.multi_join([x, x, y], [["k"], ["k"], ["k"]], ["k", "v", "d", "v2", "d2", "v3", "e"])
    assert data_inputs(t.build(), "b-2") == [("b-0", "s1", "fields"), ("b-1", "s2", "fields")]
    u = TridentTopology()
    u.new_stream("p", FixedBatchSpout(["n"], 1, [[1]])).each(["n"], Double(), ["d"]) \
        .broadcast().each(["n"], Double(), ["e"])
    assert data_inputs(u.build(), "b-1") == [("b-0", "s1", "all")]


def test_two_streams_given_one_name_are_refused() -> None:
    t = TridentTopology()
    for txid in ("a", "b"):
        t.new_stream(txid, FixedBatchSpout(["n"], 1, [[1]])).name("src") \
            .each(["n"], Double(), ["d"])
    with pytest.raises(InvalidTopologyError) as clash:
        t.build()
    assert str(clash.value) == "component ids used twice: ['src', 'src-coordinator']"


MEM = StateFactory.memory("m")
PARQUET = StateFactory.parquet("/tmp/never-written")
NESTED = ("is a lambda or nested function; workers import operations by path, so pass a "
          "module-level function or an Operation instance")
TAKES = "takes (aggregator, function_fields) or (input_fields, aggregator, function_fields)"
NOT_AGG = "is not a CombinerAggregator, ReducerAggregator or Aggregator"
PERSIST_TAKES = ("persistent_aggregate takes a CombinerAggregator or a ReducerAggregator (as in "
                 "Storm), not an Aggregator")


def errs() -> Stream:
    return TridentTopology().new_stream("e", FixedBatchSpout(["k", "n"], 1, [["a", 1]]))


def grouped() -> Any:
    return errs().group_by(["k"])


def chained() -> Any:
    return errs().chained_agg()


def errs_persisted() -> Any:
    return errs().partition_persist(MEM, ["k", "n"], MapPutUpdater(), ["k", "n"])


#: a bad call of every stream operation, and the whole error it gets (an object's address left out)
BAD_CALLS: dict[str, tuple[Callable[[], Any], str]] = {
    "each_bad_input_name": (lambda: errs().each([""], Double(), ["d"]),
        "each: field names are non-empty strings, got ['']"),
    "each_missing_input": (lambda: errs().each(["x"], Double(), ["d"]),
        "each: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "each_output_exists": (lambda: errs().each(["n"], Double(), ["n"]),
        "each: output field(s) ['n'] already in the stream"),
    "each_bad_output_name": (lambda: errs().each(["n"], Double(), [1]),  # type: ignore[list-item]
        'each: field names are non-empty strings, got [1]'),
    "each_lambda": (lambda: errs().each(["n"], lambda t: None, ["d"]),
        'each: <lambda>.<locals>.<lambda> ' + NESTED),
    "filter_arity": (lambda: errs().filter(),
        'filter takes (filter) or (input_fields, filter)'),
    "filter_missing_input": (lambda: errs().filter(["x"], Even()),
        "filter: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "filter_bad_input_name": (lambda: errs().filter([""], Even()),
        "filter: field names are non-empty strings, got ['']"),
    "filter_lambda": (lambda: errs().filter(lambda t: True),
        'filter: <lambda>.<locals>.<lambda> ' + NESTED),
    "map_lambda": (lambda: errs().map(lambda t: t, ["m"]),
        'map: <lambda>.<locals>.<lambda> ' + NESTED),
    "map_bad_output_name": (lambda: errs().map(times_ten, [""]),
        "map: field names are non-empty strings, got ['']"),
    "flat_map_lambda": (lambda: errs().flat_map(lambda t: [t]),
        'flat_map: <lambda>.<locals>.<lambda> ' + NESTED),
    "flat_map_bad_output_name": (lambda: errs().flat_map(twice, [""]),
        "flat_map: field names are non-empty strings, got ['']"),
    "peek_lambda": (lambda: errs().peek(lambda t: None),
        'peek: <lambda>.<locals>.<lambda> ' + NESTED),
    "project_bad_name": (lambda: errs().project([""]),
        "project: field names are non-empty strings, got ['']"),
    "project_missing": (lambda: errs().project(["x"]),
        "project: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "partition_by_bad_name": (lambda: errs().partition_by([""]),
        "partition_by: field names are non-empty strings, got ['']"),
    "partition_by_missing": (lambda: errs().partition_by(["x"]),
        "partition_by: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "group_by_bad_name": (lambda: errs().group_by([""]),
        "group_by: field names are non-empty strings, got ['']"),
    "group_by_missing": (lambda: errs().group_by(["x"]),
        "group_by: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "partition_aggregate_arity": (lambda: errs().partition_aggregate(Count()),
        'partition_aggregate ' + TAKES),
    "partition_aggregate_not_aggregator": (lambda: errs().partition_aggregate(["n"], Double(), ["c"]),
        'partition_aggregate: <trident_kit.Double object> ' + NOT_AGG),
    "partition_aggregate_missing": (lambda: errs().partition_aggregate(["x"], Sum(), ["c"]),
        "partition_aggregate: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "partition_aggregate_bad_output": (lambda: errs().partition_aggregate(["n"], Sum(), [""]),
        "partition_aggregate: field names are non-empty strings, got ['']"),
    "aggregate_arity": (lambda: errs().aggregate(Count()),
        'aggregate ' + TAKES),
    "aggregate_not_aggregator": (lambda: errs().aggregate(["n"], Double(), ["c"]),
        'aggregate: <trident_kit.Double object> ' + NOT_AGG),
    "aggregate_missing": (lambda: errs().aggregate(["x"], Sum(), ["c"]),
        "aggregate: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "aggregate_bad_input_name": (lambda: errs().aggregate([""], Sum(), ["c"]),
        "aggregate: field names are non-empty strings, got ['']"),
    "persistent_aggregate_not_factory": (lambda: errs().persistent_aggregate("memory", Count(), ["c"]),  # type: ignore[arg-type]
        "state factory: 'memory' is not a StateFactory"),
    "persistent_aggregate_parquet": (lambda: errs().persistent_aggregate(PARQUET, Count(), ["c"]),
        'persistent_aggregate needs a map state; a parquet state (Parquet, a Kafka sink...) takes '
        'partition_persist with its updater'),
    "persistent_aggregate_two_outputs": (lambda: errs().persistent_aggregate(MEM, Count(), ["c", "d"]),
        "persistent_aggregate: one function field (the stored value), got ['c', 'd']"),
    "persistent_aggregate_aggregator": (lambda: errs().persistent_aggregate(MEM, ["n"], CountAndSum(), ["c"]),
        PERSIST_TAKES),
    "persistent_aggregate_missing": (lambda: errs().persistent_aggregate(MEM, ["x"], Sum(), ["c"]),
        "persistent_aggregate: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "persistent_aggregate_arity": (lambda: errs().persistent_aggregate(MEM, Count()),
        'persistent_aggregate ' + TAKES),
    "grouped_persistent_aggregate_two_outputs": (
        lambda: grouped().persistent_aggregate(MEM, Count(), ["c", "d"]),
        "persistent_aggregate: one function field (the stored value), got ['c', 'd']"),
    "grouped_persistent_aggregate_aggregator": (
        lambda: grouped().persistent_aggregate(MEM, ["n"], CountAndSum(), ["c"]),
        PERSIST_TAKES),
    "partition_persist_not_updater": (lambda: errs().partition_persist(MEM, ["n"], Count()),
        'partition_persist: <stormpy.trident.Count object> is not a StateUpdater'),
    "partition_persist_missing": (lambda: errs().partition_persist(MEM, ["x"], MapPutUpdater()),
        "partition_persist: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "partition_persist_bad_input_name": (lambda: errs().partition_persist(MEM, [""], MapPutUpdater()),
        "partition_persist: field names are non-empty strings, got ['']"),
    "partition_persist_bad_output_name": (lambda: errs().partition_persist(MEM, ["n"], MapPutUpdater(), [""]),
        "partition_persist: field names are non-empty strings, got ['']"),
    "partition_persist_not_factory": (lambda: errs().partition_persist("m", ["n"], MapPutUpdater()),  # type: ignore[arg-type]
        "state factory: 'm' is not a StateFactory"),
    "state_query_not_state": (lambda: errs().state_query("m", ["k"], MapGet(), ["v"]),  # type: ignore[arg-type]
        'state_query: the first argument is the TridentState returned by '
        'persistent_aggregate/partition_persist'),
    "state_query_not_function": (lambda: errs().state_query(errs_persisted(), ["k"], Double(), ["v"]),
        'state_query: <trident_kit.Double object> is not a QueryFunction'),
    "state_query_parquet": (
        lambda: errs().state_query(errs().partition_persist(PARQUET, ["n"], MapPutUpdater()), ["k"],
                                   MapGet(), ["v"]),
        "state_query reads a map state; the parquet state 'parquet' is written, not queried"),
    "state_query_missing": (lambda: errs().state_query(errs_persisted(), ["x"], MapGet(), ["v"]),
        "state_query: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "state_query_bad_input_name": (lambda: errs().state_query(errs_persisted(), [""], MapGet(), ["v"]),
        "state_query: field names are non-empty strings, got ['']"),
    "state_query_bad_output_name": (lambda: errs().state_query(errs_persisted(), ["k"], MapGet(), [""]),
        "state_query: field names are non-empty strings, got ['']"),
    "state_query_output_exists": (lambda: errs().state_query(errs_persisted(), ["k"], MapGet(), ["n"]),
        "state_query: output field(s) ['n'] already in the stream"),
    "grouped_aggregate_arity": (lambda: grouped().aggregate(Count()),
        'aggregate ' + TAKES),
    "grouped_aggregate_not_aggregator": (lambda: grouped().aggregate(["n"], Double(), ["c"]),
        'aggregate: <trident_kit.Double object> ' + NOT_AGG),
    "grouped_aggregate_missing": (lambda: grouped().aggregate(["x"], Sum(), ["c"]),
        "aggregate: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "grouped_partition_aggregate_arity": (lambda: grouped().partition_aggregate(Count()),
        'partition_aggregate ' + TAKES),
    "grouped_partition_aggregate_not_aggregator": (
        lambda: grouped().partition_aggregate(["n"], Double(), ["c"]),
        'partition_aggregate: <trident_kit.Double object> ' + NOT_AGG),
    "grouped_partition_aggregate_missing": (lambda: grouped().partition_aggregate(["x"], Sum(), ["c"]),
        "partition_aggregate: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "chained_aggregate_not_aggregator": (lambda: chained().aggregate(["n"], Double(), ["c"]),
        'chained_agg: <trident_kit.Double object> ' + NOT_AGG),
    "chained_partition_aggregate_not_aggregator": (
        lambda: chained().partition_aggregate(["n"], Double(), ["c"]),
        'chained_agg: <trident_kit.Double object> ' + NOT_AGG),
    "chained_aggregate_missing": (lambda: chained().aggregate(["x"], Sum(), ["c"]),
        "chained_agg: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "chained_partition_aggregate_missing": (lambda: chained().partition_aggregate(["x"], Sum(), ["c"]),
        "chained_agg: no field(s) ['x'] in the stream (fields: ['k', 'n'])"),
    "chain_end_empty": (lambda: chained().chain_end(),
        'chained_agg: no aggregator before chain_end()'),
    "chained_mixed": (lambda: chained().aggregate(Count(), ["c"]).partition_aggregate(Count(), ["d"]),
        'chained_agg: do not mix aggregate and partition_aggregate in one chain'),
    "chained_output_twice": (lambda: chained().aggregate(Count(), ["c"]).aggregate(Sum(), ["c"]).chain_end(),
        "duplicate field names in ['c', 'c']"),
    "name_not_str": (lambda: errs().name(5),  # type: ignore[arg-type]
        "name must be letters, digits, '-' and '_', got 5"),
    "name_dash": (lambda: errs().name("-"),
        "name must be letters, digits, '-' and '_', got '-'"),
    "name_underscore": (lambda: errs().name("_"),
        "name must be letters, digits, '-' and '_', got '_'"),
    "name_space": (lambda: errs().name("a b"),
        "name must be letters, digits, '-' and '_', got 'a b'"),
    "name_empty": (lambda: errs().name(""),
        "name must be letters, digits, '-' and '_', got ''"),
    "hint_zero": (lambda: errs().parallelism_hint(0),
        'parallelism_hint must be an integer >= 1, got 0'),
    "hint_str": (lambda: errs().parallelism_hint("2"),  # type: ignore[arg-type]
        "parallelism_hint must be an integer >= 1, got '2'"),
    "state_hint_zero": (lambda: errs_persisted().parallelism_hint(0),
        'parallelism_hint must be an integer >= 1, got 0'),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_every_stream_operation_names_itself_and_what_is_wrong(case: str) -> None:
    call, message = BAD_CALLS[case]
    with pytest.raises(InvalidTopologyError) as error:
        call()
    assert re.sub(r" at 0x[0-9a-f]+", "", str(error.value)) == message


def test_a_name_may_hold_letters_digits_dashes_and_underscores() -> None:
    assert errs().name("a-b_c9").fields == ["k", "n"]



def test_map_names_its_outputs_or_keeps_the_streams_fields() -> None:
    assert errs().map(times_ten, ["m"]).fields == ["m"]
    assert errs().map(times_ten).fields == ["k", "n"]
    assert errs().flat_map(twice, ["t"]).fields == ["t"]


def test_identity_partition_shuffles_into_the_next_bolt() -> None:
    t = TridentTopology()
    t.new_stream("p", FixedBatchSpout(["n"], 1, [[1]])).each(["n"], Double(), ["d"]) \
        .identity_partition().each(["n"], Double(), ["e"])
    assert data_inputs(t.build(), "b-1") == [("b-0", "s1", "shuffle")]


def test_a_grouped_partition_aggregate_refuses_an_output_named_like_a_group_field() -> None:
    with pytest.raises(InvalidTopologyError) as clash:
        grouped().partition_aggregate(["n"], Count(), ["k"])
    assert str(clash.value) == "partition_aggregate: output field(s) ['k'] already in the stream"
    assert grouped().partition_aggregate(["n"], Count(), ["n"]).fields == ["k", "n"]  # replaced


def test_chained_aggregations_plan_whole_batch_or_per_partition() -> None:
    def plan(chain: Any) -> list[tuple[str, str, str]]:
        t = TridentTopology()
        s = t.new_stream("p", FixedBatchSpout(["k", "n"], 1, [["a", 1]])).each(["n"], Double(), ["d"])
        chain(s).chain_end()
        spec = t.build()
        return data_inputs(spec, "b-1") if "b-1" in spec.components else []

    assert plan(lambda s: s.chained_agg().aggregate(Count(), ["c"])) == [("b-0", "s1", "global")]
    assert plan(lambda s: s.group_by(["k"]).chained_agg().aggregate(Count(), ["c"])) == [
        ("b-0", "s1", "fields")]
    assert plan(lambda s: s.chained_agg().partition_aggregate(Count(), ["c"])) == []  # in b-0
    assert plan(lambda s: s.chained_agg().partition_aggregate(["n"], Sum(), ["s"])
                .partition_aggregate(Count(), ["c"])) == []


class SinkFactory(StateFactory):
    """A state of one's own (backend ``external``), written by partition_persist only."""

    def __init__(self) -> None:
        super().__init__("external", "sink")


def test_a_state_of_ones_own_is_written_not_aggregated_into_or_queried() -> None:
    with pytest.raises(InvalidTopologyError) as aggregated:
        errs().persistent_aggregate(SinkFactory(), Count(), ["c"])
    assert str(aggregated.value) == (
        "persistent_aggregate needs a map state; a external state (Parquet, a Kafka sink...) "
        "takes partition_persist with its updater")
    written = errs().partition_persist(SinkFactory(), ["n"], MapPutUpdater())
    with pytest.raises(InvalidTopologyError) as queried:
        errs().state_query(written, ["k"], MapGet(), ["v"])
    assert str(queried.value) == ("state_query reads a map state; the external state 'sink' is "
                                  "written, not queried")


def test_more_plans_of_aggregations_and_state() -> None:
    t = TridentTopology()
    t.new_stream("p", FixedBatchSpout(["k", "n"], 1, [["a", 1]])).each(["n"], Double(), ["d"]) \
        .group_by(["k"]).persistent_aggregate(StateFactory.memory("r"), ["n"], ListOf(), ["l"])
    spec = t.build()
    assert data_inputs(spec, "b-1") == [("b-0", "s1", "fields")]
    assert [tuple(i.grouping.fields) for i in spec.components["b-1"].inputs
            if i.component == "b-0" and not i.stream.startswith("$")] == [("k",)]
    u = TridentTopology()
    u.new_stream("p", FixedBatchSpout(["k", "n"], 1, [["a", 1]])).each(["n"], Double(), ["d"]) \
        .partition_persist(StateFactory.memory("u"), ["k", "n"], MapPutUpdater())
    assert [c for c in u.build().bolts if c.startswith("b-")] == ["b-0"]  # fused with the each
    assert errs().aggregate(["n"], ListOf(), ["l"]).fields == ["l"]
    assert errs().parallelism_hint(1).fields == ["k", "n"]
    with pytest.raises(InvalidTopologyError) as mixed:
        chained().partition_aggregate(Count(), ["c"]).aggregate(Count(), ["d"])
    assert str(mixed.value) == "chained_agg: do not mix aggregate and partition_aggregate in one chain"
    with pytest.raises(InvalidTopologyError) as bad_outs:
        errs().aggregate(Count(), [""])
    assert str(bad_outs.value) == "aggregate: field names are non-empty strings, got ['']"


def test_a_grouped_aggregate_outputs_the_group_then_its_function_fields() -> None:
    assert grouped().aggregate(["n"], ListOf(), ["l"]).fields == ["k", "l"]
    assert grouped().aggregate(Count(), ["c"]).fields == ["k", "c"]
