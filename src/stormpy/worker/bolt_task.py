"""Bolt tasks: a bolt's queue consumed by its ``execute`` (or ``execute_batch``), and the bolt
collector bound onto the instance: ``emit``, ``emit_many``, ``emit_direct`` anchored to input
tuples, ``ack``, ``ack_many``, ``fail``, ``reset_timeout``. A ``BasicBolt`` is acked after its
``process`` returns (failed on ``FailedException``) and its emits are anchored to the tuple it
is processing.

Anchoring: each emitted tuple gets, per target and per anchor that is in a tree, a fresh 62-bit
edge id (``edges.py``), XORed into that anchor (its ``ack_val``) and into the new tuple's tree
ids (Storm's: a tuple anchored to two tuples of one tree holds that tree until it is acked);
``ack`` folds a tuple's edge and its children's edges into its roots' entries of the round's
ack buffer (``Dispatch.ack_buffer``, sent once per round; consecutive acks of one root go
through the dispatch's open run first: ``Dispatch.fold_run``). The acker runs as a ``BoltTask``
too (its core is called directly, see ``factory.py``). This module is compiled with the rest of
the tuple path.

Chaining (``take``, installed in the delivery table by the loop for bolt tasks that run one tuple
at a time): a tuple emitted on the worker's loop to such a task runs its ``execute`` at once,
inside the emit, when nothing is queued before it, the task is not running already and fewer
than ``MAX_CHAIN_DEPTH`` chained executes are open; otherwise it is queued as before. Each task
still runs its tuples one at a time in the order they reached it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from stormpy.acker.streams import ACK_FAIL, ACK_RESET_TIMEOUT
from stormpy.config import setting
from stormpy.topology._component import BasicBolt
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import FailedException
from stormpy.topology._fields import Fields
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.emit_checks import checked_router, checked_values_list, direct_target
from stormpy.worker.errors import WorkerError
from stormpy.worker.routing import StreamRouter
from stormpy.worker.tasks import TaskRunner
from stormpy.worker.values import SHORT_INT_MAX, SHORT_INT_MIN
from stormpy.worker.worker_view import WorkerView

__all__ = ["MAX_CHAIN_DEPTH", "BoltTask"]

#: chained executes open inside each other at most (emit → execute → emit ...); a delivery
#: beyond is queued, so a long line of bolts never nests deeper than this
MAX_CHAIN_DEPTH: Final = 16


class BoltTask(TaskRunner):
    """A bolt task: ``execute`` consumes its queue."""

    def __init__(self, worker: WorkerView, context: TopologyContext, instance: Any,
                 routers: dict[str, StreamRouter], conf: Mapping[str, Any]) -> None:
        super().__init__(worker, context, instance, routers, conf)
        dispatch = worker.dispatch
        self._dispatch = dispatch
        self._ack_buffer = dispatch.ack_buffer
        self._deliver_many = dispatch.deliver_many
        #: emit_many's per-target groups (indexed by task id, empty between calls) and the
        #: tasks it filled
        self._groups: list[list[Tuple]] = [[] for _ in dispatch.deliver]
        self._touched: list[int] = []
        #: indexed by task id: the chainable bolt task of this worker that ``deliver`` points
        #: at (its ``take``), else None; set by ``install_local_delivery`` (shared by every bolt
        #: task of the worker) so that an emit calls ``take`` natively, not through the table
        self.takers: list[BoltTask | None] = [None] * len(dispatch.deliver)
        instance.emit = self.emit
        instance.emit_many = self.emit_many
        instance.emit_direct = self.emit_direct
        instance.ack = self.ack
        instance.ack_many = self.ack_many
        instance.fail = self.fail
        instance.reset_timeout = self.reset_timeout
        self.stats.set_sample_rate(setting(conf, "topology.stats.sample.rate"))
        batch = getattr(instance, "execute_batch", None)
        if isinstance(self.instance, BasicBolt):
            if batch is not None:
                raise TypeError(f"component {self.component_id!r}: a BasicBolt has no batch form "
                                "(execute_batch); subclass Bolt and ack each tuple")
            self._current: Tuple | None = None
            instance.emit = self._basic_emit
            instance.emit_many = self._basic_emit_many
            instance.emit_direct = self._basic_emit_direct
            self.execute = self._basic_execute
        else:
            self.execute = instance.execute
            if batch is not None:
                if not callable(batch):
                    raise TypeError(f"component {self.component_id!r}: execute_batch is not "
                                    "callable")
                self.execute_batch = batch

    def open(self) -> None:
        self.instance.prepare(self.conf, self.context)

    def chainable(self) -> bool:
        """A user bolt running one tuple at a time (no ``execute_batch``, not columnar)."""
        return self.execute_batch is None and self.run_columns is None and \
            not self.component_id.startswith("__")

    def take(self, tup: Tuple) -> None:
        """Deliver ``tup``, emitted on this worker's loop, to this task: run it now (chained)
        unless a tuple is queued before it, the task is running or the chain is
        ``MAX_CHAIN_DEPTH`` deep, in which cases it is queued. A chained execute counts and
        samples like the loop's; its exception is this task's error (``chain_failed``): the
        task then takes no more chained tuples and the worker stops at the end of the round."""
        q = self.queue
        if self.busy or q:
            q.append(tup)
            return
        d = self._dispatch
        depth = d.chain_depth
        if depth >= MAX_CHAIN_DEPTH:
            q.append(tup)
            return
        self.busy = True
        d.chain_depth = depth + 1
        stats = self.stats
        stats.sample_countdown -= 1
        try:
            if stats.sample_countdown <= 0:  # the timed tuple (sampling.py)
                q.append(tup)
                self.run_sampled(1)
            else:
                self.execute(tup)
        except WorkerError:  # a task further down the chain failed: already recorded
            raise
        except Exception as exc:
            raise self.worker.chain_failed(self.component_id, self.task_id, exc)  # noqa: B904
        d.chain_depth = depth
        d.chained += 1
        self.busy = False
        stats.executed += 1

    # -- collector -------------------------------------------------------------------------
    def emit(self, values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors``; returns the target task ids."""
        # The checks below are repeated inline in SpoutTask.emit on purpose: this is the hottest
        # path of the runtime and a shared helper costs a Python call per tuple.
        router = self.default_router if stream is DEFAULT_STREAM else self.routers.get(stream)
        if router is None or router.direct:
            self._bad_stream(stream, False)
        if type(values) is list and len(values) == router.n_fields:
            for v in values:  # plain scalars pass here; anything else gets the full check
                vt = type(v)
                if vt is str or vt is bytes or vt is float or v is None or \
                        (type(v) is int and SHORT_INT_MIN <= v <= SHORT_INT_MAX):
                    continue
                self._check(values, stream, router)
                break
        else:
            self._check(values, stream, router)
        router.emitted += 1
        only = router.only  # one subscriber (the common case): its router directly
        targets = only.choose(values) if only is not None else router.choose(values)
        # The common cases are inlined: untracked, and one anchor in one tree (its root and edge
        # are plain fields: nothing to allocate but the Tuple); _send handles every case.
        if self.debug or (anchors is not None and type(anchors) is not Tuple):
            self._send(targets, values, anchors, stream, router)
            return targets
        root = 0 if anchors is None else cast(Tuple, anchors).root
        if root:
            anchor = cast(Tuple, anchors)
            self.stats.transferred += len(targets)
            deliver = self._deliver
            takers = self.takers
            task = self.task_id
            comp = self.component_id
            fields = router.fields
            edges = self._edges
            for t in targets:
                taker = takers[t]
                if taker is not None:
                    edge = edges.next()  # 62-bit: see edges.py
                    anchor.ack_val ^= edge
                    taker.take(Tuple(values, stream, task, comp, fields, root, edge))
                else:  # drawn from the target's own generator (dispatch.edges_for)
                    edge = self._edges_for[t].next()
                    anchor.ack_val ^= edge
                    deliver[t](Tuple(values, stream, task, comp, fields, root, edge))
        elif anchors is None or not cast(Tuple, anchors).anchors:  # untracked
            self.stats.transferred += len(targets)
            tup = Tuple(values, stream, self.task_id, self.component_id,
                        router.fields)
            deliver = self._deliver
            takers = self.takers
            for t in targets:
                taker = takers[t]
                if taker is not None:
                    taker.take(tup)
                else:
                    deliver[t](tup)
        else:
            self._send(targets, values, anchors, stream, router)
        return targets

    def emit_many(self, values_list: Any, anchors: Any = None,
                  stream: Any = DEFAULT_STREAM) -> None:
        """``emit(values, anchors, stream)`` for every values of ``values_list``, routed as one
        batch. Every values is checked before any is sent."""
        router = self.routers.get(stream)
        if router is None or router.direct:
            self._bad_stream(stream, False)
        values_list = checked_values_list(values_list, self.component_id, stream, router)
        targets_list = router.choose_many(values_list)
        # fast paths: untracked (no anchor, or an anchor in no tree) and one anchor in one tree;
        # _send handles every case (a list of anchors, an anchor in several trees, debug)
        if self.debug or (anchors is not None and (
                type(anchors) is not Tuple or (not cast(Tuple, anchors).root
                                               and cast(Tuple, anchors).anchors))):
            for i in range(len(values_list)):
                self._send(targets_list[i], values_list[i], anchors, stream, router)
            return
        fields = router.fields
        # the batch is grouped per target task in one pass and each group handed over at once
        # (a queue's extend, one outbox extend per remote task) instead of a call per tuple
        groups = self._groups
        touched = self._touched
        sent = 0
        try:
            sent = self._group(values_list, targets_list, anchors, stream, fields)
            deliver_many = self._deliver_many
            for t in touched:
                deliver_many[t](groups[t])
        finally:  # the groups are empty again whatever happened
            for t in touched:
                groups[t].clear()
            touched.clear()
        self.stats.transferred += sent

    def _group(self, values_list: list[Any], targets_list: list[list[int]], anchors: Any,
               stream: str, fields: Fields) -> int:
        """Build emit_many's tuples into the per-target groups (``anchors``: None, or one Tuple
        in at most one tree); returns how many deliveries they make."""
        task = self.task_id
        comp = self.component_id
        groups = self._groups
        touched = self._touched
        sent = 0
        if anchors is None or not self._n_ackers or not cast(Tuple, anchors).root:
            for i in range(len(values_list)):
                tup = Tuple(values_list[i], stream, task, comp, fields)
                for t in targets_list[i]:
                    group = groups[t]
                    if not group:
                        touched.append(t)
                    group.append(tup)
                    sent += 1
        else:
            anchor = cast(Tuple, anchors)
            root = anchor.root
            ack_val = anchor.ack_val
            edges_for = self._edges_for
            for i in range(len(values_list)):
                values = values_list[i]
                for t in targets_list[i]:
                    edge = edges_for[t].next()
                    ack_val ^= edge
                    group = groups[t]
                    if not group:
                        touched.append(t)
                    group.append(Tuple(values, stream, task, comp, fields, root, edge))
                    sent += 1
            anchor.ack_val = ack_val
        return sent

    def emit_direct(self, task: Any, values: Any, anchors: Any = None,
                    stream: Any = DEFAULT_STREAM) -> None:
        """Emit to one task of a bolt subscribed to ``stream`` with direct grouping."""
        router = checked_router(self.routers, self.component_id, stream, values, True)
        self._send(direct_target(router, self.component_id, task), values, anchors, stream,
                   router)

    def _send(self, targets: list[Any], values: Any, anchors: Any, stream: Any,
              router: StreamRouter) -> None:
        """Every emit case: ``anchors`` is None, one Tuple or a list (or tuple) of Tuples, each
        in any number of trees. Each target gets, per anchor that is in a tree, a fresh edge XORed
        into that anchor and into each of its roots (Storm's)."""
        self.stats.transferred += len(targets)
        deliver = self._deliver
        task = self.task_id
        comp = self.component_id
        fields = router.fields
        if self.debug:
            self.worker.log_emit(comp, task, stream, values, targets)
        if type(anchors) is Tuple:
            anchors = [anchors]
        if not anchors or not self._n_ackers:
            tup = Tuple(values, stream, task, comp, fields)
            for t in targets:
                deliver[t](tup)
            return
        for t in targets:
            edges = self._edges_for[t]
            amap: dict[int, int] = {}
            for a in anchors:
                # a fresh edge per anchor (Storm's): two anchors in one tree add two different
                # edges to it, so the tree waits for the new tuple (one shared edge would cancel
                # out there and leave the new tuple untracked)
                anchor = cast(Tuple, a)
                if anchor.root:
                    edge = edges.next()
                    anchor.ack_val ^= edge
                    amap[anchor.root] = amap.get(anchor.root, 0) ^ edge
                elif anchor.anchors:
                    edge = edges.next()
                    anchor.ack_val ^= edge
                    for r in anchor.anchors:
                        amap[r] = amap.get(r, 0) ^ edge
            if not amap:
                deliver[t](Tuple(values, stream, task, comp, fields))
            elif len(amap) == 1:
                ((root, tree_edge),) = amap.items()
                deliver[t](Tuple(values, stream, task, comp, fields, root, tree_edge))
            else:
                deliver[t](Tuple(values, stream, task, comp, fields, 0, 0, amap))

    def ack(self, tup: Tuple) -> None:
        """The input tuple was processed: fold its edge and its children's edges into its roots."""
        root = tup.root
        if root:
            # consecutive acks of one root (a sentence's words) XOR into the dispatch's open
            # run; the run goes into the ack buffer (XORed per root, sent once per loop round)
            # when another root's ack comes, or when anything else writes or sends the buffer
            d = self._dispatch
            run = d.run_root
            if root == run:
                d.run_xor ^= tup.edge ^ tup.ack_val
            else:
                if run:
                    buf = self._ack_buffer
                    buf[run] = buf.get(run, 0) ^ d.run_xor
                d.run_root = root
                d.run_xor = tup.edge ^ tup.ack_val
        elif tup.anchors:
            self._dispatch.fold_run()
            buf = self._ack_buffer
            v = tup.ack_val
            for r, edge in tup.anchors.items():
                buf[r] = buf.get(r, 0) ^ edge ^ v
        self.stats.acked += 1
        # the timed tuple: its process latency (a chained load, which the compiled build reads
        # without counting a reference to the sampler)
        if tup is self.sampler.followed:
            self.sampler.acked()

    def ack_many(self, tuples: Any) -> None:
        """``ack`` every tuple of ``tuples``."""
        self._dispatch.fold_run()
        buf = self._ack_buffer
        n = 0
        # consecutive tuples of one tree (a sentence's words) are XORed together first: one
        # ack buffer update per run of a root instead of one per tuple
        run_root = 0
        run_xor = 0
        for item in tuples:
            tup = cast(Tuple, item)
            root = tup.root
            if root:
                if root == run_root:
                    run_xor ^= tup.edge ^ tup.ack_val
                else:
                    if run_root:
                        buf[run_root] = buf.get(run_root, 0) ^ run_xor
                    run_root = root
                    run_xor = tup.edge ^ tup.ack_val
            elif tup.anchors:
                v = tup.ack_val
                for r, edge in tup.anchors.items():
                    buf[r] = buf.get(r, 0) ^ edge ^ v
            n += 1
        if run_root:
            buf[run_root] = buf.get(run_root, 0) ^ run_xor
        self.stats.acked += n
        sampler = self.sampler  # the timed tuple's process latency (a list of tuples only)
        followed = sampler.followed
        if followed is not None and type(tuples) is list and followed in tuples:
            sampler.acked()

    def fail(self, tup: Tuple) -> None:
        """Fail the input tuple: every spout tuple it belongs to fails (and may be replayed)."""
        for root in tup.tree_edges():
            self.send_to_acker(ACK_FAIL, [root])
        self.stats.failed += 1
        if tup is self.sampler.followed:  # no process latency for a failed tuple
            self.sampler.followed = None

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of every spout tuple ``tup`` belongs to."""
        for root in tup.tree_edges():
            self.send_to_acker(ACK_RESET_TIMEOUT, [root])

    # -- BasicBolt -------------------------------------------------------------------------
    def _basic_execute(self, tup: Tuple) -> None:
        self._current = tup
        try:
            self.instance.process(tup)
        except FailedException:
            self.fail(tup)
            return
        finally:
            self._current = None
        self.ack(tup)

    def _basic_emit(self, values: Any, anchors: Any = None,
                    stream: Any = DEFAULT_STREAM) -> list[int]:
        return self.emit(values, anchors if anchors is not None else self._current, stream)

    def _basic_emit_many(self, values_list: Any, anchors: Any = None,
                         stream: Any = DEFAULT_STREAM) -> None:
        self.emit_many(values_list, anchors if anchors is not None else self._current, stream)

    def _basic_emit_direct(self, task: Any, values: Any, anchors: Any = None,
                           stream: Any = DEFAULT_STREAM) -> None:
        self.emit_direct(task, values, anchors if anchors is not None else self._current, stream)

    def close(self) -> None:
        try:
            self.instance.cleanup()
        except Exception as exc:  # noqa: BLE001 - shutdown must go on
            self.report_error(exc)

