"""KafkaSpoutConfig validation and serialisation, partition assignment and first-poll rules."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from stormpy.connectors.kafka import (
    FirstPollOffsetStrategy,
    KafkaConfigError,
    KafkaSpout,
    KafkaSpoutConfig,
    OffsetAndMetadata,
    ProcessingGuarantee,
    TopicPartition,
    assign_round_robin,
    commit_metadata,
    start_offset,
)
from stormpy.connectors.kafka._assignment import (
    OFFSET_BEGINNING,
    OFFSET_END,
    committed_by_topology,
    missing_topics,
    topic_partitions,
)
from stormpy.topology import InvalidTopologyError, TopologyBuilder

BASE: dict[str, Any] = {"bootstrap_servers": "127.0.0.1:9092", "group_id": "g", "topics": ["t"]}


def test_defaults_are_storms() -> None:
    cfg = KafkaSpoutConfig(**BASE).validate()
    assert cfg.processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE
    assert cfg.first_poll_offset_strategy is FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST
    assert (cfg.offset_commit_period_ms, cfg.max_uncommitted_offsets, cfg.poll_timeout_ms,
            cfg.partition_refresh_period_ms) == (30_000, 10_000_000, 200, 2_000)
    assert cfg.retry == {"initial_delay_ms": 0, "delay_period_ms": 2, "max_retries": None,
                         "max_delay_ms": 10_000}
    assert not cfg.emit_null_tuples and not cfg.fail_fast


def test_round_trips_through_msgpack() -> None:
    cfg = KafkaSpoutConfig(**BASE, processing_guarantee="NO_GUARANTEE", consumer_props={"fetch.min.bytes": 1},
                           retry={"max_retries": 3})
    doc = msgpack.unpackb(msgpack.packb(cfg.to_doc()))
    back = KafkaSpoutConfig.from_doc(doc)
    assert back == cfg and back.guarantee is ProcessingGuarantee.NO_GUARANTEE
    assert back.retry["max_retries"] == 3 and back.retry["max_delay_ms"] == 10_000


@pytest.mark.parametrize("change, setting", [
    ({"processing_guarantee": "EXACTLY_ONCE"}, "processing_guarantee"),
    ({"first_poll_offset_strategy": "SOMEWHERE"}, "first_poll_offset_strategy"),
    ({"offset_commit_period_ms": -1}, "offset_commit_period_ms"),
    ({"partition_refresh_period_ms": 0}, "partition_refresh_period_ms"),
    ({"max_uncommitted_offsets": 0}, "max_uncommitted_offsets"),
    ({"poll_timeout_ms": True}, "poll_timeout_ms"),
    ({"bootstrap_servers": ""}, "bootstrap_servers"),
    ({"group_id": None}, "group_id"),
    ({"topics": None}, "topics"),
    ({"topics": "t"}, "topics"),
    ({"topic_pattern": "x"}, "topics"),
    ({"topics": None, "topic_pattern": "(("}, "topic_pattern"),
    ({"consumer_props": {"enable.auto.commit": True}}, "consumer_props"),
    ({"consumer_props": {"group.id": "other"}}, "consumer_props"),
    ({"consumer_props": {"x": object()}}, "consumer_props"),
    ({"retry": {"max_retries": -1}}, "retry['max_retries']"),
    ({"retry": {"delay_ms": 1}}, "retry"),
    ({"retry": {"max_delay_ms": -5}}, "retry['max_delay_ms']"),
    ({"record_translator": "not a path"}, "record_translator"),
    ({"fail_fast": "yes"}, "fail_fast"),
])
def test_invalid_settings_name_the_setting(change: dict[str, Any], setting: str) -> None:
    with pytest.raises(KafkaConfigError) as info:
        KafkaSpoutConfig.from_doc({**BASE, **change})
    assert f"KafkaSpoutConfig.{setting}" in str(info.value)


def test_unknown_and_missing_settings() -> None:
    with pytest.raises(KafkaConfigError, match="unknown settings.*'offsets_commit_period'"):
        KafkaSpoutConfig.from_doc({**BASE, "offsets_commit_period": 1})
    with pytest.raises(KafkaConfigError, match="group_id: is required"):
        KafkaSpoutConfig.from_doc({"bootstrap_servers": "x:1", "topics": ["t"]})


def test_bad_config_is_an_error_at_submit_time_naming_the_component() -> None:
    builder = TopologyBuilder()
    with pytest.raises(InvalidTopologyError, match="'kafka'.*processing_guarantee"):
        builder.set_spout("kafka", KafkaSpout, kwargs={"config": {**BASE, "processing_guarantee": "NOPE"}})
    with pytest.raises(InvalidTopologyError, match="record_translator.*cannot import"):
        builder.set_spout("kafka2", KafkaSpout,
                          kwargs={"config": {**BASE, "record_translator": "no_such_mod:X"}})


def test_the_spout_declares_the_translators_fields() -> None:
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout.of(KafkaSpoutConfig(**BASE)), 2)
    spec = builder.create_topology()
    fields = spec.stream_fields("kafka", "default").to_list()
    assert fields == ["topic", "partition", "offset", "key", "value"]
    assert spec.components["kafka"].kwargs["config"]["group_id"] == "g"


def test_round_robin_assignment_by_task_index() -> None:
    parts = [TopicPartition(t, p) for t in ("b", "a") for p in range(3)]
    got = [assign_round_robin(parts, i, 4) for i in range(4)]
    assert got[0] == [TopicPartition("a", 0), TopicPartition("b", 1)]
    assert got[3] == [TopicPartition("b", 0)]
    assert sorted(tp for g in got for tp in g) == sorted(parts)
    with pytest.raises(ValueError):
        assign_round_robin(parts, 2, 2)


def test_topics_by_name_or_pattern() -> None:
    meta = {"orders": 2, "orders-eu": 1, "__consumer_offsets": 50, "other": 1}
    assert topic_partitions(meta, ["orders", "nope"], None) == [TopicPartition("orders", 0),
                                                                 TopicPartition("orders", 1)]
    assert missing_topics(meta, ["orders", "nope"]) == ["nope"]
    assert [tp.topic for tp in topic_partitions(meta, None, "orders.*")] == ["orders", "orders", "orders-eu"]
    assert topic_partitions(meta, None, ".*offsets") == []  # internal topics are never matched


def test_first_poll_offset_rules() -> None:
    E, L = FirstPollOffsetStrategy.EARLIEST, FirstPollOffsetStrategy.LATEST
    UE, UL = FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST, FirstPollOffsetStrategy.UNCOMMITTED_LATEST
    c = OffsetAndMetadata(42, None)
    assert [start_offset(s, None, False) for s in (E, L, UE, UL)] == [OFFSET_BEGINNING, OFFSET_END,
                                                                       OFFSET_BEGINNING, OFFSET_END]
    assert [start_offset(s, c, False) for s in (E, L, UE, UL)] == [OFFSET_BEGINNING, OFFSET_END, 42, 42]
    assert [start_offset(s, c, True) for s in (E, L, UE, UL)] == [42, 42, 42, 42]


def test_commit_metadata_names_the_topology() -> None:
    meta = commit_metadata("wc-1-abc", 7, "main")
    assert committed_by_topology(meta, "wc-1-abc")
    assert not committed_by_topology(meta, "wc-2-def")
    assert not committed_by_topology(None, "wc-1-abc")
    assert not committed_by_topology("written by someone else", "wc-1-abc")
