"""Spout batches: ``emit_batch`` on the spout collector, several tuples tracked as ONE unit.

``emit_batch(values_list, msg_ids, stream)`` checks and routes the values as ``emit_many`` does,
then makes them one tuple tree with one root, one pending entry and one acker entry:

* towards a columnar stream (every subscriber defines ``execute_columns``,
  ``StreamRouter.columns``): ONE ``ColumnBatch`` per target task, one edge each;
* otherwise: a ``Tuple`` per values and target, each with its own edge, all in that one root
  (a bolt acks or fails them one by one; the tree completes when all are acked).

The pending entry holds a ``SpoutBatch`` (``spout_task.py``) with the message ids. When the tree
completes the spout's ``ack_many(msg_ids)`` is called if it defines one, else ``ack(msg_id)``
for each id, in order; when it fails or times out, ``fail_many(msg_ids)`` or ``fail`` for each
id: the replay unit is the batch. ``topology.max.spout.pending`` counts the message ids (records),
as Storm counts pending tuples, and the stats (``emitted``, ``transferred``, ``acked``,
``failed``, the complete latency's count) count records too.

``msg_ids`` None: untracked, the cheapest path (columnar batches or shared untracked tuples);
with message ids but no acker tasks the tuples go out untracked and the ids are acked at the end
of the spout's round, as single emits are. This module is compiled with the rest of the tuple
path.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

from stormpy.topology._columns import ColumnBatch
from stormpy.topology._errors import EmitError
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.emit_checks import bad_stream, checked_values_list
from stormpy.worker.spout_task import SpoutBatch, SpoutTask

__all__ = ["BatchEmitter", "attach"]


def attach(runner: SpoutTask) -> BatchEmitter:
    """Bind ``emit_batch`` onto the spout instance of ``runner`` (the factory does it for every
    spout task)."""
    emitter = BatchEmitter(runner)
    runner.instance.emit_batch = emitter.emit_batch
    return emitter


class BatchEmitter:
    """The ``emit_batch`` of one spout task (see the module docstring)."""

    def __init__(self, runner: SpoutTask) -> None:
        self.runner = runner
        dispatch = runner.worker.dispatch
        self._deliver_many = dispatch.deliver_many
        self._deliver_batch = dispatch.deliver_batch
        self._n_ackers = len(dispatch.acker_tasks)
        self._edges = dispatch.edges
        self._edges_for = dispatch.edges_for
        #: per target task: the rows (columnar) or tuples of the batch being built; the tasks
        #: filled (all empty again between calls)
        self._rows: list[list[Any]] = [[] for _ in dispatch.deliver]
        self._touched: list[int] = []

    def emit_batch(self, values_list: Any, msg_ids: Any = None,
                   stream: Any = DEFAULT_STREAM) -> list[list[int]]:
        """Emit every values of ``values_list`` on ``stream`` as one tracked unit when
        ``msg_ids`` (one message id per values) is given, untracked when it is None. Everything
        is checked before anything is sent (EmitError naming what is wrong). Returns the target
        task ids of each values, in order."""
        runner = self.runner
        router = runner.routers.get(stream)
        if router is None or router.direct:
            bad_stream(runner.routers, runner.component_id, stream, False)
        values_list = checked_values_list(values_list, runner.component_id, stream, router)
        ids: list[Any] | None = None
        if msg_ids is not None:
            if isinstance(msg_ids, (str, bytes)) or not hasattr(msg_ids, "__iter__"):
                raise EmitError(f"component {runner.component_id!r}, stream {stream!r}: "
                                "emit_batch takes a list of message ids (one per values), got "
                                f"{type(msg_ids).__name__}")
            ids = list(msg_ids)
            if len(ids) != len(values_list):
                raise EmitError(f"component {runner.component_id!r}, stream {stream!r}: "
                                f"emit_batch got {len(ids)} message ids for "
                                f"{len(values_list)} tuples")
        n = len(values_list)
        if not n:
            return []
        targets_list = router.choose_many(values_list)
        task = runner.task_id
        comp = runner.component_id
        if runner.debug:
            for i in range(n):
                runner.worker.log_emit(comp, task, stream, values_list[i], targets_list[i])
        runner.emit_count += n
        tracked = ids is not None and self._n_ackers > 0
        root = runner.roots.fresh() if tracked else 0
        edges = self._edges
        edges_for = self._edges_for
        fields = router.fields
        groups = self._rows
        touched = self._touched
        xor = 0
        sent = 0
        try:
            if router.columns:  # one ColumnBatch per target task
                for i in range(n):
                    values = values_list[i]
                    for t in targets_list[i]:
                        rows = groups[t]
                        if not rows:
                            touched.append(t)
                        rows.append(values)
                deliver_batch = self._deliver_batch
                for t in touched:
                    rows = groups[t]
                    groups[t] = []  # the batch keeps the list
                    batch = ColumnBatch(rows, stream, task, comp, fields)
                    if root:
                        edge = edges.next()
                        xor ^= edge
                        batch.root = root
                        batch.edge = edge
                    sent += len(rows)
                    deliver_batch[t](batch)
            else:
                for i in range(n):
                    values = values_list[i]
                    targets = targets_list[i]
                    if root:
                        for t in targets:
                            edge = edges_for[t].next()
                            xor ^= edge
                            group = groups[t]
                            if not group:
                                touched.append(t)
                            group.append(Tuple(values, stream, task, comp, fields, root, edge))
                    else:
                        tup = Tuple(values, stream, task, comp, fields)
                        for t in targets:
                            group = groups[t]
                            if not group:
                                touched.append(t)
                            group.append(tup)
                deliver_many = self._deliver_many
                for t in touched:
                    group = groups[t]
                    sent += len(group)
                    deliver_many[t](group)
                    group.clear()
        finally:  # the groups are empty again whatever happened
            for t in touched:
                groups[t].clear()
            touched.clear()
        runner.stats.transferred += sent
        if ids is not None:
            batch_ids = SpoutBatch(ids)
            if root:
                runner.pending.put_new(root, (batch_ids, perf_counter()))  # a fresh random root
                runner.n_pending += n
                runner.roots.init(root, xor)
            else:  # no acker tasks: acked at the end of the round, as single emits are
                runner.immediate_acks.append(batch_ids)
        return targets_list
