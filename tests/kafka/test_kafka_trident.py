"""KafkaOpaqueSpout against the real (tansu) broker: the Trident word count with opaque state is
exact (compared with a plain count of what was produced), with a batch failed after its state
update in the commit, and records produced while the topology runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from trident_kit import FAILS, FailOnWord, split_value

from stormpy.connectors.kafka._opaque import KafkaOpaqueSpout
from stormpy.state import SqliteStore
from stormpy.testing import LocalCluster
from stormpy.testing._kafka import KafkaBroker
from stormpy.trident import OPAQUE, Count, MapState, StateFactory, TridentTopology

UNIT = Path(__file__).resolve().parents[1] / "unit"


pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]
LINES = ["the cow jumped over the moon", "four score and seven years ago", "boom goes the drum",
         "snow white and the seven dwarfs"]


def counts(db: Path) -> dict[str, int]:
    if not db.exists():
        return {}
    state = MapState(SqliteStore(db, "trident_state", segments=("counts",)), OPAQUE)
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


def test_trident_word_count_from_kafka_is_exact(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str],
        produce: Callable[[str, Iterable[tuple[int, Any, Any]]], None], tmp_path: Path) -> None:
    topic = kafka_topic(2)
    first = [(i % 2, None, LINES[i % 4].encode()) for i in range(120)]
    produce(topic, first)
    db = tmp_path / "wc.sqlite"
    t = TridentTopology()
    t.new_stream("kafka-wc", KafkaOpaqueSpout(kafka_broker.bootstrap_servers, topic, 25)) \
        .parallelism_hint(2) \
        .flat_map(split_value, ["word"]).group_by(["word"]) \
        .persistent_aggregate(StateFactory.sqlite(str(db), "counts", OPAQUE), Count(), ["count"]) \
        .parallelism_hint(2) \
        .new_values_stream().filter(FailOnWord("kafka-boom", "boom"))
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-wc", {"topology.max.spout.pending": 2}, t.build())
        expected = Counter(w for _p, _k, v in first for w in v.decode().split())
        cluster.wait_for(lambda: counts(db) == dict(expected), 90, "the first records counted")
        more = [(i % 2, None, LINES[(i + 1) % 4].encode()) for i in range(60)]
        produce(topic, more)
        expected += Counter(w for _p, _k, v in more for w in v.decode().split())
        cluster.wait_for(lambda: counts(db) == dict(expected), 90, "the later records counted")
    assert FAILS["kafka-boom"] == 1
    assert counts(db) == dict(expected)
