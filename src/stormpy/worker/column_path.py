"""The columnar path: ``emit_many`` towards bolts that define ``execute_columns``.

A bolt opts in by defining ``execute_columns(batch)``. When a bolt emits with ``emit_many`` on a
stream whose every subscriber is such a bolt (``StreamRouter.columns``, set by the factory), the
values are routed in one pass as today, then grouped per target task into ONE
``ColumnBatch`` each (instead of a ``Tuple`` per values and target). A batch is one node of the
tuple tree: per target batch one fresh edge id per anchor, XORed into it, acked or failed as a
whole by the receiving bolt (``ack(batch)``, ``fail(batch)``); tuples emitted anchored to a batch
join every tree it is in. At-least-once holds: a failed or timed-out batch fails every spout
tuple it belongs to; replay granularity is the batch.

A same-worker batch goes through the target task's queue as one item (``put``); a batch for
another worker is one wire record (``transfer.py``, ``inbound.py``). Counters count tuples: the
queue size and backpressure (``Dispatch.queued_rows``), ``executed``, ``acked``, ``failed``,
``transferred``, ``emitted`` and the sampled latencies.

A columnar bolt still receives single ``Tuple``s (tick tuples, tuples emitted one at a time, by
spouts, or on streams with other subscribers) through ``execute``, or ``execute_batch`` when it
defines one, in queue order with its batches. Its collector methods (``ack``, ``ack_many``,
``fail``, ``reset_timeout``, ``emit``, ``emit_many``, ``emit_direct``) take batches wherever they
take tuples; for tuples they are the task runner's own.

The parts: this module attaches the path and runs a columnar bolt's queue and its acks
(``ColumnPath``); ``column_emit.py`` builds and sends the batches (``ColumnEmitter``), with
``column_anchors.py`` for batches as nodes of the tuple tree. Sampled latencies are the task's
(``sampling.py``). These modules are compiled with the rest of the tuple path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from stormpy.acker.streams import ACK_FAIL, ACK_RESET_TIMEOUT
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._component import BasicBolt
from stormpy.topology._tuple import Tuple
from stormpy.worker.bolt_task import BoltTask
from stormpy.worker.column_emit import ColumnEmitter

__all__ = ["ColumnPath", "attach", "takes_columns"]


def takes_columns(cls: Any) -> bool:
    """Whether bolts of class ``cls`` receive columnar batches (define ``execute_columns``)."""
    return callable(getattr(cls, "execute_columns", None))


def attach(runner: BoltTask) -> ColumnPath | None:
    """Set up the columnar path of a bolt task, once its routers exist: a bolt defining
    ``execute_columns`` gets its batch-aware collector methods and its queue drained by
    ``ColumnPath.run`` (returned); a bolt emitting on a columnar stream gets the batch-building
    ``emit_many`` and ``emit_columns``. None when the bolt does not receive batches. TypeError
    for an ``execute_columns`` on a ``BasicBolt`` or one that is not callable."""
    instance = runner.instance
    fn = getattr(instance, "execute_columns", None)
    columnar_out = any(r.columns for r in runner.routers.values())
    if fn is None and not columnar_out:
        return None
    basic = isinstance(instance, BasicBolt)
    if fn is not None:
        if basic:
            raise TypeError(f"component {runner.component_id!r}: a BasicBolt has no columnar "
                            "form (execute_columns); subclass Bolt and ack each batch")
        if not callable(fn):
            raise TypeError(f"component {runner.component_id!r}: execute_columns is not "
                            "callable")
    elif basic:  # a BasicBolt anchors to its current tuple: it keeps emitting tuples
        return None
    emitter = ColumnEmitter(runner)
    instance.emit_many = emitter.emit_many
    instance.emit_columns = emitter.emit_columns
    if fn is None:
        return None
    path = ColumnPath(runner, fn)
    instance.emit = emitter.emit
    instance.emit_direct = emitter.emit_direct
    instance.ack = path.ack
    instance.ack_many = path.ack_many
    instance.fail = path.fail
    instance.reset_timeout = path.reset_timeout
    runner.run_columns = path.run
    runner.worker.dispatch.deliver_batch[runner.task_id] = path.put
    return path


class ColumnPath:
    """The receiving side of a columnar bolt's task: its queue of batches and tuples, and its
    batch-aware acks (see the module docstring)."""

    def __init__(self, runner: BoltTask, execute_columns: Callable[[ColumnBatch], None]) -> None:
        self.runner = runner
        self.execute_columns = execute_columns
        self.task_id = runner.task_id
        dispatch = runner.worker.dispatch
        self._queued_rows = dispatch.queued_rows
        self._dispatch = dispatch
        self._ack_buffer = dispatch.ack_buffer
        queue: Any = runner.queue  # holds Tuples and ColumnBatches
        self._queue = queue
        self._append: Callable[[Any], None] = queue.append

    # -- receiving ------------------------------------------------------------------------
    def put(self, batch: ColumnBatch) -> None:
        """Queue ``batch`` for this task (its ``Dispatch.deliver_batch`` entry): one item that
        counts its tuples."""
        self._append(batch)
        self._queued_rows[self.task_id] += batch.n - 1

    def run(self, n: int) -> int:
        """Run the next ``n`` queued items (the loop's execute step for this task): each batch
        through ``execute_columns``, each run of single tuples through ``execute_batch`` or
        ``execute``, in queue order. Counts and samples tuples; returns how many ran."""
        runner = self.runner
        pop = self._queue.popleft
        execute_columns = self.execute_columns
        stats = runner.stats
        sampler = runner.sampler
        rows = 0
        tuples: list[Tuple] | None = None
        for _ in range(n):
            item = pop()
            if type(item) is ColumnBatch:
                if tuples is not None:
                    rows += self._run_tuples(tuples)
                    tuples = None
                batch = cast(ColumnBatch, item)
                k = batch.n
                self._queued_rows[self.task_id] -= k - 1
                stats.sample_countdown -= k
                if stats.sample_countdown <= 0:  # timed, and followed to its ack
                    sampler.run_timed(execute_columns, batch, k, sampler.timed_count(k), batch)
                else:
                    execute_columns(batch)
                rows += k
            elif tuples is None:
                tuples = [cast(Tuple, item)]
            else:
                tuples.append(cast(Tuple, item))
        if tuples is not None:
            rows += self._run_tuples(tuples)
        stats.executed += rows
        return rows

    def _run_tuples(self, tuples: list[Tuple]) -> int:
        runner = self.runner
        stats = runner.stats
        k = len(tuples)
        stats.sample_countdown -= k
        if stats.sample_countdown <= 0:  # timed whole; its first tuple followed to its ack
            sampler = runner.sampler
            sampler.run_timed(self._execute_tuples, tuples, k, sampler.timed_count(k),
                              tuples[0])
        else:
            self._execute_tuples(tuples)
        return k

    def _execute_tuples(self, tuples: list[Tuple]) -> None:
        runner = self.runner
        execute_batch = runner.execute_batch
        if execute_batch is not None:
            execute_batch(tuples)
        else:
            execute = runner.execute
            for tup in tuples:
                execute(tup)

    # -- acking -----------------------------------------------------------------------------
    def ack(self, item: Any) -> None:
        """Ack a batch (all its tuples at once: its edge and its children's edges are folded into
        its roots) or a tuple (the task's ``ack``)."""
        if type(item) is ColumnBatch:
            self._ack_batch(cast(ColumnBatch, item))
        else:
            self.runner.ack(item)

    def _ack_batch(self, batch: ColumnBatch) -> None:
        self._dispatch.fold_run()  # the buffer's entries in the order one update per ack gives
        buf = self._ack_buffer
        root = batch.root
        if root:
            buf[root] = buf.get(root, 0) ^ batch.edge ^ batch.ack_val
        elif batch.anchors:
            v = batch.ack_val
            for r, edge in batch.anchors.items():
                buf[r] = buf.get(r, 0) ^ edge ^ v
        runner = self.runner
        runner.stats.acked += batch.n
        if batch is runner.sampler.followed:  # the timed batch: its process latency
            runner.sampler.acked()

    def ack_many(self, items: Any) -> None:
        """``ack`` every batch and tuple of ``items``."""
        tuples: list[Any] = []
        for item in items:
            if type(item) is ColumnBatch:
                self._ack_batch(cast(ColumnBatch, item))
            else:
                tuples.append(item)
        if tuples:
            self.runner.ack_many(tuples)

    def fail(self, item: Any) -> None:
        """Fail a batch (every spout tuple it belongs to fails and may be replayed) or a
        tuple."""
        if type(item) is not ColumnBatch:
            self.runner.fail(item)
            return
        batch = cast(ColumnBatch, item)
        runner = self.runner
        for root in batch.tree_edges():
            runner.send_to_acker(ACK_FAIL, [root])
        runner.stats.failed += batch.n
        if batch is runner.sampler.followed:  # no process latency for a failed batch
            runner.sampler.followed = None

    def reset_timeout(self, item: Any) -> None:
        """Restart the message timeout of every spout tuple a batch (or tuple) belongs to."""
        if type(item) is not ColumnBatch:
            self.runner.reset_timeout(item)
            return
        for root in cast(ColumnBatch, item).tree_edges():
            self.runner.send_to_acker(ACK_RESET_TIMEOUT, [root])
