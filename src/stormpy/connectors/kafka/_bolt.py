"""KafkaBolt: writes tuples to Kafka (storm-kafka-client's KafkaBolt) without blocking the loop.

Per bolt task: one confluent-kafka Producer. ``execute_batch`` (the batch form; ``execute`` is the
same for one tuple) maps each tuple to a topic, key and value
(:mod:`~stormpy.connectors.kafka._bolt_config`; the default field mapper's field indexes are looked
up once per ``Fields``) and hands the record to the client with a non-blocking ``produce``. The
input tuple is acked only when the broker confirmed the delivery (the client's delivery report,
honouring the producer's ``acks`` property) and failed on a delivery error, so a reliable spout
replays it.

A columnar upstream (``emit_many`` / a spout's ``emit_batch``) reaches ``execute_columns``: one
``ColumnBatch`` per call, its rows produced in order with one delivery callback shared by the
batch (:mod:`~stormpy.connectors.kafka._bolt_batches`); the batch is acked once every row was
delivered and failed as a whole (once) at its first delivery or produce error, so a reliable spout
replays the batch's tuples (at-least-once, the batch being the replay unit). Rows still held for
queue space when their batch failed are not produced.

Delivery reports are served by ``producer.poll`` run off the executor loop
(``run_in_background``), one poll job at a time while records are in flight; the reports collected
by a job are applied (one ``ack_many`` for the delivered tuples, fails, client errors reported) on
the loop when it finishes (:mod:`~stormpy.connectors.kafka._bolt_delivery`, the base class).
With ``fire_and_forget`` tuples are acked at ``produce``; the reports are still polled (they free
the client's memory) and only counted. A full local queue
(``BufferError``) holds the tuple in a backlog, produced again after the next reports freed space,
in order; past ``max_backlog`` held tuples, further ones are failed. Nothing here ever waits on
the broker on the loop except ``cleanup``, which flushes with a bounded wait.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.connectors.kafka._bolt_batches import BatchDelivery, batch_records
from stormpy.connectors.kafka._bolt_config import FieldNameBasedTupleToKafkaMapper, KafkaBoltConfig, to_bytes
from stormpy.connectors.kafka._bolt_delivery import DELIVERY_POLL_SECS, DeliveryReportingBolt
from stormpy.connectors.kafka._client import require_confluent_kafka
from stormpy.topology import ColumnBatch, Stream, TopologyContext, Tuple

__all__ = ["DELIVERY_POLL_SECS", "KafkaBolt"]

log = logging.getLogger("stormpy.connectors.kafka")
#: librdkafka's own log lines (served by the delivery polls), instead of the process's stderr
client_log = logging.getLogger("stormpy.connectors.kafka.librdkafka")

#: ``cleanup`` flushes the records in flight with at most this wait
FLUSH_TIMEOUT_SECS = 5.0


def _producer(conf: Mapping[str, Any]) -> Any:
    return require_confluent_kafka().Producer(dict(conf))


class _Handle:
    """What ``KafkaBolt.of(config)`` returns: the builder takes it in place of a class."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.component_class = KafkaBolt
        self.component_kwargs = {"config": doc}


class KafkaBolt(DeliveryReportingBolt):
    """Writes each input tuple as one Kafka record; acks it once delivered, fails it otherwise.

    ``builder.set_bolt("to-kafka", KafkaBolt.of(KafkaBoltConfig(...)), n).shuffle_grouping(...)``.
    """

    #: tests replace this to drive the bolt against a stub producer: ``factory(conf) -> producer``
    producer_factory: Callable[[Mapping[str, Any]], Any] = staticmethod(_producer)
    clock: Callable[[], float] = staticmethod(time.monotonic)

    @classmethod
    def of(cls, config: KafkaBoltConfig) -> _Handle:
        return _Handle(config.to_doc())

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        KafkaBoltConfig.from_doc(kwargs.get("config"))  # a bad setting fails at submit time
        return {}

    def __init__(self, config: Mapping[str, Any] | KafkaBoltConfig) -> None:
        self.cfg = KafkaBoltConfig.from_doc(config)

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        cfg = self.cfg
        self.context = context
        self.mapper = cfg.mapper()
        #: the default field mapper: key and message read by field index, cached per Fields
        self._by_field = type(self.mapper) is FieldNameBasedTupleToKafkaMapper
        self._topic = cfg.topic
        self._topic_field = cfg.topic_field
        #: filled by the delivery callbacks on the poll thread, drained on the loop
        self._delivered: list[Tuple] = []
        self._failed: list[tuple[Tuple, Any]] = []
        #: the same for the rows of columnar batches (one entry per row)
        self._delivered_rows: list[BatchDelivery] = []
        self._failed_rows: list[tuple[BatchDelivery, Any]] = []
        self._client_errors: deque[str] = deque()
        #: held for queue space: (the tuple, or the row's batch delivery), topic, key, value
        self._backlog: deque[tuple[Tuple | BatchDelivery, str, bytes | None, bytes | None]] = deque()
        self._polling = False
        self.in_flight = 0
        self.counters = {"produced": 0, "delivered": 0, "delivery_failures": 0, "bad_tuples": 0,
                         "no_topic": 0, "queue_full": 0, "backlog_overflow": 0}

        def error_cb(err: Any) -> None:
            self._client_errors.append(f"Kafka producer error: {err}")

        producer_conf = {"bootstrap.servers": cfg.bootstrap_servers,
                         "client.id": f"stormpy-{context.topology_id}-{context.task_id}",
                         **cfg.producer_props, "error_cb": error_cb, "logger": client_log}
        self.producer = self.producer_factory(producer_conf)
        context.register_metric("kafkaBolt", self.metrics)

    def _on_delivery(self, tup: Tuple) -> Callable[[Any, Any], None]:
        """The delivery callback of ``tup``'s record (run on the poll thread)."""
        ok, bad = self._delivered.append, self._failed.append
        return lambda err, _msg: ok(tup) if err is None else bad((tup, err))

    # -- execute -----------------------------------------------------------------------------
    def execute(self, tup: Tuple) -> None:
        self.execute_batch([tup])

    def execute_batch(self, tuples: list[Tuple]) -> None:
        """Hand each tuple's record to the client (see the module doc), in order."""
        produce = self.producer.produce
        ok, bad = self._delivered.append, self._failed.append
        backlog = self._backlog
        fixed_topic = self._topic
        by_field = self._by_field
        key_field, message_field = self._mapper_fields()
        last_fields: Any = None
        ki = mi = -1
        produced = 0
        acks: list[Tuple] = []
        for tup in tuples:
            if tup.is_tick():
                acks.append(tup)
                continue
            try:
                topic = fixed_topic if fixed_topic is not None else self._select_topic(tup)
                if topic is None:
                    self._no_topic(tup)
                    acks.append(tup)
                    continue
                if by_field:
                    f = tup.fields
                    if f is not last_fields or f is None:
                        last_fields = f
                        ki = f.index_of(key_field) if f is not None and key_field in f else -1
                        mi = f.index_of(message_field) if f is not None and message_field in f else -1
                    values = tup.values
                    key = values[ki] if ki >= 0 else None
                    value = values[mi] if mi >= 0 else self.mapper.message(tup)  # raises
                else:
                    key = self.mapper.key(tup)
                    value = self.mapper.message(tup)
                if type(key) is not bytes and key is not None:
                    key = to_bytes(key, "key")
                if type(value) is not bytes and value is not None:
                    value = to_bytes(value, "message")
            except Exception as exc:
                self.counters["bad_tuples"] += 1
                self._report(f"tuple from {tup.component}/{tup.stream} not written: {exc}")
                self.fail(tup)
                continue
            if backlog:  # behind tuples waiting for queue space: keep the order
                self._hold(tup, topic, key, value)
                continue
            try:
                produce(topic, value=value, key=key,
                        on_delivery=lambda err, _msg, t=tup: ok(t) if err is None else bad((t, err)))
            except BufferError:
                self.counters["queue_full"] += 1
                self._hold(tup, topic, key, value)
                continue
            except Exception as exc:  # KafkaException: unknown topic in metadata, record too large
                self._produce_failed(tup, topic, exc)
                continue
            produced += 1
            if self.cfg.fire_and_forget:
                acks.append(tup)
        self.counters["produced"] += produced
        self.in_flight += produced
        if acks:
            self.ack_many(acks)
        self._ensure_polling()

    def execute_columns(self, batch: ColumnBatch) -> None:
        """Hand each row of ``batch`` to the client as one record, in order; the batch is acked
        once all are delivered (at once with ``fire_and_forget``) and failed as a whole at the
        first error. A row that cannot be mapped fails the batch before any row is produced."""
        try:
            topics, keys, values = batch_records(batch, self._topic, self._by_field, self._mapper_fields(),
                                                 self._tuple_record)
        except Exception as exc:
            self.counters["bad_tuples"] += 1
            self._report(f"batch of {batch.n} tuples from {batch.component}/{batch.stream} "
                                      f"not written: {exc}")
            self.fail(batch)
            return
        delivery = BatchDelivery(batch, self._delivered_rows.append, self._failed_rows.append)
        produce = self.producer.produce
        on_delivery = delivery.on_delivery
        backlog = self._backlog
        produced = 0
        for i, topic in enumerate(topics):
            if topic is None:
                self._no_topic_row(batch)
                delivery.unproduced -= 1
                continue
            key, value = keys[i], values[i]
            if backlog:  # behind records waiting for queue space: keep the order
                self._hold(delivery, topic, key, value)
                continue
            try:
                produce(topic, value=value, key=key, on_delivery=on_delivery)
            except BufferError:
                self.counters["queue_full"] += 1
                self._hold(delivery, topic, key, value)
                continue
            except Exception as exc:
                self._produce_failed(delivery, topic, exc)
                break
            produced += 1
        delivery.unproduced -= produced
        delivery.in_flight += produced
        self.counters["produced"] += produced
        self.in_flight += produced
        self._settle(delivery)
        self._ensure_polling()

    def _tuple_record(self, tup: Tuple, fields: tuple[str, str]) -> tuple[str | None, Any, Any]:
        """The topic (None: no topic), key and value of one tuple, through the mapper."""
        topic = self._select_topic(tup)
        if topic is None:
            return None, None, None
        return topic, self.mapper.key(tup), self.mapper.message(tup)

    def _no_topic_row(self, batch: ColumnBatch) -> None:
        self.counters["no_topic"] += 1
        self._report(f"no topic for a tuple of the batch from {batch.component}/{batch.stream} "
                                 f"(field {self._topic_field!r} missing or None, no "
                                 "default_topic); skipped")

    def _mapper_fields(self) -> tuple[str, str]:
        """The key and message field names of the default mapper (unused by other mappers)."""
        mapper = self.mapper
        if isinstance(mapper, FieldNameBasedTupleToKafkaMapper):
            return mapper.key_field, mapper.message_field
        return "", ""

    def _no_topic(self, tup: Tuple) -> None:
        self.counters["no_topic"] += 1
        self._report(f"no topic for tuple from {tup.component}/{tup.stream} "
                                 f"(field {self._topic_field!r} missing or None, no "
                                 "default_topic); acked and skipped")

    def _select_topic(self, tup: Tuple) -> str | None:
        if self._topic is not None:
            return self._topic
        f = tup.fields
        name = self._topic_field
        topic = tup.values[f.index_of(name)] if f is not None and name is not None and name in f else None
        if topic is None:
            return self.cfg.default_topic
        if not isinstance(topic, str):
            raise TypeError(f"KafkaBolt: field {name!r} (KafkaBoltConfig.topic_field) holds "
                            f"{topic!r}, not a topic name")
        return topic

    def _produce(self, item: Tuple | BatchDelivery, topic: str, key: bytes | None,
                 value: bytes | None) -> bool:
        """Hand one held record to the client; False when its local queue is still full. A row
        of a batch that already failed is dropped (its batch is replayed as a whole)."""
        delivery = item if type(item) is BatchDelivery else None
        if delivery is not None and delivery.error is not None:
            return True
        on_delivery = delivery.on_delivery if delivery is not None else self._on_delivery(item)  # type: ignore[arg-type]
        try:
            self.producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
        except BufferError:
            self.counters["queue_full"] += 1
            return False
        except Exception as exc:
            self._produce_failed(item, topic, exc)
            return True
        self.counters["produced"] += 1
        self.in_flight += 1
        if delivery is not None:
            delivery.unproduced -= 1
            delivery.in_flight += 1
            self._settle(delivery)
        elif self.cfg.fire_and_forget:
            self.ack(item)
        return True

    def _produce_failed(self, item: Tuple | BatchDelivery, topic: str, exc: Exception) -> None:
        self.counters["delivery_failures"] += 1
        if type(item) is BatchDelivery:
            self._report(f"producing to {topic!r} failed: {exc}; its batch of "
                                    f"{item.batch.n} tuples failed")
            item.error = exc
            self._settle(item)
        else:
            self._report(f"producing to {topic!r} failed: {exc}; tuple failed")
            self.fail(item)

    def _hold(self, item: Tuple | BatchDelivery, topic: str, key: bytes | None,
              value: bytes | None) -> None:
        if len(self._backlog) >= self.cfg.max_backlog:
            self.counters["backlog_overflow"] += 1
            self._report(f"the producer's local queue is full and {len(self._backlog)} "
                                    "records wait (KafkaBoltConfig.max_backlog); tuple failed")
            if type(item) is BatchDelivery:
                if item.error is None:
                    item.error = BufferError("KafkaBoltConfig.max_backlog reached")
                self._settle(item)
            else:
                self.fail(item)
            return
        self._backlog.append((item, topic, key, value))

    def metrics(self) -> dict[str, Any]:
        """Counters plus the tuples awaiting delivery (``in_flight``) and queue space
        (``backlog``); published as the task metric ``kafkaBolt`` (topology info)."""
        return {**self.counters, "in_flight": self.in_flight, "backlog": len(self._backlog)}

    def cleanup(self) -> None:
        """Flush what is in flight (bounded wait) and apply the last delivery reports."""
        try:
            left = self.producer.flush(FLUSH_TIMEOUT_SECS)
        except Exception as exc:
            left = -1
            log.warning("Kafka bolt task %s: flush failed: %s", self.context.task_id, exc)
        if left:
            log.warning("Kafka bolt task %s: %s records undelivered at shutdown (%d tuples held)",
                        self.context.task_id, left, len(self._backlog))
        try:
            self._apply_reports()
        except RuntimeError:  # collector already unbound
            pass
