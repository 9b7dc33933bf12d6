"""Task runners: one per task, holding the component instance, its inbound queue and the
collector methods bound onto the instance (``emit``, ``ack``, ...).

A runner sees its worker only as a ``TaskHost`` (``host.py``): tuples and acks go through the
host's ``Dispatch`` tables, errors and debug output through its methods. The component's
``run_in_background`` and ``call_soon_threadsafe`` are its task's off-loop seam
(``context.off_loop``, see ``stormpy.topology.offloop``). Everything here runs on the worker's
executor loop thread.
"""

from __future__ import annotations

import traceback
from collections import deque
from collections.abc import Callable, Mapping
from random import getrandbits
from time import perf_counter
from typing import Any, Final, NoReturn, cast

from stormpy.acker.rotating import RotatingMap
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET_TIMEOUT
from stormpy.config import message_timeout_secs
from stormpy.topology.component import BasicBolt, Spout
from stormpy.topology.context import TopologyContext
from stormpy.topology.errors import EmitError, FailedException
from stormpy.topology.fields import Fields
from stormpy.topology.tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.edges import EDGE_BITS
from stormpy.worker.host import TaskHost
from stormpy.worker.routing import StreamRouter
from stormpy.worker.stats import TaskStats
from stormpy.worker.values import SHORT_INT_MAX, SHORT_INT_MIN, check_values

TIMEOUT_BUCKETS = 3
#: a spout's loop round ends once it has emitted this many tuples (a batch counts its rows), so a
#: spout that emits hundreds per ``next_tuple`` (``emit_batch``, Kafka polls) hands the bolts of
#: its worker work after a call or two instead of queueing 64 calls' worth first
SPOUT_ROUND_TUPLES = 1024
_UINT64: Final = 2 ** 64


class TaskRunner:
    """State shared by spout and bolt tasks: identity, routers, delivery and acker access.

    ``execute(tup)`` consumes one queued tuple; ``open()`` prepares or opens the component (on
    the loop, before the first round); ``close()`` shuts it down."""

    is_spout = False
    #: runs one tuple of the queue (set by each kind of runner)
    execute: Callable[[Tuple], None]
    #: runs a list of queued tuples at once: the bolt's ``execute_batch``, or None
    execute_batch: Callable[[list[Tuple]], None] | None
    #: runs the next n queued items of a columnar bolt (``column_path.ColumnPath.run``, which
    #: returns the tuples run), or None: the loop's execute step then takes this instead
    run_columns: Callable[[int], int] | None

    def __init__(self, host: TaskHost, context: TopologyContext, instance: Any,
                 routers: dict[str, StreamRouter], conf: Mapping[str, Any]) -> None:
        self.host = host
        self.context = context
        self.task_id = context.task_id
        self.component_id = context.component_id
        self.instance: Any = instance
        self.routers = routers
        self.conf = conf
        self.queue: deque[Tuple] = deque()
        self.stats = TaskStats(self.component_id, self.task_id)
        self.debug = bool(conf.get("topology.debug"))
        # the dispatch's tables keep their identity: referenced here, one attribute load less
        # per tuple
        dispatch = host.dispatch
        self._deliver = dispatch.deliver
        self._ackers = dispatch.acker_tasks
        self._n_ackers = len(dispatch.acker_tasks)
        self._acker_direct = dispatch.acker_cores
        self._ack_buffer = dispatch.ack_buffer
        self._deliver_many = dispatch.deliver_many
        #: emit_many's per-target groups (indexed by task id, empty between calls) and the
        #: tasks it filled
        self._groups: list[list[Tuple]] = [[] for _ in dispatch.deliver]
        self._touched: list[int] = []
        self.stats.routers = routers
        self.execute_batch = None
        self.run_columns = None
        #: the clock of sampled latencies (seconds); replaceable in tests
        self.sample_clock: Callable[[], float] = perf_counter
        #: a timed tuple not acked yet (its process latency), and when it started; a newer timed
        #: tuple takes the place once it is acked or failed, or older than the message timeout
        self._sampled: Tuple | None = None
        self._sampled_start = 0.0
        self._sample_stale = message_timeout_secs(conf)
        off_loop = context.off_loop
        instance.report_error = self.report_error
        instance.run_in_background = off_loop.submit
        instance.call_soon_threadsafe = off_loop.call_soon

    # -- helpers -------------------------------------------------------------------------
    def _router(self, stream: Any, values: Any, direct: bool) -> StreamRouter:
        """The router of ``stream`` after checking the emit (slow path, used by emit_direct;
        ``emit`` inlines the same checks)."""
        router = self.routers.get(stream)
        if router is None or router.direct != direct:
            self._bad_stream(stream, direct)
        self._check(values, stream, router)
        router.emitted += 1
        return router

    def _check(self, values: Any, stream: Any, router: StreamRouter) -> None:
        check_values(values, self.component_id, stream)
        if len(values) != router.n_fields:
            raise EmitError(f"component {self.component_id!r}, stream {stream!r}: emitted "
                            f"{len(values)} values for fields {router.fields.to_list()}")

    def _check_all(self, values_list: Any, stream: Any, router: StreamRouter) -> list[Any]:
        """``values_list`` as a list after checking every values in it (emit_many's checks, all
        done before anything is sent)."""
        if type(values_list) is not list:
            if isinstance(values_list, (str, bytes, dict)) or not hasattr(values_list, "__iter__"):
                raise EmitError(f"component {self.component_id!r}, stream {stream!r}: emit_many "
                                "takes a list of values lists, got "
                                f"{type(values_list).__name__}")
            values_list = list(values_list)
        n_fields = router.n_fields
        for values in values_list:
            if type(values) is list and len(values) == n_fields:
                for v in values:  # plain scalars pass here; anything else gets the full check
                    vt = type(v)
                    if vt is str or vt is bytes or vt is float or v is None or \
                            (type(v) is int and SHORT_INT_MIN <= v <= SHORT_INT_MAX):
                        continue
                    self._check(values, stream, router)
                    break
            else:
                self._check(values, stream, router)
        router.emitted += len(values_list)
        return cast(list[Any], values_list)

    def _bad_stream(self, stream: Any, direct: bool) -> NoReturn:
        if stream not in self.routers:
            raise EmitError(f"component {self.component_id!r} emitted on undeclared stream "
                            f"{stream!r} (declared: {sorted(self.routers)})")
        if direct:
            raise EmitError(f"component {self.component_id!r}: emit_direct on stream {stream!r}, "
                            "which is not declared direct")
        raise EmitError(f"component {self.component_id!r}: stream {stream!r} is direct; use "
                        "emit_direct(task, values)")

    def _direct_target(self, router: StreamRouter, task: Any) -> list[Any]:
        try:
            subscribed = task in router.direct_tasks
        except TypeError:  # unhashable (a list of tasks, a dict): not a task id either
            subscribed = False
        if not subscribed:
            raise EmitError(f"component {self.component_id!r}: emit_direct to task {task} on stream "
                            f"{router.stream!r}, which is not a task subscribed to it directly "
                            f"{sorted(router.direct_tasks)}")
        return [task]

    def send_to_acker(self, stream: str, values: list[int]) -> None:
        """Deliver an acker message for ``values[0]`` (the root) to its acker task: a direct call
        when that acker runs in this worker, a tuple through the transport otherwise."""
        i = values[0] % self._n_ackers
        acker = self._acker_direct[i]
        if acker is not None:
            acker.handle(stream, values)
        else:
            self._deliver[self._ackers[i]](Tuple(values, stream, self.task_id, self.component_id,
                                                 None))

    def send_system(self, task: int, stream: str, values: list[Any]) -> None:
        """Deliver a system tuple (acker replies, reset forwards) straight to ``task``."""
        self._deliver[task](Tuple(values, stream, self.task_id, self.component_id, None))

    def report_error(self, error: Any) -> None:
        """Record an error for this task (shown by ``stormpy`` commands and the UI)."""
        if isinstance(error, BaseException):
            text = "".join(traceback.format_exception(error)).rstrip()
        else:
            text = str(error)
        self.host.record_error(self.component_id, self.task_id, text)

    def run_sampled(self, n: int) -> None:
        """Run the next ``n`` queued tuples (the loop's execute step) when the sample countdown
        runs out among them: the loop already lowered ``stats.sample_countdown`` by ``n``, so it
        is <= 0 and the ``countdown + n``-th tuple is timed, then every later one the fresh gaps
        reach. One tuple at a time: each timed tuple's ``execute``; ``execute_batch``: the whole
        call is timed and each timed tuple of the batch is given ``elapsed / n``. One timed tuple
        at a time is followed to its ack (process latency, see ``_track``)."""
        stats = self.stats
        q = self.queue
        pop = q.popleft
        clock = self.sample_clock
        at = stats.sample_countdown + n - 1  # index of the next timed tuple in these n
        execute_batch = self.execute_batch
        if execute_batch is not None:
            k = 0
            last = at
            while at < n:
                k += 1
                last = at
                at += stats.next_gap()
            stats.sample_countdown = at - n + 1
            if n == len(q):
                batch = list(q)
                q.clear()
            else:
                batch = [pop() for _ in range(n)]
            start = clock()
            self._track(batch[last], start)
            execute_batch(batch)
            stats.execute_latency_sum += (clock() - start) * k / n
            stats.execute_latency_count += k
            return
        execute = self.execute
        done = 0
        total = 0.0
        k = 0
        while at < n:
            for _ in range(at - done):
                execute(pop())
            tup = pop()
            start = clock()
            if self._sampled is None or start - self._sampled_start > self._sample_stale:
                self._sampled = tup  # followed to its ack (``_track``, inlined)
                self._sampled_start = start
            execute(tup)
            total += clock() - start
            k += 1
            done = at + 1
            at += stats.next_gap()
        for _ in range(n - done):
            execute(pop())
        stats.execute_latency_sum += total
        stats.execute_latency_count += k
        stats.sample_countdown = at - n + 1

    def _track(self, tup: Tuple, start: float) -> None:
        """Follow the timed ``tup`` to its ack unless another timed tuple is still followed."""
        if self._sampled is None or start - self._sampled_start > self._sample_stale:
            self._sampled = tup
            self._sampled_start = start

    def _processed(self, tup: Tuple) -> None:
        """The timed tuple ``tup`` was acked: its process latency."""
        self._sampled = None
        self.stats.process_latency_sum += self.sample_clock() - self._sampled_start
        self.stats.process_latency_count += 1

    def open(self) -> None:
        """Prepare (bolts) or open (spouts) the component."""
        raise NotImplementedError

    def close(self) -> None:
        """Shut the component down (cleanup/close), errors reported, never raised."""


class BoltTask(TaskRunner):
    """A bolt task: ``execute`` consumes its queue."""

    def __init__(self, host: TaskHost, context: TopologyContext, instance: Any,
                 routers: dict[str, StreamRouter], conf: Mapping[str, Any]) -> None:
        super().__init__(host, context, instance, routers, conf)
        instance.emit = self.emit
        instance.emit_many = self.emit_many
        instance.emit_direct = self.emit_direct
        instance.ack = self.ack
        instance.ack_many = self.ack_many
        instance.fail = self.fail
        instance.reset_timeout = self.reset_timeout
        self.stats.set_sample_rate(conf.get("topology.stats.sample.rate", 0.05))
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

    # -- collector -------------------------------------------------------------------------
    def emit(self, values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors``; returns the target task ids."""
        # The checks below are repeated inline in SpoutTask.emit on purpose: this is the hottest
        # path of the runtime and a shared helper costs a Python call per tuple.
        router = self.routers.get(stream)
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
            task = self.task_id
            comp = self.component_id
            fields = router.fields
            for t in targets:
                edge = getrandbits(EDGE_BITS)  # 62-bit: see edges.py
                anchor.ack_val ^= edge
                deliver[t](Tuple(values, stream, task, comp, fields, root, edge))
        elif anchors is None or not cast(Tuple, anchors).anchors:  # untracked
            self.stats.transferred += len(targets)
            tup = Tuple(values, stream, self.task_id, self.component_id,
                        router.fields)
            deliver = self._deliver
            for t in targets:
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
        values_list = self._check_all(values_list, stream, router)
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
            for i in range(len(values_list)):
                values = values_list[i]
                for t in targets_list[i]:
                    edge = getrandbits(EDGE_BITS)
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
        router = self._router(stream, values, True)
        self._send(self._direct_target(router, task), values, anchors, stream, router)

    def _send(self, targets: list[Any], values: Any, anchors: Any, stream: Any,
              router: StreamRouter) -> None:
        """Every emit case: ``anchors`` is None, one Tuple or a list (or tuple) of Tuples, each
        in any number of trees. Each target gets a fresh edge, XORed into every anchor that is
        in a tree (once per anchor) and into each of its roots (once per anchor in that tree)."""
        self.stats.transferred += len(targets)
        deliver = self._deliver
        task = self.task_id
        comp = self.component_id
        fields = router.fields
        if self.debug:
            self.host.log_emit(comp, task, stream, values, targets)
        if type(anchors) is Tuple:
            anchors = [anchors]
        if not anchors or not self._n_ackers:
            tup = Tuple(values, stream, task, comp, fields)
            for t in targets:
                deliver[t](tup)
            return
        for t in targets:
            edge = getrandbits(EDGE_BITS)
            amap: dict[int, int] = {}
            for a in anchors:
                anchor = cast(Tuple, a)
                if anchor.root:
                    anchor.ack_val ^= edge
                    amap[anchor.root] = amap.get(anchor.root, 0) ^ edge
                elif anchor.anchors:
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
        buf = self._ack_buffer  # XORed per root, sent once per loop round by the worker
        if root:
            buf[root] = buf.get(root, 0) ^ tup.edge ^ tup.ack_val
        elif tup.anchors:
            v = tup.ack_val
            for r, edge in tup.anchors.items():
                buf[r] = buf.get(r, 0) ^ edge ^ v
        self.stats.acked += 1
        if tup is self._sampled:
            self._processed(tup)

    def ack_many(self, tuples: Any) -> None:
        """``ack`` every tuple of ``tuples``."""
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
        sampled = self._sampled  # the timed tuple's process latency (a list of tuples only)
        if sampled is not None and type(tuples) is list and sampled in tuples:
            self._processed(sampled)

    def fail(self, tup: Tuple) -> None:
        """Fail the input tuple: every spout tuple it belongs to fails (and may be replayed)."""
        for root in tup.tree_edges():
            self.send_to_acker(ACK_FAIL, [root])
        self.stats.failed += 1
        if tup is self._sampled:  # no process latency for a failed tuple
            self._sampled = None

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


class SpoutBatch:
    """The message ids of one batch root: the spout's pending entry holds this object in place
    of a message id, so acker replies and timeouts know to ack or fail every id of it."""

    __slots__ = ("msg_ids",)

    def __init__(self, msg_ids: list[Any]) -> None:
        self.msg_ids = msg_ids

    def __len__(self) -> int:
        return len(self.msg_ids)

    def __repr__(self) -> str:
        return f"SpoutBatch({len(self.msg_ids)} message ids)"


class SpoutTask(TaskRunner):
    """A spout task: ``next_tuple`` rounds, pending roots with timeouts, acker replies.
    ``emit_batch`` is bound by ``spout_batch.attach`` (the factory)."""

    is_spout = True

    def __init__(self, host: TaskHost, context: TopologyContext, instance: Spout,
                 routers: dict[str, StreamRouter], conf: Mapping[str, Any]) -> None:
        super().__init__(host, context, instance, routers, conf)
        instance.emit = self.emit  # type: ignore[method-assign]
        instance.emit_many = self.emit_many  # type: ignore[method-assign]
        instance.emit_direct = self.emit_direct  # type: ignore[method-assign]
        #: root -> (message id, or a SpoutBatch of them, emit time)
        self.pending: RotatingMap[int, tuple[Any, float]] = RotatingMap(TIMEOUT_BUCKETS)
        self.n_pending = 0
        self.emit_count = 0
        max_pending = conf.get("topology.max.spout.pending")
        self.max_pending = int(max_pending) if max_pending else 0
        self.batch = max(1, int(conf.get("topology.spout.max.batch.size") or 1))
        #: message ids (or SpoutBatches) emitted without acker tasks: acked at the round's end
        self.immediate_acks: deque[Any] = deque()
        #: index of an acker running in this worker, or -1 (set in open, once every task of the
        #: worker exists): roots are chosen so their acker is that one, keeping the init, the
        #: acker's replies and acks from co-located bolts off the network
        self._home_acker = -1
        self.execute = self.on_system_tuple
        self.active = False

    def open(self) -> None:
        local_ackers = [i for i, a in enumerate(self._acker_direct) if a is not None]
        if local_ackers:
            self._home_acker = local_ackers[self.task_id % len(local_ackers)]
        self.instance.open(self.conf, self.context)

    # -- collector -------------------------------------------------------------------------
    def emit(self, values: Any, msg_id: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        """Emit ``values``; with a ``msg_id`` the tuple tree is tracked and ack/fail follow."""
        router = self.routers.get(stream)
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
        self._send(targets, values, msg_id, stream, router)
        return targets

    def emit_many(self, values_list: Any, msg_ids: Any = None,
                  stream: Any = DEFAULT_STREAM) -> None:
        """``emit(values_list[i], msg_ids[i], stream)`` for each i (``msg_ids`` None: none
        tracked), routed as one batch. Everything is checked before any is sent."""
        router = self.routers.get(stream)
        if router is None or router.direct:
            self._bad_stream(stream, False)
        values_list = self._check_all(values_list, stream, router)
        if msg_ids is not None:
            msg_ids = list(msg_ids)
            if len(msg_ids) != len(values_list):
                raise EmitError(f"component {self.component_id!r}, stream {stream!r}: emit_many "
                                f"got {len(msg_ids)} message ids for {len(values_list)} tuples")
        targets_list = router.choose_many(values_list)
        for i in range(len(values_list)):
            self._send(targets_list[i], values_list[i],
                       None if msg_ids is None else msg_ids[i], stream, router)

    def emit_direct(self, task: Any, values: Any, msg_id: Any = None,
                    stream: Any = DEFAULT_STREAM) -> None:
        router = self._router(stream, values, True)
        self._send(self._direct_target(router, task), values, msg_id, stream, router)

    def _send(self, targets: list[Any], values: Any, msg_id: Any, stream: Any,
              router: StreamRouter) -> None:
        self.stats.transferred += len(targets)
        self.emit_count += 1
        deliver = self._deliver
        task = self.task_id
        comp = self.component_id
        fields = router.fields
        if self.debug:
            self.host.log_emit(comp, task, stream, values, targets)
        if msg_id is None or not self._n_ackers:
            tup = Tuple(values, stream, task, comp, fields)
            for t in targets:
                deliver[t](tup)
            if msg_id is not None:
                self.immediate_acks.append(msg_id)
            return
        root = getrandbits(64)
        if self._home_acker >= 0:  # pin the root to an acker in this worker (root % n picks it)
            root += self._home_acker - root % self._n_ackers
            if root >= _UINT64:  # past 64 bits: the previous id with the same acker
                root -= self._n_ackers
        if not root:  # 0 means "in no tree": the next id with the same acker
            root = self._n_ackers
        xor = 0
        for t in targets:
            edge = getrandbits(EDGE_BITS)
            xor ^= edge
            deliver[t](Tuple(values, stream, task, comp, fields, root, edge))
        self.pending.put_new(root, (msg_id, perf_counter()))  # a fresh random root
        self.n_pending += 1
        i = root % self._n_ackers
        acker = self._acker_direct[i]
        if acker is not None:
            acker.init(root, xor, task)
        else:
            deliver[self._ackers[i]](Tuple([root, xor, task], ACK_INIT, task, comp, None))

    # -- loop hooks --------------------------------------------------------------------------
    def run_round(self) -> int:
        """Call ``next_tuple`` up to the batch size while it emits, pending allows it and fewer
        than ``SPOUT_ROUND_TUPLES`` tuples were emitted in the round; returns how many tuples
        were emitted."""
        start = self.emit_count
        next_tuple = self.instance.next_tuple
        max_pending = self.max_pending
        for _ in range(self.batch):
            if max_pending and self.n_pending >= max_pending:
                break
            before = self.emit_count
            next_tuple()
            after = self.emit_count
            if after == before or after - start >= SPOUT_ROUND_TUPLES:
                break
        if self.immediate_acks:
            acks = self.immediate_acks
            ack = self.instance.ack
            while acks:
                msg_id = acks.popleft()
                if type(msg_id) is SpoutBatch:
                    ids = cast(SpoutBatch, msg_id).msg_ids
                    self.stats.acked += len(ids)
                    self._ack_ids(ids)
                else:
                    self.stats.acked += 1
                    ack(msg_id)
        return self.emit_count - start

    def on_system_tuple(self, tup: Tuple) -> None:
        """Replies from the acker: ack, fail, or reset the timeout of a root."""
        stream = tup.stream
        root = tup.values[0]
        if stream == ACK_RESET_TIMEOUT:
            self.pending.touch(root)
            return
        entry = self.pending.pop(root)
        if entry is None:
            return  # already timed out (and failed) or a duplicate reply
        msg_id, start = entry
        if type(msg_id) is SpoutBatch:
            self._batch_done(stream, cast(SpoutBatch, msg_id).msg_ids, start)
            return
        self.n_pending -= 1
        stats = self.stats
        if stream == ACK_ACK:
            stats.acked += 1
            stats.latency_sum += perf_counter() - start
            stats.latency_count += 1
            self.instance.ack(msg_id)
        elif stream == ACK_FAIL:
            stats.failed += 1
            self.instance.fail(msg_id)

    def _batch_done(self, stream: str, ids: list[Any], start: float) -> None:
        """The acker's reply about a batch root: every message id is acked (complete latency
        counted once per id) or failed."""
        n = len(ids)
        self.n_pending -= n
        stats = self.stats
        if stream == ACK_ACK:
            stats.acked += n
            stats.latency_sum += (perf_counter() - start) * n
            stats.latency_count += n
            self._ack_ids(ids)
        elif stream == ACK_FAIL:
            stats.failed += n
            self._fail_ids(ids)

    def _ack_ids(self, ids: list[Any]) -> None:
        """The spout's ``ack_many(ids)`` when it defines one, else its ``ack`` of each id."""
        self._settle(ids, getattr(self.instance, "ack_many", None), self.instance.ack)

    def _fail_ids(self, ids: list[Any]) -> None:
        """The spout's ``fail_many(ids)`` when it defines one, else its ``fail`` of each id."""
        self._settle(ids, getattr(self.instance, "fail_many", None), self.instance.fail)

    @staticmethod
    def _settle(ids: list[Any], many: Callable[[list[Any]], Any] | None,
                one: Callable[[Any], Any]) -> None:
        if many is not None:
            many(ids)
            return
        for msg_id in ids:
            one(msg_id)

    def expire_pending(self) -> None:
        """Rotate the timeout buckets; expired roots fail (every message id of a batch root)."""
        expired = self.pending.rotate()
        if expired:
            fail = self.instance.fail
            for msg_id, _start in expired.values():
                if type(msg_id) is SpoutBatch:
                    ids = cast(SpoutBatch, msg_id).msg_ids
                    self.n_pending -= len(ids)
                    self.stats.failed += len(ids)
                    self._fail_ids(ids)
                else:
                    self.n_pending -= 1
                    self.stats.failed += 1
                    fail(msg_id)

    def set_active(self, active: bool) -> None:
        if active != self.active:
            self.active = active
            if active:
                self.instance.activate()
            else:
                self.instance.deactivate()

    def close(self) -> None:
        try:
            self.instance.close()
        except Exception as exc:  # noqa: BLE001 - shutdown must go on
            self.report_error(exc)
