"""The exactly-once Kafka sink against a real Apache Kafka broker: a txid's records are committed
once however often it is replayed, also by a new incarnation of the task after a crash between
the Kafka commit and the topology's commit; a zombie is fenced; an aborted attempt leaves nothing
visible to read_committed consumers; in a Trident word count (Kafka → Kafka) a batch failed right
after the sink's commit is not written twice, while the at-least-once mode writes it again."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trident_kafka_eos

from stormpy.connectors.kafka._transactional_sink import (
    KafkaTransactionalConfig,
    KafkaTransactionalSink,
    read_committed_txid,
    transactional_id,
)
from stormpy.testing import LocalCluster
from stormpy.testing._kafka import KafkaBroker

TOPOLOGIES = Path(__file__).resolve().parent / "cluster_topologies"


pytestmark = [pytest.mark.kafka, pytest.mark.timeout(240)]
LINES = ["the cow jumped over the moon", "four score and seven years ago",
         "snow white and the seven dwarfs", "an apple a day keeps the doctor away"]


def read_topic(bootstrap: str, topic: str, isolation: str = "read_committed",
               timeout_secs: float = 60.0) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic`` (all partitions, each in offset order) visible under
    ``isolation``, as (key, value)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "enable.partition.eof": True})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_secs).topics[topic]
        parts = [TopicPartition(topic, p, 0) for p in meta.partitions]
        consumer.assign(parts)
        out: dict[int, list[tuple[bytes | None, bytes | None]]] = {p.partition: [] for p in parts}
        done: set[int] = set()  # partitions at their end (an empty one reports it too)
        deadline = time.monotonic() + timeout_secs
        while len(done) < len(parts):
            assert time.monotonic() < deadline, f"reading {topic}: partitions {done} of {len(parts)}"
            for msg in consumer.consume(500, 0.5):
                if msg.error() is not None:
                    if msg.error().code() == msg.error()._PARTITION_EOF:
                        done.add(msg.partition())
                    continue
                out[msg.partition()].append((msg.key(), msg.value()))
        return [r for p in sorted(out) for r in out[p]]
    finally:
        consumer.close()


@pytest.fixture
def sink_config(kafka_broker: KafkaBroker,
                kafka_topic: Callable[..., str]) -> KafkaTransactionalConfig:
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    return KafkaTransactionalConfig(kafka_broker.bootstrap_servers, topic=kafka_topic(2),
                                    transactional_id_prefix=prefix, timeout_secs=30.0)


@pytest.fixture
def sinks() -> Iterator[list[KafkaTransactionalSink]]:
    made: list[KafkaTransactionalSink] = []
    yield made
    for sink in made:
        sink.close()


def records(topic: str, start: int, n: int) -> list[tuple[str, bytes, bytes]]:
    return [(topic, b"k%d" % i, b"v%d" % i) for i in range(start, start + n)]


def test_a_replayed_txid_is_skipped_by_a_new_incarnation_after_a_crash_past_the_kafka_commit(
        sink_config: KafkaTransactionalConfig, sinks: list[KafkaTransactionalSink]) -> None:
    cfg = sink_config
    assert cfg.topic is not None
    tid = transactional_id(cfg.transactional_id_prefix, "wc", "b-1", 0)
    first = KafkaTransactionalSink(cfg, tid)
    sinks.append(first)
    assert first.commit_batch(1, records(cfg.topic, 0, 50))
    assert first.commit_batch(2, records(cfg.topic, 50, 50))
    # the task dies after txid 2's Kafka commit, before the topology recorded it: the new
    # incarnation (same transactional.id) is handed txid 2 again
    second = KafkaTransactionalSink(cfg, tid)
    sinks.append(second)
    assert second.commit_batch(2, records(cfg.topic, 50, 50)) is False
    assert second.last_txid == 2
    assert second.commit_batch(3, records(cfg.topic, 100, 50))
    # the zombie (first incarnation) is fenced: its commit fails and shows nothing
    with pytest.raises(Exception):  # noqa: B017,PT011 - KafkaException (fenced), whatever its code
        first.commit_batch(4, records(cfg.topic, 900, 10))
    got = read_topic(cfg.bootstrap_servers, cfg.topic)
    values = sorted(int(v[1:]) for _k, v in got if v is not None)
    assert values == list(range(150)), "every record exactly once, the zombie's none"
    assert read_committed_txid(cfg.bootstrap_servers, cfg.commit_log, tid) == 3
    # another task's transactional.id has its own marker
    assert read_committed_txid(cfg.bootstrap_servers, cfg.commit_log, tid + "x") is None


def test_an_aborted_attempt_is_invisible_to_read_committed_consumers(
        sink_config: KafkaTransactionalConfig, sinks: list[KafkaTransactionalSink]) -> None:
    cfg = sink_config
    assert cfg.topic is not None
    sink = KafkaTransactionalSink(cfg, transactional_id(cfg.transactional_id_prefix, "wc", "b", 0))
    sinks.append(sink)

    def failing() -> Iterator[tuple[str, bytes, bytes]]:
        yield from records(cfg.topic or "", 0, 20)
        assert sink.producer.flush(30) == 0  # on the broker, inside the open transaction
        raise RuntimeError("the batch's mapping failed half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        sink.commit_batch(1, _Lazy(failing))
    assert sink.counters["aborted"] == 1 and sink.producer is None
    assert sink.commit_batch(1, records(cfg.topic, 100, 5))  # the replay, reopened
    committed = read_topic(cfg.bootstrap_servers, cfg.topic)
    assert sorted(v for _k, v in committed) == sorted(b"v%d" % i for i in range(100, 105))
    everything = read_topic(cfg.bootstrap_servers, cfg.topic, "read_uncommitted")
    assert len(everything) == 25, "the aborted records were written, then aborted"


class _Lazy(list):  # type: ignore[type-arg]
    """A non-empty record list whose iteration runs ``gen`` (fails part-way)."""

    def __init__(self, gen: Callable[[], Iterator[Any]]) -> None:
        super().__init__([None])
        self.gen = gen

    def __iter__(self) -> Iterator[Any]:
        return self.gen()


def test_bad_settings_are_refused_naming_the_setting(kafka_broker: KafkaBroker) -> None:
    from stormpy.connectors.kafka import KafkaConfigError

    with pytest.raises(KafkaConfigError, match="topic"):
        KafkaTransactionalConfig(kafka_broker.bootstrap_servers).validate()
    with pytest.raises(KafkaConfigError, match="transactional.id"):
        KafkaTransactionalConfig(kafka_broker.bootstrap_servers, topic="t",
                                 producer_props={"transactional.id": "x"}).validate()


def word_counts(got: Iterable[tuple[bytes | None, bytes | None]]) -> tuple[dict[str, int], int]:
    """The last count per word and how many (word, count) records repeat."""
    last: dict[str, int] = {}
    seen: Counter[tuple[bytes | None, bytes | None]] = Counter(got)
    for key, value in got:
        assert key is not None and value is not None
        word, count = key.decode(), int(value)
        assert count >= last.get(word, 0), f"the counts of {word!r} go down: {count}"
        last[word] = count
    return last, sum(n - 1 for n in seen.values())


@pytest.mark.parametrize("exactly_once", [True, False], ids=["exactly-once", "at-least-once"])
def test_trident_kafka_to_kafka_word_count_with_a_failure_after_the_kafka_commit(
        exactly_once: bool, kafka_broker: KafkaBroker, kafka_topic: Callable[..., str],
        produce: Callable[[str, Iterable[tuple[int, Any, Any]]], None], tmp_path: Path) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    source, output = kafka_topic(2), kafka_topic(2)
    name = f"after-write-{uuid.uuid4().hex[:8]}"
    spec = trident_kafka_eos.build(bootstrap, source, output, str(tmp_path / "wc.sqlite"),
                                   f"eos-{uuid.uuid4().hex[:8]}", f"p-{uuid.uuid4().hex[:8]}",
                                   exactly_once=exactly_once, fail_after_write=name,
                                   batch_records=40)
    sent = [(i % 2, None, LINES[i % 4].encode()) for i in range(160)]
    expected = Counter(w for _p, _k, v in sent for w in v.decode().split())
    produce(source, sent)
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-eos", {"topology.max.spout.pending": 2}, spec)
        cluster.wait_for(lambda: word_counts(read_topic(bootstrap, output))[0] == dict(expected),
                         120, "the exact counts in the output topic")
    assert trident_kafka_eos.FAILS[name] == 1
    last, duplicates = word_counts(read_topic(bootstrap, output))
    assert last == dict(expected)
    if exactly_once:
        assert duplicates == 0, "a batch failed after its Kafka commit was written again"
    else:
        assert duplicates > 0, "the at-least-once sink rewrites the failed batch's records"


def test_transactional_topology_committer_writes_each_row_once_across_a_failed_commit(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str]) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    output = kafka_topic(2)
    name = f"after-commit-{uuid.uuid4().hex[:8]}"
    rows = [[f"k{i}", f"v{i}"] for i in range(200)]
    spec = trident_kafka_eos.build_transactional(bootstrap, output, rows,
                                                 f"p-{uuid.uuid4().hex[:8]}", name,
                                                 f"tx-{uuid.uuid4().hex[:8]}")
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-tx", {"topology.max.spout.pending": 2}, spec)
        cluster.wait_for(lambda: len(read_topic(bootstrap, output)) >= len(rows), 120,
                         "every row in the output topic")
    assert trident_kafka_eos.FAILS[name] == 1
    got = Counter(v for _k, v in read_topic(bootstrap, output))
    assert got == Counter(f"v{i}".encode() for i in range(200)), "each row exactly once"
