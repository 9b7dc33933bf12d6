"""KafkaSpout end to end in local mode against a real Apache Kafka broker.

Each guarantee; the uncommitted cap with a failing head record; restarts with UNCOMMITTED_EARLIEST
and with EARLIEST under a new topology id. Waits are on conditions, never fixed sleeps.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from stormpy.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from stormpy.host.ports import free_port
from stormpy.testing import LocalCluster, wait_for
from stormpy.testing import _registry as registry
from stormpy.testing._kafka import ApacheKafkaBroker, KafkaBroker
from stormpy.topology import Bolt, TopologyBuilder, TopologyContext, Tuple

pytestmark = pytest.mark.kafka


class Board:
    """What the bolt saw, and which values it must fail (until released)."""

    def __init__(self, fail_values: set[bytes] | None = None) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[int, int, bytes]] = []
        self.fail_values = set(fail_values or ())

    def record(self, partition: int, offset: int, value: bytes) -> bool:
        """Note a tuple; True when the bolt must fail it."""
        with self.lock:
            self.seen.append((partition, offset, value))
            return value in self.fail_values

    def release(self) -> None:
        with self.lock:
            self.fail_values.clear()

    def values(self) -> list[bytes]:
        with self.lock:
            return [v for _, _, v in self.seen]

    def count(self, value: bytes) -> int:
        return self.values().count(value)


class RecordingBolt(Bolt):
    """Acks every tuple except those whose value the board says to fail."""

    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.board: Board = registry.lookup(self.key)

    def execute(self, tup: Tuple) -> None:
        _, partition, offset, _, value = tup.values
        if self.board.record(partition, offset, value):
            self.fail(tup)
        else:
            self.ack(tup)


@pytest.fixture
def board() -> Iterator[Callable[..., tuple[Board, str]]]:
    keys: list[str] = []

    def make(fail_values: set[bytes] | None = None) -> tuple[Board, str]:
        b = Board(fail_values)
        keys.append(registry.register(b))
        return b, keys[-1]

    yield make
    for k in keys:
        registry.unregister(k)


def topology(config: KafkaSpoutConfig, key: str, spout_tasks: int = 1) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout.of(config), spout_tasks)
    builder.set_bolt("record", RecordingBolt, kwargs={"key": key}).shuffle_grouping("kafka")
    return builder.create_topology()


def spout_config(broker: KafkaBroker, topic: str, group: str, **settings: Any) -> KafkaSpoutConfig:
    settings.setdefault("offset_commit_period_ms", 100)
    settings.setdefault("partition_refresh_period_ms", 500)
    # a seek (replay) or a resume waits for the fetch in flight and the fetch backoff: keep both short
    settings.setdefault("consumer_props", {"fetch.wait.max.ms": 10, "fetch.error.backoff.ms": 10})
    return KafkaSpoutConfig(bootstrap_servers=broker.bootstrap_servers, group_id=group, topics=[topic],
                            retry={"initial_delay_ms": 0, "delay_period_ms": 5, "max_delay_ms": 50},
                            **settings)


def committed(broker: KafkaBroker, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offsets per partition (-1 where none), asking again while the broker
    answers with a retriable error (its group coordinator still loading, the broker restarting)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    def ask() -> list[int] | None:
        c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                      "enable.auto.commit": False})
        try:
            got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            return [max(tp.offset, -1) for tp in got]
        except KafkaException as exc:
            if exc.args and exc.args[0].retriable():
                return None
            raise
        finally:
            c.close()

    return wait_for(ask, timeout=60, what=f"the committed offsets of {group} on {topic}")


def records(n: int, partitions: int) -> list[tuple[int, None, bytes]]:
    return [(i % partitions, None, b"v%d" % i) for i in range(n)]


def group_name() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def test_at_least_once_replays_failed_records_and_commits_only_past_acked_ones(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None],
        board: Callable[..., tuple[Board, str]]) -> None:
    topic, group = kafka_topic(2), group_name()
    produce(topic, records(20, 2))  # partition 0: v0 v2 .. v18, partition 1: v1 v3 .. v19
    seen, key = board({b"v5"})      # v5 is partition 1, offset 2: failed until released
    with LocalCluster() as cluster:
        cluster.submit_topology("alo", {}, topology(spout_config(kafka_broker, topic, group), key))
        every = {b"v%d" % i for i in range(20)}
        cluster.wait_for(lambda: set(seen.values()) == every and seen.count(b"v5") >= 3,
                         what="every record, v5 replayed")
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 2)[0] == 10,
                         what="partition 0 committed")
        assert committed(kafka_broker, group, topic, 2)[1] <= 2  # never past the failing record
        seen.release()
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 2) == [10, 10], what="all committed")
        offsets = cluster.get_metrics("alo")["kafka"]
        (parts,) = [m["kafkaOffset"]["partitions"] for m in offsets.values()]
        assert set(parts) == {f"{topic}-0", f"{topic}-1"}
        assert all(p["committed"] == 10 and p["latest_emitted"] == 9 for p in parts.values())
    values = seen.values()
    assert all(values.count(b"v%d" % i) == 1 for i in range(20) if i != 5)


def test_at_most_once_never_replays_and_commits(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None],
        board: Callable[..., tuple[Board, str]]) -> None:
    topic, group = kafka_topic(2), group_name()
    produce(topic, records(10, 2))
    seen, key = board({b"v1", b"v4"})
    config = spout_config(kafka_broker, topic, group, processing_guarantee="AT_MOST_ONCE")
    with LocalCluster() as cluster:
        cluster.submit_topology("amo", {}, topology(config, key))
        cluster.wait_for(lambda: len(seen.values()) == 10, what="every record once")
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 2) == [5, 5],
                         what="positions committed")
        cluster.wait_until_quiet("amo")
    assert sorted(seen.values()) == sorted(b"v%d" % i for i in range(10))  # failed ones not replayed


def test_no_guarantee_commits_the_position(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None],
        board: Callable[..., tuple[Board, str]]) -> None:
    topic, group = kafka_topic(1), group_name()
    produce(topic, records(8, 1))
    seen, key = board({b"v%d" % i for i in range(8)})  # everything fails: nothing is replayed
    config = spout_config(kafka_broker, topic, group, processing_guarantee="NO_GUARANTEE")
    with LocalCluster() as cluster:
        cluster.submit_topology("ng", {}, topology(config, key))
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 1) == [8], what="position committed")
        cluster.wait_until_quiet("ng")
    assert sorted(seen.values()) == sorted(b"v%d" % i for i in range(8))


def test_max_uncommitted_offsets_pauses_and_a_failing_head_record_is_still_retried(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None],
        board: Callable[..., tuple[Board, str]]) -> None:
    topic, group = kafka_topic(1), group_name()
    produce(topic, records(50, 1))
    seen, key = board({b"v0"})  # the head record fails until released
    config = spout_config(kafka_broker, topic, group, max_uncommitted_offsets=5, max_poll_records=5)
    with LocalCluster() as cluster:
        cluster.submit_topology("cap", {}, topology(config, key))
        cluster.wait_for(lambda: seen.count(b"v0") >= 5, what="the head record retried")
        distinct = set(seen.values())
        assert len(distinct) <= 5 + 5 - 1, f"polled past the cap: {sorted(distinct)}"
        assert committed(kafka_broker, group, topic, 1) == [-1]
        seen.release()
        cluster.wait_for(lambda: len(set(seen.values())) == 50, what="resumed after the head was acked")
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 1) == [50], what="all committed")


def test_restart_resumes_at_the_committed_offset_and_a_new_earliest_topology_starts_over(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None],
        board: Callable[..., tuple[Board, str]]) -> None:
    topic, group = kafka_topic(1), group_name()
    produce(topic, records(10, 1))
    first, key1 = board()
    with LocalCluster() as cluster:
        cluster.submit_topology("first", {}, topology(spout_config(kafka_broker, topic, group), key1))
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 1) == [10], what="first run committed")
        cluster.kill_topology("first")
        produce(topic, [(0, None, b"v%d" % i) for i in range(10, 15)])
        again, key2 = board()
        resume = spout_config(kafka_broker, topic, group, first_poll_offset_strategy="UNCOMMITTED_EARLIEST")
        cluster.submit_topology("again", {}, topology(resume, key2))
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 1) == [15], what="restart committed")
        assert sorted(again.values()) == sorted(b"v%d" % i for i in range(10, 15))
        fresh, key3 = board()
        cluster.submit_topology("fresh", {}, topology(
            spout_config(kafka_broker, topic, group, first_poll_offset_strategy="EARLIEST"), key3))
        cluster.wait_for(lambda: len(fresh.values()) >= 15, what="a new EARLIEST topology reads everything")
        assert sorted(fresh.values()) == sorted(b"v%d" % i for i in range(15))


def test_an_unreachable_broker_is_reported_and_the_spout_starts_reading_once_it_is_up(
        spare_broker: Callable[..., ApacheKafkaBroker], board: Callable[..., tuple[Board, str]]) -> None:
    late = spare_broker(free_port())  # not started yet: the spout opens against nothing
    seen, key = board()
    group = group_name()
    with LocalCluster() as cluster:
        config = spout_config(late, "late", group)
        worker = cluster.submit_topology("late", {}, topology(config, key))
        cluster.wait_for(lambda: any("unavailable" in e["error"] for e in worker.errors.get("kafka", ())),
                         what="the outage reported in topology errors")
        late.start()
        late.create_topic("late", 1)
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": late.bootstrap_servers})
        for i in range(5):
            producer.produce("late", value=b"v%d" % i, partition=0)
        assert producer.flush(30) == 0
        cluster.wait_for(lambda: len(seen.values()) == 5, timeout=60,
                         what="records read after the outage")
        cluster.wait_for(lambda: committed(late, group, "late", 1) == [5],
                         what="committed after the outage")
        assert worker.failure is None
