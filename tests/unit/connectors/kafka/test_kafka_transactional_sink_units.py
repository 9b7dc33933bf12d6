"""KafkaTransactionalSink against a stub transactional producer (no broker): the order of the
client calls per batch, the skip of a txid at or below the last committed marker, abort and
reopen after a failure, retriable commit errors retried, the at-least-once mode, settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import confluent_kafka  # the [kafka] extra, installed with the dev extras
import pytest

from stormpy.connectors.kafka import KafkaConfigError
from stormpy.connectors.kafka._transactional_sink import (
    KafkaTransactionalConfig,
    KafkaTransactionalSink,
    transactional_id,
)


class StubProducer:
    """Records the calls; ``fail_commit`` holds errors raised by the next commits."""

    def __init__(self, conf: Mapping[str, Any], log: list[Any]) -> None:
        self.conf = dict(conf)
        self.log = log
        self.fail_commit: list[BaseException] = []
        self.fail_produce_at: int | None = None
        self.produced = 0

    def init_transactions(self, timeout: float) -> None:
        self.log.append("init")

    def begin_transaction(self) -> None:
        self.log.append("begin")

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self.produced += 1
        if self.fail_produce_at is not None and self.produced == self.fail_produce_at:
            raise confluent_kafka.KafkaException(confluent_kafka.KafkaError(
                confluent_kafka.KafkaError._MSG_TIMED_OUT))
        self.log.append(("produce", topic, key, value))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.log.append("flush")
        return 0

    def commit_transaction(self, timeout: float) -> None:
        if self.fail_commit:
            raise self.fail_commit.pop(0)
        self.log.append("commit")

    def abort_transaction(self, timeout: float) -> None:
        self.log.append("abort")


def make(exactly_once: bool = True, committed: int | None = None
         ) -> tuple[KafkaTransactionalSink, list[Any], list[StubProducer], list[int]]:
    log: list[Any] = []
    producers: list[StubProducer] = []
    reads: list[int] = []

    def factory(conf: Mapping[str, Any]) -> StubProducer:
        producers.append(StubProducer(conf, log))
        return producers[-1]

    def read_txid(_sink: KafkaTransactionalSink) -> int | None:
        reads.append(1)
        return committed

    cfg = KafkaTransactionalConfig("127.0.0.1:9", topic="out", transactional_id_prefix="p",
                                   exactly_once=exactly_once)
    sink = KafkaTransactionalSink(cfg, transactional_id("p", "wc", "b-1", 0),
                                  producer_factory=factory, read_txid=read_txid)
    return sink, log, producers, reads


def test_a_batch_is_one_transaction_with_its_marker_in_the_commit_log() -> None:
    sink, log, producers, _ = make()
    assert sink.commit_batch(1, [("out", b"k", b"v")])
    assert producers[0].conf["transactional.id"] == "p-wc-b-1-0"
    assert log == ["init", "begin", ("produce", "out", b"k", b"v"),
                   ("produce", "p-commit-log", b"p-wc-b-1-0", b"1"), "commit"]
    assert sink.last_txid == 1


def test_the_committed_txid_is_skipped_and_a_txid_below_it_is_refused() -> None:
    sink, log, _, reads = make(committed=5)
    assert sink.commit_batch(5, [("out", b"k", b"v")]) is False
    assert log == ["init"] and reads == [1]
    with pytest.raises(KafkaConfigError, match="txid 3 is below the last txid committed by "
                                               "'p-wc-b-1-0' .5.*started over"):
        sink.commit_batch(3, [("out", b"k", b"v")])
    assert sink.commit_batch(6, [("out", b"k", b"v")])
    assert sink.counters["skipped_batches"] == 1 and sink.counters["batches"] == 1


def test_a_failed_commit_aborts_and_the_next_commit_reopens_and_rereads_the_marker() -> None:
    sink, log, producers, reads = make()
    sink.commit_batch(1, [("out", b"a", b"1")])
    fatal = confluent_kafka.KafkaException(confluent_kafka.KafkaError(
        confluent_kafka.KafkaError._FENCED))
    producers[-1].fail_commit.append(fatal)
    with pytest.raises(confluent_kafka.KafkaException):
        sink.commit_batch(2, [("out", b"b", b"2")])
    assert log[-1] == "abort" and sink.producer is None and sink.last_txid is None
    assert sink.commit_batch(2, [("out", b"b", b"2")])
    assert len(producers) == 2 and reads == [1, 1]
    assert sink.counters["aborted"] == 1 and sink.counters["opens"] == 2


def test_a_failed_produce_aborts_the_transaction() -> None:
    sink, log, producers, _ = make()
    sink.open()
    producers[0].fail_produce_at = 2
    with pytest.raises(confluent_kafka.KafkaException):
        sink.commit_batch(1, [("out", b"a", b"1"), ("out", b"b", b"2")])
    assert "commit" not in log and log[-1] == "abort"


def test_a_retriable_commit_error_is_retried() -> None:
    sink, log, producers, _ = make()
    sink.open()
    err = confluent_kafka.KafkaError(confluent_kafka.KafkaError._TIMED_OUT, retriable=True)
    producers[0].fail_commit.append(confluent_kafka.KafkaException(err))
    assert sink.commit_batch(1, [("out", b"a", b"1")])
    assert log[-1] == "commit" and sink.last_txid == 1


def test_the_at_least_once_mode_writes_every_attempt_without_a_transaction() -> None:
    sink, log, producers, reads = make(exactly_once=False)
    assert sink.commit_batch(1, [("out", b"a", b"1")])
    assert sink.commit_batch(1, [("out", b"a", b"1")])  # a replay is written again
    assert "transactional.id" not in producers[0].conf
    assert producers[0].conf["enable.idempotence"] is True
    assert log == [("produce", "out", b"a", b"1"), "flush"] * 2 and reads == []


def test_an_empty_batch_writes_nothing() -> None:
    sink, log, _, _ = make()
    assert sink.commit_batch(1, []) is False
    assert log == ["init"]


@pytest.mark.parametrize(("settings", "named"), [
    ({}, "topic"),
    ({"topic": "a", "topic_field": "t"}, "topic"),
    ({"topic": "a", "producer_props": {"transactional.id": "x"}}, "producer_props"),
    ({"topic": "a", "producer_props": {"error_cb": "x"}}, "producer_props"),
    ({"topic": "a", "commit_log_partitions": 0}, "commit_log_partitions"),
    ({"topic": "a", "transactional_id_prefix": ""}, "transactional_id_prefix"),
    ({"topic": "a", "timeout_secs": 0}, "timeout_secs"),
])
def test_bad_settings_name_the_setting(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(KafkaConfigError, match=named):
        KafkaTransactionalConfig("127.0.0.1:9", **settings).validate()


def test_records_map_fields_by_name_and_refuse_what_kafka_cannot_carry() -> None:
    cfg = KafkaTransactionalConfig("h:1", topic_field="t", default_topic="d", key_field="w",
                                   message_field="n")
    assert cfg.record_of({"t": "x", "w": "the", "n": 3}.__getitem__, "here") == ("x", b"the", b"3")
    assert cfg.record_of({"n": 3}.__getitem__, "here") == ("d", None, b"3")
    with pytest.raises(ValueError, match="here: no field 'n'"):
        cfg.record_of({"w": "x"}.__getitem__, "here")
    with pytest.raises(ValueError, match="here"):
        cfg.record_of({"n": object()}.__getitem__, "here")
    assert KafkaTransactionalConfig("h:1", topic_field="t").record_of({"n": 1}.__getitem__, "w") is None


def test_the_trident_factory_travels_in_the_spec_and_is_only_for_partition_persist() -> None:
    from stormpy.connectors.kafka._trident_sink import (
        KafkaTransactionalStateFactory,
        KafkaTransactionalUpdater,
    )
    from stormpy.topology._errors import InvalidTopologyError
    from stormpy.trident import Count, FixedBatchSpout, MapGet, StateFactory, TridentTopology

    factory = KafkaTransactionalStateFactory(bootstrap_servers="h:1", topic="out",
                                             transactional_id_prefix="wc")
    back = StateFactory.from_doc(factory.doc())
    assert isinstance(back, KafkaTransactionalStateFactory) and back.kafka == factory.kafka
    assert back.key == factory.key
    with pytest.raises(KafkaConfigError, match="topic"):
        KafkaTransactionalStateFactory(bootstrap_servers="h:1")
    t = TridentTopology()
    stream = t.new_stream("s", FixedBatchSpout(["key", "message"], 2, [["a", "1"]]))
    written = stream.partition_persist(factory, ["key", "message"], KafkaTransactionalUpdater(),
                                       ["written"])
    with pytest.raises(InvalidTopologyError, match="persistent_aggregate needs a map state"):
        stream.group_by(["key"]).persistent_aggregate(factory, Count(), ["n"])
    with pytest.raises(InvalidTopologyError, match="written, not queried"):
        stream.state_query(written, ["key"], MapGet(), ["v"])
