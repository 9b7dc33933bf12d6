"""What a :class:`~stormpy.transactional._coordinated.CoordinatedBolt` task knows of one batch
attempt (:class:`BatchTrack`), and the batch's counting collector (:func:`counting_collector`):
every tuple the wrapped bolt emits in the batch is counted per target task, for the counts the
task reports on the ``$coord`` stream once it finished the batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stormpy.topology._component import Bolt
from stormpy.topology._tuple import Tuple
from stormpy.transactional._api import BatchOutputCollector
from stormpy.transactional._attempt import TransactionAttempt

__all__ = ["BatchTrack", "counting_collector"]


class BatchTrack:
    """One batch attempt as seen by one task."""

    __slots__ = ("attempt", "received", "expected", "reports", "sent", "held", "commit",
                 "failed", "bolt", "age", "deferred", "collector")

    def __init__(self, attempt: TransactionAttempt) -> None:
        self.attempt = attempt
        self.received = 0
        self.expected = 0
        self.reports = 0
        self.sent: dict[int, int] = {}
        self.held: list[Tuple] = []
        self.commit = False
        self.failed = False
        self.bolt: Any = None
        self.age = 0
        #: (work, then) handed to ``finish_in_background`` by finish_batch
        self.deferred: tuple[Callable[[], Any], Callable[[Any], None] | None] | None = None
        self.collector: BatchOutputCollector | None = None


def counting_collector(track: BatchTrack, bolt: Bolt) -> BatchOutputCollector:
    """The collector ``track``'s batch emits through: ``bolt``'s unanchored emits (looked up at
    each call), each counted in ``track.sent`` per target task; ``finish_in_background`` is
    recorded in ``track.deferred`` (once per batch, a RuntimeError the second time)."""
    sent = track.sent

    def emit(values: list[Any], stream: str) -> list[int]:
        targets = bolt.emit(values, None, stream)
        for t in targets:
            sent[t] = sent.get(t, 0) + 1
        return targets

    def emit_direct(task: int, values: list[Any], stream: str) -> None:
        bolt.emit_direct(task, values, None, stream)
        sent[task] = sent.get(task, 0) + 1

    def defer(work: Callable[[], Any], then: Callable[[Any], None] | None) -> None:
        if track.deferred is not None:
            raise RuntimeError("finish_in_background was already called for this batch")
        track.deferred = (work, then)
    return BatchOutputCollector(emit, emit_direct, bolt.report_error, defer)
