"""The executors that run the checkpoint protocol
around bolts: :class:`CheckpointTupleForwarder` for ordinary bolts (barriers pass through) and
:class:`StatefulBoltExecutor` for stateful ones. Both are ordinary bolts wrapping the user's; the
builder puts them in place (:mod:`stormpy.state._wiring`).

A task acts on a checkpoint ``(txid, action)`` once it received it from every task that sends it
checkpoints; it then forwards it downstream anchored to those, and acks them. The copies are
counted per sending task: the checkpoint spout sends a timed-out checkpoint again with the same
``(txid, action)``, and a copy of the earlier attempt still held (its other copies died with a
worker) is replaced by the newer one from the same task and failed, so the checkpoint completes
with one copy of the current attempt from every sender (counting copies instead completed each
attempt with the stale copy and left one of the current attempt waiting: the recovery after a
kill could then resend that checkpoint forever). A stateful task:

* buffers data tuples until its state is initialised (INITSTATE); then it fails the tracked
  ones (their spouts replay them, and the replays run) and runs the untracked ones. A task waits
  for its state through a recovery that can outlast the message timeout (a restarted task waits
  for the failed checkpoint to time out, a rollback, then INITSTATE), so a buffered input's spout
  tuple may have timed out and been replayed meanwhile, its replay buffered beside it: running
  every copy would count that input twice in the state, although none of them was committed;
* defers the user's acks: inputs are acked when the state that includes their effect is
  committed, and failed when it is rolled back (so the spout replays them);
* PREPARE(t): ``pre_prepare``, the state's changes are written as prepared for t (a task that was
  restarted and has no state yet fails the checkpoint, which starts recovery);
* COMMIT(t): the state is committed as t (its commit point written), then the inputs acked,
  then the committed changes folded into the map (a task restarted since its PREPARE commits
  nothing: its inputs died unacked with it and are replayed). An input whose effect is committed
  but whose ack is lost (the worker, or the acker tracking its tuple tree, killed between the
  commit point and the ack reaching the spout) is replayed and counted again: Storm's
  at-least-once guarantee for stateful bolts, the one case where the state reflects an input
  twice;
* ROLLBACK: back to the last committed state, inputs failed; INITSTATE(t): back to the last
  committed state, then ``init_state`` (first time) and the buffered tuples (see above).

A store that fails (unreachable, restarted, out of memory: a
:class:`~stormpy.topology._state.StateStoreError` naming the provider, its address and the key) never
makes a task ack: a data tuple whose ``execute`` hit it is failed (replayed) with the inputs run
since the last PREPARE, and their uncommitted changes dropped; a checkpoint step
that hit it fails the checkpoint, so the spout runs recovery (a failed PREPARE rolls back and
fails the held inputs; a failed COMMIT is sent again until the store answers; a failed
INITSTATE is retried with the data tuples still buffered). Each failure is logged and reported
(``report_error``) naming the component and task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from stormpy.state._checkpoint import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM,
    COMMIT,
    INITSTATE,
    PREPARE,
    ROLLBACK,
)
from stormpy.state._kv import KeyValueState
from stormpy.state._provider import open_store
from stormpy.state._settings import state_settings
from stormpy.topology._component import BasicBolt, Bolt
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import FailedException
from stormpy.topology._imports import import_object
from stormpy.topology._state import StateStoreError
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import Tuple

__all__ = ["WRAPPED", "CheckpointTupleForwarder", "StatefulBoltExecutor"]

log = logging.getLogger("stormpy.state")


#: The keyword argument naming the wrapped bolt class (the others are its own arguments; a
#: distinct name, so that a wrapped executor, e.g. a windowed bolt's, keeps its own).
WRAPPED = "_checkpointed"


def _split(kwargs: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    return import_object(kwargs[WRAPPED]), {k: v for k, v in kwargs.items() if k != WRAPPED}


class CheckpointTupleForwarder(Bolt):
    """Wraps an ordinary bolt of a topology with stateful bolts: data tuples go to it unchanged,
    checkpoints are forwarded once every sending task delivered them."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        bolt, user = _split(kwargs)
        streams = dict(bolt.declare_outputs(user))
        streams[CHECKPOINT_STREAM] = Stream(list(CHECKPOINT_FIELDS), name=CHECKPOINT_STREAM)
        return streams

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        bolt, user = _split(kwargs)
        return bolt.declare_config(user)

    def __init__(self, _checkpointed: str, **kwargs: Any) -> None:
        bolt_cls, user = _split({WRAPPED: _checkpointed, **kwargs})
        self.bolt: Any = bolt_cls(**user)
        self.basic = isinstance(self.bolt, BasicBolt)
        #: (txid, action) -> sending task -> the copy it delivered
        self._seen: dict[tuple[int, str], dict[int, Tuple]] = {}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        me = context.component_id
        self.expected = sum(len(context.tasks_of(i.component))
                            for i in context.spec.components[me].inputs
                            if i.stream == CHECKPOINT_STREAM)
        self._bind(conf, context)
        self.bolt.prepare(conf, context)

    def _bind(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        bolt = self.bolt
        # a BasicBolt's emits anchor to the current input; other bolts emit straight through
        bolt.emit = self._user_emit if self.basic else self.emit
        bolt.emit_direct = self._user_emit_direct if self.basic else self.emit_direct
        bolt.ack = self.ack
        bolt.fail = self.fail
        bolt.reset_timeout = self.reset_timeout
        bolt.report_error = self.report_error
        bolt.run_in_background = self.run_in_background
        bolt.call_soon_threadsafe = self.call_soon_threadsafe

    _current: Tuple | None = None

    def _user_emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        if anchors is None and self.basic:
            anchors = self._current
        return self.emit(values, anchors, stream)

    def _user_emit_direct(self, task: int, values: Any, anchors: Any = None,
                          stream: str = "default") -> None:
        if anchors is None and self.basic:
            anchors = self._current
        self.emit_direct(task, values, anchors, stream)

    def cleanup(self) -> None:
        self.bolt.cleanup()

    def execute(self, tup: Tuple) -> None:
        if tup.stream == CHECKPOINT_STREAM:
            self._barrier(tup)
        else:
            self.run_user(tup)

    def run_user(self, tup: Tuple) -> None:
        if not self.basic:
            self.bolt.execute(tup)
            return
        self._current = tup
        try:
            self.bolt.process(tup)
        except FailedException:
            self.bolt.fail(tup)
            return
        finally:
            self._current = None
        self.bolt.ack(tup)

    def _barrier(self, tup: Tuple) -> None:
        txid, action = int(tup.values[0]), str(tup.values[1])
        held = self._seen.setdefault((txid, action), {})
        earlier = held.get(tup.task)
        held[tup.task] = tup
        if earlier is not None:  # a copy of an earlier attempt of this checkpoint (timed out)
            self.fail(earlier)
        if len(held) < self.expected:
            return
        del self._seen[(txid, action)]
        for stale in [k for k in self._seen if k[0] <= txid]:  # superseded checkpoints
            for old in self._seen.pop(stale).values():
                self.fail(old)
        anchors = list(held.values())
        if self.handle_checkpoint(txid, action):
            self.emit([txid, action], anchors, CHECKPOINT_STREAM)
            for t in anchors:
                self.ack(t)
        else:
            for t in anchors:
                self.fail(t)

    def handle_checkpoint(self, txid: int, action: str) -> bool:
        """Act on a complete checkpoint; False fails it (starting recovery)."""
        return True


class StatefulBoltExecutor(CheckpointTupleForwarder):
    """Wraps a :class:`~stormpy.state._api.StatefulBolt` (see the module doc)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        # loading a state that cannot be read raises here, naming store and key: the bolt then
        # never processes a tuple with an unknown state
        self.task_name = f"{context.component_id}-{context.task_id}"
        self.state = KeyValueState(open_store(conf, context, self.task_name),
                                   state_settings(conf).cache_max_keys)
        self.store_failures = 0
        self.initialized = False
        self.buffered: list[Tuple] = []
        self.pending: list[Tuple] = []   # acked by the user since the last prepare
        self.prepared: list[Tuple] = []  # acked by the user, included in the prepared state

    def _bind(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super()._bind(conf, context)
        self.bolt.ack = self._deferred_ack

    def checkpoint_tuples(self) -> int:
        """The input tuples held un-acked until a checkpoint commits: buffered before the state
        was initialised, acked by the user since the last PREPARE, and prepared
        (``Worker.checkpoint_tuples``). A plain read, any thread; 0 before ``prepare``."""
        return (len(getattr(self, "buffered", ())) + len(getattr(self, "pending", ()))
                + len(getattr(self, "prepared", ())))

    def _deferred_ack(self, tup: Tuple) -> None:
        self.pending.append(tup)

    def cleanup(self) -> None:
        try:
            super().cleanup()
        finally:
            self.state.store.close()

    def execute(self, tup: Tuple) -> None:
        if tup.stream == CHECKPOINT_STREAM:
            self._barrier(tup)
        elif not self.initialized:
            self.buffered.append(tup)
        else:
            self._run_data(tup)

    def _run_data(self, tup: Tuple) -> None:
        """Run the user's bolt on a data tuple; a store failure fails the tuple (replayed)."""
        try:
            if self.basic:
                super().run_user(tup)
            else:
                self.bolt.execute(tup)
        except StateStoreError as exc:
            self._store_failed(f"a tuple from {tup.component}", exc)
            # the input may have changed the state before it failed: its changes, and those of
            # the inputs run since the last prepare, are dropped and those inputs failed too
            self.state.discard_pending()
            for held in [*self.pending, tup]:
                self.fail(held)
            self.pending = []

    def _store_failed(self, step: str, exc: StateStoreError) -> None:
        """Log (the first failure and every 1000th after) and report a failure of the store."""
        self.store_failures += 1
        if self.store_failures == 1 or self.store_failures % 1000 == 0:
            log.error("component %s: %s failed on its state store (%d failures so far; the "
                      "inputs are failed and replayed, nothing is acked): %s", self.task_name,
                      step, self.store_failures, exc)
            self.report_error(exc)

    def run_user(self, tup: Tuple) -> None:
        if not self.initialized:
            self.buffered.append(tup)
            return
        super().run_user(tup)

    def _fail_all(self) -> None:
        for t in self.prepared + self.pending:
            self.fail(t)
        self.prepared, self.pending = [], []

    def _rolled_back(self) -> None:
        """Tell a bolt that keeps more than the user's map in the state (``state_rolled_back``,
        e.g. a stateful windowed bolt's persisted window) that the state is back at the last
        commit."""
        hook = getattr(self.bolt, "state_rolled_back", None)
        if hook is not None:
            hook()

    def handle_checkpoint(self, txid: int, action: str) -> bool:
        try:
            return self._checkpoint(txid, action)
        except StateStoreError as exc:
            self._store_failed(f"checkpoint {action.upper()} {txid}", exc)
            return False

    def _checkpoint(self, txid: int, action: str) -> bool:
        if action == PREPARE:
            if not self.initialized:
                log.info("%s: PREPARE %d before the state was initialised; failing it to "
                         "start recovery", type(self.bolt).__name__, txid)
                return False
            self.bolt.pre_prepare(txid)
            self.state.prepare_commit(txid)
            self.prepared += self.pending
            self.pending = []
        elif action == COMMIT:
            if self.initialized:  # a restarted task has no prepared changes and no user state
                self.bolt.pre_commit(txid)
            # the inputs are acked as soon as the commit point is written, the fold after: an
            # input committed whose ack dies with the worker is replayed (see the module doc),
            # so that window is kept as short as the commit itself
            self.state.commit(txid, fold=False)
            for t in self.prepared:
                self.ack(t)
            self.prepared = []
            self.state.fold()
        elif action == ROLLBACK:
            self.bolt.pre_rollback()
            self.state.rollback()
            self._rolled_back()
            self._fail_all()
        elif action == INITSTATE:
            self.state.rollback()
            if self.initialized:
                self._rolled_back()
            self._fail_all()
            if not self.initialized:
                self.state.load()
                self.bolt.init_state(self.state)
                self.initialized = True
                buffered, self.buffered = self.buffered, []
                for t in buffered:
                    if t.root or t.anchors:
                        self.fail(t)  # tracked: replayed by its spout, and run then
                    else:
                        self._run_data(t)
        return True
