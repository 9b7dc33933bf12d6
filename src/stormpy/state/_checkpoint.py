"""The checkpoint protocol (Storm's ``CheckpointSpout`` and ``CheckPointState``).

One checkpoint spout task emits ``[txid, action]`` on the ``$checkpoint`` stream, one checkpoint
at a time, with the checkpoint as message id so it learns when every bolt handled it. Its own
state ``(txid, COMMITTED | PREPARING | COMMITTING)`` is saved in the state store before it acts:

* normal run: COMMITTED(t) --interval--> save PREPARING(t+1), emit PREPARE(t+1); its ack → save
  COMMITTING(t+1), emit COMMIT(t+1) at once; its ack → save COMMITTED(t+1). The interval runs on
  the wall clock (as Storm's) and, under the testing kit's simulated time, also on
  ``context.clock``: whichever passes it first starts the checkpoint, so a test that moves
  simulated time on sees its stateful bolts commit (``complete_topology``), and one that waits
  in real time does too;
* a failed (or timed-out) checkpoint, or a (re)start, enters recovery: PREPARING(t) → ROLLBACK(t)
  (acked: COMMITTED(t-1)); COMMITTING(t) → COMMIT(t) again; COMMITTED(t) → INITSTATE(t), whose ack
  ends recovery.

A save that fails (the store unreachable: a
:class:`~stormpy.topology._state.StateStoreError`) emits nothing and enters recovery from the last
state known to be saved; every recovery step is safe whichever of the two states the store
holds, so the protocol resumes once the store answers. Failures are logged (the first and every
100th) and reported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from stormpy.state._provider import open_store
from stormpy.state._settings import state_settings
from stormpy.topology._component import Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._state import StateStoreError
from stormpy.topology._streams import Stream

__all__ = ["CHECKPOINT_COMPONENT", "CHECKPOINT_FIELDS", "CHECKPOINT_STREAM", "COMMIT",
           "CheckpointSpout", "INITSTATE", "PREPARE", "ROLLBACK"]

CHECKPOINT_STREAM = "$checkpoint"
CHECKPOINT_COMPONENT = "$checkpointspout"
CHECKPOINT_FIELDS = ("txid", "action")
PREPARE, COMMIT, ROLLBACK, INITSTATE = "prepare", "commit", "rollback", "initstate"
COMMITTED, PREPARING, COMMITTING = "committed", "preparing", "committing"

log = logging.getLogger("stormpy.state")


class CheckpointSpout(Spout):
    """Added by the builder when a topology has stateful bolts; not for direct use."""

    outputs = [Stream(list(CHECKPOINT_FIELDS), name=CHECKPOINT_STREAM)]

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {CHECKPOINT_STREAM: Stream(list(CHECKPOINT_FIELDS), name=CHECKPOINT_STREAM)}

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.interval = state_settings(conf).checkpoint_interval_secs
        self.store = open_store(conf, context, context.component_id)
        txid, phase = self.store.get("txstate") or [0, COMMITTED]
        self.txid, self.phase = int(txid), str(phase)
        self.recovering = True
        self.in_flight = False
        self.clock = context.clock
        self._restart_interval()
        self.save_failures = 0

    def close(self) -> None:
        self.store.close()

    def _restart_interval(self) -> None:
        self.last, self.last_on_clock = time.monotonic(), self.clock.now()

    def _interval_passed(self) -> bool:
        """The checkpoint interval passed on the wall clock or on the topology's clock (the same
        clock unless time is simulated; see the module doc)."""
        return (time.monotonic() - self.last >= self.interval
                or self.clock.now() - self.last_on_clock >= self.interval)

    def _save(self, txid: int, phase: str) -> bool:
        """Save ``(txid, phase)`` (one atomic write); False, and recovery, when the store fails."""
        try:
            self.store.put("txstate", [txid, phase])
        except StateStoreError as exc:
            self.save_failures += 1
            if self.save_failures == 1 or self.save_failures % 100 == 0:
                log.error("%s: cannot save the checkpoint state %s(%d) (%d failures so far); "
                          "recovering once the store answers: %s", CHECKPOINT_COMPONENT,
                          phase.upper(), txid, self.save_failures, exc)
                self.report_error(exc)
            self.recovering = True
            return False
        self.txid, self.phase = txid, phase
        return True

    def _emit(self, txid: int, action: str) -> None:
        self.in_flight = True
        self.emit([txid, action], msg_id=[txid, action], stream=CHECKPOINT_STREAM)

    def next_tuple(self) -> None:
        if self.in_flight:
            return
        if self.recovering:
            action = {COMMITTED: INITSTATE, PREPARING: ROLLBACK, COMMITTING: COMMIT}[self.phase]
            self._emit(self.txid, action)
        elif self.phase == COMMITTING:
            self._emit(self.txid, COMMIT)
        elif self._interval_passed():
            self._restart_interval()
            if self._save(self.txid + 1, PREPARING):
                self._emit(self.txid, PREPARE)

    def ack(self, msg_id: Any) -> None:
        txid, action = msg_id
        self.in_flight = False
        if action == PREPARE:
            self._save(txid, COMMITTING)
        elif action == COMMIT:
            self._save(txid, COMMITTED)
        elif action == ROLLBACK:
            self._save(txid - 1, COMMITTED)
        elif action == INITSTATE:
            self.recovering = False
            self._restart_interval()

    def fail(self, msg_id: Any) -> None:
        self.in_flight = False
        self.recovering = True
