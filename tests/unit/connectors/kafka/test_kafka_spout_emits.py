"""What the Kafka spout emits for each record a translator turns into something other than a plain
values list (a tuple on another stream, None, an exception), on a first emit and on a replay, per
guarantee; which message ids the tuples carry, and which offsets get committed past. Then the
spout shell: retries whose records were compacted away, acks of batches and of ids not in flight,
the tuple listener's acks, stalled jobs reported, ``activate`` and the metrics while a job runs."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from kafka_stub import Cluster, Harness

from stormpy.connectors.kafka import (
    KafkaConfigError,
    KafkaRecord,
    KafkaSpout,
    KafkaTuple,
    KafkaTupleListener,
    OffsetAndMetadata,
    RecordTranslator,
    TopicPartition,
)
from stormpy.topology import DEFAULT_STREAM, Stream

TP0 = TopicPartition("t", 0)


class Mixed(RecordTranslator):
    """``none`` -> None, ``bad`` -> an error, ``odd...`` -> a tuple on the ``odd`` stream."""

    @classmethod
    def declare_outputs(cls, args: Mapping[str, Any]) -> dict[str, Stream]:
        return {DEFAULT_STREAM: Stream(list(cls.fields)), "odd": Stream(["offset", "value"])}

    def apply(self, record: KafkaRecord) -> list[Any] | KafkaTuple | None:
        value = record.value or b""
        if value == b"none":
            return None
        if value == b"bad":
            raise ValueError("bad value")
        if value.startswith(b"odd"):
            return KafkaTuple([record.offset, value], stream="odd")
        return [record.topic, record.partition, record.offset, record.key, value]


class BrokenOnReplay(RecordTranslator):
    """Translates each offset once; a second translation (a replay) raises."""

    seen: set[int] = set()

    def apply(self, record: KafkaRecord) -> list[Any]:
        if record.offset in BrokenOnReplay.seen:
            raise ValueError("broken on replay")
        BrokenOnReplay.seen.add(record.offset)
        return [record.topic, record.partition, record.offset, record.key, record.value]


def cluster_of(*values: bytes) -> Cluster:
    c = Cluster()
    c.create("t", 1)
    for v in values:
        c.produce("t", 0, v)
    return c


def emitted(h: Harness) -> list[tuple[list[Any], Any, str]]:
    return [(values, None if mid is None else (mid.topic, mid.partition, mid.offset), stream)
            for values, mid, stream in h.emits]


def test_at_least_once_emits_per_stream_and_acks_null_and_bad_records_directly() -> None:
    c = cluster_of(b"a", b"none", b"odd1", b"bad", b"b", b"bad")
    h = Harness(c, record_translator=f"{__name__}:Mixed").open()
    h.run()
    assert emitted(h) == [(["t", 0, 0, None, b"a"], ("t", 0, 0), "default"),
                          (["t", 0, 4, None, b"b"], ("t", 0, 4), "default"),
                          ([2, b"odd1"], ("t", 0, 2), "odd")]
    assert h.spout.counters["bad_records"] == 2
    assert h.errors == [
        "KafkaSpout: record t-0 offset 3 could not be translated (ValueError('bad value')); acked past it "
        "(1 bad records so far)",
        "KafkaSpout: record t-0 offset 5 could not be translated (ValueError('bad value')); acked past it "
        "(2 bad records so far)"]
    m = h.spout.metrics()
    part = m["partitions"]["t-0"]
    assert (m["in_flight"], part["uncommitted"], part["latest_emitted"]) == (3, 6, 5)
    for _, mid, _ in h.emits:
        h.spout.ack(mid)
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 6  # the null and bad records were acked directly


def test_emit_null_tuples_emits_a_tracked_tuple_of_nones() -> None:
    c = cluster_of(b"a", b"none", b"b")
    h = Harness(c, record_translator=f"{__name__}:Mixed", emit_null_tuples=True).open()
    h.run()
    assert emitted(h) == [(["t", 0, 0, None, b"a"], ("t", 0, 0), "default"),
                          ([None, None, None, None, None], ("t", 0, 1), "default"),
                          (["t", 0, 2, None, b"b"], ("t", 0, 2), "default")]
    h.spout.ack(h.emits[0][1])
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 1  # the null tuple waits for its ack like any other
    h.spout.ack(h.emits[1][1])
    h.clock.now += 30
    h.run(1)
    assert c.committed[("g", TP0)].offset == 2


def test_untracked_guarantees_emit_each_stream_as_an_untracked_batch() -> None:
    c = cluster_of(b"a", b"none", b"odd1", b"bad", b"b")
    h = Harness(c, record_translator=f"{__name__}:Mixed", processing_guarantee="NO_GUARANTEE").open()
    h.run()
    assert emitted(h) == [(["t", 0, 0, None, b"a"], None, "default"),
                          (["t", 0, 4, None, b"b"], None, "default"),
                          ([2, b"odd1"], None, "odd")]
    assert h.batches == [None, None]
    assert h.spout.counters["bad_records"] == 1 and h.spout.metrics()["in_flight"] == 0


def test_a_replay_the_translator_rejects_is_reported_and_acked_past_without_a_retry_left() -> None:
    BrokenOnReplay.seen = set()
    c = cluster_of(b"a", b"b", b"c")
    h = Harness(c, record_translator=f"{__name__}:BrokenOnReplay",
                retry={"initial_delay_ms": 0, "delay_period_ms": 0}).open()
    out = h.run()
    assert h.offsets(out) == [0, 1, 2]
    h.spout.ack(out[0][1])
    h.spout.fail(out[1][1])
    h.spout.ack(out[2][1])
    assert h.run() == []  # the replay of offset 1 cannot be translated
    assert h.errors == ["KafkaSpout: record t-0 offset 1 could not be translated "
                        "(ValueError('broken on replay')); acked past it (1 bad records so far)"]
    m = h.spout.metrics()
    assert (m["bad_records"], m["scheduled_retries"], m["in_flight"]) == (1, 0, 0)
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 3
    assert h.run() == [] and len(h.errors) == 1  # not polled again


# -- the spout shell ------------------------------------------------------------------------------
class Acks(KafkaTupleListener):
    seen: list[tuple[str, int, int]] = []

    def on_ack(self, msg_id: Any) -> None:
        Acks.seen.append((msg_id.topic, msg_id.partition, msg_id.offset))


NO_DELAY = {"initial_delay_ms": 0, "delay_period_ms": 0}


def deferred(h: Harness) -> list[Any]:
    jobs: list[Any] = []
    h.spout.run_in_background = lambda fn, done: jobs.append((fn, done))  # type: ignore[method-assign]
    return jobs


def test_retries_of_records_compacted_away_are_acked_past_and_the_rest_replayed() -> None:
    c = Cluster()
    c.create("t", 2)
    for i in range(4):
        c.produce("t", 0, b"a%d" % i)
    c.produce("t", 1, b"b0")
    h = Harness(c, retry=NO_DELAY, max_poll_records=100).open()
    out = {(mid.partition, mid.offset): mid for _, mid, _ in h.run()}
    assert sorted(out) == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    h.spout.fail(out[(1, 0)])  # t-1 first: its retry finds nothing to poll (got None)
    for off in (1, 2, 3):
        h.spout.fail(out[(0, off)])
    c.logs[TopicPartition("t", 0)] = [r for r in c.logs[TopicPartition("t", 0)] if r.offset not in (1, 2)]
    c.logs[TopicPartition("t", 1)] = []
    del h.emits[:]
    replay = h.run(1)
    assert [(mid.partition, mid.offset, mid.num_fails) for _, mid, _ in replay] == [(0, 3, 1)]
    assert h.spout.metrics()["scheduled_retries"] == 1  # t-1's: its record may still come
    h.spout.ack(out[(0, 0)])
    h.spout.ack(replay[0][1])
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 4  # 1 and 2 acked past


def test_a_retry_whose_record_is_the_first_polled_is_replayed_not_acked_past() -> None:
    c = Cluster()
    c.create("t", 1)
    for i in range(3):
        c.produce("t", 0, b"a%d" % i)
    h = Harness(c, retry=NO_DELAY).open()
    out = h.run()
    h.spout.fail(out[1][1])
    replay = h.run(1)
    assert [(mid.offset, mid.num_fails) for _, mid, _ in replay] == [(1, 1)]


def test_an_ack_for_a_tuple_not_in_flight_is_ignored() -> None:
    c = Cluster()
    c.create("t", 1)
    for i in range(3):
        c.produce("t", 0, b"a%d" % i)
    h = Harness(c, retry={"initial_delay_ms": 60_000}).open()
    out = h.run()
    h.spout.ack(out[0][1])
    h.spout.fail(out[1][1])
    h.spout.ack(out[1][1])  # a late ack of the failed tuple: its retry stays due
    h.spout.ack(out[0][1])  # a second ack
    h.spout.ack(out[2][1])
    h.clock.now += 1
    h.run(1)
    assert c.committed[("g", TP0)].offset == 1
    assert h.spout.metrics()["scheduled_retries"] == 1


def test_the_listener_hears_acks_of_tuples_of_batches_and_of_null_records() -> None:
    Acks.seen = []
    c = cluster_of(b"a", b"none", b"b")
    h = Harness(c, record_translator=f"{__name__}:Mixed", tuple_listener=f"{__name__}:Acks",
                batch_acking=True).open()
    h.run()
    assert Acks.seen == [("t", 0, 1)]  # the null record, acked directly
    (batch,) = h.batches
    assert batch is not None
    h.spout.ack_many(batch)
    assert Acks.seen == [("t", 0, 1), ("t", 0, 0), ("t", 0, 2)]


def test_a_batch_acked_after_one_of_its_partitions_was_revoked_acks_the_others() -> None:
    c = Cluster()
    c.create("t", 2)
    for i in range(2):
        c.produce("t", 0, b"a%d" % i)
        c.produce("t", 1, b"b%d" % i)
    h = Harness(c, task_id=2, tasks=[2], batch_acking=True, max_poll_records=10).open()
    h.run(1)
    (batch,) = h.batches
    assert batch is not None and [(m.partition, m.offset) for m in batch] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    h.context.component_tasks = [1, 2]
    h.context.task_index = 1  # rebalanced: task 2 keeps partition 1
    h.clock.now += 2.0
    h.run(1)
    assert h.spout.assigned == {TopicPartition("t", 1)}
    h.spout.ack_many(batch)  # t-0's ids are no longer in flight
    h.clock.now += 30
    h.run(1)
    assert c.committed[("g", TopicPartition("t", 1))].offset == 2


def test_each_record_past_max_retries_is_counted() -> None:
    c = cluster_of(b"a", b"b")
    h = Harness(c, retry={**NO_DELAY, "max_retries": 0}).open()
    for _, mid, _ in h.run():
        h.spout.fail(mid)
    assert h.spout.counters["max_retries_reached"] == 2


def test_a_stalled_offset_commit_is_reported_once_it_ran_ten_seconds() -> None:
    c = cluster_of(b"a")
    h = Harness(c, processing_guarantee="AT_MOST_ONCE", partition_refresh_period_ms=600_000).open()
    jobs = deferred(h)
    h.run(1)  # the commit before the emit runs
    assert len(jobs) == 1
    h.run(1)
    h.clock.now += 9.5
    h.run(1)
    assert h.errors == []
    h.clock.now += 0.5
    h.run(1)
    assert h.errors == ["KafkaSpout: the offset commit on stub:9092 has not finished after 10 s "
                        "(broker unreachable?); polling waits for it"]


def test_a_stalled_partition_refresh_is_reported_naming_it() -> None:
    c = cluster_of(b"a")
    h = Harness(c).open()
    jobs = deferred(h)
    h.clock.now += 2.0
    h.run(1)  # the refresh runs
    assert len(jobs) == 1
    h.clock.now += 10.0
    h.run(1)
    assert h.errors == ["KafkaSpout: the partition refresh on stub:9092 has not finished after 10 s "
                        "(broker unreachable?); polling waits for it"]


def test_activate_refreshes_the_partitions_at_once() -> None:
    c = cluster_of(b"a")
    h = Harness(c).open()
    assert h.offsets(h.run()) == [0]
    h.spout.deactivate()
    c.create("t", 2)
    c.produce("t", 1, b"b0")
    h.clock.now += 1.0  # the refresh is not due before 2 s
    assert h.run() == []
    h.spout.activate()
    assert [(v[1], v[2]) for v, _, _ in h.run(1)] == [(1, 0)]
    h.spout.activate()  # an earlier due time is kept
    assert h.spout.assigned == {TP0, TopicPartition("t", 1)}


def test_metrics_while_a_commit_runs_show_the_last_log_end_seen() -> None:
    c = cluster_of(b"a", b"b", b"c")
    h = Harness(c).open()
    out = h.run()
    assert h.spout.metrics()["partitions"]["t-0"]["latest"] == 3
    jobs = deferred(h)
    h.spout.ack(out[0][1])
    h.spout.deactivate()
    assert len(jobs) == 1
    m = h.spout.metrics()["partitions"]["t-0"]
    assert (m["latest"], m["lag"]) == (3, 3)


class Emits(KafkaTupleListener):
    seen: list[tuple[list[Any], int]] = []

    def on_emit(self, values: list[Any], msg_id: Any) -> None:
        Emits.seen.append((list(values), msg_id.offset))


def test_batch_acking_replays_go_one_tuple_each_on_their_own_stream_and_the_listener_hears_all() -> None:
    Emits.seen = []
    c = cluster_of(b"a", b"odd1")
    h = Harness(c, record_translator=f"{__name__}:Mixed", tuple_listener=f"{__name__}:Emits",
                batch_acking=True, retry=NO_DELAY).open()
    h.run()
    assert emitted(h) == [(["t", 0, 0, None, b"a"], ("t", 0, 0), "default"),
                          ([1, b"odd1"], ("t", 0, 1), "odd")]
    assert len(h.batches) == 2  # one tracked batch per stream
    assert Emits.seen == [(["t", 0, 0, None, b"a"], 0), ([1, b"odd1"], 1)]
    for _, mid, _ in h.emits:
        h.spout.fail(mid)
    del h.emits[:]
    h.run()
    assert emitted(h) == [(["t", 0, 0, None, b"a"], ("t", 0, 0), "default"),
                          ([1, b"odd1"], ("t", 0, 1), "odd")]
    assert len(h.batches) == 2  # the replays are not batches
    assert Emits.seen[2:] == [(["t", 0, 0, None, b"a"], 0), ([1, b"odd1"], 1)]


def test_records_of_two_topics_with_the_same_partition_number_are_tracked_apart() -> None:
    c = Cluster()
    for topic in ("a", "b"):
        c.create(topic, 1)
        for i in range(2):
            c.produce(topic, 0, b"%s%d" % (topic.encode(), i))
    h = Harness(c, topics=["a", "b"], max_poll_records=10).open()
    out = h.run(1)
    assert [(v[0], v[2]) for v, _, _ in out] == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    for _, mid, _ in out:
        h.spout.ack(mid)
    h.clock.now += 1
    h.run(1)
    assert {tp.topic: oam.offset for (_, tp), oam in c.committed.items()} == {"a": 2, "b": 2}


def test_records_below_the_committed_offset_are_not_emitted_again() -> None:
    c = cluster_of(*[b"v%d" % i for i in range(7)])
    c.committed[("g", TP0)] = OffsetAndMetadata(5, '{"topologyId":"topo-1","taskId":1}')
    h = Harness(c).open()
    assert h.consumer is not None
    h.consumer.seek(TP0, 3)  # the client hands older records (a replay reaching below the commit)
    assert h.offsets(h.run()) == [5, 6]


def test_no_guarantee_emits_the_polled_rows_on_the_default_stream() -> None:
    h = Harness(cluster_of(b"a", b"b"), processing_guarantee="NO_GUARANTEE").open()
    assert [(values[2], stream) for values, _, stream in h.run()] == [(0, "default"), (1, "default")]


# -- open, close and the periods --------------------------------------------------------------------
class Opened(KafkaTupleListener):
    calls: list[tuple[Any, Any]] = []

    def open(self, conf: Mapping[str, Any], context: Any) -> None:
        Opened.calls.append((dict(conf), context))


class Sized(RecordTranslator):
    """Declares as many fields as ``record_translator_args['n']`` says."""

    def __init__(self, n: int = 1) -> None:
        self.n = n

    @classmethod
    def declare_outputs(cls, args: Mapping[str, Any]) -> dict[str, Stream]:
        return {DEFAULT_STREAM: Stream([f"f{i}" for i in range(args["n"])])}

    def apply(self, record: KafkaRecord) -> None:
        return None


class NotAListener:
    pass


def not_a_class() -> None:
    pass


def test_open_builds_the_consumer_settings_and_hands_it_the_error_reports() -> None:
    Opened.calls = []
    c = cluster_of(b"a")
    h = Harness(c, topology_id="topo-9", task_id=4, tasks=[4], tuple_listener=f"{__name__}:Opened")
    made: list[Any] = []
    real_factory = h._factory

    def factory(conf: Mapping[str, Any], on_error: Any, on_commit_error: Any) -> Any:
        made.append((on_error, on_commit_error))
        return real_factory(conf, on_error, on_commit_error)

    h.spout.client_factory = factory  # type: ignore[assignment]
    h.spout.open({"topology.name": "x"}, h.context)  # type: ignore[arg-type]
    assert h.consumer is not None and h.consumer.conf == {
        "bootstrap.servers": "stub:9092", "group.id": "g", "enable.auto.commit": False,
        "enable.auto.offset.store": False, "client.id": "stormpy-topo-9-4",
        "fetch.queue.backoff.ms": 10, "reconnect.backoff.ms": 10}
    on_error, on_commit_error = made[0]
    on_error("Kafka client error: all brokers down")
    on_commit_error("asynchronous offset commit failed: timed out")
    assert h.errors == ["KafkaSpout: Kafka client error: all brokers down",
                        "KafkaSpout: asynchronous offset commit failed: timed out"]
    assert Opened.calls == [({"topology.name": "x"}, h.context)]
    meta = json.loads(h.spout.metadata)
    assert (meta["topologyId"], meta["taskId"]) == ("topo-9", 4)


def test_polls_wait_at_most_a_millisecond_on_the_loop_and_fetch_errors_are_reported() -> None:
    c = cluster_of(b"a")
    h = Harness(c).open()
    assert h.consumer is not None
    waits: list[float] = []
    real_rows, real_records = h.consumer.consume_rows, h.consumer.consume
    h.consumer.consume_rows = lambda n, t: (waits.append(t), real_rows(n, t))[1]  # type: ignore[method-assign]
    h.run(1)
    h2 = Harness(cluster_of(b"a"), record_translator="stormpy.connectors.kafka:StringRecordTranslator").open()
    assert h2.consumer is not None
    h2.consumer.consume = lambda n, t: (waits.append(t), real_records(n, t))[1]  # type: ignore[method-assign]
    h2.run(1)
    assert waits == [0.001, 0.001]
    c.down = True
    h.run(1)
    assert h.errors == ["KafkaSpout: fetch error: broker down"]


def test_close_commits_per_guarantee_then_closes_the_consumer() -> None:
    names: list[str] = []
    for guarantee, committed in (("NO_GUARANTEE", 2), ("AT_MOST_ONCE", 2), ("AT_LEAST_ONCE", 1)):
        c = cluster_of(b"a", b"b")
        h = Harness(c, processing_guarantee=guarantee, offset_commit_period_ms=600_000).open()
        out = h.run()
        if guarantee == "AT_LEAST_ONCE":
            h.spout.ack(out[0][1])
        assert h.consumer is not None
        real_close = h.consumer.close
        h.consumer.close = lambda real_close=real_close: (  # type: ignore[method-assign]
            names.append(threading.current_thread().name), real_close())[1]
        del c.events[:]
        h.spout.close()
        commits = [e for e in c.events if e[0].startswith("commit")]
        if guarantee == "AT_MOST_ONCE":
            assert commits == []  # committed before each emit already
        else:
            assert commits == [("commit_sync", {TP0: committed})]
            assert c.committed[("g", TP0)].metadata == h.spout.metadata
        assert h.consumer.closed
    assert names == ["kafka-consumer close"] * 3


def test_a_listener_or_translator_of_the_wrong_kind_is_refused_naming_the_setting() -> None:
    c = cluster_of(b"a")
    with pytest.raises(KafkaConfigError) as info:
        Harness(c, tuple_listener=f"{__name__}:NotAListener").open()
    assert info.value.setting == "KafkaSpoutConfig.tuple_listener"
    assert str(info.value) == (f"KafkaSpoutConfig.tuple_listener: '{__name__}:NotAListener' is not a "
                               "KafkaTupleListener subclass")
    with pytest.raises(KafkaConfigError) as info:
        Harness(c, record_translator=f"{__name__}:not_a_class").open()
    assert str(info.value) == (f"KafkaSpoutConfig.record_translator: '{__name__}:not_a_class' is not a "
                               "RecordTranslator subclass")
    with pytest.raises(KafkaConfigError) as info:
        Harness(c, tuple_listener=f"{__name__}:Missing").open()
    assert info.value.setting == "KafkaSpoutConfig.tuple_listener"
    with pytest.raises(KafkaConfigError) as info:
        Harness(c, topics=None, topic_pattern="x.*").open()
    assert info.value.setting == "KafkaSpoutConfig.topic_pattern"


def test_null_tuples_have_as_many_fields_as_the_translator_declares_from_its_args() -> None:
    c = cluster_of(b"a")
    h = Harness(c, record_translator=f"{__name__}:Sized", record_translator_args={"n": 3},
                emit_null_tuples=True).open()
    assert [v for v, _, _ in h.run()] == [[None, None, None]]


def test_refresh_and_commit_periods_are_counted_in_milliseconds() -> None:
    c = cluster_of(b"a")
    h = Harness(c, partition_refresh_period_ms=1000, offset_commit_period_ms=1000).open()
    out = h.run()
    h.spout.ack(out[0][1])
    h.clock.now += 0.5
    h.run(1)  # the first commit, TIMER_DELAY after open
    assert c.committed[("g", TP0)].offset == 1
    c.create("t", 2)
    h.clock.now += 0.4995  # 999.5 ms after open: no refresh yet
    h.run(1)
    assert h.spout.assigned == {TP0}
    h.clock.now += 0.0005
    h.run(1)
    assert h.spout.assigned == {TP0, TopicPartition("t", 1)}
    c.create("t", 3)
    h.clock.now += 0.9995
    h.run(1)
    assert TopicPartition("t", 2) not in h.spout.assigned
    h.clock.now += 0.0005
    h.run(1)
    assert TopicPartition("t", 2) in h.spout.assigned
    c2 = cluster_of(b"a")
    k = Harness(c2, offset_commit_period_ms=1000).open()
    (first,) = k.run()
    k.spout.ack(first[1])
    k.clock.now += 0.5
    k.run(1)  # committed at 1; the next commit 1000 ms later
    c2.produce("t", 0, b"b")
    (second,) = k.run()
    k.spout.ack(second[1])
    k.clock.now += 0.9995
    k.run(1)
    assert c2.committed[("g", TP0)].offset == 1
    k.clock.now += 0.0005
    k.run(1)
    assert c2.committed[("g", TP0)].offset == 2


def test_a_poll_follows_a_commit_that_finished_in_the_same_call() -> None:
    c = cluster_of(b"a")
    h = Harness(c).open()
    out = h.run()
    h.spout.ack(out[0][1])
    c.produce("t", 0, b"b")
    h.clock.now += 0.5
    assert h.offsets(h.run(1)) == [1]  # committed, then polled
    assert c.committed[("g", TP0)].offset == 1


def test_a_stall_is_timed_from_the_start_of_the_job() -> None:
    c = cluster_of(b"a")
    h = Harness(c, partition_refresh_period_ms=600_000).open()
    out = h.run(1)
    jobs = deferred(h)
    h.clock.now += 9.0
    h.spout.ack(out[0][1])
    h.spout.deactivate()  # a commit starts now
    assert len(jobs) == 1
    h.run(1)
    h.clock.now += 9.0
    h.run(1)
    assert h.errors == []  # 9 s into the commit
    h.clock.now += 1.0
    h.run(1)
    assert len(h.errors) == 1 and "after 10 s" in h.errors[0]


def test_metrics_of_an_empty_partition_and_of_untracked_guarantees() -> None:
    c = Cluster()
    c.create("t", 1)
    h = Harness(c).open()
    assert h.spout.metrics()["partitions"]["t-0"] == {
        "latest": None, "latest_emitted": None, "committed": None, "uncommitted": 0, "lag": None}
    n = Harness(cluster_of(b"a"), processing_guarantee="NO_GUARANTEE").open()
    n.run()
    assert n.spout.metrics()["partitions"]["t-0"] == {
        "latest": 1, "latest_emitted": None, "committed": None, "uncommitted": 0, "lag": None}


class OddOnly(RecordTranslator):
    """Declares no default stream."""

    @classmethod
    def declare_outputs(cls, args: Mapping[str, Any]) -> dict[str, Stream]:
        return {"odd": Stream(["offset"])}

    def apply(self, record: KafkaRecord) -> KafkaTuple:
        return KafkaTuple([record.offset], stream="odd")


def test_a_translator_without_a_default_stream_emits_on_its_own_streams() -> None:
    h = Harness(cluster_of(b"a", b"b"), record_translator=f"{__name__}:OddOnly").open()
    assert [(v, s) for v, _, s in h.run()] == [([0], "odd"), ([1], "odd")]


def test_declaring_the_outputs_refuses_a_translator_of_the_wrong_kind_naming_the_setting() -> None:
    doc = {"bootstrap_servers": "b:9092", "group_id": "g", "topics": ["t"],
           "record_translator": f"{__name__}:NotAListener"}
    with pytest.raises(KafkaConfigError) as info:
        KafkaSpout.declare_outputs({"config": doc})
    assert info.value.setting == "KafkaSpoutConfig.record_translator"


def test_close_under_no_guarantee_commits_on_a_thread_named_for_the_final_commit() -> None:
    c = cluster_of(b"a")
    h = Harness(c, processing_guarantee="NO_GUARANTEE").open()
    h.run()
    assert h.consumer is not None
    names: list[str] = []
    real_commit = h.consumer.commit_sync
    h.consumer.commit_sync = lambda offsets: (  # type: ignore[method-assign]
        names.append(threading.current_thread().name), real_commit(offsets))[1]
    h.spout.close()
    assert names == ["kafka-final commit"] and c.committed[("g", TP0)].offset == 1
