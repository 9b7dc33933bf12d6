"""RetryExponentialBackoff: when a failed Kafka tuple is replayed (storm-kafka-client's schedule).

The n-th failure of a message (``msg_id.num_fails == n``, counted by the spout before it calls
``schedule``) makes it ready for a retry at::

    now + initial_delay                     if n == 1
    now + delay_period * 2 ** (n - 1)       if n > 1
    capped at now + max_delay

A message that failed more than ``max_retries`` times is not scheduled (``schedule`` returns
False): the spout then acks it, reports it to ``on_max_retry_reached`` and commits past it, so a
record that always fails is never retried forever. ``max_retries=None`` retries without limit.

The delays after the first failure are :class:`~stormpy.host.backoff.Backoff`'s pure rule
(:meth:`~stormpy.host.backoff.Backoff.delay`: first ``2 * delay_period``, doubling, capped at
``max_delay``, the first failure free), so the project has one backoff; the first failure waits
``initial_delay``. Delays are seconds (floats). Time comes from ``clock`` (default
``time.monotonic``): tests pass a simulated clock. One instance per spout task, not thread-safe.
Each call that asks what is ready looks at every scheduled message (there are few: they are the
failed ones in flight).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stormpy._settings import check_int, check_number
from stormpy.connectors.kafka._messages import KafkaSpoutMessageId, TopicPartition
from stormpy.host.backoff import Backoff

__all__ = ["RetryExponentialBackoff"]

_new_id = tuple.__new__  # a fresh KafkaSpoutMessageId (no fails) without the Python-level __new__


def _non_negative(name: str, value: Any) -> float:
    return check_number(f"RetryExponentialBackoff.{name}", value, 0, unit="seconds")


class RetryExponentialBackoff:
    """Exponential backoff retry schedule of failed Kafka tuples (see module doc)."""

    def __init__(self, initial_delay: float = 0.0, delay_period: float = 0.002,
                 max_retries: int | None = None, max_delay: float = 10.0, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.initial_delay = _non_negative("initial_delay", initial_delay)
        self.delay_period = _non_negative("delay_period", delay_period)
        self.max_delay = _non_negative("max_delay", max_delay)
        if max_retries is not None:
            check_int("RetryExponentialBackoff.max_retries", max_retries, 0)
        self.max_retries = max_retries
        self.clock = clock
        # Storm's delay_period * 2 ** (n - 1) for n > 1, as Backoff's rule (None: no delay period)
        first = 2.0 * self.delay_period
        self._backoff = (Backoff(first, max(first, self.max_delay), factor=2.0, free_failures=1)
                         if first > 0 else None)
        # (topic, partition, offset) -> (the scheduled message id, its retry time)
        self._schedules: dict[Any, tuple[KafkaSpoutMessageId, float]] = {}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], clock: Callable[[], float] = time.monotonic
                 ) -> RetryExponentialBackoff:
        """Build from the spout config's ``retry`` mapping (milliseconds, see KafkaSpoutConfig)."""
        return cls(doc["initial_delay_ms"] / 1000.0, doc["delay_period_ms"] / 1000.0,
                   doc["max_retries"], doc["max_delay_ms"] / 1000.0, clock=clock)

    def next_time(self, msg_id: KafkaSpoutMessageId) -> float:
        """When a message that failed ``msg_id.num_fails`` (>= 1) times becomes ready."""
        fails = msg_id.num_fails
        if fails < 1:
            raise ValueError(f"{msg_id!r} has not failed; only failed messages are scheduled")
        now = self.clock()
        if fails == 1:
            delay = self.initial_delay
        else:
            delay = self._backoff.delay(fails) if self._backoff is not None else 0.0
        return now + min(delay, self.max_delay)

    def schedule(self, msg_id: KafkaSpoutMessageId) -> bool:
        """Schedule (or reschedule) a retry; False when the message is past ``max_retries``."""
        if self.max_retries is not None and msg_id.num_fails > self.max_retries:
            return False
        self._schedules[msg_id] = (msg_id, self.next_time(msg_id))
        return True

    def is_scheduled(self, msg_id: Any) -> bool:
        return msg_id in self._schedules

    def is_ready(self, msg_id: Any) -> bool:
        """Scheduled and its retry time has come."""
        entry = self._schedules.get(msg_id)
        return entry is not None and entry[1] <= self.clock()

    def remove(self, msg_id: Any) -> bool:
        """Drop the schedule of ``msg_id``; True when there was one."""
        return self._schedules.pop(msg_id, None) is not None

    def retain_all(self, partitions: Iterable[TopicPartition]) -> bool:
        """Drop schedules of partitions not in ``partitions``; True when any was dropped."""
        keep = {TopicPartition(*tp) for tp in partitions}
        gone = [k for k, (m, _) in self._schedules.items() if m.topic_partition not in keep]
        for k in gone:
            del self._schedules[k]
        return bool(gone)

    def earliest_retriable_offsets(self) -> dict[TopicPartition, int]:
        """Per partition, the smallest offset whose retry time has come."""
        now = self.clock()
        out: dict[TopicPartition, int] = {}
        for m, due in self._schedules.values():
            if due <= now:
                tp = m.topic_partition
                prev = out.get(tp)
                if prev is None or m.offset < prev:
                    out[tp] = m.offset
        return out

    def ready_message_count(self) -> int:
        now = self.clock()
        return sum(1 for _, due in self._schedules.values() if due <= now)

    def get_message_id(self, tp: TopicPartition, offset: int) -> KafkaSpoutMessageId:
        """The scheduled message id of ``tp``/``offset`` (with its fail count), else a new one."""
        entry = self._schedules.get((tp.topic, tp.partition, offset))
        return entry[0] if entry is not None else KafkaSpoutMessageId(tp.topic, tp.partition, offset)

    def message_id(self, topic: str, partition: int, offset: int) -> KafkaSpoutMessageId:
        """``get_message_id`` without building a TopicPartition (the spout's hot path)."""
        entry = self._schedules.get((topic, partition, offset))
        return entry[0] if entry is not None else _new_id(KafkaSpoutMessageId, (topic, partition, offset))

    def scheduled_ids(self, tp: TopicPartition) -> list[KafkaSpoutMessageId]:
        """The scheduled message ids of one partition (any readiness)."""
        return [m for m, _ in self._schedules.values() if m.topic == tp.topic and m.partition == tp.partition]

    def __len__(self) -> int:
        return len(self._schedules)

    def __repr__(self) -> str:
        return (f"RetryExponentialBackoff(initial_delay={self.initial_delay}, delay_period="
                f"{self.delay_period}, max_retries={self.max_retries}, max_delay={self.max_delay}, "
                f"scheduled={len(self._schedules)})")
