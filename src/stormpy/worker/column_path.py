"""The columnar path: ``emit_many`` towards bolts that define ``execute_columns``.

A bolt opts in by defining ``execute_columns(batch)``. When a bolt emits with ``emit_many`` on a
stream whose every subscriber is such a bolt (``StreamRouter.columns``, set by the factory), the
values are routed in one pass as today, then grouped per target task into ONE
``ColumnBatch`` each (instead of a ``Tuple`` per values and target). A batch is one node of the
tuple tree: one fresh edge id per target batch, XORed once into each anchor, acked or failed as a
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
take tuples; for tuples they are the task runner's own. This module is compiled with the rest of
the tuple path.
"""

from __future__ import annotations

from collections.abc import Callable
from random import getrandbits
from typing import Any, cast

from stormpy.acker.streams import ACK_FAIL, ACK_RESET_TIMEOUT
from stormpy.topology.columns import ColumnBatch, column_lists, rows_of
from stormpy.topology.component import BasicBolt
from stormpy.topology.errors import EmitError
from stormpy.topology.tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.edges import EDGE_BITS
from stormpy.worker.tasks import BoltTask
from stormpy.worker.values import SHORT_INT_MAX, SHORT_INT_MIN

__all__ = ["ColumnPath", "attach", "takes_columns"]



def takes_columns(cls: Any) -> bool:
    """Whether bolts of class ``cls`` receive columnar batches (define ``execute_columns``)."""
    return callable(getattr(cls, "execute_columns", None))


def attach(runner: BoltTask) -> ColumnPath | None:
    """Set up the columnar path of a bolt task, once its routers exist: a bolt defining
    ``execute_columns`` gets its batch-aware collector methods and its queue drained by
    ``ColumnPath.run``; a bolt emitting on a columnar stream gets the batch-building
    ``emit_many``. None when neither applies (nothing changes). TypeError for an
    ``execute_columns`` on a ``BasicBolt`` or one that is not callable."""
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
    path = ColumnPath(runner, fn)
    instance.emit_many = path.emit_many
    instance.emit_columns = path.emit_columns
    if fn is not None:
        instance.emit = path.emit
        instance.emit_direct = path.emit_direct
        instance.ack = path.ack
        instance.ack_many = path.ack_many
        instance.fail = path.fail
        instance.reset_timeout = path.reset_timeout
        runner.run_columns = path.run
        runner.host.dispatch.deliver_batch[runner.task_id] = path.put
    return path


class ColumnPath:
    """The columnar side of one bolt task (see the module docstring)."""

    def __init__(self, runner: BoltTask, execute_columns: Any) -> None:
        self.runner = runner
        self.execute_columns: Callable[[ColumnBatch], None] | None = execute_columns
        self.task_id = runner.task_id
        self.component_id = runner.component_id
        dispatch = runner.host.dispatch
        self._deliver_batch = dispatch.deliver_batch
        self._queued_rows = dispatch.queued_rows
        self._ack_buffer = dispatch.ack_buffer
        self._n_ackers = len(dispatch.acker_tasks)
        queue: Any = runner.queue  # holds Tuples and ColumnBatches
        self._queue = queue
        self._append: Callable[[Any], None] = queue.append
        #: emit_many's rows per target task (indexed by task id, None between calls) and the
        #: tasks it filled
        self._rows: list[list[Any] | None] = [None] * len(dispatch.deliver)
        self._touched: list[int] = []
        #: a timed batch not acked yet (its process latency), and when it started
        self._sampled: ColumnBatch | None = None
        self._sampled_start = 0.0

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
        assert execute_columns is not None
        stats = runner.stats
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
                if stats.sample_countdown <= 0:
                    self._timed_batch(execute_columns, batch, k)
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
        timed = stats.sample_countdown <= 0
        m = self._timed_count(k) if timed else 0
        clock = runner.sample_clock
        start = clock() if timed else 0.0
        if timed:
            runner._track(tuples[0], start)
        execute_batch = runner.execute_batch
        if execute_batch is not None:
            execute_batch(tuples)
        else:
            execute = runner.execute
            for tup in tuples:
                execute(tup)
        if timed:
            stats.execute_latency_sum += (clock() - start) * m / k
            stats.execute_latency_count += m
        return k

    def _timed_count(self, k: int) -> int:
        """How many of the next ``k`` tuples are timed (``sample_countdown`` already lowered by
        ``k`` and <= 0); moves the countdown past them (as ``TaskRunner.run_sampled``)."""
        stats = self.runner.stats
        at = stats.sample_countdown + k - 1
        m = 0
        while at < k:
            m += 1
            at += stats.next_gap()
        stats.sample_countdown = at - k + 1
        return m

    def _timed_batch(self, execute_columns: Callable[[ColumnBatch], None], batch: ColumnBatch,
                     k: int) -> None:
        """``execute_columns(batch)`` timed: each timed tuple of it is given ``elapsed / k``; the
        batch is followed to its ack (process latency) unless another timed one is."""
        runner = self.runner
        stats = runner.stats
        m = self._timed_count(k)
        clock = runner.sample_clock
        start = clock()
        if self._sampled is None or start - self._sampled_start > runner._sample_stale:
            self._sampled = batch
            self._sampled_start = start
        execute_columns(batch)
        stats.execute_latency_sum += (clock() - start) * m / k
        stats.execute_latency_count += m

    # -- acking -----------------------------------------------------------------------------
    def ack(self, item: Any) -> None:
        """Ack a batch (all its tuples at once: its edge and its children's edges are folded into
        its roots) or a tuple (the task's ``ack``)."""
        if type(item) is ColumnBatch:
            self._ack_batch(cast(ColumnBatch, item))
        else:
            self.runner.ack(item)

    def _ack_batch(self, batch: ColumnBatch) -> None:
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
        if batch is self._sampled:
            self._sampled = None
            runner.stats.process_latency_sum += runner.sample_clock() - self._sampled_start
            runner.stats.process_latency_count += 1

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
        if batch is self._sampled:  # no process latency for a failed batch
            self._sampled = None

    def reset_timeout(self, item: Any) -> None:
        """Restart the message timeout of every spout tuple a batch (or tuple) belongs to."""
        if type(item) is not ColumnBatch:
            self.runner.reset_timeout(item)
            return
        for root in cast(ColumnBatch, item).tree_edges():
            self.runner.send_to_acker(ACK_RESET_TIMEOUT, [root])

    # -- emitting ---------------------------------------------------------------------------
    def emit(self, values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        """The task's ``emit``; anchors may be batches."""
        if anchors is None or type(anchors) is Tuple:
            return self.runner.emit(values, anchors, stream)
        stand_ins, pairs = self._stand_ins(anchors)
        try:
            return self.runner.emit(values, stand_ins, stream)
        finally:
            _fold(pairs)

    def emit_direct(self, task: Any, values: Any, anchors: Any = None,
                    stream: Any = DEFAULT_STREAM) -> None:
        """The task's ``emit_direct``; anchors may be batches."""
        if anchors is None or type(anchors) is Tuple:
            self.runner.emit_direct(task, values, anchors, stream)
            return
        stand_ins, pairs = self._stand_ins(anchors)
        try:
            self.runner.emit_direct(task, values, stand_ins, stream)
        finally:
            _fold(pairs)

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
            stand_ins, pairs = self._stand_ins(anchors)
            try:
                runner.emit_many(values_list, stand_ins, stream)
            finally:
                _fold(pairs)
            return
        nodes = self._nodes(anchors)
        values_list = runner._check_all(values_list, stream, router)
        if not values_list:
            return
        targets_list = router.choose_many(values_list)
        task = self.task_id
        comp = self.component_id
        if runner.debug:
            for i in range(len(values_list)):
                runner.host.log_emit(comp, task, stream, values_list[i], targets_list[i])
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
                    _anchor(batch, nodes)
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
        nodes = self._nodes(anchors)
        self._check_columns(cols, n, stream, router)
        task = self.task_id
        comp = self.component_id
        fields = router.fields
        deliver_batch = self._deliver_batch
        sent = 0
        for t, part, k in only.partition_columns(cols, n):
            batch = ColumnBatch(None, stream, task, comp, fields, columns=part, n=k)
            if nodes:
                _anchor(batch, nodes)
            sent += k
            deliver_batch[t](batch)
        runner.stats.transferred += sent

    def _check_columns(self, cols: list[list[Any]], n: int, stream: Any, router: Any) -> None:
        """``emit_many``'s checks of every value, on columns: as many columns as the stream has
        fields, plain scalars pass, a row holding anything else gets the full check."""
        runner = self.runner
        if len(cols) != router.n_fields:
            raise EmitError(f"component {runner.component_id!r}, stream {stream!r}: emit_columns "
                            f"got {len(cols)} columns for the fields {router.fields.to_list()}")
        for c in cols:
            for v in c:
                vt = type(v)
                if vt is str or vt is bytes or vt is float or v is None or \
                        (type(v) is int and SHORT_INT_MIN <= v <= SHORT_INT_MAX):
                    continue
                for i in range(n):  # a value of another type: every row its full check
                    runner._check([col[i] for col in cols], stream, router)
                router.emitted += n
                return
        router.emitted += n

    def _nodes(self, anchors: Any) -> list[Any]:
        """The anchors (None, a Tuple or ColumnBatch, or a list or tuple of them) that are in a
        tree; none when acking is off. TypeError naming anything else."""
        if anchors is None or not self._n_ackers:
            return []
        at = type(anchors)
        items: list[Any] = [anchors] if at is Tuple or at is ColumnBatch else \
            _anchor_list(anchors, self.component_id)
        nodes: list[Any] = []
        for a in items:  # Tuples and ColumnBatches carry the same tree ids
            if type(a) is not Tuple and type(a) is not ColumnBatch:
                raise TypeError(f"component {self.component_id!r}: an anchor must be a Tuple "
                                f"or a ColumnBatch, got {type(a).__name__}")
            if a.root or a.anchors:
                nodes.append(a)
        return nodes

    def _stand_ins(self, anchors: Any) -> tuple[Any, list[tuple[ColumnBatch, Tuple]]]:
        """``anchors`` with every batch replaced by a Tuple standing in for it (its tree ids,
        ``ack_val`` 0), for the task's per-tuple methods; ``_fold`` then adds what they XORed
        into each stand-in to its batch."""
        pairs: list[tuple[ColumnBatch, Tuple]] = []
        if type(anchors) is ColumnBatch:
            return _stand_in(cast(ColumnBatch, anchors), pairs), pairs
        out: list[Any] = []
        for a in _anchor_list(anchors, self.component_id):
            out.append(_stand_in(cast(ColumnBatch, a), pairs)
                       if type(a) is ColumnBatch else a)
        return out, pairs


def _stand_in(batch: ColumnBatch, pairs: list[tuple[ColumnBatch, Tuple]]) -> Tuple:
    """A Tuple with ``batch``'s tree ids (``ack_val`` 0), remembered in ``pairs``."""
    tup = Tuple(None, batch.stream, batch.task, batch.component, batch.fields, batch.root,
                batch.edge, batch.anchors)
    pairs.append((batch, tup))
    return tup


def _anchor_list(anchors: Any, component: str) -> list[Any]:
    if type(anchors) is list or type(anchors) is tuple:
        return list(anchors)
    raise TypeError(f"component {component!r}: anchors must be a Tuple, a ColumnBatch or a list "
                    f"of them, got {type(anchors).__name__}")


def _fold(pairs: list[tuple[ColumnBatch, Tuple]]) -> None:
    for batch, tup in pairs:
        batch.ack_val ^= tup.ack_val


def _anchor(batch: ColumnBatch, nodes: list[Any]) -> None:
    """Make ``batch`` a child of every node of ``nodes`` (tuples and batches in a tree): one fresh
    edge, XORed into each node's ``ack_val`` and, per root, into the batch's tree ids (as
    ``BoltTask._send`` does for a tuple)."""
    edge = getrandbits(EDGE_BITS)  # 62-bit: see edges.py
    if len(nodes) == 1 and type(nodes[0]) is Tuple and cast(Tuple, nodes[0]).root:
        tup = cast(Tuple, nodes[0])  # the common case: one anchor in one tree
        tup.ack_val ^= edge
        batch.root = tup.root
        batch.edge = edge
        return
    amap: dict[int, int] = {}
    for node in nodes:  # Tuples and ColumnBatches carry the same tree ids
        node.ack_val ^= edge
        if node.root:
            amap[node.root] = amap.get(node.root, 0) ^ edge
        elif node.anchors:
            for r in node.anchors:
                amap[r] = amap.get(r, 0) ^ edge
    if len(amap) == 1:
        ((root, tree_edge),) = amap.items()
        batch.root = root
        batch.edge = tree_edge
    elif amap:
        batch.anchors = amap

