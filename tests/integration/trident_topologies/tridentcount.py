"""A Trident count shipped in a bundle to a cluster: numbers 0..n-1 as words ``w<n % 7>``,
counted per word into SQLite state of the given kind (or Redis state, given a Redis provider
config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.topology._spec import TopologySpec
from stormpy.trident import Count, FixedBatchSpout, StateFactory, TridentTopology


def word_of(tuple_: Any) -> list[list[str]]:
    return [[f"w{tuple_[0] % 7}"]]


def build(database: str, n: int, kind: str,
          redis: Mapping[str, Any] | None = None) -> TopologySpec:
    """Counts into ``database`` (state ``counts``), or into Redis when ``redis`` is given."""
    state = (StateFactory.sqlite(database, "counts", kind) if redis is None else
             StateFactory.redis("counts", kind, config=redis))
    t = TridentTopology()
    t.new_stream("tridentcount", FixedBatchSpout(["n"], 20, [[i] for i in range(n)])) \
        .parallelism_hint(2) \
        .flat_map(word_of, ["word"]).parallelism_hint(2) \
        .group_by(["word"]) \
        .persistent_aggregate(state, Count(), ["count"]) \
        .parallelism_hint(2)
    return t.build()
