"""KafkaBolt's delivery reports applied on the loop: a tuple acked only after the broker confirmed
its record, failed on a delivery error (with the error reported, naming it), each batch settled
exactly once, client errors reported, the counters and metrics a user reads, and the poll job
kept running exactly while records are in flight or held. Against the stub producer of
``test_kafka_bolt_units``; background jobs run by the test."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from test_kafka_bolt_units import Harness, StubProducer

from stormpy.connectors.kafka import KafkaBolt, KafkaBoltConfig, _bolt
from stormpy.topology import ColumnBatch, Fields, Tuple


def test_delivered_tuples_are_acked_together_and_a_failed_one_is_failed_with_its_error() -> None:
    h = Harness()
    batches: list[list[object]] = []
    b: object = h.bolt
    b.ack_many = lambda ts: batches.append([t.values for t in ts])  # type: ignore[attr-defined]
    h.send("k1", "a")
    h.send("k2", "b")
    h.send("k3", "c")
    h.stub.deliver(1)
    h.stub.deliver(1, err="Broker: Not enough in-sync replicas")
    h.stub.deliver(1)
    h.run_jobs()
    assert batches == [[["k1", "a"], ["k3", "c"]]]  # one ack_many for what one poll served
    assert h.failed == [["k2", "b"]]
    assert h.errors == ["KafkaBolt: delivery failed: Broker: Not enough in-sync replicas; tuple failed"]
    m = h.bolt.metrics()
    assert (m["delivered"], m["delivery_failures"], m["in_flight"], m["produced"]) == (2, 1, 0, 3)


class Recording(Harness):
    """The harness recording what was acked and failed as the objects themselves, and every
    ``ack_many`` call as one list."""

    def __init__(self, capacity: int = 1000, **settings: Any) -> None:
        super().__init__(capacity, **settings)
        self.settled: list[tuple[str, Any]] = []
        b: Any = self.bolt
        b.ack = lambda t: self.settled.append(("ack", t))
        b.ack_many = lambda ts: self.settled.append(("ack_many", list(ts)))
        b.fail = lambda t: self.settled.append(("fail", t))

    def tuple(self, *values: Any) -> Tuple:
        t = Tuple(list(values), "default", 1, "src", Fields(["key", "message"]))
        self.bolt.execute(t)
        return t

    def batch(self, *messages: str) -> ColumnBatch:
        b = ColumnBatch([["k", m] for m in messages], "default", 1, "src", Fields(["key", "message"]))
        self.bolt.execute_columns(b)
        return b


def test_the_producer_is_configured_for_the_task_and_publishes_its_counters() -> None:
    h = Harness(producer_props={"acks": "all"})
    conf = h.stub.conf
    assert conf["client.id"] == "stormpy-topo-7" and conf["bootstrap.servers"] == "127.0.0.1:1"
    assert conf["logger"] is logging.getLogger("stormpy.connectors.kafka.librdkafka")
    assert conf["acks"] == "all"
    published = h.bolt.context.metrics  # type: ignore[attr-defined]
    assert list(published) == ["kafkaBolt"]
    assert published["kafkaBolt"]() == {"produced": 0, "delivered": 0, "delivery_failures": 0,
                                        "bad_tuples": 0, "no_topic": 0, "queue_full": 0,
                                        "backlog_overflow": 0, "in_flight": 0, "backlog": 0}


def test_client_errors_are_reported_in_order_at_the_next_poll() -> None:
    h = Harness()
    h.send("k", "m")
    h.stub.conf["error_cb"]("Local: Broker transport failure")
    h.stub.conf["error_cb"]("Local: All broker connections are down")
    assert h.errors == []  # the callback runs on the client's thread: only queued there
    h.run_jobs()
    assert h.errors == ["KafkaBolt: Kafka producer error: Local: Broker transport failure",
                        "KafkaBolt: Kafka producer error: Local: All broker connections are down"]


def test_one_poll_job_at_a_time_for_a_short_while_and_only_while_records_wait() -> None:
    h = Harness()
    timeouts: list[float] = []
    poll = h.stub.poll

    def timed_poll(timeout: float) -> int:
        timeouts.append(timeout)
        return poll(timeout)

    h.stub.poll = timed_poll  # type: ignore[method-assign]
    h.send("k", "a")
    h.send("k", "b")
    assert len(h.jobs) == 1
    fn, done = h.jobs.pop(0)
    h.stub.deliver(1)
    assert fn() == 1 and timeouts == [0.1]
    done(1, None)
    assert len(h.jobs) == 1  # one record still in flight: polled again
    h.stub.deliver(1)
    h.run_jobs()
    assert h.jobs == [] and h.bolt.in_flight == 0


def test_a_failed_poll_is_reported_and_polled_again_and_its_reports_still_applied() -> None:
    h = Recording()
    a = h.tuple("k", "a")
    h.tuple("k", "b")
    h.stub.deliver(1)
    h.stub.poll(0)  # served on the poll thread, then the job failed
    fn, done = h.jobs.pop(0)
    done(None, RuntimeError("poll broke"))
    assert h.errors == ["KafkaBolt: polling delivery reports failed: RuntimeError('poll broke'); retried"]
    assert h.settled == [("ack_many", [a])]
    assert len(h.jobs) == 1  # b is still in flight


def test_fire_and_forget_counts_the_reports_and_neither_acks_again_nor_fails() -> None:
    h = Recording(fire_and_forget=True)
    a = h.tuple("k", "a")
    b = h.tuple("k", "b")
    assert h.settled == [("ack_many", [a]), ("ack_many", [b])]
    h.stub.deliver(1)
    h.stub.deliver(1, err="Local: Message timed out")
    h.run_jobs()
    assert h.settled == [("ack_many", [a]), ("ack_many", [b])]
    assert h.errors == ["KafkaBolt: delivery failed: Local: Message timed out; tuple failed"]
    m = h.bolt.metrics()
    assert (m["delivered"], m["delivery_failures"], m["in_flight"]) == (1, 1, 0) and h.jobs == []


def test_a_produce_error_fails_that_tuple_only_and_names_the_topic() -> None:
    h = Recording()
    stub = h.stub

    def produce(topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        if value == b"big":
            raise RuntimeError("Broker: Message size too large")
        StubProducer.produce(stub, topic, value=value, key=key, on_delivery=on_delivery)

    stub.produce = produce  # type: ignore[method-assign]
    a = h.tuple("k", "a")
    big = h.tuple("k", "big")
    c = h.tuple("k", "c")
    assert [r[2] for r in stub.records] == [b"a", b"c"]
    assert h.settled == [("fail", big)]
    assert h.errors == ["KafkaBolt: producing to 'out' failed: Broker: Message size too large; tuple failed"]
    m = h.bolt.metrics()
    assert (m["produced"], m["in_flight"], m["delivery_failures"]) == (2, 2, 1)
    stub.deliver(2)
    h.run_jobs()
    assert h.settled == [("fail", big), ("ack_many", [a, c])]


def test_held_tuples_go_out_in_order_a_refused_one_is_failed_and_a_full_queue_keeps_them() -> None:
    h = Recording(capacity=1)
    a = h.tuple("k", "a")
    b = h.tuple("k", "b")
    c = h.tuple("k", "c")
    assert h.bolt.metrics()["queue_full"] == 1 and h.bolt.metrics()["backlog"] == 2
    fn, done = h.jobs.pop(0)
    done(fn(), None)  # nothing delivered: the queue is still full, b and c stay held
    assert [r[2] for r in h.stub.records] == [b"a"] and h.bolt.metrics()["queue_full"] == 2
    assert h.bolt.metrics()["backlog"] == 2 and len(h.jobs) == 1
    real = h.stub.produce

    def refuse_b(topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        if value == b"b":
            raise RuntimeError("Broker: Unknown topic or partition")
        real(topic, value=value, key=key, on_delivery=on_delivery)

    h.stub.produce = refuse_b  # type: ignore[method-assign]
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("ack_many", [a]), ("fail", b)]
    assert h.errors == ["KafkaBolt: producing to 'out' failed: Broker: Unknown topic or partition; "
                        "tuple failed"]
    assert [r[2] for r in h.stub.records] == [b"a", b"c"] and h.bolt.metrics()["backlog"] == 0
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("ack_many", [a]), ("fail", b), ("ack_many", [c])]
    m = h.bolt.metrics()
    assert (m["produced"], m["delivered"], m["delivery_failures"], m["in_flight"]) == (2, 2, 1, 0)


def test_a_held_tuple_is_acked_when_handed_over_with_fire_and_forget() -> None:
    h = Recording(capacity=1, fire_and_forget=True)
    a = h.tuple("k", "a")
    b = h.tuple("k", "b")
    assert h.settled == [("ack_many", [a])]
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("ack_many", [a]), ("ack", b)]
    assert h.bolt.metrics()["in_flight"] == 1 and h.bolt.metrics()["produced"] == 2


def test_past_max_backlog_the_report_names_the_setting_and_what_waits() -> None:
    h = Recording(capacity=1, max_backlog=2)
    h.tuple("k", "a")
    h.tuple("k", "b")
    h.tuple("k", "c")
    d = h.tuple("k", "d")
    assert h.settled == [("fail", d)]
    assert h.errors == ["KafkaBolt: the producer's local queue is full and 2 records wait "
                        "(KafkaBoltConfig.max_backlog); tuple failed"]
    assert h.bolt.metrics()["backlog_overflow"] == 1 and h.bolt.metrics()["backlog"] == 2


def test_rows_of_several_batches_served_by_one_poll_settle_each_batch_once() -> None:
    h = Recording()
    a = h.batch("a1", "a2")
    b = h.batch("b1")
    c = h.batch("c1", "c2")
    h.stub.deliver(4)  # a1 a2 b1 c1
    h.run_jobs()
    assert h.settled == [("ack", a), ("ack", b)]
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("ack", a), ("ack", b), ("ack", c)]
    assert h.bolt.metrics()["delivered"] == 5 and h.jobs == []


def test_a_batch_fails_at_its_first_delivery_error_and_the_report_names_the_last_error() -> None:
    h = Recording()
    a = h.batch("a1", "a2", "a3")
    b = h.batch("b1")
    h.stub.deliver(1, err="first")
    h.stub.deliver(1, err="second")
    h.stub.deliver(2)
    h.run_jobs()
    assert h.settled == [("ack", b), ("fail", a)]
    assert h.errors == ["KafkaBolt: delivery failed: second; its batch failed"]
    m = h.bolt.metrics()
    assert (m["delivered"], m["delivery_failures"], m["in_flight"]) == (2, 2, 0) and h.jobs == []


def test_a_batch_fails_on_its_row_refused_at_produce_naming_topic_and_size() -> None:
    h = Recording()
    real = h.stub.produce

    def refuse(topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        if value == b"x2":
            raise RuntimeError("Broker: Message size too large")
        real(topic, value=value, key=key, on_delivery=on_delivery)

    h.stub.produce = refuse  # type: ignore[method-assign]
    a = h.batch("x1", "x2", "x3")
    assert h.settled == [("fail", a)] and [r[2] for r in h.stub.records] == [b"x1"]
    assert h.errors == ["KafkaBolt: producing to 'out' failed: Broker: Message size too large; "
                        "its batch of 3 tuples failed"]
    m = h.bolt.metrics()
    assert (m["produced"], m["in_flight"], m["delivery_failures"]) == (1, 1, 1)
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("fail", a)] and h.bolt.in_flight == 0


def test_a_held_row_refused_at_produce_fails_its_batch_once() -> None:
    h = Recording(capacity=1)
    a = h.batch("r1", "r2", "r3")
    real = h.stub.produce

    def refuse(topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        if value == b"r2":
            raise RuntimeError("Broker: Unknown topic or partition")
        real(topic, value=value, key=key, on_delivery=on_delivery)

    h.stub.produce = refuse  # type: ignore[method-assign]
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("fail", a)]
    assert h.errors == ["KafkaBolt: producing to 'out' failed: Broker: Unknown topic or partition; "
                        "its batch of 3 tuples failed"]
    assert [r[2] for r in h.stub.records] == [b"r1"]  # r3 belongs to a failed batch: dropped
    assert h.bolt.metrics()["backlog"] == 0 and h.jobs == []


def test_a_batch_over_max_backlog_fails_once_with_the_setting_named() -> None:
    h = Recording(capacity=1, max_backlog=1)
    a = h.batch("a1", "a2", "a3", "a4")
    assert h.settled == [("fail", a)]
    assert h.errors == ["KafkaBolt: the producer's local queue is full and 1 records wait "
                        "(KafkaBoltConfig.max_backlog); tuple failed"] * 2
    assert h.bolt.metrics()["backlog_overflow"] == 2 and h.bolt.metrics()["queue_full"] == 1
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("fail", a)] and [r[2] for r in h.stub.records] == [b"a1"]


def test_a_held_row_handed_over_settles_its_batch_with_fire_and_forget() -> None:
    h = Recording(capacity=2, fire_and_forget=True)
    a = h.batch("a1", "a2", "a3")
    assert h.settled == []
    h.stub.deliver(1)
    h.run_jobs()
    assert h.settled == [("ack", a)]
    m = h.bolt.metrics()
    assert (m["produced"], m["in_flight"], m["backlog"]) == (3, 2, 0)


class Flushing(StubProducer):
    """``flush`` serves every pending record's delivery report, as the client does."""

    def flush(self, timeout: float) -> int:
        self.deliver(len(self.pending))
        self.poll(timeout)
        return 0


def test_cleanup_flushes_and_acks_what_the_flush_delivered() -> None:
    h = Recording()
    h.bolt.producer = flushing = Flushing({})
    a = h.tuple("k", "a")
    b = h.batch("b1", "b2")
    h.bolt.cleanup()
    assert h.settled == [("ack_many", [a]), ("ack", b)]
    assert [r[2] for r in flushing.records] == [b"a", b"b1", b"b2"]


def test_cleanup_after_a_failed_flush_still_applies_the_reports_served_before() -> None:
    h = Recording()
    a = h.tuple("k", "a")
    h.stub.deliver(1)
    h.stub.poll(0)

    def broken(timeout: float) -> int:
        raise RuntimeError("flush broke")

    h.stub.flush = broken  # type: ignore[method-assign]
    h.bolt.cleanup()
    assert h.settled == [("ack_many", [a])]


def test_cleanup_on_an_unbound_collector_does_not_raise() -> None:
    h = Harness()
    h.send("k", "a")
    h.stub.deliver(1)
    h.stub.poll(0)

    def unbound(_tuples: Any) -> None:
        raise RuntimeError("no collector bound")

    b: Any = h.bolt
    b.ack_many = unbound
    h.bolt.cleanup()  # a shutdown after the task was unbound: nothing raised


def test_the_handle_and_the_declared_outputs() -> None:
    cfg = KafkaBoltConfig(bootstrap_servers="h:1", topic="out")
    handle = KafkaBolt.of(cfg)
    assert handle.component_class is KafkaBolt and handle.component_kwargs == {"config": cfg.to_doc()}
    assert KafkaBolt.declare_outputs({"config": cfg.to_doc()}) == {}


def test_a_tuple_arriving_while_others_wait_for_queue_space_keeps_its_place() -> None:
    h = Recording(capacity=1)
    h.tuple("k", "a")
    h.tuple("kb", "b")  # held
    h.stub.deliver(1)   # the queue has room again, but b is still held until the poll job ends
    h.tuple("kc", "c")
    h.batch("d1")
    assert h.stub.records == [("out", b"k", b"a")] and h.bolt.metrics()["backlog"] == 3
    h.run_jobs()
    h.stub.deliver(1)
    h.run_jobs()
    h.stub.deliver(1)
    h.run_jobs()
    assert h.stub.records == [("out", b"k", b"a"), ("out", b"kb", b"b"), ("out", b"kc", b"c"),
                              ("out", b"k", b"d1")]


def test_one_execute_batch_holds_every_tuple_past_a_full_queue_in_order() -> None:
    h = Recording(capacity=1)
    tuples = [Tuple([f"k{i}", f"m{i}"], "default", 1, "src", Fields(["key", "message"])) for i in range(4)]
    h.bolt.execute_batch(tuples)
    m = h.bolt.metrics()
    assert (m["produced"], m["backlog"], m["queue_full"]) == (1, 3, 1)
    for _ in range(4):
        h.stub.deliver(1)
        h.run_jobs()
    assert h.stub.records == [("out", f"k{i}".encode(), f"m{i}".encode()) for i in range(4)]
    assert h.settled == [("ack_many", [t]) for t in tuples] and h.jobs == []


def test_every_row_of_a_batch_past_a_full_queue_is_held_and_written_in_order() -> None:
    h = Recording(capacity=1)
    b = ColumnBatch([[f"k{i}", f"m{i}"] for i in range(5)], "default", 1, "src", Fields(["key", "message"]))
    h.bolt.execute_columns(b)
    m = h.bolt.metrics()
    assert (m["produced"], m["backlog"], m["queue_full"]) == (1, 4, 1)
    for _ in range(5):
        assert h.settled == []
        h.stub.deliver(1)
        h.run_jobs()
    assert h.stub.records == [("out", f"k{i}".encode(), f"m{i}".encode()) for i in range(5)]
    assert h.settled == [("ack", b)] and h.jobs == []
    m = h.bolt.metrics()
    assert (m["produced"], m["delivered"], m["in_flight"], m["queue_full"]) == (5, 5, 0, 4)


def test_a_held_tuple_that_the_broker_then_refuses_is_failed_with_its_error() -> None:
    h = Recording(capacity=1)
    a = h.tuple("k", "a")
    b = h.tuple("k", "b")
    h.stub.deliver(1)
    h.run_jobs()  # a acked, b handed over
    h.stub.deliver(1, err="Broker: Record list too large")
    h.run_jobs()
    assert h.settled == [("ack_many", [a]), ("fail", b)]
    assert h.errors == ["KafkaBolt: delivery failed: Broker: Record list too large; tuple failed"]


def test_the_counters_add_up_over_tuples_and_batches() -> None:
    h = Recording(capacity=3)
    h.batch("a1", "a2")
    h.batch("b1", "b2", "b3")
    h.tuple("k", "c")
    m = h.bolt.metrics()
    assert (m["produced"], m["in_flight"], m["queue_full"], m["backlog"]) == (3, 3, 1, 3)
    h.stub.deliver(3)
    h.run_jobs()
    m = h.bolt.metrics()
    assert (m["produced"], m["delivered"], m["in_flight"], m["backlog"]) == (6, 3, 3, 0)


def test_with_fire_and_forget_every_held_tuple_counts_as_in_flight_when_handed_over() -> None:
    h = Recording(capacity=2, fire_and_forget=True)
    h.tuple("k", "a")
    h.tuple("k", "b")
    h.tuple("k", "c")  # held
    h.stub.deliver(1)
    h.run_jobs()
    assert h.bolt.metrics()["in_flight"] == 2 and h.bolt.metrics()["produced"] == 3


def test_each_refused_produce_is_counted() -> None:
    h = Recording()

    def refuse(topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        raise RuntimeError("Broker: Unknown topic or partition")

    h.stub.produce = refuse  # type: ignore[method-assign]
    h.tuple("k", "a")
    h.tuple("k", "b")
    h.batch("c")
    assert h.bolt.metrics()["delivery_failures"] == 3 and len(h.errors) == 3


def test_the_bolt_builds_a_real_client_producer_from_its_settings() -> None:
    import confluent_kafka

    producer = _bolt._producer({"bootstrap.servers": "127.0.0.1:1", "client.id": "stormpy-t-1"})
    assert isinstance(producer, confluent_kafka.Producer)
    assert producer.flush(0) == 0
    assert KafkaBolt.producer_factory is _bolt._producer


def test_every_full_queue_is_counted_on_each_path() -> None:
    h = Recording(capacity=1)
    h.tuple("k", "a")
    h.tuple("k", "b")   # full: held
    h.stub.deliver(1)
    h.run_jobs()        # b handed over from the backlog: the queue is full again, nothing held
    assert h.bolt.metrics()["queue_full"] == 1 and h.bolt.metrics()["backlog"] == 0
    h.tuple("k", "c")   # full again on execute
    assert h.bolt.metrics()["queue_full"] == 2
    h.stub.deliver(1)
    h.run_jobs()        # c handed over
    h.batch("d1", "d2")  # the batch's first row finds the queue full
    assert h.bolt.metrics()["queue_full"] == 3 and h.bolt.metrics()["backlog"] == 2


def test_one_execute_batch_counts_every_record_handed_over_and_goes_on_past_a_refused_one() -> None:
    h = Recording()
    real = h.stub.produce

    def refuse(topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        if value == b"big":
            raise RuntimeError("Broker: Message size too large")
        real(topic, value=value, key=key, on_delivery=on_delivery)

    h.stub.produce = refuse  # type: ignore[method-assign]
    fields = Fields(["key", "message"])
    tuples = [Tuple(["k", m], "default", 1, "src", fields) for m in ("a", "big", "c", "d")]
    h.bolt.execute_batch(tuples)
    assert [r[2] for r in h.stub.records] == [b"a", b"c", b"d"]
    assert h.settled == [("fail", tuples[1])]
    m = h.bolt.metrics()
    assert (m["produced"], m["in_flight"], m["delivery_failures"]) == (3, 3, 1)


class TimedFlush(StubProducer):
    """``flush`` records its timeout; ``fail`` makes it raise."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__({})
        self.fail = fail
        self.timeouts: list[float] = []

    def flush(self, timeout: float) -> int:
        self.timeouts.append(timeout)
        if self.fail:
            raise RuntimeError("flush broke")
        return len(self.pending)


def test_cleanup_waits_a_bounded_time_and_logs_what_it_could_not_deliver(
        caplog: pytest.LogCaptureFixture) -> None:
    h = Recording()
    h.bolt.producer = producer = TimedFlush()
    h.tuple("k", "a")
    with caplog.at_level(logging.WARNING, logger="stormpy.connectors.kafka"):
        h.bolt.cleanup()
    assert producer.timeouts == [5.0]
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka bolt task 7: 1 records undelivered at shutdown (0 tuples held)"]
    caplog.clear()
    h.bolt.producer = TimedFlush(fail=True)
    with caplog.at_level(logging.WARNING, logger="stormpy.connectors.kafka"):
        h.bolt.cleanup()
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "Kafka bolt task 7: flush failed: flush broke"
    assert len(messages) == 2 and "records undelivered at shutdown" in messages[1]
