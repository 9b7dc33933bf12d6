"""KafkaBolt logic against a stub producer: config errors naming the setting, topic selection,
the field mapper, acks only on delivery reports, fails on delivery errors, the full-queue backlog
and its bound. Background jobs are queued and run by the test (as the executor loop would)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from stormpy.connectors.kafka import (
    KafkaBolt,
    KafkaBoltConfig,
    KafkaConfigError,
    TupleToKafkaMapper,
)
from stormpy.topology import Fields, InvalidTopologyError, TopologyBuilder, Tuple


class StubProducer:
    """Records produced records; ``deliver(err)`` queues a report for the oldest undelivered one,
    served by the next ``poll``. ``capacity`` bounds the local queue (BufferError beyond it)."""

    def __init__(self, conf: Mapping[str, Any], capacity: int = 1000) -> None:
        self.conf = dict(conf)
        self.capacity = capacity
        self.pending: list[tuple[str, bytes | None, bytes | None, Callable[[Any, Any], None]]] = []
        self.ready: list[tuple[Any, Callable[[Any, Any], None]]] = []
        self.records: list[tuple[str, bytes | None, bytes | None]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None,
                on_delivery: Callable[[Any, Any], None] | None = None) -> None:
        if len(self.pending) >= self.capacity:
            raise BufferError("Local: Queue full")
        assert on_delivery is not None
        self.pending.append((topic, key, value, on_delivery))
        self.records.append((topic, key, value))

    def deliver(self, n: int = 1, err: Any = None) -> None:
        for _ in range(n):
            *_, cb = self.pending.pop(0)
            self.ready.append((err, cb))

    def poll(self, timeout: float) -> int:
        ready, self.ready = self.ready, []
        for err, cb in ready:
            cb(err, None)
        return len(ready)

    def flush(self, timeout: float) -> int:
        return len(self.pending)


class Context:
    topology_id = "topo"
    task_id = 7

    def __init__(self) -> None:
        self.metrics: dict[str, Any] = {}

    def register_metric(self, name: str, fn: Any) -> None:
        self.metrics[name] = fn


class Harness:
    def __init__(self, capacity: int = 1000, **settings: Any) -> None:
        settings.setdefault("topic", "out")
        cfg = KafkaBoltConfig(bootstrap_servers="127.0.0.1:1", **settings)
        self.bolt = KafkaBolt(cfg.to_doc())
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.errors: list[str] = []
        self.jobs: list[tuple[Callable[[], Any], Callable[[Any, BaseException | None], None]]] = []
        self.producer: StubProducer | None = None

        def factory(conf: Mapping[str, Any]) -> StubProducer:
            self.producer = StubProducer(conf, capacity)
            return self.producer

        b: Any = self.bolt
        b.producer_factory = factory
        b.ack = lambda t: self.acked.append(t.values)
        b.ack_many = lambda ts: self.acked.extend(t.values for t in ts)
        b.fail = lambda t: self.failed.append(t.values)
        b.report_error = self.errors.append
        b.run_in_background = lambda fn, done: self.jobs.append((fn, done))
        self.bolt.prepare({}, Context())  # type: ignore[arg-type]

    @property
    def stub(self) -> StubProducer:
        assert self.producer is not None
        return self.producer

    def run_jobs(self) -> None:
        """Run the pending background job (at most one at a time) and hand its result back."""
        while self.jobs:
            fn, done = self.jobs.pop(0)
            done(fn(), None)
            if not self.stub.ready:
                break

    def send(self, *values: Any, fields: tuple[str, ...] = ("key", "message")) -> None:
        self.bolt.execute(Tuple(list(values), "default", 1, "src", Fields(list(fields))))


def test_a_tuple_is_acked_only_when_its_delivery_is_reported() -> None:
    h = Harness()
    h.send("k", "hello")
    h.send(None, b"raw")
    assert h.stub.records == [("out", b"k", b"hello"), ("out", None, b"raw")]
    assert h.acked == [] and len(h.jobs) == 1  # one poll job while records are in flight
    h.run_jobs()
    assert h.acked == [] and len(h.jobs) == 1   # nothing delivered yet: polled again
    h.stub.deliver(1)
    h.run_jobs()
    assert h.acked == [["k", "hello"]]
    h.stub.deliver(1, err="Local: Message timed out")
    h.run_jobs()
    assert h.failed == [[None, b"raw"]]
    assert any("Message timed out" in e for e in h.errors)
    assert h.jobs == [] and h.bolt.in_flight == 0  # nothing in flight: no more polling
    published = h.bolt.context.metrics["kafkaBolt"]()  # type: ignore[attr-defined]
    assert published["delivered"] == 1 and published["delivery_failures"] == 1


def test_producer_props_pass_through_and_the_bolt_owns_the_callbacks() -> None:
    h = Harness(producer_props={"acks": "all", "linger.ms": 5})
    assert h.stub.conf["acks"] == "all" and h.stub.conf["linger.ms"] == 5
    assert h.stub.conf["bootstrap.servers"] == "127.0.0.1:1" and callable(h.stub.conf["error_cb"])


def test_topic_from_a_field_with_a_default_and_skipped_tuples_without_topic() -> None:
    h = Harness(topic=None, topic_field="topic", default_topic="fallback")
    h.send("a", "k", "m", fields=("topic", "key", "message"))
    h.send(None, "k", "m", fields=("topic", "key", "message"))
    h.send("k", "m")  # no topic field at all
    assert [r[0] for r in h.stub.records] == ["a", "fallback", "fallback"]
    h2 = Harness(topic=None, topic_field="topic")
    h2.send("k", "m")
    assert h2.stub.records == [] and h2.acked == [["k", "m"]]  # Storm: no topic → acked, skipped
    assert any("no topic" in e for e in h2.errors)


class Upper(TupleToKafkaMapper):
    def __init__(self, suffix: str = "") -> None:
        self.suffix = suffix

    def key(self, tup: Tuple) -> Any:
        return None

    def message(self, tup: Tuple) -> Any:
        return tup.values[0].upper() + self.suffix


def test_the_field_mapper_and_a_custom_mapper() -> None:
    h = Harness(key_field="word", message_field="count")
    h.send("cow", 3, fields=("word", "count"))
    h.send(5, fields=("count",))  # no key field: null key
    assert h.stub.records == [("out", b"cow", b"3"), ("out", None, b"5")]
    h2 = Harness(tuple_mapper=f"{__name__}:Upper", tuple_mapper_args={"suffix": "!"})
    h2.send("moo", fields=("w",))
    assert h2.stub.records == [("out", None, b"MOO!")]


def test_a_tuple_that_cannot_be_mapped_is_reported_and_failed() -> None:
    h = Harness()
    h.send("k", fields=("key",))  # no message field
    h.send("k", {"a": 1})
    assert h.failed == [["k"], ["k", {"a": 1}]] and h.stub.records == []
    assert any("'message'" in e for e in h.errors)


def test_a_full_local_queue_holds_tuples_in_order_until_reports_free_space() -> None:
    h = Harness(capacity=2)
    for i in range(5):
        h.send(None, f"m{i}")
    assert [r[2] for r in h.stub.records] == [b"m0", b"m1"]  # three held, nothing dropped or failed
    assert h.failed == [] and h.bolt.metrics()["backlog"] == 3
    h.stub.deliver(2)
    h.run_jobs()
    assert [r[2] for r in h.stub.records] == [b"m0", b"m1", b"m2", b"m3"]
    h.stub.deliver(2)
    h.run_jobs()
    h.stub.deliver(1)
    h.run_jobs()
    assert h.acked == [[None, f"m{i}"] for i in range(5)] and h.jobs == []


def test_past_max_backlog_tuples_are_failed() -> None:
    h = Harness(capacity=1, max_backlog=1)
    for i in range(3):
        h.send(None, f"m{i}")
    assert h.failed == [[None, "m2"]] and h.bolt.metrics()["backlog_overflow"] == 1


def test_fire_and_forget_acks_at_once() -> None:
    h = Harness(fire_and_forget=True)
    h.send("k", "m")
    assert h.acked == [["k", "m"]]


@pytest.mark.parametrize(("settings", "named"), [
    ({}, "KafkaBoltConfig.topic"),
    ({"topic": "a", "topic_field": "t"}, "KafkaBoltConfig.topic"),
    ({"topic": ""}, "KafkaBoltConfig.topic"),
    ({"topic": "a", "default_topic": "b"}, "KafkaBoltConfig.default_topic"),
    ({"topic": "a", "message_field": ""}, "KafkaBoltConfig.message_field"),
    ({"topic": "a", "producer_props": {"bootstrap.servers": "x"}}, "KafkaBoltConfig.producer_props"),
    ({"topic": "a", "producer_props": {"error_cb": "x"}}, "KafkaBoltConfig.producer_props"),
    ({"topic": "a", "producer_props": []}, "KafkaBoltConfig.producer_props"),
    ({"topic": "a", "tuple_mapper": "nowhere.at.all:Mapper"}, "KafkaBoltConfig.tuple_mapper"),
    ({"topic": "a", "tuple_mapper": "collections:OrderedDict"}, "KafkaBoltConfig.tuple_mapper"),
    ({"topic": "a", "max_backlog": -1}, "KafkaBoltConfig.max_backlog"),
    ({"topic": "a", "fire_and_forget": "yes"}, "KafkaBoltConfig.fire_and_forget"),
    ({"topic": "a", "bootstrap_servers": ""}, "KafkaBoltConfig.bootstrap_servers"),
])
def test_bad_settings_name_the_setting(settings: dict[str, Any], named: str) -> None:
    doc = {"bootstrap_servers": "127.0.0.1:9092", **settings}
    with pytest.raises(KafkaConfigError, match=named.replace(".", r"\.")):
        KafkaBoltConfig.from_doc(doc)


def test_a_bad_setting_fails_at_submit_time() -> None:
    builder = TopologyBuilder()
    with pytest.raises(InvalidTopologyError, match=r"component 'out': KafkaBoltConfig\.topic"):
        builder.set_bolt("out", KafkaBolt, kwargs={"config": {"bootstrap_servers": "h:1"}})
    with pytest.raises(KafkaConfigError, match="unknown settings"):
        KafkaBoltConfig.from_doc({"bootstrap_servers": "h:1", "topik": "a"})
