"""What users subclass: batch bolts, committers and the three kinds of transactional spout.

User classes are referenced by import path and built from msgpack-serialisable keyword arguments,
like every component (see ``stormpy.topology._spec``); define them at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stormpy.topology._component import Component
from stormpy.topology._errors import EmitError
from stormpy.topology._tuple import DEFAULT_STREAM
from stormpy.transactional._attempt import TransactionAttempt

if TYPE_CHECKING:
    from stormpy.topology._context import TopologyContext
    from stormpy.topology._tuple import Tuple


class BatchOutputCollector:
    """Emits for one batch of one task. The first value of every tuple must be the batch's
    ``TransactionAttempt`` (it is sent as ``[txid, attempt_id]``). Tuples are counted per target
    task, which is how downstream tasks know when they have the whole batch; they are not
    anchored one by one (the batch's coordination tuples carry its tracking)."""

    def __init__(self, emit: Callable[[list[Any], str], list[int]],
                 emit_direct: Callable[[int, list[Any], str], None],
                 report_error: Callable[[Any], None],
                 defer: Callable[[Callable[[], Any], Callable[[Any], None] | None], None] | None
                 = None) -> None:
        self._emit = emit
        self._emit_direct = emit_direct
        self._report_error = report_error
        self._defer = defer

    @staticmethod
    def _wire(values: Sequence[Any], stream: str) -> list[Any]:
        if not isinstance(values, (list, tuple)) or not values or \
                type(values[0]) is not TransactionAttempt:
            raise EmitError(f"stream {stream!r}: the first value of every tuple of a "
                            f"transactional topology must be the batch's TransactionAttempt, got "
                            f"{values!r:.80}")
        out = list(values)
        out[0] = values[0].wire
        return out

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream``; returns the target task ids. EmitError when the first
        value is not a TransactionAttempt."""
        return self._emit(self._wire(values, stream), stream)

    def emit_direct(self, task: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit to one task of a bolt subscribed to ``stream`` with direct grouping."""
        self._emit_direct(task, self._wire(values, stream), stream)

    def report_error(self, error: Any) -> None:
        self._report_error(error)

    def finish_in_background(self, work: Callable[[], Any],
                             then: Callable[[Any], None] | None = None) -> None:
        """Called from ``finish_batch``: the batch is finished on this task only once ``work()``
        (run on the worker's background pool, off the executor loop; it must not emit) and then
        ``then(result)`` (on the loop; it may emit) have returned. An exception from either
        fails the batch like one from ``finish_batch``. For blocking commits (a Spark job)."""
        if self._defer is None:
            raise RuntimeError("finish_in_background is only available to batch bolts")
        self._defer(work, then)


class BatchBolt(Component):
    """Processes one batch: a new instance per batch (per attempt) and per task.

    ``prepare`` gets the batch id (the ``TransactionAttempt``), ``execute`` runs for every tuple of
    the batch this task receives (none at all is possible) and ``finish_batch`` once the task has
    received the whole batch from every upstream task. Emit with ``self.emit(values)`` (or the
    collector given to ``prepare``); the first value must be ``self.id``.

    Raising ``FailedException`` (or any exception) from ``execute`` or ``finish_batch`` fails the
    batch: it is replayed with the same transaction id; any other exception is also reported as an
    error of the component.
    """

    #: True for bolts whose ``finish_batch`` must run in the commit phase (see ``Committer``)
    committer = False

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        """Called once per batch before its first ``execute``; keeps ``collector`` and ``id``."""
        self.collector = collector
        self.id = id

    def execute(self, tup: Tuple) -> None:
        """One tuple of the batch; ``tup[0]`` is the batch's TransactionAttempt."""

    def finish_batch(self) -> None:
        """This task has received every tuple of the batch. Blocking work can be handed off with
        ``self.collector.finish_in_background(work, then)``."""

    @classmethod
    def prepare_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Once per task before its first batch (for resources shared by the task's batches)."""

    @classmethod
    def cleanup_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> None:
        """Once per task at shutdown (not guaranteed when the process is killed)."""

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        return self.collector.emit(values, stream)

    def emit_direct(self, task: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        self.collector.emit_direct(task, values, stream)


class Committer(BatchBolt):
    """A batch bolt whose ``finish_batch`` runs only in the commit phase: after every batch with a
    lower transaction id committed, and once per attempt until the whole commit succeeds. Store
    state with the transaction id (see ``TransactionalState``) so a repeated commit applies once."""

    committer = True


class TransactionalSpout(Component):
    """A source of batches: a coordinator (one task) that decides what each transaction holds,
    and emitters (``spout_parallelism`` tasks) that emit a transaction's tuples.

    ``outputs`` declares the emitted streams; the first field of each is the attempt.
    """

    class Coordinator:
        def is_ready(self) -> bool:
            """True when a new transaction may start (data is available)."""
            return True

        def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
            """Metadata of the new transaction ``txid`` (msgpack-serialisable), given the previous
            transaction's; stored and passed unchanged to every attempt of ``txid``."""
            raise NotImplementedError

        def close(self) -> None:
            """Called at shutdown."""

    class Emitter:
        def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                       collector: BatchOutputCollector) -> None:
            """Emit this task's tuples of the transaction; the same for every attempt."""
            raise NotImplementedError

        def cleanup_before(self, txid: int) -> None:
            """Transactions before ``txid`` committed: their data will never be asked for again."""

        def close(self) -> None:
            """Called at shutdown."""

    def get_coordinator(self, conf: Mapping[str, Any],
                        context: TopologyContext) -> TransactionalSpout.Coordinator:
        raise NotImplementedError

    def get_emitter(self, conf: Mapping[str, Any],
                    context: TopologyContext) -> TransactionalSpout.Emitter:
        raise NotImplementedError


class PartitionedTransactionalSpout(Component):
    """A transactional spout over numbered partitions: each emitter task serves the partitions
    ``p`` with ``p % tasks == task index``; a partition's batch for a transaction is identical on
    every replay (its metadata is stored per partition and transaction)."""

    class Coordinator:
        def number_partitions(self) -> int:
            raise NotImplementedError

        def is_ready(self) -> bool:
            return True

        def close(self) -> None:
            """Called at shutdown."""

    class Emitter:
        def emit_partition_batch_new(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                     partition: int, last_meta: Any) -> Any:
            """Emit the partition's next batch after ``last_meta`` (None for the first) and return
            its metadata (msgpack-serialisable). Metadata None means an empty batch: its replays
            emit nothing (a transaction seen after a later one gets None too)."""
            raise NotImplementedError

        def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                 partition: int, meta: Any) -> None:
            """Emit exactly the batch ``meta`` describes again (a replay)."""
            raise NotImplementedError

        def close(self) -> None:
            """Called at shutdown."""

    def get_coordinator(self, conf: Mapping[str, Any],
                        context: TopologyContext) -> PartitionedTransactionalSpout.Coordinator:
        raise NotImplementedError

    def get_emitter(self, conf: Mapping[str, Any],
                    context: TopologyContext) -> PartitionedTransactionalSpout.Emitter:
        raise NotImplementedError


class OpaquePartitionedTransactionalSpout(Component):
    """A partitioned spout whose replay of a transaction may emit different tuples (a partition
    may be unavailable for a while). Each tuple is still in exactly one committed transaction;
    state must keep the previous value too (``OpaqueValue``)."""

    class Coordinator:
        def is_ready(self) -> bool:
            return True

        def close(self) -> None:
            """Called at shutdown."""

    class Emitter:
        def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                                 partition: int, last_meta: Any) -> Any:
            """Emit the partition's batch following ``last_meta`` (the metadata of the batch before
            this one, None at first) and return this batch's metadata."""
            raise NotImplementedError

        def emit_partition_batch_again(self, attempt: TransactionAttempt,
                                       collector: BatchOutputCollector, partition: int,
                                       last_meta: Any, meta: Any) -> Any:
            """Emit again the batch an earlier attempt of this transaction emitted after the same
            ``last_meta`` (``meta`` is what ``emit_partition_batch`` returned for it) and return
            its metadata. A committed state may hold that attempt's values already: opaque state
            is exact when the replay rewrites every key it wrote, which an identical batch does.
            Raise ``FailedException`` when that batch cannot be read now (the transaction is
            tried again). By default a batch following ``last_meta`` (Storm's behaviour)."""
            return self.emit_partition_batch(attempt, collector, partition, last_meta)

        def num_partitions(self) -> int:
            raise NotImplementedError

        def close(self) -> None:
            """Called at shutdown."""

    def get_coordinator(self, conf: Mapping[str, Any], context: TopologyContext
                        ) -> OpaquePartitionedTransactionalSpout.Coordinator:
        return OpaquePartitionedTransactionalSpout.Coordinator()

    def get_emitter(self, conf: Mapping[str, Any],
                    context: TopologyContext) -> OpaquePartitionedTransactionalSpout.Emitter:
        raise NotImplementedError


SPOUT_TYPES = (TransactionalSpout, PartitionedTransactionalSpout,
               OpaquePartitionedTransactionalSpout)
