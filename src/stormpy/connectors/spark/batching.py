"""Micro-batch bookkeeping for Spark bolts: open batches per input stream, closed by count, age
or idleness. Pure Python (no Spark), driven by the bolt on the executor loop.

Time here is *tick time*: the sum of the tick tuples' periods the bolt has seen, so batching
follows the runtime's clock (real or simulated) with tick resolution.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, NamedTuple

from stormpy.topology import Tuple

#: Why a batch closed.
CLOSED_BY_COUNT = "count"
CLOSED_BY_TIME = "time"
CLOSED_BY_IDLE = "idle"


class BatchSource(NamedTuple):
    """The input stream a batch came from."""

    component: str
    stream: str


@dataclass(eq=False)
class Batch:
    """Tuples of one input stream collected together (runtime bookkeeping of a Spark bolt)."""

    source: BatchSource
    fields: tuple[str, ...]
    opened_at: float
    tuples: list[Tuple] = field(default_factory=list)
    last_added_at: float = 0.0
    touched_at: float = 0.0
    batch_id: int = -1
    reason: str = ""
    closed_at: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0

    def __len__(self) -> int:
        return len(self.tuples)

    @property
    def rows(self) -> list[list[Any]]:
        """The tuples' values, in arrival order."""
        return [t.values for t in self.tuples]


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


class BatchCollector:
    """Open batches keyed by input stream; hands back each batch as it closes.

    A batch closes when it holds ``batch_size`` tuples (``add`` returns it), or is due by time —
    ``batch_seconds`` old or, with ``idle_seconds``, that long without a new tuple — and the bolt
    takes it with ``take_due`` (it does so only when Spark can start it, so a batch that comes
    due while Spark is busy keeps collecting).
    """

    def __init__(self, batch_size: int, batch_seconds: float, idle_seconds: float | None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if batch_seconds <= 0:
            raise ValueError(f"batch_seconds must be positive, got {batch_seconds}")
        if idle_seconds is not None and idle_seconds <= 0:
            raise ValueError(f"idle_seconds must be positive or None, got {idle_seconds}")
        self.batch_size = batch_size
        self.batch_seconds = batch_seconds
        self.idle_seconds = idle_seconds
        self.now = 0.0
        self.open: dict[tuple[str, str], Batch] = {}

    def add(self, tup: Tuple) -> Batch | None:
        """Add a data tuple; returns its batch when this tuple filled it."""
        key = (tup.component, tup.stream)
        batch = self.open.get(key)
        if batch is None:
            if tup.fields is None:
                raise ValueError(f"tuples from {tup.component}/{tup.stream} have no declared "
                                 "fields; a Spark bolt needs them for the DataFrame's columns")
            batch = Batch(BatchSource(tup.component, tup.stream), tuple(tup.fields), self.now,
                          touched_at=self.now)
            self.open[key] = batch
        batch.tuples.append(tup)
        batch.last_added_at = self.now
        if len(batch.tuples) >= self.batch_size:
            del self.open[key]
            return self._seal(batch, CLOSED_BY_COUNT)
        return None

    def advance(self, seconds: float) -> None:
        """Move tick time forward."""
        self.now += seconds

    def due_reason(self, batch: Batch) -> str | None:
        """Why ``batch`` should close now by time (age or idleness), or None."""
        eps = 1e-9  # tick periods are summed as floats
        if self.now - batch.opened_at >= self.batch_seconds - eps:
            return CLOSED_BY_TIME
        if self.idle_seconds is not None and self.now - batch.last_added_at >= self.idle_seconds - eps:
            return CLOSED_BY_IDLE
        return None

    def take_due(self, limit: int) -> list[Batch]:
        """Close and return up to ``limit`` batches that are due by time, oldest first."""
        if limit <= 0 or not self.open:
            return []
        due = []
        for key, batch in self.open.items():
            reason = self.due_reason(batch)
            if reason is not None:
                due.append((batch.opened_at, key, reason))
        due.sort(key=lambda d: d[0])
        return [self._seal(self.open.pop(key), reason) for _, key, reason in due[:limit]]

    @staticmethod
    def _seal(batch: Batch, reason: str) -> Batch:
        batch.reason = reason
        batch.closed_at = perf_counter()
        return batch

    def drain(self) -> list[Batch]:
        """Remove and return every open batch (at shutdown)."""
        batches = list(self.open.values())
        self.open.clear()
        return batches
