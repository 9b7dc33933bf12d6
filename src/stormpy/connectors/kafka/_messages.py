"""Topic partitions, message ids and commit points of the Kafka spout (plain values, no client)."""

from __future__ import annotations

from typing import NamedTuple

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


class KafkaSpoutMessageId(tuple[str, int, int]):
    """The message id of a tuple emitted for a record: the tuple ``(topic, partition, offset)``.

    It is a real tuple (equal to and hashing like the plain one, at C speed in sets and dicts).
    ``num_fails`` counts how often the tuple failed (the retry service schedules by it);
    ``null_tuple`` marks a record the translator turned into no tuple, acked directly.
    """

    #: class-level defaults: an instance gets its own value only once it changes
    num_fails: int = 0
    null_tuple: bool = False

    def __new__(cls, topic: str, partition: int, offset: int, num_fails: int = 0,
                null_tuple: bool = False) -> KafkaSpoutMessageId:
        self = super().__new__(cls, (topic, partition, offset))
        if num_fails:
            self.num_fails = num_fails
        if null_tuple:
            self.null_tuple = null_tuple
        return self

    @classmethod
    def of(cls, tp: TopicPartition, offset: int) -> KafkaSpoutMessageId:
        return cls(tp.topic, tp.partition, offset)

    @property
    def topic(self) -> str:
        return self[0]

    @property
    def partition(self) -> int:
        return self[1]

    @property
    def offset(self) -> int:
        return self[2]

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self[0], self[1])

    def __repr__(self) -> str:
        return f"KafkaSpoutMessageId({self[0]!r}, {self[1]}, {self[2]}, fails={self.num_fails})"
