"""What happened to a Spark bolt's batch (:class:`BatchInfo`).

The batches themselves (:class:`~stormpy._batching.Batch`, :class:`~stormpy._batching.BatchCollector`)
live in the neutral :mod:`stormpy._batching`, shared with transactional and windowing code.
"""

from __future__ import annotations

from dataclasses import dataclass

from stormpy._batching import Batch

__all__ = ["BatchInfo"]


@dataclass(frozen=True)
class BatchInfo:
    """What happened to one batch, passed to ``SparkBatchBolt.on_batch_done``.

    Times are ``time.perf_counter()`` seconds: ``closed_at`` when the batch closed, ``started_at``
    when its Spark job started, ``finished_at`` when its tuples were acked (or failed).
    """

    batch_id: int
    component: str
    stream: str
    size: int
    reason: str
    closed_at: float
    started_at: float
    finished_at: float
    results: int
    error: BaseException | None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def latency(self) -> float:
        """Seconds from batch close to ack/fail (queueing + Spark job + handing back)."""
        return self.finished_at - self.closed_at

    @property
    def queued(self) -> float:
        """Seconds the closed batch waited for a free in-flight slot."""
        return self.started_at - self.closed_at

    @classmethod
    def of(cls, batch: Batch, results: int, error: BaseException | None) -> BatchInfo:
        return cls(batch.batch_id, batch.source.component, batch.source.stream, len(batch),
                   batch.reason, batch.closed_at, batch.started_at, batch.finished_at, results,
                   error)
