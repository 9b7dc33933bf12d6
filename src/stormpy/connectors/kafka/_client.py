"""The consumer the Kafka spout talks to: a thin adapter over confluent-kafka (librdkafka).

confluent-kafka is the ``[kafka]`` extra and is imported lazily: importing the connector works
without it; :func:`require_confluent_kafka` (called when a spout opens) raises
:class:`KafkaUnavailableError` naming the ``pip install`` to run.

:class:`KafkaConsumerClient` speaks in plain values (:class:`TopicPartition`, ints,
:class:`OffsetAndMetadata`, :class:`KafkaRecord`) so the spout can be tested against a stub with
the same methods. Calls that go to the broker and may block (``topics``, ``committed``,
``commit_sync``, ``close``) take a timeout or are run off the executor loop by the spout;
``consume`` is called with a short timeout; the rest only act on the local client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stormpy.connectors.kafka._messages import OffsetAndMetadata, TopicPartition
from stormpy.connectors.kafka._translator import KafkaRecord

__all__ = ["KAFKA_EXTRA", "KafkaConsumerClient", "KafkaUnavailableError", "require_confluent_kafka"]

KAFKA_EXTRA = "stormpy-runtime[kafka]"


class KafkaUnavailableError(ImportError):
    """confluent-kafka is not installed; the message says what to install."""


def require_confluent_kafka() -> Any:
    """The ``confluent_kafka`` module, or KafkaUnavailableError naming the extra."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise KafkaUnavailableError(
            f"the Kafka connector needs confluent-kafka, which is not installed ({exc}); install the "
            f"extra: pip install '{KAFKA_EXTRA}'") from None
    return confluent_kafka


class KafkaConsumerClient:
    """A confluent-kafka Consumer with manual assignment and commits left to the spout.

    ``on_error(text)`` receives client-level errors (broker down, authentication) and
    ``on_commit_error(text)`` failed asynchronous commits; both are called from ``consume`` on
    the caller's thread.
    """

    def __init__(self, conf: Mapping[str, Any], on_error: Callable[[str], None],
                 on_commit_error: Callable[[str], None]) -> None:
        ck = require_confluent_kafka()
        self._ck = ck

        def error_cb(err: Any) -> None:
            on_error(f"Kafka client error: {err}")

        def commit_cb(err: Any, partitions: Any) -> None:
            if err is not None:
                on_commit_error(f"asynchronous offset commit failed: {err}")
            for p in partitions or ():
                if p.error is not None:
                    on_commit_error(f"asynchronous offset commit of {p.topic}-{p.partition} failed: "
                                    f"{p.error}")

        self._consumer = ck.Consumer({**conf, "error_cb": error_cb, "on_commit": commit_cb})

    def _tp(self, tp: TopicPartition, offset: int | None = None, metadata: str | None = None) -> Any:
        if offset is None:
            return self._ck.TopicPartition(tp.topic, tp.partition)
        if metadata is None:
            return self._ck.TopicPartition(tp.topic, tp.partition, offset)
        return self._ck.TopicPartition(tp.topic, tp.partition, offset, metadata=metadata)

    def consume(self, max_records: int, timeout_secs: float) -> tuple[list[KafkaRecord], list[str]]:
        """Records ready now (waiting at most ``timeout_secs``) and the texts of fetch errors."""
        records: list[KafkaRecord] = []
        errors: list[str] = []
        partition_eof = self._ck.KafkaError._PARTITION_EOF
        new, append = tuple.__new__, records.append  # KafkaRecord without its Python-level __new__
        for msg in self._consumer.consume(max_records, timeout_secs):
            err = msg.error()
            if err is not None:
                if err.code() != partition_eof:
                    errors.append(f"fetch error on {msg.topic()}-{msg.partition()}: {err}")
                continue
            ts_type, ts = msg.timestamp()
            append(new(KafkaRecord, (msg.topic(), msg.partition(), msg.offset(), msg.key(),
                                     msg.value(), ts if ts_type else None, msg.headers())))
        return records, errors

    def consume_rows(self, max_records: int, timeout_secs: float) -> tuple[list[list[Any]], list[str]]:
        """As ``consume``, each record as the values list ``[topic, partition, offset, key,
        value]`` (the default translator's tuple; indexable as a ``KafkaRecord``'s first five)."""
        rows: list[list[Any]] = []
        errors: list[str] = []
        append = rows.append
        for msg in self._consumer.consume(max_records, timeout_secs):
            err = msg.error()
            if err is not None:
                if err.code() != self._ck.KafkaError._PARTITION_EOF:
                    errors.append(f"fetch error on {msg.topic()}-{msg.partition()}: {err}")
                continue
            append([msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()])
        return rows, errors

    def assign(self, starts: Mapping[TopicPartition, int]) -> None:
        """Add partitions to the assignment, each starting at its offset (or a logical offset)."""
        if starts:
            self._consumer.incremental_assign([self._tp(tp, off) for tp, off in starts.items()])

    def unassign(self, partitions: Iterable[TopicPartition]) -> None:
        parts = [self._tp(tp) for tp in partitions]
        if parts:
            self._consumer.incremental_unassign(parts)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        parts = [self._tp(tp) for tp in partitions]
        if parts:
            self._consumer.pause(parts)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        parts = [self._tp(tp) for tp in partitions]
        if parts:
            self._consumer.resume(parts)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._consumer.seek(self._tp(tp, offset))

    def position(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The next offset the application will consume per partition (only known ones)."""
        parts = [self._tp(tp) for tp in partitions]
        if not parts:
            return {}
        return {TopicPartition(p.topic, p.partition): p.offset
                for p in self._consumer.position(parts) if p.offset >= 0}

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> dict[TopicPartition, str]:
        """Commit and wait; returns the partitions whose commit failed with the error text.
        Raises (KafkaException) when the whole commit failed."""
        parts = [self._tp(tp, om.offset, om.metadata) for tp, om in offsets.items()]
        result = self._consumer.commit(offsets=parts, asynchronous=False) or []
        return {TopicPartition(p.topic, p.partition): str(p.error) for p in result if p.error is not None}

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        parts = [self._tp(tp, om.offset, om.metadata) for tp, om in offsets.items()]
        if parts:
            self._consumer.commit(offsets=parts, asynchronous=True)

    def committed(self, partitions: Iterable[TopicPartition], timeout_secs: float
                  ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets (None where there is none)."""
        parts = [self._tp(tp) for tp in partitions]
        if not parts:
            return {}
        return {TopicPartition(p.topic, p.partition):
                (OffsetAndMetadata(p.offset, p.metadata) if p.offset >= 0 else None)
                for p in self._consumer.committed(parts, timeout=timeout_secs)}

    def topics(self, timeout_secs: float) -> dict[str, int]:
        """Every topic the broker knows with its partition count (topics in error left out)."""
        meta = self._consumer.list_topics(timeout=timeout_secs)
        return {name: len(t.partitions) for name, t in meta.topics.items()
                if t.error is None and t.partitions}

    def watermarks(self, tp: TopicPartition) -> tuple[int, int] | None:
        """Low and high watermark as last seen by the fetcher (no request), or None."""
        try:
            low, high = self._consumer.get_watermark_offsets(self._tp(tp), cached=True)
        except Exception:
            return None
        return (low, high) if high >= 0 else None

    def close(self) -> None:
        self._consumer.close()
