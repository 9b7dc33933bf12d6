"""Topic partitions, message ids and commit points of the Kafka spout (plain values, no client)."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["KafkaSpoutMessageId", "OffsetAndMetadata", "TopicPartition"]


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A commit point: ``offset`` is the next offset to consume (Kafka's commit semantics)."""

    offset: int
    metadata: str | None = None


class KafkaSpoutMessageId:
    """The message id of a tuple emitted for a record: ``(topic, partition, offset)``.

    It equals (and hashes like) the plain tuple ``(topic, partition, offset)``. ``num_fails``
    counts how often the tuple failed (the retry service schedules by it); ``null_tuple`` marks a
    record the translator turned into no tuple, acked directly.
    """

    __slots__ = ("_key", "null_tuple", "num_fails", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int, offset: int, num_fails: int = 0,
                 null_tuple: bool = False) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.num_fails = num_fails
        self.null_tuple = null_tuple
        self._key = (topic, partition, offset)

    @classmethod
    def of(cls, tp: TopicPartition, offset: int) -> KafkaSpoutMessageId:
        return cls(tp.topic, tp.partition, offset)

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, KafkaSpoutMessageId):
            return self._key == other._key
        if isinstance(other, tuple):
            return self._key == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key)

    def __iter__(self) -> Any:
        return iter(self._key)

    def __repr__(self) -> str:
        return f"KafkaSpoutMessageId({self.topic!r}, {self.partition}, {self.offset}, fails={self.num_fails})"
