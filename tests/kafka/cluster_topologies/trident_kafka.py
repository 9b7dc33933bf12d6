"""The Trident word count reading Kafka through KafkaOpaqueSpout, counting words into opaque
SQLite state (shipped in a bundle to a cluster)."""

from __future__ import annotations

from typing import Any

from stormpy.connectors.kafka._opaque import KafkaOpaqueSpout
from stormpy.topology._spec import TopologySpec
from stormpy.trident import OPAQUE, Count, StateFactory, TridentTopology


def split_value(tuple_: Any) -> list[list[str]]:
    return [[w] for w in (tuple_["value"] or "").split()]


def build(bootstrap: str, topic: str, database: str, txid: str) -> TopologySpec:
    t = TridentTopology()
    t.new_stream(txid, KafkaOpaqueSpout(bootstrap, topic, 200)).parallelism_hint(2) \
        .flat_map(split_value, ["word"]).parallelism_hint(2) \
        .group_by(["word"]) \
        .persistent_aggregate(StateFactory.sqlite(database, "counts", OPAQUE), Count(), ["count"]) \
        .parallelism_hint(2)
    return t.build()
