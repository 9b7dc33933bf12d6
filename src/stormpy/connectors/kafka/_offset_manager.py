"""OffsetManager: acked and committed offsets of one assigned partition (storm-kafka-client's).

Built on :class:`stormpy.connectors._offsets.AckedPrefix`. Offsets follow Kafka's commit semantics:
``committed_offset`` is the next offset to consume, so committing ``n`` means every emitted offset
below ``n`` was acked (or no longer exists in the log).

* ``add_to_emit_msgs(offset)`` — an offset was emitted (a replay of it changes nothing);
  ``add_emitted_run(offsets)`` — several (the spout's batch path: new records in offset order).
* ``add_to_ack_msgs(msg_id)`` — its tuple was acked (``msg_id`` a :class:`KafkaSpoutMessageId`,
  a ``(topic, partition, offset)`` tuple or an offset). Acks at or below an offset already
  committed are ignored (they can arrive after a commit or after a replay).
  ``ack_emitted(offset)`` / ``ack_emitted_many(offsets)`` — the same for offsets known to be
  emitted and unacked (the spout's in-flight tuples), without searching for them.
* ``find_next_commit_offset(metadata)`` — the :class:`OffsetAndMetadata` to commit next, or None:
  the acked offsets directly after the committed one, in order. A gap (offsets never emitted,
  left by compaction or transaction markers) does not block: the next acked offset after a gap is
  committable when nothing emitted lies in the gap; an emitted but unacked offset does block.
* ``commit(committed)`` — mark that commit done (drops the state below it); returns how many
  acked offsets it covered.
* ``num_uncommitted_offsets`` — emitted offsets not yet committed, acked or not (what
  ``max_uncommitted_offsets`` caps); ``nth_uncommitted_offset_after_committed(n)`` — the n-th of
  them in offset order (1-based; IndexError past the end): with committed offset 0 and offsets
  1, 2, 8, 10 emitted, ``n=3`` gives 8.
* ``contains(msg_id)`` — acked and not yet committed; ``has_committed`` — ``commit`` was called;
  ``latest_emitted_offset`` — the largest offset emitted (-1 before any).
"""

from __future__ import annotations

from typing import Any

from stormpy.connectors._offsets import AckedPrefix
from stormpy.connectors.kafka._messages import KafkaSpoutMessageId, OffsetAndMetadata, TopicPartition

__all__ = ["OffsetManager"]


def _offset_of(msg_id: Any) -> int:
    if isinstance(msg_id, int):
        return msg_id
    if isinstance(msg_id, KafkaSpoutMessageId):
        return msg_id[2]
    offset = getattr(msg_id, "offset", None)
    if isinstance(offset, int):
        return offset
    try:
        return int(msg_id[2])
    except (TypeError, IndexError, ValueError):
        raise TypeError(f"not a Kafka message id (topic, partition, offset): {msg_id!r}") from None


class OffsetManager:
    """Acked and committed offsets of ``tp``; ``initial_fetch_offset`` is where consumption starts
    (the committed offset until the first commit)."""

    __slots__ = ("_committed", "_has_committed", "_prefix", "initial_fetch_offset", "tp")

    def __init__(self, tp: TopicPartition, initial_fetch_offset: int) -> None:
        if initial_fetch_offset < 0:
            raise ValueError(f"{tp}: initial fetch offset must be >= 0, got {initial_fetch_offset}")
        self.tp = tp
        self.initial_fetch_offset = initial_fetch_offset
        self._committed = initial_fetch_offset
        self._has_committed = False
        self._prefix = AckedPrefix()
        self._prefix.commit_through(initial_fetch_offset - 1)

    def add_to_emit_msgs(self, offset: int) -> None:
        self._prefix.emit(offset)

    def add_emitted_run(self, offsets: list[int]) -> None:
        self._prefix.emit_run(offsets)

    def ack_emitted(self, offset: int) -> bool:
        """``add_to_ack_msgs`` of an emitted, unacked offset (no search)."""
        return self._prefix.ack_emitted(offset)

    def ack_emitted_many(self, offsets: list[int]) -> None:
        """``ack_emitted`` of each of ``offsets``."""
        if offsets:
            self._prefix.ack_emitted_many(offsets)

    def add_to_ack_msgs(self, msg_id: Any) -> bool:
        """Record an ack; False when the offset was already committed (ignored)."""
        return self._prefix.ack(_offset_of(msg_id))

    def find_next_commit_offset(self, metadata: str | None = None) -> OffsetAndMetadata | None:
        last = self._prefix.committable()
        if last is None:
            return None
        return OffsetAndMetadata(last + 1, metadata)

    def commit(self, committed: OffsetAndMetadata | int) -> int:
        """Mark ``committed`` (the next offset to consume) as committed; returns the number of
        acked offsets it covered. Committing below the current committed offset changes nothing."""
        offset = committed if isinstance(committed, int) else committed.offset
        self._has_committed = True
        if offset <= self._committed:
            return 0
        self._committed = offset
        return self._prefix.commit_through(offset - 1)

    @property
    def committed_offset(self) -> int:
        """The next offset to consume as far as commits go."""
        return self._committed

    @property
    def has_committed(self) -> bool:
        return self._has_committed

    @property
    def num_uncommitted_offsets(self) -> int:
        return self._prefix.pending

    @property
    def num_acked_uncommitted(self) -> int:
        return self._prefix.acked_count

    def nth_uncommitted_offset_after_committed(self, n: int) -> int:
        return int(self._prefix.nth(n))

    @property
    def latest_emitted_offset(self) -> int:
        latest = self._prefix.latest
        return -1 if latest is None else int(latest)

    def contains(self, msg_id: Any) -> bool:
        """True when ``msg_id``'s offset is acked and not yet committed."""
        return self._prefix.is_acked(_offset_of(msg_id))

    def is_acked(self, offset: int) -> bool:
        """``contains`` by offset."""
        return self._prefix.is_acked(offset)

    def contains_emitted(self, offset: int) -> bool:
        return self._prefix.is_emitted(offset)

    def __repr__(self) -> str:
        return (f"OffsetManager({self.tp}, committed={self._committed}, "
                f"uncommitted={self._prefix.pending}, latest_emitted={self.latest_emitted_offset})")
