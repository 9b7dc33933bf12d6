"""Spout tasks: ``next_tuple`` rounds, the spout collector bound onto the instance (``emit``,
``emit_many``, ``emit_direct``; ``emit_batch`` is bound by ``spout_batch.attach``), pending
roots with their message timeouts, and the acker's replies (ack, fail, reset timeout) turned
into the spout's ``ack``/``fail`` calls.

A tracked emit (a message id, acker tasks running) starts a tuple tree: a fresh root pinned to
an acker of this worker (``spout_roots.py``), one edge per target, the acker's init and a
pending entry that the acker's reply or the timeout rotation (``expire_pending``, driven by the
worker's task timers) settles. Without acker tasks a message id is acked at the end of the
spout's round. This module is compiled with the rest of the tuple path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import Any, Final, cast

from stormpy.acker.rotating import RotatingMap
from stormpy.acker.streams import ACK_ACK, ACK_FAIL, ACK_RESET_TIMEOUT
from stormpy.config import setting
from stormpy.topology._component import Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import EmitError
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.emit_checks import checked_router, checked_values_list, direct_target
from stormpy.worker.routing import StreamRouter
from stormpy.worker.spout_roots import SpoutRoots
from stormpy.worker.tasks import TaskRunner
from stormpy.worker.values import SHORT_INT_MAX, SHORT_INT_MIN
from stormpy.worker.worker_view import WorkerView

__all__ = ["SPOUT_ROUND_TUPLES", "TIMEOUT_BUCKETS", "SpoutBatch", "SpoutTask"]

#: the pending roots' timeout buckets: a root fails after ``TIMEOUT_BUCKETS - 1`` to
#: ``TIMEOUT_BUCKETS`` rotations, one every ``timeout / (TIMEOUT_BUCKETS - 1)``
TIMEOUT_BUCKETS: Final = 3
#: a spout's loop round ends once it has emitted this many tuples (a batch counts its rows), so a
#: spout that emits hundreds per ``next_tuple`` (``emit_batch``, Kafka polls) hands the bolts of
#: its worker work after a call or two instead of queueing 64 calls' worth first; the default of
#: ``topology.producer.batch.size``, which sets it per spout
SPOUT_ROUND_TUPLES: Final = 1024


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

    def __init__(self, worker: WorkerView, context: TopologyContext, instance: Spout,
                 routers: dict[str, StreamRouter], conf: Mapping[str, Any]) -> None:
        super().__init__(worker, context, instance, routers, conf)
        instance.emit = self.emit  # type: ignore[method-assign]
        instance.emit_many = self.emit_many  # type: ignore[method-assign]
        instance.emit_direct = self.emit_direct  # type: ignore[method-assign]
        #: root -> (message id, or a SpoutBatch of them, emit time)
        self.pending: RotatingMap[int, tuple[Any, float]] = RotatingMap(TIMEOUT_BUCKETS)
        self.n_pending = 0
        self.emit_count = 0
        self.max_pending = setting(conf, "topology.max.spout.pending") or 0  # 0: unlimited
        self.batch = setting(conf, "topology.spout.max.batch.size")
        #: tuples a round may emit before it ends (``topology.producer.batch.size``)
        self.round_tuples = int(setting(conf, "topology.producer.batch.size"))
        #: message ids (or SpoutBatches) emitted without acker tasks: acked at the round's end
        self.immediate_acks: deque[Any] = deque()
        #: the roots of this task's tuple trees and their acker inits
        self.roots = SpoutRoots(worker.dispatch, self.task_id, self.component_id)
        self.execute = self.on_system_tuple
        self.active = False

    def open(self) -> None:
        self.roots.choose_home()  # every task of the worker exists by now
        self.instance.open(self.conf, self.context)

    # -- collector -------------------------------------------------------------------------
    def emit(self, values: Any, msg_id: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        """Emit ``values``; with a ``msg_id`` the tuple tree is tracked and ack/fail follow."""
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
        self._send(targets, values, msg_id, stream, router)
        return targets

    def emit_many(self, values_list: Any, msg_ids: Any = None,
                  stream: Any = DEFAULT_STREAM) -> None:
        """``emit(values_list[i], msg_ids[i], stream)`` for each i (``msg_ids`` None: none
        tracked), routed as one batch. Everything is checked before any is sent."""
        router = self.routers.get(stream)
        if router is None or router.direct:
            self._bad_stream(stream, False)
        values_list = checked_values_list(values_list, self.component_id, stream, router)
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
        router = checked_router(self.routers, self.component_id, stream, values, True)
        self._send(direct_target(router, self.component_id, task), values, msg_id, stream,
                   router)

    def _send(self, targets: list[Any], values: Any, msg_id: Any, stream: Any,
              router: StreamRouter) -> None:
        self.stats.transferred += len(targets)
        self.emit_count += 1
        deliver = self._deliver
        task = self.task_id
        comp = self.component_id
        fields = router.fields
        if self.debug:
            self.worker.log_emit(comp, task, stream, values, targets)
        if msg_id is None or not self._n_ackers:
            tup = Tuple(values, stream, task, comp, fields)
            for t in targets:
                deliver[t](tup)
            if msg_id is not None:
                self.immediate_acks.append(msg_id)
            return
        roots = self.roots
        root = roots.fresh()
        xor = 0
        edges_for = self._edges_for
        for t in targets:
            edge = edges_for[t].next()
            xor ^= edge
            deliver[t](Tuple(values, stream, task, comp, fields, root, edge))
        self.pending.put_new(root, (msg_id, perf_counter()))  # a fresh random root
        self.n_pending += 1
        roots.init(root, xor)

    # -- loop hooks --------------------------------------------------------------------------
    def run_round(self) -> int:
        """Call ``next_tuple`` up to the batch size while it emits, pending allows it and fewer
        than ``round_tuples`` tuples were emitted in the round; returns how many tuples were
        emitted."""
        start = self.emit_count
        round_tuples = self.round_tuples
        next_tuple = self.instance.next_tuple
        max_pending = self.max_pending
        for _ in range(self.batch):
            if max_pending and self.n_pending >= max_pending:
                break
            before = self.emit_count
            next_tuple()
            after = self.emit_count
            if after == before or after - start >= round_tuples:
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

