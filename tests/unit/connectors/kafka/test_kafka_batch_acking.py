"""KafkaSpout with ``batch_acking`` against the in-memory stub consumer (simulated time): a poll's
new records go out as one ``emit_batch`` with per-record message ids; an acked batch acks each
offset, a failed one schedules each offset for a retry and the retries go out one tracked tuple
each; only acked prefixes are committed. The untracked guarantees emit a poll as one untracked
batch."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_stub import Harness, cluster_with

from stormpy.connectors.kafka import KafkaConfigError, KafkaSpoutConfig, TopicPartition

TP0 = TopicPartition("t", 0)


def test_new_records_of_a_poll_are_one_batch_with_a_message_id_per_record() -> None:
    h = Harness(cluster_with(6, 2), batch_acking=True, max_poll_records=10).open()
    out = h.run()
    assert len(h.batches) == 1 and h.batches[0] is not None and len(h.batches[0]) == 6
    assert sorted((m.partition, m.offset) for m in h.batches[0]) == \
        sorted((i % 2, i // 2) for i in range(6))
    assert [mid for _, mid, _ in out] == h.batches[0]
    h.spout.ack_many(h.batches[0])  # the runtime's call when the batch's tree completes
    h.clock.now += 0.5
    h.run(1)
    assert h.cluster.committed[("g", TP0)].offset == 3
    assert h.cluster.committed[("g", TopicPartition("t", 1))].offset == 3
    assert h.spout.metrics()["in_flight"] == 0


def test_a_failed_batch_retries_each_record_alone_and_commits_only_acked_prefixes() -> None:
    h = Harness(cluster_with(8), batch_acking=True, max_poll_records=4).open()
    h.run(1)
    h.run(1)
    first, second = h.batches
    assert first is not None and second is not None
    assert [m.offset for m in first] == [0, 1, 2, 3] and [m.offset for m in second] == [4, 5, 6, 7]
    h.spout.ack_many(second)
    for mid in first:  # the batch failed: fail of each id
        h.spout.fail(mid)
    h.clock.now += 0.5
    replay = h.run()
    assert sorted(h.offsets(replay)) == [0, 1, 2, 3]  # 4..7 are acked: not emitted again
    assert len(h.batches) == 2  # the retries are single tracked tuples, not a batch
    assert ("g", TP0) not in h.cluster.committed  # nothing acked at the head yet
    ids = {mid.offset: mid for _, mid, _ in replay}
    assert all(mid.num_fails == 1 for mid in ids.values())
    h.spout.fail(ids[2])  # one record keeps failing on its own
    for off in (0, 1, 3):
        h.spout.ack(ids[off])
    h.clock.now += 30  # the next commit period
    again = h.run()
    assert h.offsets(again) == [2]
    assert h.cluster.committed[("g", TP0)].offset == 2
    h.spout.ack(again[0][1])
    h.clock.now += 30
    h.run(1)
    assert h.cluster.committed[("g", TP0)].offset == 8


def test_max_retries_reaches_only_the_record_that_keeps_failing() -> None:
    h = Harness(cluster_with(3), batch_acking=True,
                retry={"initial_delay_ms": 0, "delay_period_ms": 0, "max_retries": 1}).open()
    h.run(1)
    (batch,) = h.batches
    assert batch is not None
    for mid in batch:
        h.spout.fail(mid)
    replay = {mid.offset: mid for _, mid, _ in h.run()}
    h.spout.fail(replay[1])  # past max_retries: acked past, reported
    h.spout.ack(replay[0])
    h.spout.ack(replay[2])
    assert h.spout.counters["max_retries_reached"] == 1
    h.clock.now += 1
    h.run(1)
    assert h.cluster.committed[("g", TP0)].offset == 3


@pytest.mark.parametrize("guarantee", ["NO_GUARANTEE", "AT_MOST_ONCE"])
def test_untracked_guarantees_emit_a_poll_as_one_untracked_batch(guarantee: str) -> None:
    h = Harness(cluster_with(5), processing_guarantee=guarantee).open()
    out = h.run()
    assert h.offsets(out) == [0, 1, 2, 3, 4]
    assert h.batches == [None]


def test_without_batch_acking_each_record_is_its_own_tree() -> None:
    h = Harness(cluster_with(4)).open()
    out = h.run()
    assert h.batches == [] and h.offsets(out) == [0, 1, 2, 3]


def test_batch_acking_must_be_a_bool() -> None:
    doc: dict[str, Any] = {"bootstrap_servers": "b:1", "group_id": "g", "topics": ["t"],
                           "batch_acking": "yes"}
    with pytest.raises(KafkaConfigError, match="batch_acking"):
        KafkaSpoutConfig.from_doc(doc)
