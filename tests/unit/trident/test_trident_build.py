"""Build-time checks of Trident topologies (each error names what is wrong) and the built-in
aggregators on their own."""

from __future__ import annotations

from typing import Any

import pytest
from trident_kit import CountAndSum, Double, Split

from stormpy.topology._errors import InvalidTopologyError
from stormpy.trident import (
    Count,
    FixedBatchSpout,
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
