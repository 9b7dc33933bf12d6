"""A Trident count shipped in a bundle to a cluster: numbers 0..n-1 as words ``w<n % 7>``,
counted per word into SQLite state of the given kind."""

from __future__ import annotations

from typing import Any

from stormpy.topology.spec import TopologySpec
from stormpy.trident import Count, FixedBatchSpout, StateFactory, TridentTopology


def word_of(tuple_: Any) -> list[list[str]]:
    return [[f"w{tuple_[0] % 7}"]]


def build(database: str, n: int, kind: str) -> TopologySpec:
    t = TridentTopology()
    t.new_stream("tridentcount", FixedBatchSpout(["n"], 20, [[i] for i in range(n)])) \
        .parallelism_hint(2) \
        .flat_map(word_of, ["word"]).parallelism_hint(2) \
        .group_by(["word"]) \
        .persistent_aggregate(StateFactory.sqlite(database, "counts", kind), Count(), ["count"]) \
        .parallelism_hint(2)
    return t.build()
