"""KafkaBolt's columnar form (``execute_columns``) against a stub producer: a batch's rows are
produced in order with one shared delivery callback, the batch is acked once every row was
delivered and failed once at its first error (delivery, produce, mapping, backlog overflow), rows
held for queue space of a failed batch are never produced, and per-tuple and batch input mix."""

from __future__ import annotations

from typing import Any

from test_kafka_bolt_units import Harness as TupleHarness

from stormpy.topology import ColumnBatch, Fields

FIELDS = ("key", "message")


class Harness(TupleHarness):
    """The tuple harness, recording batches by their first row's message in ``acked``/``failed``."""

    def __init__(self, capacity: int = 1000, **settings: Any) -> None:
        super().__init__(capacity, **settings)
        b: Any = self.bolt
        b.ack = lambda t: self.acked.append(self._name(t))
        b.fail = lambda t: self.failed.append(self._name(t))

    @staticmethod
    def _name(item: Any) -> Any:
        return f"batch:{item.rows[0][-1]}" if type(item) is ColumnBatch else item.values

    def batch(self, *rows: tuple[Any, ...], fields: tuple[str, ...] = FIELDS,
              columns: bool = False) -> ColumnBatch:
        """Hand a batch of ``rows`` to the bolt (built from columns when ``columns``)."""
        if columns:
            cols = [list(c) for c in zip(*rows, strict=True)]
            b = ColumnBatch(None, "default", 1, "src", Fields(list(fields)), columns=cols, n=len(rows))
        else:
            b = ColumnBatch([list(r) for r in rows], "default", 1, "src", Fields(list(fields)))
        self.bolt.execute_columns(b)
        return b


def test_a_batch_is_acked_once_every_row_was_delivered() -> None:
    h = Harness()
    h.batch(("k1", "a"), (None, b"b"), (3, 4.5), columns=True)
    assert h.stub.records == [("out", b"k1", b"a"), ("out", None, b"b"), ("out", b"3", b"4.5")]
    callbacks = {id(p[3]) for p in h.stub.pending}
    assert len(callbacks) == 1  # one delivery callback shared by the batch's rows
    assert h.bolt.in_flight == 3 and len(h.jobs) == 1
    h.stub.deliver(2)
    h.run_jobs()
    assert h.acked == [] and h.bolt.in_flight == 1  # one row still in flight
    h.stub.deliver(1)
    h.run_jobs()
    assert h.acked == ["batch:a"] and h.failed == [] and h.jobs == []
    assert h.bolt.metrics()["delivered"] == 3 and h.bolt.metrics()["produced"] == 3


def test_a_delivery_error_fails_the_batch_once_and_later_reports_change_nothing() -> None:
    h = Harness()
    h.batch(("k", "a"), ("k", "b"), ("k", "c"))
    h.stub.deliver(1, err="Local: Message timed out")
    h.run_jobs()
    assert h.failed == ["batch:a"] and h.acked == []
    assert any("Message timed out" in e and "batch failed" in e for e in h.errors)
    h.stub.deliver(1)
    h.stub.deliver(1, err="Broker: Not enough in-sync replicas")
    h.run_jobs()
    assert h.failed == ["batch:a"] and h.acked == []  # failed once, never acked
    assert h.bolt.in_flight == 0 and h.jobs == []
    m = h.bolt.metrics()
    assert m["delivered"] == 1 and m["delivery_failures"] == 2


def test_batches_settle_independently_in_any_report_order() -> None:
    h = Harness()
    h.batch(("k", "a"), ("k", "a2"))
    h.batch(("k", "b"),)
    h.batch(("k", "c"), ("k", "c2"))
    h.stub.deliver(3)  # a, a2, b
    h.run_jobs()
    assert h.acked == ["batch:a", "batch:b"]
    h.stub.deliver(1, err="boom")
    h.stub.deliver(1)
    h.run_jobs()
    assert h.failed == ["batch:c"] and h.acked == ["batch:a", "batch:b"]


def test_a_row_that_cannot_be_mapped_fails_the_batch_before_anything_is_produced() -> None:
    h = Harness()
    h.batch(("k", "fine"), ("k", {"not": "bytes"}))
    assert h.stub.records == [] and h.failed == ["batch:fine"]
    assert any("batch of 2 tuples from src/default not written" in e and "dict" in e for e in h.errors)
    h2 = Harness()
    h2.batch(("k",), fields=("key",))  # no message field at all
    assert h2.stub.records == [] and h2.failed == ["batch:k"] and h2.jobs == []
    assert any("no field 'message'" in e and "src/default" in e and "fields: ['key']" in e
               for e in h2.errors)
    h2.batch(("k", 1), ("k", [2]))  # the same kind again: counted (the report is rate-limited)
    assert h2.bolt.metrics()["bad_tuples"] == 2 and h2.failed == ["batch:k", "batch:1"]


def test_no_key_field_means_null_keys_and_other_field_names_are_honoured() -> None:
    h = Harness(key_field="word", message_field="count")
    h.batch(("cow", 3), ("pig", 4), fields=("word", "count"), columns=True)
    h.batch((5,), fields=("count",))
    assert h.stub.records == [("out", b"cow", b"3"), ("out", b"pig", b"4"), ("out", None, b"5")]


def test_a_custom_mapper_and_a_topic_field_map_each_row() -> None:
    h = Harness(tuple_mapper="test_kafka_bolt_units:Upper", tuple_mapper_args={"suffix": "!"})
    h.batch(("moo",), ("baa",), fields=("w",))
    assert h.stub.records == [("out", None, b"MOO!"), ("out", None, b"BAA!")]
    h2 = Harness(topic=None, topic_field="topic")
    h2.batch(("t1", "k", "m1"), (None, "k", "m2"), ("t2", "k", "m3"), fields=("topic", "key", "message"))
    assert h2.stub.records == [("t1", b"k", b"m1"), ("t2", b"k", b"m3")]  # no topic: skipped
    assert h2.bolt.metrics()["no_topic"] == 1 and any("no topic" in e for e in h2.errors)
    h2.stub.deliver(2)
    h2.run_jobs()
    assert h2.acked == ["batch:m1"]


def test_a_batch_without_any_topic_is_acked_at_once() -> None:
    h = Harness(topic=None, topic_field="topic")
    h.batch((None, "k", "m"), fields=("topic", "key", "message"))
    assert h.acked == ["batch:m"] and h.stub.records == [] and h.jobs == []


def test_a_full_queue_holds_rows_in_order_and_the_batch_waits_for_all() -> None:
    h = Harness(capacity=2)
    h.batch(*[("k", f"m{i}") for i in range(4)])
    h.send("k", "t")  # a single tuple behind the held rows keeps its place
    assert [r[2] for r in h.stub.records] == [b"m0", b"m1"] and h.bolt.metrics()["backlog"] == 3
    h.stub.deliver(2)
    h.run_jobs()
    assert [r[2] for r in h.stub.records] == [b"m0", b"m1", b"m2", b"m3"] and h.acked == []
    h.stub.deliver(2)
    h.run_jobs()
    assert h.acked == ["batch:m0"]  # every row delivered
    h.stub.deliver(1)
    h.run_jobs()
    assert h.acked == ["batch:m0", ["k", "t"]] and h.jobs == [] and h.bolt.in_flight == 0


def test_held_rows_of_a_failed_batch_are_never_produced() -> None:
    h = Harness(capacity=1)
    h.batch(("k", "a"), ("k", "b"), ("k", "c"))
    assert [r[2] for r in h.stub.records] == [b"a"]
    h.stub.deliver(1, err="boom")
    h.run_jobs()
    assert h.failed == ["batch:a"]
    assert [r[2] for r in h.stub.records] == [b"a"] and h.bolt.metrics()["backlog"] == 0
    assert h.jobs == [] and h.bolt.in_flight == 0


def test_past_max_backlog_the_batch_fails() -> None:
    h = Harness(capacity=1, max_backlog=1)
    h.batch(("k", "a"), ("k", "b"), ("k", "c"))
    assert h.failed == ["batch:a"] and h.bolt.metrics()["backlog_overflow"] == 1
    assert any("max_backlog" in e for e in h.errors)


class Refusing:
    """Wraps the stub producer: ``produce`` raises for the value ``bad``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def produce(self, topic: str, value: Any = None, key: Any = None, on_delivery: Any = None) -> None:
        if value == b"bad":
            raise RuntimeError("Broker: Message size too large")
        self.inner.produce(topic, value=value, key=key, on_delivery=on_delivery)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_produce_error_fails_the_batch_and_stops_producing_it() -> None:
    h = Harness()
    h.bolt.producer = Refusing(h.stub)
    h.batch(("k", "a"), ("k", "bad"), ("k", "c"))
    assert [r[2] for r in h.stub.records] == [b"a"] and h.failed == ["batch:a"]
    assert any("Message size too large" in e and "batch of 3 tuples failed" in e for e in h.errors)
    h.stub.deliver(1)
    h.run_jobs()
    assert h.acked == [] and h.bolt.in_flight == 0 and h.jobs == []


def test_fire_and_forget_acks_a_batch_once_every_row_was_handed_over() -> None:
    h = Harness(capacity=2, fire_and_forget=True)
    h.batch(("k", "a"), ("k", "b"), ("k", "c"))
    assert h.acked == []  # one row still waits for queue space
    h.stub.deliver(2)
    h.run_jobs()
    assert h.acked == ["batch:a"]
    h.stub.deliver(1, err="boom")
    h.run_jobs()
    assert h.failed == [] and h.acked == ["batch:a"]  # reports only counted
    assert h.bolt.metrics()["delivery_failures"] == 1
