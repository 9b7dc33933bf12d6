"""Record translators (record → tuple values and stream) and tuple listeners of the Kafka spout.

A translator is a class referenced by import path in ``KafkaSpoutConfig.record_translator`` and
built on every worker with ``record_translator_args``. Its class method ``declare_outputs(args)``
names the streams and fields (the spout declares them); ``apply(record)`` returns:

* a list of values for the default stream, or
* a :class:`KafkaTuple` (values plus ``stream``) to emit on another declared stream, or
* ``None``: no tuple for this record (emitted as an empty tuple only when ``emit_null_tuples``;
  otherwise acked directly so its offset can be committed).

An exception from ``apply`` marks the record as bad: with ``fail_fast`` it stops the spout,
otherwise the spout reports it (topic, partition, offset), counts it and acks past it.

A :class:`KafkaTupleListener` (``KafkaSpoutConfig.tuple_listener``) is told about emits, acks,
retries, records past their retry limit and partition reassignments, on the executor loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from stormpy.topology import DEFAULT_STREAM, Stream, TopologyContext

__all__ = ["DefaultRecordTranslator", "KafkaRecord", "KafkaTuple", "KafkaTupleListener", "PolledRecord",
           "RecordTranslator", "StringRecordTranslator"]


class KafkaRecord(NamedTuple):
    """One consumed record (Kafka's ConsumerRecord): key and value are bytes (or None)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    headers: Sequence[tuple[str, bytes | None]] | None = None


#: a record as the spout polls it: a KafkaRecord, or with the default translator the values list
#: ``[topic, partition, offset, key, value]`` (the same first five items)
PolledRecord = KafkaRecord | list[Any]


class KafkaTuple(list[Any]):
    """Values to emit on ``stream`` (Storm's KafkaTuple)."""

    def __init__(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        super().__init__(values)
        self.stream = stream


class RecordTranslator:
    """Base of record translators: emits ``topic, partition, offset, key, value``."""

    fields: Sequence[str] = ("topic", "partition", "offset", "key", "value")

    def __init__(self, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__} takes no arguments, got {sorted(kwargs)}")

    @classmethod
    def declare_outputs(cls, args: Mapping[str, Any]) -> dict[str, Stream]:
        """The streams ``apply`` may emit on (default: the default stream with ``fields``)."""
        return {DEFAULT_STREAM: Stream(list(cls.fields))}

    def apply(self, record: KafkaRecord) -> list[Any] | KafkaTuple | None:
        # indexed: with this translator the spout may hand over a values row (PolledRecord)
        return [record[0], record[1], record[2], record[3], record[4]]


class DefaultRecordTranslator(RecordTranslator):
    """The default: ``topic, partition, offset, key, value`` (key and value as bytes)."""


class StringRecordTranslator(RecordTranslator):
    """Like the default, with key and value decoded as ``encoding`` (UTF-8); an undecodable record
    is a bad record."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def apply(self, record: KafkaRecord) -> list[Any]:
        key = record.key.decode(self.encoding) if record.key is not None else None
        value = record.value.decode(self.encoding) if record.value is not None else None
        return [record.topic, record.partition, record.offset, key, value]


class KafkaTupleListener:
    """Hooks on the spout's tuples (Storm's KafkaTupleListener); every method is a no-op here.

    Message ids are :class:`~stormpy.connectors.kafka._messages.KafkaSpoutMessageId`
    (``(topic, partition, offset)``)."""

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Called once from the spout's ``open``."""

    def on_emit(self, values: list[Any], msg_id: Any) -> None:
        """A tuple was emitted (AT_LEAST_ONCE only, as in Storm)."""

    def on_ack(self, msg_id: Any) -> None:
        """A tuple was acked."""

    def on_retry(self, msg_id: Any) -> None:
        """A failed tuple was scheduled for a retry."""

    def on_max_retry_reached(self, msg_id: Any) -> None:
        """A tuple failed more than ``max_retries`` times: it is acked and committed past."""

    def on_partitions_reassigned(self, partitions: Sequence[Any]) -> None:
        """The spout task's partitions changed; ``partitions`` is the new assignment."""
