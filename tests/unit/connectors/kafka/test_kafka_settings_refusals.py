"""The Kafka spout's and bolt's settings refused naming the setting and the value, records
translated to exactly the declared fields, partitions shared among spout tasks as Storm's
round-robin does, and the spout's commits as its metrics and error reports show them (behaviours
the mutation run of the ``kafka-config`` target asked for)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_stub import Cluster, Harness

from stormpy.connectors.kafka import (
    FirstPollOffsetStrategy,
    KafkaConfigError,
    KafkaRecord,
    KafkaSpoutConfig,
    KafkaSpoutMessageId,
    OffsetAndMetadata,
    TopicPartition,
    assign_round_robin,
    commit_metadata,
    start_offset,
)
from stormpy.connectors.kafka._assignment import OFFSET_BEGINNING, topic_partitions
from stormpy.connectors.kafka._bolt_config import FieldNameBasedTupleToKafkaMapper, KafkaBoltConfig, to_bytes
from stormpy.connectors.kafka._translator import (
    DefaultRecordTranslator,
    KafkaTuple,
    RecordTranslator,
    StringRecordTranslator,
)
from stormpy.topology import Fields, Tuple

BASE: dict[str, Any] = {"bootstrap_servers": "127.0.0.1:9092", "group_id": "g", "topics": ["t"]}


def test_round_robin_gives_the_ith_partition_to_task_i_mod_tasks() -> None:
    parts = [TopicPartition("b", 1), TopicPartition("a", 2), TopicPartition("a", 0), TopicPartition("b", 0),
             TopicPartition("a", 1)]
    shares = [assign_round_robin(parts, i, 2) for i in range(2)]
    assert shares == [[TopicPartition("a", 0), TopicPartition("a", 2), TopicPartition("b", 1)],
                      [TopicPartition("a", 1), TopicPartition("b", 0)]]


def test_unknown_guarantee_is_refused_naming_setting_and_value() -> None:
    with pytest.raises(KafkaConfigError) as info:
        KafkaSpoutConfig(**BASE, processing_guarantee="SOMETIMES").validate()
    assert info.value.setting == "KafkaSpoutConfig.processing_guarantee"
    assert str(info.value) == ("KafkaSpoutConfig.processing_guarantee: unknown value 'SOMETIMES' "
                               "(one of AT_LEAST_ONCE, AT_MOST_ONCE, NO_GUARANTEE)")


AUTO_COMMIT = ("'enable.auto.commit' cannot be set here: offsets are committed by the spout according to "
               "processing_guarantee; use ProcessingGuarantee.NO_GUARANTEE for periodic commits of the "
               "position")
NOT_A_LIST = "must be a non-empty list of topic names, got "
ONE_OF_TOPICS = ("give exactly one of topics (a list of names) and topic_pattern (a regular "
                 "expression)")
RETRY_KEYS = ("unknown keys ['a', 'x'] (known: ['delay_period_ms', 'initial_delay_ms', 'max_delay_ms', "
              "'max_retries'])")

SPOUT_REFUSALS: list[tuple[dict[str, Any], str, str]] = [
    ({"bootstrap_servers": ""}, "bootstrap_servers",
     "must be a non-empty 'host:port[,host:port]' string, got ''"),
    ({"group_id": ""}, "group_id",
     "must be a non-empty string (offsets are committed to this consumer group), got ''"),
    ({"topics": None}, "topics", ONE_OF_TOPICS),
    ({"topic_pattern": "x.*"}, "topics", ONE_OF_TOPICS),
    ({"topics": "t"}, "topics", NOT_A_LIST + "'t'"),
    ({"topics": []}, "topics", NOT_A_LIST + "[]"),
    ({"topics": ["a", ""]}, "topics", NOT_A_LIST + "['a', '']"),
    ({"topics": ("a", 3)}, "topics", NOT_A_LIST + "('a', 3)"),
    ({"topics": {"a": 1}}, "topics", NOT_A_LIST + "{'a': 1}"),
    ({"topics": None, "topic_pattern": ""}, "topic_pattern", "must be a regular expression, got ''"),
    ({"topics": None, "topic_pattern": 7}, "topic_pattern", "must be a regular expression, got 7"),
    ({"topics": None, "topic_pattern": "("}, "topic_pattern",
     "invalid regular expression '(': missing ), unterminated subpattern at position 0"),
    ({"consumer_props": []}, "consumer_props", "must be a mapping of librdkafka properties, got []"),
    ({"consumer_props": {"enable.auto.commit": "true"}}, "consumer_props", AUTO_COMMIT),
    ({"consumer_props": {"enable.auto.commit": True}}, "consumer_props", AUTO_COMMIT),
    ({"consumer_props": {"bootstrap.servers": "false"}}, "consumer_props",
     "'bootstrap.servers' cannot be set here: set bootstrap_servers instead"),
    ({"consumer_props": {"group.id": "x"}}, "consumer_props",
     "'group.id' cannot be set here: set group_id instead"),
    ({"first_poll_offset_strategy": "NOW"}, "first_poll_offset_strategy",
     "unknown value 'NOW' (one of EARLIEST, LATEST, UNCOMMITTED_EARLIEST, UNCOMMITTED_LATEST)"),
    ({"offset_commit_period_ms": 0}, "offset_commit_period_ms", "must be an integer >= 1, got 0"),
    ({"max_uncommitted_offsets": 0}, "max_uncommitted_offsets", "must be an integer >= 1, got 0"),
    ({"poll_timeout_ms": -1}, "poll_timeout_ms", "must be an integer >= 0, got -1"),
    ({"partition_refresh_period_ms": 0}, "partition_refresh_period_ms", "must be an integer >= 1, got 0"),
    ({"max_poll_records": 0}, "max_poll_records", "must be an integer >= 1, got 0"),
    ({"retry": []}, "retry", "must be a mapping like {'initial_delay_ms': 0, 'delay_period_ms': 2, "
                             "'max_retries': None, 'max_delay_ms': 10000}, got []"),
    ({"retry": {"x": 1, "a": 2}}, "retry", RETRY_KEYS),
    ({"retry": {"initial_delay_ms": -1}}, "retry['initial_delay_ms']",
     "must be a number of milliseconds >= 0, got -1"),
    ({"retry": {"delay_period_ms": -1}}, "retry['delay_period_ms']",
     "must be a number of milliseconds >= 0, got -1"),
    ({"retry": {"max_delay_ms": -1}}, "retry['max_delay_ms']",
     "must be a number of milliseconds >= 0, got -1"),
    ({"retry": {"max_retries": -1}}, "retry['max_retries']", "must be an integer >= 0, got -1"),
    ({"retry": {"max_retries": 1.5}}, "retry['max_retries']", "must be an integer >= 0, got 1.5"),
    ({"record_translator": "nodots"}, "record_translator",
     "must be an import path like 'package.module:Class', got 'nodots'"),
    ({"record_translator_args": []}, "record_translator_args", "must be a mapping, got []"),
    ({"tuple_listener": "nodots"}, "tuple_listener",
     "must be an import path like 'package.module:Class', got 'nodots'"),
    ({"emit_null_tuples": 1}, "emit_null_tuples", "must be True or False, got 1"),
    ({"fail_fast": "yes"}, "fail_fast", "must be True or False, got 'yes'"),
    ({"batch_acking": None}, "batch_acking", "must be True or False, got None"),
    ({"consumer_props": {"x": {1, 2}}}, "consumer_props",
     "settings must be plain data msgpack can carry: can not serialize 'set' object"),
]


@pytest.mark.parametrize(("change", "setting", "problem"), SPOUT_REFUSALS)
def test_spout_setting_refused_naming_setting_and_value(change: dict[str, Any], setting: str,
                                                         problem: str) -> None:
    with pytest.raises(KafkaConfigError) as info:
        KafkaSpoutConfig(**{**BASE, **change}).validate()
    assert type(info.value) is KafkaConfigError
    assert info.value.setting == f"KafkaSpoutConfig.{setting}"
    assert str(info.value) == f"KafkaSpoutConfig.{setting}: {problem}"


def test_spout_accepts_the_lowest_allowed_values_and_auto_commit_off() -> None:
    cfg = KafkaSpoutConfig(**{**BASE, "topics": ("a", "b")}, offset_commit_period_ms=1,
                           max_uncommitted_offsets=1,
                           poll_timeout_ms=0, partition_refresh_period_ms=1, max_poll_records=1,
                           retry={"max_retries": 0, "initial_delay_ms": 0},
                           consumer_props={"enable.auto.commit": "FALSE", "fetch.min.bytes": 1},
                           record_translator_args={},
                           tuple_listener="stormpy.connectors.kafka:KafkaTupleListener")
    cfg.validate()
    assert cfg.topics == ["a", "b"]
    assert cfg.retry == {"initial_delay_ms": 0, "delay_period_ms": 2, "max_retries": 0,
                         "max_delay_ms": 10_000}
    KafkaSpoutConfig(**BASE, consumer_props={"enable.auto.commit": False}).validate()
    pattern = KafkaSpoutConfig(**{**BASE, "topics": None, "topic_pattern": "orders-.*"}).validate()
    assert pattern.topic_pattern == "orders-.*"


def test_spout_doc_carries_plain_strings_for_the_enums() -> None:
    doc = KafkaSpoutConfig(**BASE, processing_guarantee="AT_MOST_ONCE",
                           first_poll_offset_strategy="LATEST").to_doc()
    assert type(doc["processing_guarantee"]) is str and doc["processing_guarantee"] == "AT_MOST_ONCE"
    assert type(doc["first_poll_offset_strategy"]) is str and doc["first_poll_offset_strategy"] == "LATEST"


BOLT: dict[str, Any] = {"bootstrap_servers": "h:1", "topic": "t"}
CALLBACKS = "cannot be set: the bolt owns the client's callbacks (delivery reports ack and fail tuples)"
ONE_TOPIC = ("set exactly one of topic (a fixed topic) and topic_field (the field naming the topic); "
             "got topic=")

BOLT_REFUSALS: list[tuple[dict[str, Any], str, str]] = [
    ({"bootstrap_servers": ""}, "bootstrap_servers", "must be 'host:port[,host:port...]', got ''"),
    ({"topic": None}, "topic", ONE_TOPIC + "None, topic_field=None"),
    ({"topic_field": "f"}, "topic", ONE_TOPIC + "'t', topic_field='f'"),
    ({"topic": ""}, "topic", "must be a non-empty string, got ''"),
    ({"topic": None, "topic_field": ""}, "topic_field", "must be a non-empty string, got ''"),
    ({"topic": None, "topic_field": "f", "default_topic": ""}, "default_topic",
     "must be a non-empty string, got ''"),
    ({"default_topic": "d"}, "default_topic", "only applies with topic_field"),
    ({"key_field": ""}, "key_field", "must be a field name, got ''"),
    ({"message_field": ""}, "message_field", "must be a field name, got ''"),
    ({"tuple_mapper": "no.such:Thing"}, "tuple_mapper",
     "cannot import module 'no.such' (from 'no.such:Thing'): No module named 'no'"),
    ({"tuple_mapper": "stormpy.connectors.kafka:KafkaSpoutConfig"}, "tuple_mapper",
     "'stormpy.connectors.kafka:KafkaSpoutConfig' is not a TupleToKafkaMapper subclass"),
    ({"tuple_mapper": "stormpy.connectors.kafka:KAFKA_MISSING"}, "tuple_mapper",
     "module 'stormpy.connectors.kafka' has no attribute 'KAFKA_MISSING' (from "
     "'stormpy.connectors.kafka:KAFKA_MISSING')"),
    ({"tuple_mapper": "stormpy.connectors.kafka:KAFKA_EXTRA"}, "tuple_mapper",
     "'stormpy.connectors.kafka:KAFKA_EXTRA' is not a TupleToKafkaMapper subclass"),
    ({"tuple_mapper_args": []}, "tuple_mapper_args", "must be a mapping, got []"),
    ({"producer_props": []}, "producer_props", "must be a mapping of librdkafka properties, got []"),
    ({"producer_props": {"bootstrap.servers": 1}}, "producer_props",
     "'bootstrap.servers' cannot be set here: set bootstrap_servers instead"),
    ({"producer_props": {"error_cb": 1}}, "producer_props", "'error_cb' " + CALLBACKS),
    ({"producer_props": {"on_delivery": 1}}, "producer_props", "'on_delivery' " + CALLBACKS),
    ({"fire_and_forget": 1}, "fire_and_forget", "must be True or False, got 1"),
    ({"max_backlog": -1}, "max_backlog", "must be an integer >= 0, got -1"),
    ({"producer_props": {"x": {1, 2}}}, "producer_props",
     "settings must be plain data msgpack can carry: can not serialize 'set' object"),
]


@pytest.mark.parametrize(("change", "setting", "problem"), BOLT_REFUSALS)
def test_bolt_setting_refused_naming_setting_and_value(change: dict[str, Any], setting: str,
                                                        problem: str) -> None:
    with pytest.raises(KafkaConfigError) as info:
        KafkaBoltConfig(**{**BOLT, **change}).validate()
    assert type(info.value) is KafkaConfigError
    assert info.value.setting == f"KafkaBoltConfig.{setting}"
    assert str(info.value) == f"KafkaBoltConfig.{setting}: {problem}"


def test_bolt_accepts_the_lowest_backlog_and_a_topic_field_with_default() -> None:
    cfg = KafkaBoltConfig("h:1", topic_field="dest", default_topic="fallback", max_backlog=0,
                          producer_props={"linger.ms": 5}, fire_and_forget=True).validate()
    assert (cfg.topic_field, cfg.default_topic, cfg.max_backlog) == ("dest", "fallback", 0)


def test_bolt_mapper_with_wrong_arguments_is_refused_naming_them() -> None:
    cfg = KafkaBoltConfig(**BOLT, tuple_mapper="stormpy.connectors.kafka:FieldNameBasedTupleToKafkaMapper",
                          tuple_mapper_args={"bogus": 1})
    with pytest.raises(KafkaConfigError) as info:
        cfg.mapper()
    assert info.value.setting == "KafkaBoltConfig.tuple_mapper_args"
    assert str(info.value).startswith("KafkaBoltConfig.tuple_mapper_args: stormpy.connectors.kafka:"
                                      "FieldNameBasedTupleToKafkaMapper: ")
    assert "'bogus'" in str(info.value)


def _tup(values: list[Any], fields: list[str] | None) -> Tuple:
    return Tuple(values, "default", 1, "src", Fields(fields) if fields is not None else None)


def test_field_mapper_defaults_read_key_and_message() -> None:
    mapper = FieldNameBasedTupleToKafkaMapper()
    tup = _tup(["v", "k"], ["message", "key"])
    assert (mapper.key(tup), mapper.message(tup)) == ("k", "v")


def test_field_mapper_without_key_field_gives_a_null_key_and_missing_message_names_fields() -> None:
    mapper = FieldNameBasedTupleToKafkaMapper()
    tup = _tup(["v"], ["body"])
    assert mapper.key(tup) is None
    with pytest.raises(KeyError) as info:
        mapper.message(tup)
    assert info.value.args[0] == ("KafkaBolt: tuple from src/default has no field 'message' "
                                  "(KafkaBoltConfig.message_field; fields: ['body'])")
    no_fields = _tup(["v"], None)
    assert mapper.key(no_fields) is None
    with pytest.raises(KeyError) as info:
        mapper.message(no_fields)
    assert info.value.args[0].endswith("fields: [])")


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), (b"\x00b", b"\x00b"), ("h\u00e9", "h\u00e9".encode()), (bytearray(b"ab"), b"ab"),
    (memoryview(b"cd"), b"cd"), (42, b"42"), (1.5, b"1.5")])
def test_bolt_values_become_the_bytes_kafka_stores(value: Any, expected: bytes | None) -> None:
    out = to_bytes(value, "value")
    assert out == expected and (expected is None or type(out) is bytes)


def test_bolt_value_of_another_type_is_refused_naming_it() -> None:
    with pytest.raises(TypeError) as info:
        to_bytes(True, "key")
    assert str(info.value) == ("KafkaBolt: the key is a bool (True); map it to str, bytes, a number or "
                               "None (tuple_mapper)")


RECORD = KafkaRecord("orders", 3, 17, b"k\xc3\xa9", b"v\xc3\xa9")


def test_default_translator_emits_exactly_the_declared_fields() -> None:
    tr = DefaultRecordTranslator()
    assert list(DefaultRecordTranslator.declare_outputs({})["default"].fields) == [
        "topic", "partition", "offset", "key", "value"]
    assert tr.apply(RECORD) == ["orders", 3, 17, b"k\xc3\xa9", b"v\xc3\xa9"]
    with pytest.raises(TypeError) as info:
        RecordTranslator(b=1, a=2)
    assert str(info.value) == "RecordTranslator takes no arguments, got ['a', 'b']"


def test_string_translator_decodes_key_and_value() -> None:
    assert StringRecordTranslator().apply(RECORD) == ["orders", 3, 17, "k\u00e9", "v\u00e9"]
    assert StringRecordTranslator("latin-1").apply(RECORD)[3:] == ["k\u00c3\u00a9", "v\u00c3\u00a9"]
    assert StringRecordTranslator().apply(KafkaRecord("t", 0, 0, None, None)) == ["t", 0, 0, None, None]


def test_kafka_tuple_carries_values_and_stream() -> None:
    kt = KafkaTuple(("a", 1), stream="errors")
    assert list(kt) == ["a", 1] and kt.stream == "errors"
    assert KafkaTuple(["x"]).stream == "default"


def test_commit_metadata_is_storms_json() -> None:
    assert commit_metadata("topo-1", 7, "executor") == (
        '{"topologyId":"topo-1","taskId":7,"threadName":"executor"}')
    assert commit_metadata("topo-1", 7) == ('{"topologyId":"topo-1","taskId":7,"threadName":"MainThread"}')


def test_a_commit_at_offset_zero_by_another_topology_is_resumed_by_uncommitted_strategies() -> None:
    zero = OffsetAndMetadata(0, None)
    assert start_offset(FirstPollOffsetStrategy.UNCOMMITTED_LATEST, zero, False) == 0
    assert start_offset(FirstPollOffsetStrategy.LATEST, zero, True) == 0
    assert start_offset(FirstPollOffsetStrategy.EARLIEST, zero, False) == OFFSET_BEGINNING


def test_no_pattern_matches_no_topic() -> None:
    assert topic_partitions({"XXXX": 1, "": 1}, None, None) == [TopicPartition("", 0)]


def test_message_id_of_a_partition_names_topic_partition_and_offset() -> None:
    mid = KafkaSpoutMessageId.of(TopicPartition("orders", 3), 17)
    assert mid == ("orders", 3, 17) and hash(mid) == hash(("orders", 3, 17))
    assert (mid.topic, mid.partition, mid.offset, mid.topic_partition) == ("orders", 3, 17,
                                                                          TopicPartition("orders", 3))
    assert repr(KafkaSpoutMessageId("orders", 3, 17, num_fails=2)) == (
        "KafkaSpoutMessageId('orders', 3, 17, fails=2)")


# -- the spout's commits, as its metrics and error reports show them (kafka_stub's consumer) --


def _spout_with_two_partitions(**settings: Any) -> Harness:
    cluster = Cluster()
    cluster.create("t", 2)
    for i in range(6):
        cluster.produce("t", i % 2, b"v%d" % i)
    return Harness(cluster, **settings).open()


def test_each_commit_is_counted_once_and_a_partition_refused_by_the_broker_is_reported() -> None:
    h = _spout_with_two_partitions()
    out = h.run()
    assert sorted((values[1], values[2]) for values, _, _ in out) == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    for _, mid, _ in out:
        h.spout.ack(mid)
    tp1 = TopicPartition("t", 1)
    assert h.consumer is not None
    h.consumer.commit_sync = lambda offsets: {tp1: "NOT_LEADER"}  # type: ignore[method-assign]
    h.clock.now += 31
    h.run(1)
    metrics = h.spout.metrics()
    assert (metrics["commits"], metrics["commit_failures"], metrics["errors"]) == (1, 1, 1)
    assert h.errors == ["KafkaSpout: committing t-1 at 3 failed: NOT_LEADER"]
    assert metrics["partitions"]["t-0"]["committed"] == 3
    assert metrics["partitions"]["t-1"]["committed"] == 0  # still where it started


def test_a_failed_commit_is_counted_once_reported_and_retried() -> None:
    h = _spout_with_two_partitions()
    for _, mid, _ in h.run():
        h.spout.ack(mid)
    h.cluster.fail_commits = True
    h.clock.now += 31
    h.run(1)
    metrics = h.spout.metrics()
    assert (metrics["commits"], metrics["commit_failures"], metrics["errors"]) == (0, 1, 1)
    assert len(h.errors) == 1 and h.errors[0].startswith("KafkaSpout: committing {")
    assert h.errors[0].endswith("failed (commit failed: broker down); acked offsets stay uncommitted and "
                                "the commit is retried")
    h.cluster.fail_commits = False
    h.clock.now += 31
    h.run(1)
    metrics = h.spout.metrics()
    assert (metrics["commits"], metrics["commit_failures"]) == (1, 1)
    assert {tp.partition: o.offset for (_, tp), o in h.cluster.committed.items()} == {0: 3, 1: 3}


def test_commits_are_counted_one_each_over_several_periods() -> None:
    h = _spout_with_two_partitions()
    out = h.run()
    for _, mid, _ in out[:2]:
        h.spout.ack(mid)
    h.clock.now += 31
    h.run(1)
    for _, mid, _ in out[2:]:
        h.spout.ack(mid)
    h.clock.now += 31
    h.run(1)
    metrics = h.spout.metrics()
    assert (metrics["commits"], metrics["commit_failures"], metrics["errors"]) == (2, 0, 0)


def test_at_most_once_records_of_a_partition_whose_commit_failed_are_polled_again() -> None:
    h = _spout_with_two_partitions(processing_guarantee="AT_MOST_ONCE")
    assert h.consumer is not None
    real_commit = h.consumer.commit_sync
    tp1 = TopicPartition("t", 1)
    h.consumer.commit_sync = lambda offsets: {tp1: "NOT_LEADER"}  # type: ignore[method-assign]
    first = h.run(1)
    assert sorted((values[1], values[2]) for values, _, _ in first) == [(0, 0), (0, 1), (0, 2)]
    assert h.errors == ["KafkaSpout: committing ['t-1'] before emitting failed "
                        "({TopicPartition(topic='t', partition=1): 'NOT_LEADER'}); the records are polled "
                        "again"]
    metrics = h.spout.metrics()
    assert (metrics["commits"], metrics["commit_failures"], metrics["errors"]) == (0, 1, 1)
    h.consumer.commit_sync = real_commit  # type: ignore[method-assign]
    again = h.run()
    assert sorted((values[1], values[2]) for values, _, _ in again) == [(1, 0), (1, 1), (1, 2)]
    metrics = h.spout.metrics()
    assert (metrics["commits"], metrics["commit_failures"]) == (1, 1)
