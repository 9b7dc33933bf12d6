"""KafkaSpout logic against an in-memory stub consumer (simulated time, inline background jobs).

The real-broker behaviour is covered in tests/kafka/; here: the order of commits and emits per
guarantee, the acked prefix, replays, the uncommitted cap, revocation, commit metadata (on the real
broker too: tests/kafka/test_kafka_commit_metadata.py), bad records and an unreachable broker.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka_stub import Cluster, Harness, cluster_with

from stormpy.connectors.kafka import (
    KafkaConfigError,
    KafkaRecordError,
    KafkaTupleListener,
    OffsetAndMetadata,
    TopicPartition,
)

TP0 = TopicPartition("t", 0)


def test_at_least_once_commits_only_the_contiguous_acked_prefix() -> None:
    h = Harness(cluster_with(5)).open()
    out = h.run()
    assert h.offsets(out) == [0, 1, 2, 3, 4]
    assert out[0][0] == ["t", 0, 0, None, b"v0"] and out[0][1] == ("t", 0, 0)
    for off in (0, 1, 3):
        h.spout.ack(out[off][1])
    h.clock.now += 0.5  # the first commit comes TIMER_DELAY after open
    h.run(1)
    assert h.cluster.committed[("g", TP0)].offset == 2
    h.spout.ack(out[2][1])
    h.clock.now += 30
    h.run(1)
    assert h.cluster.committed[("g", TP0)].offset == 4  # 4 is still in flight


def test_one_job_on_the_consumer_at_a_time_and_no_poll_while_it_runs() -> None:
    # confluent-kafka makes a poll wait for a call in flight on another thread: a commit stuck on
    # an unreachable broker (~45 s) would freeze the executor loop if the spout polled meanwhile
    c = cluster_with(4)
    h = Harness(c).open()
    out = h.run()
    h.spout.ack(out[0][1])
    c.produce("t", 0, b"v4")
    jobs: list[Any] = []
    h.spout.run_in_background = lambda fn, done: jobs.append((fn, done))  # type: ignore[method-assign]
    h.clock.now += 5.0  # the partition refresh and the commit both due
    assert h.run(5) == [] and len(jobs) == 1  # the refresh alone, no poll while it runs
    fn, done = jobs.pop()
    done(fn(), None)
    assert h.run(5) == [] and len(jobs) == 1  # then the commit, still no poll
    fn, done = jobs.pop()
    done(fn(), None)
    assert c.committed[("g", TP0)].offset == 1
    h.spout.run_in_background = h._inline  # type: ignore[method-assign]
    assert h.offsets(h.run()) == [4]  # polling again once the consumer is free


def test_a_commit_that_does_not_finish_is_reported_and_metrics_do_not_wait_for_it() -> None:
    c = cluster_with(2)
    h = Harness(c).open()
    out = h.run()
    h.spout.ack(out[0][1])
    h.spout.metrics()  # the watermarks seen while the consumer is free
    jobs: list[Any] = []
    h.spout.run_in_background = lambda fn, done: jobs.append((fn, done))  # type: ignore[method-assign]
    h.clock.now += 1.0
    h.run(1)
    assert len(jobs) == 1 and not h.errors  # the commit (or refresh) runs
    assert h.consumer is not None
    h.consumer.watermarks = None  # type: ignore[assignment]  # calling the consumer now would fail
    h.spout.metrics()
    h.clock.now += 11.0
    h.run(1)
    assert any("has not finished after 11 s" in e for e in h.errors), h.errors


def test_records_polled_as_rows_are_the_tuples_and_fetch_backoff_defaults_short() -> None:
    h = Harness(cluster_with(2)).open()
    assert h.consumer.conf["fetch.queue.backoff.ms"] == 10
    assert h.consumer.conf["reconnect.backoff.ms"] == 10
    assert h.consumer.conf["enable.auto.commit"] is False
    out = h.run()
    assert [v for v, _mid, _s in out] == [["t", 0, 0, None, b"v0"], ["t", 0, 1, None, b"v1"]]
    h2 = Harness(cluster_with(1), consumer_props={"fetch.queue.backoff.ms": 500}).open()
    assert h2.consumer.conf["fetch.queue.backoff.ms"] == 500  # the user's setting wins
    h3 = Harness(cluster_with(1), record_translator="stormpy.connectors.kafka:StringRecordTranslator")
    assert h3.open().run()[0][0] == ["t", 0, 0, None, "v0"]  # a translator gets KafkaRecords


def test_a_failed_tuple_is_replayed_by_seeking_back() -> None:
    h = Harness(cluster_with(4)).open()
    out = h.run()
    h.spout.ack(out[0][1])
    h.spout.fail(out[1][1])
    h.spout.ack(out[2][1])
    replay = h.run()
    assert h.offsets(replay) == [1]  # 2 is acked and 3 in flight: not emitted again
    assert ("seek", TP0, 1) in h.cluster.events
    assert replay[0][1].num_fails == 1
    h.spout.ack(replay[0][1])
    h.spout.ack(out[3][1])
    h.clock.now += 1
    h.run(1)
    assert h.cluster.committed[("g", TP0)].offset == 4


class Listener(KafkaTupleListener):
    seen: list[tuple[str, Any]] = []

    def on_emit(self, values: list[Any], msg_id: Any) -> None:
        Listener.seen.append(("emit", msg_id.offset))

    def on_ack(self, msg_id: Any) -> None:
        Listener.seen.append(("ack", msg_id.offset))

    def on_retry(self, msg_id: Any) -> None:
        Listener.seen.append(("retry", msg_id.offset))

    def on_max_retry_reached(self, msg_id: Any) -> None:
        Listener.seen.append(("max_retry", msg_id.offset))

    def on_partitions_reassigned(self, partitions: Any) -> None:
        Listener.seen.append(("reassigned", list(partitions)))


def test_retry_schedule_and_max_retries_ack_past_the_record() -> None:
    Listener.seen = []
    h = Harness(cluster_with(1), retry={"initial_delay_ms": 1000, "delay_period_ms": 1000,
                                        "max_retries": 1, "max_delay_ms": 60_000},
                tuple_listener=f"{__name__}:Listener").open()
    (first,) = h.run()
    h.spout.fail(first[1])
    assert h.run() == []  # not ready before initial_delay
    h.clock.now += 1.0
    (again,) = h.run()
    assert again[1] is first[1]
    h.spout.fail(again[1])  # the second failure is past max_retries=1: acked
    assert h.spout.counters["max_retries_reached"] == 1
    h.clock.now += 100
    assert h.run() == []
    assert h.cluster.committed[("g", TP0)].offset == 1
    assert Listener.seen == [("reassigned", [TP0]), ("emit", 0), ("retry", 0), ("emit", 0),
                             ("max_retry", 0), ("ack", 0)]


def test_max_uncommitted_offsets_pauses_but_retriable_offsets_within_the_cap_are_polled() -> None:
    h = Harness(cluster_with(10), max_uncommitted_offsets=3, max_poll_records=1).open()
    out = h.run()
    assert h.offsets(out) == [0, 1, 2]  # capped
    assert h.consumer is not None and TP0 in h.consumer.paused
    h.spout.fail(out[0][1])  # a stuck head record: retriable offset 0 is within the cap
    replay = h.run()
    assert h.offsets(replay) == [0]
    for _, mid, _ in [replay[0], out[1], out[2]]:
        h.spout.ack(mid)
    h.clock.now += 1
    more = h.run()  # commit of 0..2 frees the cap
    assert h.offsets(more) == [3, 4, 5]
    assert h.cluster.committed[("g", TP0)].offset == 3


def test_a_failed_record_at_exactly_the_cap_th_uncommitted_offset_is_retried_at_once() -> None:
    # Storm's rule: at the cap, retriable offsets up to and including the cap-th uncommitted one
    # may be polled; one past it waits until a commit frees the cap
    h = Harness(cluster_with(4), max_uncommitted_offsets=3, max_poll_records=4).open()
    out = h.run()
    assert h.offsets(out) == [0, 1, 2, 3]  # one poll may go past the cap: 4 uncommitted
    assert h.consumer is not None and TP0 in h.consumer.paused
    h.spout.fail(out[3][1])  # the 4th uncommitted offset: beyond the cap
    assert h.run() == []  # no commit period passes in these rounds
    h.spout.fail(out[2][1])  # the 3rd uncommitted offset: exactly the cap-th one
    replay = h.run()
    assert h.offsets(replay) == [2, 3]
    assert [mid.num_fails for _, mid, _ in replay] == [1, 1]
    assert h.cluster.committed.get(("g", TP0)) is None  # retried before any commit


def test_a_topic_pattern_subscribes_only_topics_whose_whole_name_matches() -> None:
    c = Cluster()
    for topic in ("orders", "orders-archive", "old-orders", "ordersx"):
        c.create(topic, 1)
        c.produce(topic, 0, topic.encode())
    h = Harness(c, topics=None, topic_pattern="orders").open()
    assert sorted(h.spout.assigned) == [TopicPartition("orders", 0)]
    assert [values[-1] for values, _, _ in h.run()] == [b"orders"]
    h2 = Harness(c, topics=None, topic_pattern="orders.*").open()
    assert sorted(tp.topic for tp in h2.spout.assigned) == ["orders", "orders-archive", "ordersx"]


def test_at_most_once_commits_the_position_before_emitting_and_never_replays() -> None:
    h = Harness(cluster_with(3), processing_guarantee="AT_MOST_ONCE").open()
    out = h.run()
    assert [mid for _, mid, _ in out] == [None, None, None]
    kinds = [e[0] for e in h.cluster.events if e[0] in ("commit_sync", "emit")]
    assert kinds == ["commit_sync", "emit", "emit", "emit"]
    assert h.cluster.committed[("g", TP0)].offset == 3
    h.spout.fail(("t", 0, 1))
    assert h.run() == []


def test_at_most_once_commit_failure_polls_the_records_again_without_emitting() -> None:
    c = cluster_with(2)
    h = Harness(c, processing_guarantee="AT_MOST_ONCE").open()
    c.fail_commits = True
    assert h.run() == []
    assert h.errors and "before emitting failed" in h.errors[0]
    c.fail_commits = False
    assert h.offsets(h.run()) == [0, 1]


def test_no_guarantee_commits_the_position_asynchronously_on_the_period() -> None:
    h = Harness(cluster_with(3), processing_guarantee="NO_GUARANTEE", offset_commit_period_ms=1000).open()
    out = h.run()
    assert [mid for _, mid, _ in out] == [None, None, None]
    assert not any(e[0].startswith("commit") for e in h.cluster.events)
    h.clock.now += 0.5
    h.run(1)
    assert ("commit_async", {TP0: 3}) in h.cluster.events


def test_no_guarantee_hands_the_polled_rows_to_one_untracked_emit_batch() -> None:
    h = Harness(cluster_with(4, partitions=2), processing_guarantee="NO_GUARANTEE",
                max_poll_records=10).open()
    out = h.run(1)
    assert h.batches == [None]  # one untracked batch for the whole poll
    assert sorted(values for values, _, _ in out) == [
        ["t", 0, 0, None, b"v0"], ["t", 0, 1, None, b"v2"],
        ["t", 1, 0, None, b"v1"], ["t", 1, 1, None, b"v3"]]


def test_at_most_once_drops_the_held_records_of_a_partition_revoked_during_their_commit() -> None:
    c = cluster_with(4, partitions=2)
    h = Harness(c, task_id=1, tasks=[1], processing_guarantee="AT_MOST_ONCE").open()
    jobs: list[Any] = []
    h.spout.run_in_background = lambda fn, done: jobs.append((fn, done))  # type: ignore[method-assign]
    assert h.run(1) == [] and len(jobs) == 1  # the batch waits for its commit
    commit = jobs.pop()
    h.context.component_tasks = [1, 2]  # rebalanced: this task keeps partition 0 only
    h.clock.now += 2.0
    h.run(1)
    while jobs:  # the partition refresh
        fn, done = jobs.pop(0)
        done(fn(), None)
    assert h.spout.assigned == {TP0}
    fn, done = commit
    done(fn(), None)
    out = h.run(1)
    assert [(values[1], values[2]) for values, _, _ in out] == [(0, 0), (0, 1)]


def test_commit_metadata_decides_whether_earliest_applies() -> None:
    c = cluster_with(6)
    h = Harness(c, topology_id="topo-A", first_poll_offset_strategy="EARLIEST").open()
    out = h.run()
    for _, mid, _ in out[:4]:
        h.spout.ack(mid)
    h.clock.now += 1
    h.run(1)
    h.spout.close()
    meta = c.committed[("g", TP0)]
    assert meta.offset == 4 and '"topologyId":"topo-A"' in (meta.metadata or "")
    # the same topology restarted: its own commit is resumed even with EARLIEST
    same = Harness(c, topology_id="topo-A", first_poll_offset_strategy="EARLIEST").open()
    assert same.offsets(same.run()) == [4, 5]
    # a new topology with EARLIEST starts from the beginning
    new = Harness(c, topology_id="topo-B", first_poll_offset_strategy="EARLIEST").open()
    assert new.offsets(new.run()) == [0, 1, 2, 3, 4, 5]
    # a new topology with UNCOMMITTED_EARLIEST resumes at the committed offset
    unc = Harness(c, topology_id="topo-C").open()
    assert unc.offsets(unc.run()) == [4, 5]


def test_revoked_partitions_commit_what_is_acked_and_ignore_late_acks() -> None:
    c = cluster_with(8, partitions=2)
    h = Harness(c, task_id=1, tasks=[1]).open()
    out = h.run()
    by_tp = {(mid.partition, mid.offset): mid for _, mid, _ in out}
    h.spout.ack(by_tp[(1, 0)])
    # the spout is rebalanced to two tasks: task index 0 keeps partition 0 only
    h.context.component_tasks = [1, 2]
    h.clock.now += 2.0
    h.run(1)
    assert h.spout.assigned == {TP0}
    assert c.committed[("g", TopicPartition("t", 1))].offset == 1
    h.spout.ack(by_tp[(1, 1)])  # late ack of a revoked partition: ignored
    h.spout.fail(by_tp[(1, 2)])
    assert TopicPartition("t", 1) not in h.spout.managers and len(h.spout.retry) == 0
    assert h.run() == []


def test_bad_records_are_reported_counted_and_acked_past() -> None:
    c = Cluster()
    c.create("t", 1)
    for v in (b"ok", b"\xff\xfe", b"fine"):
        c.produce("t", 0, v)
    h = Harness(c, record_translator="stormpy.connectors.kafka:StringRecordTranslator").open()
    out = h.run()
    assert [values[4] for values, _, _ in out] == ["ok", "fine"]
    assert h.spout.counters["bad_records"] == 1
    assert any("t-0 offset 1" in e for e in h.errors)
    for _, mid, _ in out:
        h.spout.ack(mid)
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 3


def test_fail_fast_raises_on_a_bad_record() -> None:
    c = Cluster()
    c.create("t", 1)
    c.produce("t", 0, b"\xff")
    h = Harness(c, record_translator="stormpy.connectors.kafka:StringRecordTranslator", fail_fast=True).open()
    with pytest.raises(KafkaRecordError, match="t-0 offset 0"):
        h.run()


def test_gaps_from_compaction_do_not_block_commits() -> None:
    c = Cluster()
    c.create("t", 1)
    for off in (0, 1, 5, 6):
        c.produce("t", 0, b"x", offset=off)
    h = Harness(c).open()
    out = h.run()
    for _, mid, _ in out[:3]:
        h.spout.ack(mid)
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 6


def test_unknown_topic_at_open_is_a_clear_error() -> None:
    c = Cluster()
    c.create("other", 1)
    with pytest.raises(KafkaConfigError, match=r"KafkaSpoutConfig.topics: unknown topic\(s\) \['t'\]"):
        Harness(c).open()
    with pytest.raises(KafkaConfigError, match="topic_pattern: 'x.*' matches no topic"):
        Harness(c, topics=None, topic_pattern="x.*").open()


def test_an_unreachable_broker_is_reported_and_retried_without_crashing() -> None:
    c = cluster_with(2)
    c.down = True
    h = Harness(c).open()
    assert any("unavailable" in e for e in h.errors)
    assert h.run() == []
    c.down = False
    h.clock.now += 2.0
    out = h.run()
    assert h.offsets(out) == [0, 1]
    c.down = True
    for _, mid, _ in out:
        h.spout.ack(mid)
    h.clock.now += 30
    h.run(5)  # the commit fails: reported, state kept
    assert h.spout.counters["commit_failures"] == 1
    c.down = False
    h.clock.now += 30
    h.run(1)
    assert c.committed[("g", TP0)] == OffsetAndMetadata(2, h.spout.metadata)


def test_metrics_per_partition() -> None:
    h = Harness(cluster_with(3)).open()
    out = h.run()
    h.spout.ack(out[0][1])
    h.clock.now += 1
    h.run(1)
    m = h.spout.metrics()["partitions"]["t-0"]
    assert m == {"latest": 3, "latest_emitted": 2, "committed": 1, "uncommitted": 2, "lag": 2}
    published = h.spout.context.metrics["kafkaOffset"]()  # type: ignore[attr-defined]
    assert published["partitions"]["t-0"] == m
