"""Trident topologies run in a LocalCluster: Storm's TridentWordCount (persistent_aggregate then
state_query), the stream operations, planning into fused bolts."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from trident_kit import (
    CALLS,
    SENTENCES,
    Collect,
    CountCalls,
    Even,
    Split,
    forget,
    is_not_none,
    seen,
    split_words,
    times_ten,
)

from stormpy.testing import LocalCluster
from stormpy.trident import (
    Count,
    FeederBatchSpout,
    FixedBatchSpout,
    MapGet,
    StateFactory,
    Sum,
    TridentTopology,
)

pytestmark = pytest.mark.timeout(90)
CONF = {"topology.max.spout.pending": 1}


@pytest.fixture(autouse=True)
def _fresh_records() -> None:
    forget()  # what an earlier session in this process recorded under the same names


def test_word_count_with_persistent_aggregate_and_new_values() -> None:
    rows = [[SENTENCES[i % 4]] for i in range(40)]
    expected = Counter(w for (s,) in rows for w in s.split())
    topology = TridentTopology()
    counts = topology.new_stream("wc", FixedBatchSpout(["sentence"], 3, rows)) \
        .each(["sentence"], Split(), ["word"]) \
        .group_by(["word"]) \
        .persistent_aggregate(StateFactory.memory("wc-counts"), Count(), "count")
    counts.new_values_stream().peek(Collect("wc-new"))
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", CONF, topology.build())

        def latest() -> dict[str, int]:
            out: dict[str, int] = {}
            for word, count in seen("wc-new"):
                out[word] = max(out.get(word, 0), count)
            return out
        cluster.wait_for(lambda: latest() == dict(expected), 60, "the final counts")
    assert latest() == dict(expected)


def test_word_count_queried_through_state_query() -> None:
    """Storm's TridentWordCount: counts persisted per word, then a query stream (DRPC's role)
    splits its argument, looks each word up with MapGet and sums the counts found."""
    rows = [[SENTENCES[i % 4]] for i in range(20)]
    expected = Counter(w for (s,) in rows for w in s.split())
    topology = TridentTopology()
    counts = topology.new_stream("wc2", FixedBatchSpout(["sentence"], 4, rows)) \
        .flat_map(split_words, ["word"]).group_by(["word"]) \
        .persistent_aggregate(StateFactory.memory("wc2-counts"), Count(), ["count"]) \
        .parallelism_hint(2)
    counts.new_values_stream().peek(Collect("wc2-new"))
    queries = FeederBatchSpout(f"wc2-queries-{uuid.uuid4().hex}", ["args"])  # feeds are process-wide
    topology.new_stream("wc2-query", queries) \
        .each(["args"], Split(), ["word"]).group_by(["word"]) \
        .aggregate(Count(), ["n"]) \
        .state_query(counts, ["word"], MapGet(), ["count"]) \
        .filter(["count"], is_not_none) \
        .aggregate(["count"], Sum(), ["sum"]).peek(Collect("wc2-sum"))
    with LocalCluster() as cluster:
        cluster.submit_topology("wc2", CONF, topology.build())
        per_batch = [set(" ".join(s for (s,) in rows[i:i + 4]).split()) for i in range(0, 20, 4)]
        cluster.wait_for(lambda: len(seen("wc2-new")) == sum(map(len, per_batch)), 60,
                         "every batch's new values")
        queries.feed([["cat the dog jumped"]])
        cluster.wait_for(lambda: bool(seen("wc2-sum")), 60, "the query's answer")
    assert seen("wc2-sum") == [[expected["the"] + expected["jumped"]]]


def test_fused_operations_make_one_bolt_and_run_once_per_tuple() -> None:
    rows = [[n] for n in range(30)]
    topology = TridentTopology()
    topology.new_stream("fused", FixedBatchSpout(["n"], 7, rows)) \
        .each(["n"], CountCalls("a")).each(["n"], CountCalls("b")) \
        .map(times_ten, ["n"]).filter(Even()).each(["n"], CountCalls("c")) \
        .peek(Collect("fused"))
    spec = topology.build()
    user_bolts = [c for c in spec.bolts if c.startswith("b-")]
    assert user_bolts == ["b-0"]
    with LocalCluster() as cluster:
        cluster.submit_topology("fused", CONF, spec)
        cluster.wait_for(lambda: len(seen("fused")) == 30, 60, "every tuple")
        cluster.wait_until_quiet("fused")
    assert (CALLS["a"], CALLS["b"], CALLS["c"]) == (30, 30, 30)
    assert sorted(seen("fused")) == [[10 * n] for n in range(30)]


def test_repartitioning_becomes_the_grouping_between_bolts() -> None:
    topology = TridentTopology()
    topology.new_stream("plan", FixedBatchSpout(["sentence"], 2, [["a b"]])) \
        .each(["sentence"], Split(), ["word"]).name("split") \
        .group_by(["word"]).persistent_aggregate(StateFactory.memory("plan"), Count(), ["count"]) \
        .parallelism_hint(3)
    spec = topology.build()
    split, persist = spec.components["b-0-split"], spec.components["b-1"]
    assert persist.parallelism == 3 and split.parallelism == 1
    data = [i for i in persist.inputs if i.component == "b-0-split" and not i.stream.startswith("$")]
    assert len(data) == 1 and data[0].grouping.type == "fields" and \
        list(data[0].grouping.fields) == ["word"]
    assert persist.kwargs["committer"] is True and split.kwargs["committer"] is False
