"""KafkaSpout with ``batch_acking`` in local mode against a real Apache Kafka broker: a poll's records
reach a columnar bolt as batches tracked as one tuple tree; a failed batch is replayed (its
records retried one by one) and only acked prefixes are committed. Waits are on conditions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from test_kafka_spout_local import Board, committed, group_name, records, spout_config

from stormpy.connectors.kafka import KafkaSpout
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._kafka import KafkaBroker
from stormpy.topology import Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._columns import ColumnBatch

pytestmark = pytest.mark.kafka


class ColumnRecordingBolt(Bolt):
    """Columnar: notes every record of a batch (and the batch's size), fails the batch when the
    board says so for any of its values, else acks it; single tuples (retries) likewise."""

    def __init__(self, key: str, sizes_key: str) -> None:
        self.key = key
        self.sizes_key = sizes_key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.board: Board = registry.lookup(self.key)
        self.sizes: list[int] = registry.lookup(self.sizes_key)

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.sizes.append(len(batch))
        fail = False
        for _, partition, offset, _, value in batch.rows:
            fail = self.board.record(partition, offset, value) or fail
        if fail:
            self.fail(batch)
        else:
            self.ack(batch)

    def execute(self, tup: Tuple) -> None:
        _, partition, offset, _, value = tup.values
        if self.board.record(partition, offset, value):
            self.fail(tup)
        else:
            self.ack(tup)


@pytest.fixture
def board() -> Iterator[Callable[..., tuple[Board, dict[str, str], list[int]]]]:
    keys: list[str] = []

    def make(fail_values: set[bytes] | None = None) -> tuple[Board, dict[str, str], list[int]]:
        b = Board(fail_values)
        sizes: list[int] = []
        kwargs = {"key": registry.register(b), "sizes_key": registry.register(sizes)}
        keys.extend(kwargs.values())
        return b, kwargs, sizes

    yield make
    for k in keys:
        registry.unregister(k)


def test_at_least_once_with_batches_replays_a_failed_batch_and_commits_only_acked_prefixes(
        kafka_broker: KafkaBroker, kafka_topic: Callable[..., str], produce: Callable[..., None],
        board: Callable[..., tuple[Board, dict[str, str], list[int]]]) -> None:
    topic, group = kafka_topic(2), group_name()
    produce(topic, records(40, 2))  # partition 0: v0 v2 .. v38, partition 1: v1 v3 .. v39
    seen, kwargs, sizes = board({b"v5"})  # v5 is partition 1, offset 2: failed until released
    config = spout_config(kafka_broker, topic, group, batch_acking=True)
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout.of(config))
    builder.set_bolt("record", ColumnRecordingBolt, kwargs=kwargs).shuffle_grouping("kafka")
    every = {b"v%d" % i for i in range(40)}
    with LocalCluster() as cluster:
        cluster.submit_topology("alo-batches", {}, builder.create_topology())
        cluster.wait_for(lambda: set(seen.values()) == every and seen.count(b"v5") >= 3,
                         what="every record, v5 replayed")
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 2)[0] == 20,
                         what="partition 0 committed")
        assert committed(kafka_broker, group, topic, 2)[1] <= 2  # never past the failing record
        seen.release()
        cluster.wait_for(lambda: committed(kafka_broker, group, topic, 2) == [20, 20],
                         what="all committed")

        def spout_offsets() -> dict[str, Any]:
            (doc,) = [m["kafkaOffset"] for m in cluster.get_metrics("alo-batches")["kafka"].values()]
            return doc

        # the broker holds a commit before the spout's loop has applied the commit's result
        cluster.wait_for(lambda: all(p["committed"] == 20
                                     for p in spout_offsets()["partitions"].values()),
                         what="the spout's committed offsets")
        metrics = spout_offsets()
    assert max(sizes) > 1  # records arrived as batches
    values = seen.values()
    assert all(values.count(v) >= 1 for v in every)  # at least once
    # the batch holding v5 failed as a whole: its other records were replayed too
    assert any(values.count(v) > 1 for v in every - {b"v5"})
    assert metrics["in_flight"] == 0 and metrics["scheduled_retries"] == 0
    assert all(p["committed"] == 20 for p in metrics["partitions"].values())
