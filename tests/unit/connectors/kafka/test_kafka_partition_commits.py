"""The Kafka spout's partitions-and-commits half over the stub consumer: which partitions a task
keeps when the spout is rebalanced (and what it drops with the others), where a resumed partition
starts, the acks of several partitions committed each to its own partition, commits that land
behind or fail, the AT_MOST_ONCE commit before the emit, the refusals and reports naming topic
and partition, and the bounded final commit of ``close``."""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

import pytest
from kafka_stub import Cluster, Harness, StubConsumer, cluster_with

from stormpy.connectors.kafka import KafkaTupleListener, OffsetAndMetadata, TopicPartition, _partitions

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def deferred(h: Harness) -> list[Any]:
    """Background jobs of ``h``'s spout, kept to be run by hand (``finish``)."""
    jobs: list[Any] = []
    h.spout.run_in_background = lambda fn, done: jobs.append((fn, done))  # type: ignore[method-assign]
    return jobs


def finish(job: Any) -> None:
    fn, done = job
    try:
        result = fn()
    except Exception as exc:
        done(None, exc)
    else:
        done(result, None)


class Reassigned(KafkaTupleListener):
    seen: list[list[TopicPartition]] = []

    def on_partitions_reassigned(self, partitions: Any) -> None:
        Reassigned.seen.append(list(partitions))


# -- assignment ------------------------------------------------------------------------------------
def test_a_rebalance_reports_the_new_partitions_once_and_drops_what_was_waiting_for_the_others() -> None:
    Reassigned.seen = []
    c = cluster_with(4, partitions=2)
    h = Harness(c, task_id=1, tasks=[1], processing_guarantee="AT_MOST_ONCE",
                tuple_listener=f"{__name__}:Reassigned").open()
    assert Reassigned.seen == [[TP0, TP1]]
    jobs = deferred(h)
    assert h.run(1) == [] and len(jobs) == 1  # the batch waits for its commit
    finish(jobs.pop())  # committed: both partitions' records wait for the next call
    assert sorted((r[1], r[2]) for r in h.spout.waiting) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    h.spout.run_in_background = Harness._inline  # type: ignore[method-assign]
    h.context.component_tasks = [1, 2]  # rebalanced: task 1 (index 0) keeps partition 0 only
    h.clock.now += 2.0
    out = h.run(1)  # the refresh runs first, then what waits is emitted
    assert h.spout.assigned == {TP0}
    assert [(values[1], values[2]) for values, _, _ in out] == [(0, 0), (0, 1)]
    assert Reassigned.seen == [[TP0, TP1], [TP0]]
    h.clock.now += 2.0
    h.run(1)  # the same partitions again: nothing reassigned
    assert Reassigned.seen == [[TP0, TP1], [TP0]]


def test_a_revoked_partition_paused_at_the_cap_is_forgotten_and_the_others_stay_paused() -> None:
    c = cluster_with(6, partitions=3)
    h = Harness(c, task_id=1, tasks=[1], max_uncommitted_offsets=2, max_poll_records=10).open()
    out = h.run()
    assert len(out) == 6
    assert h.consumer is not None and h.consumer.paused == {TP0, TP1, TopicPartition("t", 2)}
    resumed: list[list[TopicPartition]] = []
    real_resume = h.consumer.resume
    h.consumer.resume = lambda parts: (resumed.append(list(parts)), real_resume(parts))  # type: ignore[method-assign]
    h.context.component_tasks = [1, 2]  # task 1 keeps partitions 0 and 2
    h.clock.now += 2.0
    assert h.run() == []
    assert h.spout.assigned == {TP0, TopicPartition("t", 2)}
    assert [p for p in resumed if p] == []  # still at the cap: nothing resumed, t-1 is gone


def test_a_resumed_partition_starts_its_offsets_at_the_committed_offset_before_any_poll() -> None:
    c = cluster_with(5)
    first = Harness(c, topology_id="topo-A").open()
    out = first.run()
    for _, mid, _ in out[:2]:
        first.spout.ack(mid)
    first.clock.now += 1
    first.run(1)
    assert c.committed[("g", TP0)].offset == 2
    again = Harness(c, topology_id="topo-A").open()
    assert again.spout.metrics()["partitions"]["t-0"] == {
        "latest": 5, "latest_emitted": -1, "committed": 2, "uncommitted": 0, "lag": 3}


def test_a_partition_resumed_at_offset_zero_has_its_offsets_from_the_assignment() -> None:
    c = cluster_with(2)
    c.committed[("g", TP0)] = OffsetAndMetadata(0, '{"topologyId":"topo-A","taskId":1}')
    h = Harness(c, topology_id="topo-A", first_poll_offset_strategy="EARLIEST").open()
    assert h.spout.metrics()["partitions"]["t-0"] == {
        "latest": 2, "latest_emitted": -1, "committed": 0, "uncommitted": 0, "lag": 2}


class TimedConsumer(StubConsumer):
    """Records the timeout of each broker call."""

    timeouts: list[tuple[str, float]] = []

    def topics(self, timeout: float) -> dict[str, int]:
        TimedConsumer.timeouts.append(("topics", timeout))
        return super().topics(timeout)

    def committed(self, partitions: Any, timeout: float) -> dict[TopicPartition, Any]:
        TimedConsumer.timeouts.append(("committed", timeout))
        return super().committed(partitions, timeout)


def test_broker_calls_off_the_loop_give_up_after_the_client_timeout() -> None:
    TimedConsumer.timeouts = []
    c = cluster_with(2)
    h = Harness(c)
    h.spout.client_factory = lambda conf, on_error, on_commit_error: TimedConsumer(c, conf)  # type: ignore[assignment]
    h.open()
    assert TimedConsumer.timeouts == [("topics", 2.0), ("committed", 2.0)]  # open: a short wait
    c.create("t", 2)  # a partition added: its committed offset is looked up on the refresh
    h.clock.now += 2.0
    h.run(1)
    assert TimedConsumer.timeouts[2:] == [("topics", 10.0), ("committed", 10.0)]
    assert _partitions.CLIENT_TIMEOUT_SECS == 10.0


def test_a_refresh_that_fails_or_misses_a_topic_is_reported_naming_it() -> None:
    c = cluster_with(2)
    c.create("u", 1)
    h = Harness(c, topics=["t", "u"]).open()
    assert h.consumer is not None
    real_topics = h.consumer.topics

    def unreachable(timeout: float) -> dict[str, int]:
        raise ConnectionError("metadata request timed out")

    h.consumer.topics = unreachable  # type: ignore[method-assign]
    h.clock.now += 2.0
    h.run(1)
    assert h.errors == ["KafkaSpout: partition refresh failed (metadata request timed out); retrying"]
    h.consumer.topics = real_topics  # type: ignore[method-assign]
    del c.logs[TopicPartition("u", 0)]
    h.clock.now += 2.0
    h.run(1)
    assert h.errors[1:] == ["KafkaSpout: topic(s) ['u'] of KafkaSpoutConfig.topics not found"]
    assert h.spout.assigned == {TP0}
    assert h.spout.counters["errors"] == 2


# -- acks and commits ------------------------------------------------------------------------------
def test_acks_of_interleaved_partitions_and_topics_are_committed_each_to_its_own_partition() -> None:
    c = Cluster()
    for topic in ("a", "b"):
        c.create(topic, 2)
        for p in (0, 1):
            for i in range(3):
                c.produce(topic, p, b"%s%d%d" % (topic.encode(), p, i))
    h = Harness(c, topics=["a", "b"], max_poll_records=100).open()
    out = h.run()
    ids = {(mid.topic, mid.partition, mid.offset): mid for _, mid, _ in out}
    # one partition after another, the same partition number in two topics next to each other
    for key in [("a", 0, 0), ("b", 0, 0), ("a", 0, 1), ("a", 1, 0), ("b", 1, 0), ("b", 1, 1),
                ("b", 0, 1), ("a", 0, 2)]:
        h.spout.ack(ids[key])
    h.clock.now += 1
    h.run(1)
    assert {(tp.topic, tp.partition): oam.offset for (_, tp), oam in c.committed.items()} == {
        ("a", 0): 3, ("a", 1): 1, ("b", 0): 2, ("b", 1): 2}


def test_no_poll_while_a_commit_runs_after_two_commits_at_once_finished() -> None:
    c = cluster_with(3)
    h = Harness(c, partition_refresh_period_ms=600_000).open()
    out = h.run()
    jobs = deferred(h)
    h.spout.ack(out[0][1])
    h.spout.deactivate()  # a commit on deactivation ...
    h.spout.ack(out[1][1])
    h.spout.deactivate()  # ... and a second one while the first runs
    assert len(jobs) == 2
    finish(jobs.pop(0))
    c.produce("t", 0, b"v3")
    assert h.run(1) == []  # the second commit still runs: no poll
    finish(jobs.pop(0))
    assert c.committed[("g", TP0)].offset == 2
    h.spout.ack(out[2][1])
    h.clock.now += 30
    assert h.run(1) == [] and len(jobs) == 1  # the periodic commit runs: no poll meanwhile
    finish(jobs.pop())
    assert c.committed[("g", TP0)].offset == 3
    assert h.offsets(h.run()) == [3]


def test_every_failed_commit_is_counted_and_each_refused_partition_too() -> None:
    c = cluster_with(4, partitions=2)
    h = Harness(c).open()
    out = h.run()
    for _, mid, _ in out:
        h.spout.ack(mid)
    c.fail_commits = True
    for _ in range(2):
        h.clock.now += 30
        h.run(1)
    assert h.spout.counters["commit_failures"] == 2
    c.fail_commits = False
    assert h.consumer is not None
    h.consumer.commit_sync = lambda offsets: {tp: "NOT_LEADER" for tp in offsets}  # type: ignore[method-assign]
    h.clock.now += 30
    h.run(1)
    assert h.spout.counters["commit_failures"] == 4  # both partitions refused
    assert sorted(e for e in h.errors if "NOT_LEADER" in e) == [
        "KafkaSpout: committing t-0 at 2 failed: NOT_LEADER",
        "KafkaSpout: committing t-1 at 2 failed: NOT_LEADER"]


def test_a_commit_lands_on_the_partitions_still_assigned_when_another_was_revoked_meanwhile() -> None:
    c = cluster_with(4, partitions=2)
    h = Harness(c).open()
    for _, mid, _ in h.run():
        h.spout.ack(mid)
    h.spout.metrics()  # the acks folded
    h.spout.managers.pop(TP0)  # t-0 revoked while the commit below ran
    h.spout._on_committed({TP0: OffsetAndMetadata(2, "m"), TP1: OffsetAndMetadata(2, "m")}, {}, None)
    assert h.spout.metrics()["partitions"]["t-1"]["committed"] == 2
    assert h.spout.counters["commits"] == 1


def test_a_commit_ahead_of_the_position_skips_forward_and_drops_the_waiting_records_below_it() -> None:
    c = cluster_with(8, partitions=2)
    h = Harness(c).open()
    out = h.run()
    for _, mid, _ in out:
        if mid.partition == 0 and mid.offset < 3:
            h.spout.ack(mid)
    jobs = deferred(h)
    h.clock.now += 1
    h.run(1)
    assert len(jobs) == 1  # the commit of t-0 at 3
    assert h.consumer is not None
    h.consumer.seek(TP0, 1)  # meanwhile the position went back below it (a replay)
    h.consumer.consumed[TP0] = 1
    h.spout.waiting = deque([["t", 0, 1, None, b"v2"], ["t", 1, 1, None, b"v3"], ["t", 0, 2, None, b"v4"],
                             ["t", 0, 3, None, b"v6"]])
    del c.events[:]
    finish(jobs.pop())
    assert c.committed[("g", TP0)].offset == 3
    assert c.events == [("commit_sync", {TP0: 3}), ("seek", TP0, 3)]
    assert [(r[1], r[2]) for r in h.spout.waiting] == [(1, 1), (0, 3)]


def test_a_commit_at_or_behind_the_position_does_not_seek() -> None:
    c = cluster_with(3)
    h = Harness(c).open()
    out = h.run()
    for _, mid, _ in out:
        h.spout.ack(mid)
    del c.events[:]
    h.clock.now += 1
    h.run(1)
    assert c.events == [("commit_sync", {TP0: 3})]  # position 3 == the commit: no seek


def test_a_seek_that_fails_is_reported_naming_partition_and_offset() -> None:
    c = cluster_with(2)
    h = Harness(c, retry={"initial_delay_ms": 0}).open()
    out = h.run()
    h.spout.fail(out[0][1])
    assert h.consumer is not None

    def refuse(tp: TopicPartition, offset: int) -> None:
        raise RuntimeError("erroneous state")

    h.consumer.seek = refuse  # type: ignore[method-assign]
    h.run(1)
    assert h.errors == ["KafkaSpout: seek of t-0 to 0 failed (erroneous state); retried on the next poll"]


# -- AT_MOST_ONCE and NO_GUARANTEE -----------------------------------------------------------------
def test_at_most_once_and_no_guarantee_commit_the_position_with_the_topologys_metadata() -> None:
    c = cluster_with(2)
    h = Harness(c, topology_id="topo-M", processing_guarantee="AT_MOST_ONCE").open()
    h.run()
    assert c.committed[("g", TP0)] == OffsetAndMetadata(2, h.spout.metadata)
    assert '"topologyId":"topo-M"' in h.spout.metadata
    c2 = cluster_with(2)
    n = Harness(c2, topology_id="topo-N", processing_guarantee="NO_GUARANTEE").open()
    n.run()
    n.clock.now += 1
    n.run(1)
    assert c2.committed[("g", TP0)] == OffsetAndMetadata(2, n.spout.metadata)


def test_at_most_once_counts_every_commit_before_an_emit() -> None:
    c = cluster_with(1)
    h = Harness(c, processing_guarantee="AT_MOST_ONCE").open()
    h.run()
    c.produce("t", 0, b"v1")
    h.run()
    assert h.spout.counters["commits"] == 2


def test_at_most_once_failed_commit_seeks_only_partitions_with_records_in_the_batch() -> None:
    c = cluster_with(2, partitions=2)
    h = Harness(c, processing_guarantee="AT_MOST_ONCE").open()
    assert len(h.run()) == 2
    c.produce("t", 0, b"v2")
    c.fail_commits = True
    del c.events[:]
    assert h.run(1) == []
    assert [e for e in c.events if e[0] == "seek"] == [("seek", TP0, 1)]  # t-1 had nothing new
    c.produce("t", 0, b"v3")
    assert h.run(1) == []
    assert h.spout.counters["commit_failures"] == 2
    c.fail_commits = False
    assert [(v[1], v[2]) for v, _, _ in h.run()] == [(0, 1), (0, 2)]


def test_at_most_once_without_a_known_position_seeks_back_to_each_partitions_first_record() -> None:
    c = Cluster()
    c.create("t", 2)
    for off in (4, 5, 6):
        c.produce("t", 0, b"a%d" % off, offset=off)
    for off in (9, 10):
        c.produce("t", 1, b"b%d" % off, offset=off)
    h = Harness(c, processing_guarantee="AT_MOST_ONCE").open()
    assert h.consumer is not None
    real_position = h.consumer.position
    h.consumer.position = lambda parts: {}  # type: ignore[method-assign]
    del c.events[:]
    assert h.run(1) == []
    assert h.errors == ["KafkaSpout: no consumer position to commit before emitting; polled again"]
    assert sorted(e for e in c.events if e[0] == "seek") == [("seek", TP0, 4), ("seek", TP1, 9)]
    assert not [e for e in c.events if e[0].startswith("commit")]
    h.consumer.position = real_position  # type: ignore[method-assign]
    assert sorted((v[1], v[2]) for v, _, _ in h.run()) == [(0, 4), (0, 5), (0, 6), (1, 9), (1, 10)]


# -- close -----------------------------------------------------------------------------------------
def test_close_commits_what_is_acked_on_a_daemon_thread_named_for_the_job(caplog: Any) -> None:
    c = cluster_with(2)
    h = Harness(c).open()
    out = h.run()
    h.spout.ack(out[0][1])
    seen: list[tuple[str, bool]] = []
    assert h.consumer is not None
    real_commit = h.consumer.commit_sync

    def commit(offsets: Any) -> Any:
        seen.append((threading.current_thread().name, threading.current_thread().daemon))
        return real_commit(offsets)

    h.consumer.commit_sync = commit  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="stormpy.connectors.kafka"):
        h.spout.close()
    assert seen == [("kafka-final commit", True)]
    assert c.committed[("g", TP0)].offset == 1 and h.consumer.closed
    assert [r.getMessage() for r in caplog.records] == []


def test_close_reports_a_final_commit_that_fails_and_still_closes(caplog: Any) -> None:
    c = cluster_with(2)
    h = Harness(c).open()
    out = h.run()
    h.spout.ack(out[0][1])
    c.fail_commits = True
    with caplog.at_level(logging.WARNING, logger="stormpy.connectors.kafka"):
        h.spout.close()
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka spout task 1: final commit failed: commit failed: broker down"]
    assert h.consumer is not None and h.consumer.closed


def test_close_gives_up_on_a_commit_that_does_not_finish(caplog: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_partitions, "CLOSE_TIMEOUT_SECS", 0.05)
    c = cluster_with(2)
    h = Harness(c).open()
    out = h.run()
    h.spout.ack(out[0][1])
    release = threading.Event()
    assert h.consumer is not None
    h.consumer.commit_sync = lambda offsets: release.wait(5.0)  # type: ignore[method-assign]
    try:
        with caplog.at_level(logging.WARNING, logger="stormpy.connectors.kafka"):
            h.spout.close()
    finally:
        release.set()
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka spout task 1: final commit did not finish in 0.05 s"]
    assert h.consumer.closed
