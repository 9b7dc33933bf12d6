"""The columnar emits of a bolt task: ``emit_many`` and ``emit_columns`` building ONE
``ColumnBatch`` per target task on a columnar stream (every subscriber defines
``execute_columns``, ``StreamRouter.columns``), and the per-tuple emits of a columnar bolt, whose
anchors may be batches.

The values are checked first and routed in one pass; each target's batch is one node of the
tuple tree (``column_anchors.anchor_batch``: a fresh edge per anchor, XORed into it) and
goes out through ``Dispatch.deliver_batch`` (the target task's queue as one item, or one wire
record for another worker). Counters count tuples. Bound onto the instance by
``column_path.attach``. This module is compiled with the rest of the tuple path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stormpy.topology._columns import ColumnBatch, column_lists, rows_of
from stormpy.topology._errors import EmitError
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.bolt_task import BoltTask
from stormpy.worker.column_anchors import anchor_batch, fold, stand_ins, tree_nodes
from stormpy.worker.emit_checks import check_emit, checked_values_list
from stormpy.worker.routing import StreamRouter
from stormpy.worker.values import SHORT_INT_MAX, SHORT_INT_MIN

__all__ = ["ColumnEmitter"]


class ColumnEmitter:
    """The columnar emits of one bolt task (see the module docstring)."""

    def __init__(self, runner: BoltTask) -> None:
        self.runner = runner
        self.task_id = runner.task_id
        self.component_id = runner.component_id
        dispatch = runner.worker.dispatch
        self._deliver_batch: list[Callable[[ColumnBatch], None]] = dispatch.deliver_batch
        self._n_ackers = len(dispatch.acker_tasks)
        self._edges = dispatch.edges
        #: emit_many's rows per target task (indexed by task id, None between calls) and the
        #: tasks it filled
        self._rows: list[list[Any] | None] = [None] * len(dispatch.deliver)
        self._touched: list[int] = []

    def emit(self, values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        """The task's ``emit``; anchors may be batches."""
        if anchors is None or type(anchors) is Tuple:
            return self.runner.emit(values, anchors, stream)
        tuples, pairs = stand_ins(anchors, self.component_id)
        try:
            return self.runner.emit(values, tuples, stream)
        finally:
            fold(pairs)

    def emit_direct(self, task: Any, values: Any, anchors: Any = None,
                    stream: Any = DEFAULT_STREAM) -> None:
        """The task's ``emit_direct``; anchors may be batches."""
        if anchors is None or type(anchors) is Tuple:
            self.runner.emit_direct(task, values, anchors, stream)
            return
        tuples, pairs = stand_ins(anchors, self.component_id)
        try:
            self.runner.emit_direct(task, values, tuples, stream)
        finally:
            fold(pairs)

    def emit_many(self, values_list: Any, anchors: Any = None,
                  stream: Any = DEFAULT_STREAM) -> None:
        """``emit`` of every values of ``values_list`` with the same ``anchors`` (tuples or
        batches). On a columnar stream: one ``ColumnBatch`` per target task, one node of the
        tuple tree; otherwise the task's ``emit_many``. Every values is checked first."""
        runner = self.runner
        router = runner.routers.get(stream)
        if router is None or router.direct or not router.columns:
            if anchors is None or type(anchors) is Tuple:
                runner.emit_many(values_list, anchors, stream)
                return
            tuples, pairs = stand_ins(anchors, self.component_id)
            try:
                runner.emit_many(values_list, tuples, stream)
            finally:
                fold(pairs)
            return
        nodes = tree_nodes(anchors, self._n_ackers, self.component_id)
        values_list = checked_values_list(values_list, self.component_id, stream, router)
        if not values_list:
            return
        targets_list = router.choose_many(values_list)
        task = self.task_id
        comp = self.component_id
        if runner.debug:
            for i in range(len(values_list)):
                runner.worker.log_emit(comp, task, stream, values_list[i], targets_list[i])
        fields = router.fields
        groups = self._rows
        touched = self._touched
        deliver_batch = self._deliver_batch
        sent = 0
        try:
            for i in range(len(values_list)):
                values = values_list[i]
                for t in targets_list[i]:
                    rows = groups[t]
                    if rows is None:
                        rows = []
                        groups[t] = rows
                        touched.append(t)
                    rows.append(values)
            for t in touched:
                rows = groups[t]
                assert rows is not None
                batch = ColumnBatch(rows, stream, task, comp, fields)
                if nodes:
                    anchor_batch(batch, nodes, self._edges)
                sent += len(rows)
                deliver_batch[t](batch)
        finally:  # the groups are empty again whatever happened
            for t in touched:
                groups[t] = None
            touched.clear()
        runner.stats.transferred += sent

    def emit_columns(self, columns: Any, anchors: Any = None,
                     stream: Any = DEFAULT_STREAM) -> None:
        """``emit_many`` of the tuples given as ``columns`` (one list per field). On a columnar
        stream with one subscriber: the router splits the columns per target task in one pass
        and each gets ONE ``ColumnBatch`` of its columns (no list per tuple); otherwise (or
        with ``topology.debug``) ``emit_many`` of the rows. Everything is checked first."""
        runner = self.runner
        router = runner.routers.get(stream)
        cols, n = column_lists(columns, stream)
        only = router.only if router is not None else None
        if router is None or only is None or router.direct or not router.columns or runner.debug:
            self.emit_many(rows_of(cols, n), anchors, stream)
            return
        nodes = tree_nodes(anchors, self._n_ackers, self.component_id)
        self._check_columns(cols, n, stream, router)
        task = self.task_id
        comp = self.component_id
        fields = router.fields
        deliver_batch = self._deliver_batch
        sent = 0
        for t, part, k in only.partition_columns(cols, n):
            batch = ColumnBatch(None, stream, task, comp, fields, columns=part, n=k)
            if nodes:
                anchor_batch(batch, nodes, self._edges)
            sent += k
            deliver_batch[t](batch)
        runner.stats.transferred += sent

    def _check_columns(self, cols: list[list[Any]], n: int, stream: Any,
                       router: StreamRouter) -> None:
        """``emit_many``'s checks of every value, on columns: as many columns as the stream has
        fields, plain scalars pass, a row holding anything else gets the full check."""
        comp = self.component_id
        if len(cols) != router.n_fields:
            raise EmitError(f"component {comp!r}, stream {stream!r}: emit_columns "
                            f"got {len(cols)} columns for the fields {router.fields.to_list()}")
        for c in cols:
            for v in c:
                vt = type(v)
                if vt is str or vt is bytes or vt is float or v is None or \
                        (type(v) is int and SHORT_INT_MIN <= v <= SHORT_INT_MAX):
                    continue
                for i in range(n):  # a value of another type: every row its full check
                    check_emit([col[i] for col in cols], comp, stream, router)
                router.emitted += n
                return
        router.emitted += n
