"""Trident topologies run in a LocalCluster: Storm's TridentWordCount (persistent_aggregate then
state_query), the stream operations, planning into fused bolts."""

from __future__ import annotations

from collections import Counter

import pytest
from trident_kit import SENTENCES, Collect, Split, seen

from stormpy.testing import LocalCluster
from stormpy.trident import Count, FixedBatchSpout, StateFactory, TridentTopology

pytestmark = pytest.mark.timeout(90)
CONF = {"topology.max.spout.pending": 1}


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
