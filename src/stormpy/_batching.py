"""Micro-batches of tuples for components that work on batches (Spark bolts, transactional and
windowed code): open batches per input stream, closed by count, age or idleness.

Pure Python, driven by its owner on the executor loop (it takes no locks). Time is whatever the
owner advances it by with :meth:`BatchCollector.advance` -- usually *tick time*, the sum of the
tick tuples' periods the bolt has seen, so batching follows the runtime's clock (real or
simulated) with tick resolution. Built only on the public topology API (``Tuple`` and
``ColumnBatch``: a columnar batch from an upstream ``emit_many``/``emit_batch`` joins a
micro-batch whole, as one ack/fail unit, and counts its rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, NamedTuple

from stormpy.topology._columns import ColumnBatch
from stormpy.topology._tuple import Tuple

__all__ = ["CLOSED_BY_COUNT", "CLOSED_BY_IDLE", "CLOSED_BY_TIME", "Batch", "BatchCollector",
           "BatchSource"]

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
    """Tuples of one input stream collected together.

    ``tuples`` holds what the owner acks or fails: ``Tuple``s and whole ``ColumnBatch``es, in
    arrival order; ``len(batch)`` and ``rows`` count and list the tuples' values (a column
    batch's rows in place). ``batch_id``, ``started_at`` and ``finished_at`` are for the owner's
    bookkeeping (a Spark bolt numbers its batches and times their jobs); the collector sets
    ``reason`` and ``closed_at``.
    """

    source: BatchSource
    fields: tuple[str, ...]
    opened_at: float
    tuples: list[Tuple | ColumnBatch] = field(default_factory=list)
    size: int = 0
    last_added_at: float = 0.0
    touched_at: float = 0.0
    batch_id: int = -1
    reason: str = ""
    closed_at: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0

    def __len__(self) -> int:
        return self.size

    @property
    def rows(self) -> list[list[Any]]:
        """The tuples' values, in arrival order."""
        rows: list[list[Any]] = []
        append = rows.append
        for t in self.tuples:
            if type(t) is ColumnBatch:
                rows.extend(t.rows)
            else:
                append(t.values)  # type: ignore[union-attr]
        return rows


class BatchCollector:
    """Open batches keyed by input stream; hands back each batch as it closes.

    A batch closes when it holds ``batch_size`` tuples (``add`` returns it), or is due by time —
    ``batch_seconds`` old or, with ``idle_seconds``, that long without a new tuple — and the owner
    takes it with ``take_due`` (only when it can start it: a Spark bolt does so when a job slot is
    free, so a batch that comes due while Spark is busy keeps collecting). Invalid settings raise
    ValueError naming the setting; a tuple whose stream declares no fields raises ValueError
    naming the component and stream (a batch's rows need column names).
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

    def add(self, tup: Tuple | ColumnBatch) -> Batch | None:
        """Add a data tuple, or a ``ColumnBatch`` whole (never split: it is acked or failed as
        one); returns its batch when this filled it (``batch_size`` tuples or more)."""
        key = (tup.component, tup.stream)
        batch = self.open.get(key)
        if batch is None:
            if tup.fields is None:
                raise ValueError(f"tuples from {tup.component}/{tup.stream} have no declared "
                                 "fields; a batch needs them as its column names")
            batch = Batch(BatchSource(tup.component, tup.stream), tuple(tup.fields), self.now,
                          touched_at=self.now)
            self.open[key] = batch
        batch.tuples.append(tup)
        batch.size += len(tup) if type(tup) is ColumnBatch else 1
        batch.last_added_at = self.now
        if batch.size >= self.batch_size:
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
