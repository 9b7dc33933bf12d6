"""KafkaSpout (local mode, AT_LEAST_ONCE) while the Apache Kafka broker under it fails or changes:
the broker killed with kill -9 and restarted mid-stream, and a topic's partition count raised.

The kill -9 test runs its own broker (the session's stays up for the other tests): the spout keeps
running through the outage and reports it, nothing is lost, and once the broker is back every
offset is committed. Waits are on conditions, never fixed sleeps.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from test_kafka_spout_local import Board, committed, group_name, spout_config, topology

from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._kafka import ApacheKafkaBroker, KafkaBroker

pytestmark = pytest.mark.kafka


@pytest.fixture
def board() -> Iterator[tuple[Board, str]]:
    b = Board()
    key = registry.register(b)
    yield b, key
    registry.unregister(key)


def send(bootstrap: str, topic: str, records: Iterable[tuple[int, bytes]],
         timeout_secs: float = 120.0) -> Any:
    """Produce ``(partition, value)`` records with a fresh producer (it sees the topic's current
    partitions) and return it unflushed; ``flush`` it to wait for the deliveries."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1,
                         "message.timeout.ms": int(timeout_secs * 1000)})
    for partition, value in records:
        producer.produce(topic, value=value, partition=partition)
        producer.poll(0)
    return producer


def spout_counters(cluster: LocalCluster) -> list[dict[str, Any]]:
    return [{k: v for k, v in m["kafkaOffset"].items() if k != "partitions"}
            for m in cluster.get_metrics("crash").get("kafka", {}).values()]


def values(start: int, stop: int) -> set[bytes]:
    return {b"v%d" % i for i in range(start, stop)}


def test_a_broker_killed_and_restarted_mid_stream_loses_nothing_and_commits_every_offset(
        spare_broker: Callable[..., ApacheKafkaBroker], board: tuple[Board, str]) -> None:
    broker = spare_broker().start()
    port, work_dir, first_pid = broker.port, broker.work_dir, broker.pid
    assert work_dir is not None and first_pid is not None
    topic, group = broker.create_topic("crash", 2), group_name()
    seen, key = board
    assert send(broker.bootstrap_servers, topic, [(i % 2, b"v%d" % i) for i in range(200)]).flush(60) == 0
    config = spout_config(broker, topic, group, max_poll_records=20, consumer_props={
        "fetch.wait.max.ms": 10, "fetch.error.backoff.ms": 10,
        "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500})
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("crash", {}, topology(config, key))
        cluster.wait_for(lambda: len(seen.values()) >= 40, what="the spout reading")
        killed_at = time.time()
        broker.kill()  # mid-stream: records in flight, acks arriving, commits due
        # written while the broker is down: the producer holds them until it is back
        during = send(broker.bootstrap_servers, topic, [(i % 2, b"v%d" % i) for i in range(200, 300)])
        # with a commit in flight when the broker died, the spout does not poll (a poll would wait
        # for the commit): the first report is then the stalled commit, after 10 s
        try:
            cluster.wait_for(lambda: any(e["time"] >= killed_at for e in worker.errors.get("kafka", ())),
                             timeout=180, what="the outage reported in topology errors")
        except TimeoutError as exc:
            reported = list(worker.errors.get("kafka", ()))
            raise AssertionError(f"{exc}; reported: {reported}, suppressed: {worker.errors_suppressed}, "
                                 f"spout counters: {spout_counters(cluster)}") from exc
        print(f"\noutage reported {time.time() - killed_at:.1f} s after the kill")
        assert worker.failure is None  # the spout keeps running through the outage
        with pytest.raises(ProcessLookupError):
            os.kill(first_pid, 0)  # killed and reaped
        broker.restart()  # same ports, same data
        assert broker.port == port and broker.work_dir == work_dir
        assert during.flush(120) == 0
        after = send(broker.bootstrap_servers, topic, [(i % 2, b"v%d" % i) for i in range(300, 400)])
        assert after.flush(60) == 0
        cluster.wait_for(lambda: set(seen.values()) == values(0, 400), timeout=120,
                         what="every record read, those of before, during and after the outage")
        cluster.wait_for(lambda: committed(broker, group, topic, 2) == [200, 200], timeout=120,
                         what="every offset committed once the broker is back")
        assert worker.failure is None
        errors = [e["error"] for e in worker.errors.get("kafka", ()) if e["time"] >= killed_at]
    assert errors, "the outage was not reported"
    print(f"\nkill -9: {len(seen.values())} tuples for 400 records; spout errors reported: {errors}")
    pid = broker.pid
    broker.stop()
    assert not broker.running and not work_dir.exists()  # the JVM reaped, its directory removed
    with pytest.raises(ProcessLookupError):
        os.kill(pid or first_pid, 0)
    broker.stop()  # idempotent


def test_partitions_added_while_the_spout_runs_are_picked_up_by_the_refresh(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], board: tuple[Board, str]) -> None:
    topic, group = kafka_topic(2), group_name()
    seen, key = board
    first = [(i % 2, b"v%d" % i) for i in range(20)]
    assert send(kafka_broker.bootstrap_servers, topic, first).flush(30) == 0
    config = spout_config(kafka_broker, topic, group, partition_refresh_period_ms=300)
    with LocalCluster() as cluster:
        cluster.submit_topology("grow", {}, topology(config, key, spout_tasks=2))
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 2) == [10, 10],
                         what="the first two partitions read and committed")
        kafka_broker.create_partitions(topic, 4)
        assert send(kafka_broker.bootstrap_servers, topic,
                    [(i % 4, b"v%d" % i) for i in range(20, 60)]).flush(30) == 0
        cluster.wait_for(lambda: set(seen.values()) == values(0, 60), timeout=60,
                         what="the records of the new partitions read")
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 4) == [20, 20, 10, 10],
                         what="every partition committed")

        def assigned() -> dict[int, set[str]]:
            metrics = cluster.get_metrics("grow")["kafka"]
            return {task: set(m["kafkaOffset"]["partitions"]) for task, m in metrics.items()}

        cluster.wait_for(lambda: len(set().union(*assigned().values())) == 4,
                         what="the four partitions in the spout's metrics")
        by_task = assigned()
        assert sorted(len(parts) for parts in by_task.values()) == [2, 2]  # spread over both tasks
    assert sorted(seen.values()) == sorted(values(0, 60))  # each record once: nothing failed
