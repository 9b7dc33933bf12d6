"""KafkaBolt end to end in local mode against a real Apache Kafka broker.

A reliable spout emits numbered records to the bolt and replays what fails: one tuple per record,
or (``batches``) ten records per ``emit_batch``, which reach the bolt's columnar form as one
``ColumnBatch`` (acked once all its records were delivered, failed as a whole). With the broker up
every tuple is acked and its record is in the topic; with the broker not there (a closed port and
a short ``message.timeout.ms``) the tuples are failed, not acked, and once a broker listens on
that port the replays are delivered. Waits are on conditions, never fixed sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from stormpy.connectors.kafka import KafkaBolt, KafkaBoltConfig
from stormpy.host.ports import free_port
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._kafka import ApacheKafkaBroker, KafkaBroker
from stormpy.topology import Spout, TopologyBuilder, TopologyContext

pytestmark = pytest.mark.kafka


class Tally:
    """What the spout saw: acked and failed message ids."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: set[int] = set()
        self.fails = 0

    def ack(self, i: int) -> None:
        with self.lock:
            self.acked.add(i)

    def fail(self) -> None:
        with self.lock:
            self.fails += 1


class NumberSpout(Spout):
    """Emits ``key, message`` = ``k<i>, v<i>`` for i < count with message id i; replays fails.
    With ``batches``: up to ten at a time as one tracked ``emit_batch``."""

    outputs = ["key", "message"]

    def __init__(self, key: str, count: int, batches: bool = False) -> None:
        self.key = key
        self.count = count
        self.batches = batches

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.tally: Tally = registry.lookup(self.key)
        self.todo = list(range(self.count - 1, -1, -1))

    def next_tuple(self) -> None:
        if self.todo and self.batches:
            ids = [self.todo.pop() for _ in range(min(10, len(self.todo)))]
            self.emit_batch([[f"k{i}", b"v%d" % i] for i in ids], msg_ids=ids)
        elif self.todo:
            i = self.todo.pop()
            self.emit([f"k{i}", b"v%d" % i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        self.tally.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.tally.fail()
        self.todo.append(msg_id)


@pytest.fixture
def tally() -> Iterator[tuple[Tally, str]]:
    t = Tally()
    key = registry.register(t)
    yield t, key
    registry.unregister(key)


def topology(key: str, count: int, bolt: KafkaBoltConfig, batches: bool = False) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout, kwargs={"key": key, "count": count, "batches": batches})
    builder.set_bolt("to-kafka", KafkaBolt.of(bolt), 2).shuffle_grouping("numbers")
    return builder.create_topology()


def topic_values(broker: KafkaBroker, topic: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) in ``topic``, read from the beginning until two polls in a row bring
    nothing (the test broker's high watermark is not reliable)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "reader",
                  "enable.auto.commit": False})
    try:
        partitions = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        out: list[tuple[bytes, bytes]] = []
        idle = 0
        while idle < 2:
            batch = c.consume(500, 1.0)
            idle = 0 if batch else idle + 1
            out.extend((m.key(), m.value()) for m in batch if m.error() is None)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("batches", [False, True], ids=["tuples", "batches"])
def test_tuples_are_acked_once_delivered_and_their_records_are_in_the_topic(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str],
        tally: tuple[Tally, str], batches: bool) -> None:
    seen, key = tally
    topic = kafka_topic(2)
    config = KafkaBoltConfig(bootstrap_servers=kafka_broker.bootstrap_servers, topic=topic,
                             producer_props={"acks": "all", "linger.ms": 2})
    with LocalCluster() as cluster:
        cluster.submit_topology("to-kafka", {}, topology(key, 300, config, batches))
        cluster.wait_for(lambda: len(seen.acked) == 300, what="every tuple acked")
        assert seen.fails == 0
        published = cluster.get_metrics("to-kafka")["to-kafka"]  # the bolt's metric, per task
        assert sum(m["kafkaBolt"]["delivered"] for m in published.values()) == 300
    got = topic_values(kafka_broker, topic)
    assert sorted(got) == sorted((b"k%d" % i, b"v%d" % i) for i in range(300))


@pytest.mark.parametrize("batches", [False, True], ids=["tuples", "batches"])
def test_an_unreachable_broker_fails_tuples_and_replays_are_delivered_once_it_is_there(
        spare_broker: Callable[..., ApacheKafkaBroker], tally: tuple[Tally, str], batches: bool) -> None:
    late = spare_broker(free_port())  # nothing listens there yet
    seen, key = tally
    config = KafkaBoltConfig(
        bootstrap_servers=late.bootstrap_servers, topic="late-out",
        producer_props={"message.timeout.ms": 500, "reconnect.backoff.ms": 50,
                        "reconnect.backoff.max.ms": 200, "topic.metadata.refresh.interval.ms": 200})
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("late", {}, topology(key, 20, config, batches))
        cluster.wait_for(lambda: seen.fails >= 40, what="tuples failed while no broker listens")
        assert not seen.acked  # nothing acked without a broker confirming it
        # reported through the task's one throttle (Storm's per-task limit): the newest errors kept
        # may be the client's repeated connection failures rather than the delivery failures, so
        # either names what is wrong
        address = late.bootstrap_servers.split(",")[0]
        assert any("delivery failed" in e["error"] or address in e["error"]
                   for e in worker.errors.get("to-kafka", ()))
        # the topic is created by the replayed produces (the broker auto-creates topics, as
        # Kafka does by default): creating it here as well would race with them
        late.start()
        cluster.wait_for(lambda: len(seen.acked) == 20, timeout=60,
                         what="replayed tuples delivered once the broker is there")
        assert worker.failure is None
    got = topic_values(late, "late-out")
    assert {v for _, v in got} == {b"v%d" % i for i in range(20)}

