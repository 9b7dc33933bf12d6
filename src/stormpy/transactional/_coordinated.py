"""CoordinatedBolt: the wrapper around every bolt of a transactional topology (and its emitter).

Per batch (attempt) and task it counts the tuples the wrapped bolt sent to each downstream task;
when it has finished the batch it tells every task of every downstream component, on the direct
``$coord`` stream, how many tuples it sent that task (zero included). A task has the whole batch
when every upstream task has reported and it received as many tuples as reported in total; then
the wrapped batch bolt's ``finish_batch`` runs (for a committer: only once the batch's commit
tuple arrived too, and the store's next txid is not past the commit's: such a stale commit, from a
coordinator that fell behind, completes without the committer). This works for every grouping,
through chains of bolts and for tasks that receive no tuple of a batch.

Tracking: batch data tuples are not anchored one by one. The coordination tuples are: a task holds
those it received (a committer holds its commit tuple instead) un-acked until it has finished the
batch, and anchors its own coordination tuples to them, so the batch's tuple tree completes exactly
when every task finished it. A failure anywhere fails the held tuples, hence the batch; tuples lost
with a worker leave counts short and the batch times out. Both replay it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.config import message_timeout_secs
from stormpy.topology._component import BasicBolt, Bolt
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import EmitError, FailedException
from stormpy.topology._imports import import_object
from stormpy.topology._state import StateStore, StateUnavailableError
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.transactional._api import BatchBolt, BatchOutputCollector
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.transactional._batch_track import BatchTrack, counting_collector
from stormpy.transactional._coordinator import CURRENT_KEY
from stormpy.transactional._emitter import EmitterExecutor, make_executor
from stormpy.transactional._store import close, open_store
from stormpy.transactional._streams import (
    BATCH_STREAM,
    COMMIT_STREAM,
    COORD_STREAM,
    RESERVED_PREFIX,
    TICK_SECS,
)

log = logging.getLogger("stormpy.transactional")

EMITTER, BATCH, BASIC = "emitter", "batch", "basic"


class CoordinatedBolt(Bolt):
    """Built by ``TransactionalTopologyBuilder``; not for direct use.

    ``role``: ``emitter`` (wraps the spout's emitter; input: the coordinator's batch stream),
    ``batch`` (a ``BatchBolt``) or ``basic`` (a ``BasicBolt``, run per tuple). ``target`` is the
    wrapped class's import path, ``target_kwargs`` its constructor arguments.
    """

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        target = import_object(kwargs["target"])
        streams = dict(target.declare_outputs(kwargs.get("target_kwargs", {})))
        for name in streams:
            if name.startswith(RESERVED_PREFIX):
                raise ValueError(f"{target.__qualname__}: stream names starting with "
                                 f"{RESERVED_PREFIX!r} are reserved in transactional topologies "
                                 f"({name!r})")
        streams[COORD_STREAM] = Stream(["id", "count"], name=COORD_STREAM, direct=True)
        return streams

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        target = import_object(kwargs["target"])
        return {**target.declare_config(kwargs.get("target_kwargs", {})),
                "topology.tick.tuple.freq.secs": TICK_SECS}

    def __init__(self, role: str, target: str, target_kwargs: Mapping[str, Any],
                 transactional_id: str, committer: bool = False) -> None:
        if role not in (EMITTER, BATCH, BASIC):
            raise ValueError(f"unknown coordinated role {role!r}")
        self.role = role
        self.target_cls: Any = import_object(target)
        self.target_kwargs = dict(target_kwargs)
        self.transactional_id = transactional_id
        self.committer = committer

    # -- setup ---------------------------------------------------------------------------------
    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.conf = conf
        self.context = context
        me = context.component_id
        spec = context.spec
        sources = {i.component for i in spec.components[me].inputs if i.stream == COORD_STREAM}
        self.num_reports = sum(len(context.tasks_of(c)) for c in sources)
        self.out_tasks = sorted(t for bolt, _g in spec.subscribers(me, COORD_STREAM)
                                for t in context.tasks_of(bolt))
        timeout = message_timeout_secs(conf)
        self.max_age = int(timeout // TICK_SECS) + 2
        self.tracked: dict[tuple[int, int], BatchTrack] = {}
        self._store: StateStore | None = None
        self.executor: EmitterExecutor | None = None
        self.basic: BasicBolt | None = None
        self._current: BatchTrack | None = None
        if self.role == EMITTER:
            spout = self.target_cls(**self.target_kwargs)
            self.executor = make_executor(spout, conf, context, self.store)
            self.emitted: dict[int, TransactionAttempt] = {}
        elif self.role == BATCH:
            self.target_cls.prepare_task(conf, context)
        elif self.role == BASIC:
            basic = self.target_cls(**self.target_kwargs)
            basic.emit = self._basic_emit
            basic.emit_direct = self._basic_emit_direct
            basic.report_error = self.report_error
            basic.run_in_background = self.run_in_background
            basic.call_soon_threadsafe = self.call_soon_threadsafe
            basic.prepare(conf, context)
            self.basic = basic

    def store(self) -> StateStore:
        """The transactional store (opened on first use)."""
        if self._store is None:
            self._store = open_store(self.conf, self.context, self.transactional_id)
        return self._store

    def cleanup(self) -> None:
        try:
            if self.executor is not None:
                self.executor.close()
            if self.basic is not None:
                self.basic.cleanup()
            if self.role == BATCH:
                self.target_cls.cleanup_task(self.conf, self.context)
        finally:
            close(self._store)

    # -- counting emits ------------------------------------------------------------------------
    def _collector(self, track: BatchTrack) -> BatchOutputCollector:
        """The batch's counting collector (one per batch and task)."""
        if track.collector is None:
            track.collector = counting_collector(track, self)
        return track.collector

    def _basic_emit(self, values: Any, anchors: Any = None,
                    stream: str = DEFAULT_STREAM) -> list[int]:
        if self._current is None:
            raise RuntimeError("a BasicBolt in a transactional topology emits only while it "
                               "processes a tuple")
        return self._collector(self._current).emit(values, stream)

    def _basic_emit_direct(self, task: int, values: Any, anchors: Any = None,
                           stream: str = DEFAULT_STREAM) -> None:
        if self._current is None:
            raise RuntimeError("a BasicBolt in a transactional topology emits only while it "
                               "processes a tuple")
        self._collector(self._current).emit_direct(task, values, stream)

    # -- execute -------------------------------------------------------------------------------
    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self._expire()
            return
        if self.role == EMITTER:
            self._emitter_execute(tup)
            return
        first = tup.values[0]
        try:
            track = self.tracked[(first[0], first[1])]
        except (KeyError, TypeError, IndexError):
            track = self._track(TransactionAttempt.of(first))
        attempt = track.attempt
        stream = tup.stream
        if track.failed:
            self.fail(tup)
            return
        if stream == COORD_STREAM:
            track.reports += 1
            track.expected += int(tup.values[1])
            if self.committer:
                self.ack(tup)  # a committer's batch waits for its commit tuple, held instead
            else:
                track.held.append(tup)
        elif stream == COMMIT_STREAM:
            track.commit = True
            track.held.append(tup)
        else:
            user = Tuple([attempt, *tup.values[1:]], stream, tup.task, tup.component, tup.fields)
            if not self._run(track, user):
                self.fail(tup)  # the tuple received, not the copy the wrapped bolt saw
                return
            track.received += 1
            self.ack(tup)
        if track.reports == self.num_reports and track.received == track.expected and \
                (track.commit or not self.committer):
            self._finish(track)

    def _track(self, attempt: TransactionAttempt) -> BatchTrack:
        """The tracking of ``attempt`` (abandoned attempts are forgotten by ``_expire``: tuples of
        an old attempt may still arrive from one upstream task after another sent the new one)."""
        track = self.tracked.get(attempt.key)
        if track is None:
            track = self.tracked[attempt.key] = BatchTrack(attempt)
        return track

    def _run(self, track: BatchTrack, tup: Tuple) -> bool:
        """Give one data tuple to the wrapped bolt; False (the batch failed; the caller fails the
        tuple) when it raised."""
        try:
            if self.role == BATCH:
                self._bolt(track).execute(tup)
            else:
                assert self.basic is not None
                self._current = track
                try:
                    self.basic.process(tup)
                finally:
                    self._current = None
        except EmitError:
            raise  # a programming error (bad values, unknown stream): the component fails
        except Exception as exc:  # noqa: BLE001 - any error fails the batch, which is replayed
            self._fail_batch(track, exc, "execute")
            return False
        return True

    def _bolt(self, track: BatchTrack) -> BatchBolt:
        if track.bolt is None:
            bolt = self.target_cls(**self.target_kwargs)
            bolt.report_error = self.report_error
            bolt.run_in_background = self.run_in_background
            bolt.call_soon_threadsafe = self.call_soon_threadsafe
            bolt.prepare(self.conf, self.context, self._collector(track), track.attempt)
            track.bolt = bolt
        return track.bolt

    def _finish(self, track: BatchTrack) -> None:
        if self.committer:
            committed = self._committed_already(track)
            if committed is None:
                return  # failed: the store cannot be read
            if committed:
                self._complete(track)
                return
        if self.role == BATCH:
            try:
                self._bolt(track).finish_batch()
            except EmitError:
                raise
            except Exception as exc:  # noqa: BLE001 - any error fails the batch
                self._fail_batch(track, exc, "finish_batch")
                return
            if track.deferred is not None:
                work, then = track.deferred
                self.run_in_background(work, lambda result, error: self._finished_in_background(
                    track, then, result, error))
                return
        self._complete(track)

    def _committed_already(self, track: BatchTrack) -> bool | None:
        """True when the store's next txid is past this commit's: the txid was committed (a
        stale coordinator's commit tuple, e.g. from a host that was cut off while the topology
        went on elsewhere), so applying it again would count its batch twice; it completes
        without the committer. None when the store cannot be read: the commit failed (it is
        replayed)."""
        txid = track.attempt.transaction_id
        try:
            stored = self.store().get(CURRENT_KEY)
        except StateUnavailableError as exc:
            self._fail_batch(track, FailedException(str(exc)), "commit")
            log.warning("transactional %s: commit of %d waits for the state store: %s",
                        self.transactional_id, txid, exc)
            return None
        if stored is None or int(stored) <= txid:
            return False
        log.warning("transactional %s: commit of %d skipped by %s: the store's next txid is %s "
                    "(committed already)", self.transactional_id, txid,
                    self.context.component_id, stored)
        return True

    def _finished_in_background(self, track: BatchTrack, then: Callable[[Any], None] | None,
                                result: Any, error: BaseException | None) -> None:
        """Back on the loop after a ``finish_in_background`` job: ``then(result)``, then the batch
        completes on this task; an error from either fails it."""
        if self.tracked.get(track.attempt.key) is not track or track.failed:
            return  # expired meanwhile
        if error is None and then is not None:
            try:
                then(result)
            except EmitError:
                raise
            except Exception as exc:  # noqa: BLE001
                error = exc
        if error is not None:
            self._fail_batch(track, error, "finish_batch")
            return
        self._complete(track)

    def _complete(self, track: BatchTrack) -> None:
        self._report_counts(track.attempt, track.sent, track.held)
        for t in track.held:
            self.ack(t)
        del self.tracked[track.attempt.key]

    def _report_counts(self, attempt: TransactionAttempt, sent: Mapping[int, int],
                       anchors: list[Tuple]) -> None:
        wire = attempt.to_wire()
        for task in self.out_tasks:
            self.emit_direct(task, [wire, sent.get(task, 0)], anchors, COORD_STREAM)

    def _fail_batch(self, track: BatchTrack, exc: BaseException, where: str) -> None:
        """Fail the batch attempt on this task: its held tuples fail (so does the batch), later
        tuples of it fail on arrival; an error other than FailedException is reported."""
        if not isinstance(exc, FailedException):
            self.report_error(RuntimeError(
                f"component {self.context.component_id!r} {where} failed for transaction "
                f"{track.attempt.transaction_id} attempt {track.attempt.attempt_id}: "
                f"{type(exc).__name__}: {exc}"))
        track.failed = True
        track.bolt = None
        for t in track.held:
            self.fail(t)
        track.held.clear()

    def _drop(self, track: BatchTrack) -> None:
        for t in track.held:
            self.fail(t)
        del self.tracked[track.attempt.key]

    def _expire(self) -> None:
        """Forget batches older than the message timeout (their roots have timed out)."""
        for track in list(self.tracked.values()):
            track.age += 1
            if track.age > self.max_age:
                self._drop(track)

    # -- the emitter ---------------------------------------------------------------------------
    def _emitter_execute(self, tup: Tuple) -> None:
        assert self.executor is not None
        attempt = TransactionAttempt.of(tup.values[0])
        txid = attempt.transaction_id
        if tup.stream == BATCH_STREAM:
            track = BatchTrack(attempt)
            try:
                self.executor.emit_batch(attempt, tup.values[1], self._collector(track))
            except EmitError:
                raise
            except Exception as exc:  # noqa: BLE001 - the batch fails and is replayed
                self._emitter_error(attempt, exc, "emit_batch")
                self.fail(tup)
                return
            self.emitted[txid] = attempt
            self._report_counts(attempt, track.sent, [tup])
            self.ack(tup)
            committed = tup.values[2]
            if committed is not None:
                for t in [t for t in self.emitted if t < committed]:
                    del self.emitted[t]
                try:
                    self.executor.cleanup_before(int(committed))
                except StateUnavailableError as exc:
                    log.warning("emitter %s: cleanup before %s postponed: %s",
                                self.context.component_id, committed, exc)
        elif tup.stream == COMMIT_STREAM:
            if self.emitted.get(txid) != attempt:
                self.fail(tup)  # not the attempt this task emitted (e.g. after a restart)
                return
            try:
                self.executor.commit(attempt)
            except Exception as exc:  # noqa: BLE001
                self._emitter_error(attempt, exc, "commit")
                self.fail(tup)
                return
            del self.emitted[txid]
            self.ack(tup)

    def _emitter_error(self, attempt: TransactionAttempt, exc: BaseException, where: str) -> None:
        if isinstance(exc, FailedException):
            return
        if isinstance(exc, StateUnavailableError):
            log.warning("emitter %s: %s of %s postponed: %s", self.context.component_id, where,
                        attempt, exc)
            return
        self.report_error(RuntimeError(
            f"component {self.context.component_id!r} {where} failed for transaction "
            f"{attempt.transaction_id} attempt {attempt.attempt_id}: {type(exc).__name__}: {exc}"))
