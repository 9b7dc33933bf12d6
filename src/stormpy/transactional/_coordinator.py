"""The coordinator spout: one task that starts transactions and orders their commits.

Behaviour (Storm's TransactionalSpoutCoordinator): at most ``topology.max.spout.pending``
transactions (default 1) are in flight, within the window of that many txids from the first
uncommitted one. A transaction's batch tuple (``$batch``, to every emitter task) is tracked with
the attempt as message id; when its tree completes the transaction is *processed*; the lowest
in-flight txid, once processed, gets its commit tuple (``$commit``, to every committer), and when
that tree completes the txid is committed: the next txid is stored and its metadata forgotten.
A failed or timed-out attempt makes its txid and every later one start again, with the same
metadata (kept in the store) and new attempt ids. The next txid and the metadata of every started
transaction live in the store (ZooKeeper), so a restarted coordinator replays exactly what was in
flight (the store: :mod:`stormpy.transactional._store`; in a LocalCluster its own memory by
default). While the store is unreachable no transaction starts or commits; the coordinator picks up
where it was when it returns, unless the store's next txid is no longer its own (another
coordinator committed meanwhile: its host was cut off and its executors moved): then it commits
nothing, drops what is in flight and resumes from the store (checked before every commit tuple;
the next txid is written by compare-and-set over the committed one).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any

from stormpy.state._base import Store
from stormpy.topology._component import Spout
from stormpy.topology._context import TopologyContext
from stormpy.topology._imports import import_object
from stormpy.topology._layout import acker_count
from stormpy.topology._state import StateStore, StateUnavailableError
from stormpy.topology._streams import Stream
from stormpy.transactional._api import (
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.transactional._store import (
    RotatingState,
    available,
    close,
    open_store,
)
from stormpy.transactional._streams import BATCH_STREAM, COMMIT_STREAM

log = logging.getLogger("stormpy.transactional")

CURRENT_KEY = "coordinator/current"
META_KEY = "coordinator/meta"
PROCESSING, PROCESSED, COMMITTING = "processing", "processed", "committing"


class _Status:
    __slots__ = ("attempt", "state")

    def __init__(self, attempt: TransactionAttempt) -> None:
        self.attempt = attempt
        self.state = PROCESSING


def user_coordinator(spout: Any, conf: Mapping[str, Any], context: TopologyContext) -> Any:
    """The user spout's coordinator seen as a plain ``TransactionalSpout.Coordinator``."""
    coordinator = spout.get_coordinator(conf, context)
    if isinstance(spout, PartitionedTransactionalSpout):
        return _PartitionedCoordinator(coordinator)
    if isinstance(spout, OpaquePartitionedTransactionalSpout):
        return _OpaqueCoordinator(coordinator)
    return coordinator


class _PartitionedCoordinator(TransactionalSpout.Coordinator):
    """A transaction's metadata is the number of partitions."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def is_ready(self) -> bool:
        return bool(self.inner.is_ready())

    def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
        return int(self.inner.number_partitions())

    def close(self) -> None:
        self.inner.close()


class _OpaqueCoordinator(_PartitionedCoordinator):
    """No metadata: the emitters keep everything."""

    def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
        return None


class CoordinatorSpout(Spout):
    """Built by ``TransactionalTopologyBuilder``; not for direct use."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {BATCH_STREAM: Stream(["id", "meta", "committed"], name=BATCH_STREAM),
                COMMIT_STREAM: Stream(["id"], name=COMMIT_STREAM)}

    def __init__(self, transactional_id: str, spout: str, spout_kwargs: Mapping[str, Any]) -> None:
        self.transactional_id = transactional_id
        self.spout_path = spout
        self.spout_kwargs = dict(spout_kwargs)

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        if acker_count(conf) == 0:
            raise ValueError(f"transactional topology {self.transactional_id!r} needs ackers: "
                             "topology.acker.executors is 0")
        pending = conf.get("topology.max.spout.pending")
        self.max_active = max(1, int(pending)) if pending else 1
        self.conf = conf
        self.coordinator = user_coordinator(import_object(self.spout_path)(**self.spout_kwargs),
                                            conf, context)
        self.store: StateStore | None = None
        self.context = context
        self.meta: RotatingState | None = None
        self.current = 1
        self.active: dict[int, _Status] = {}
        #: txid whose commit completed but whose successor is not yet stored
        self.committed_unsaved: int | None = None
        self.unavailable_since_logged = False
        self.ready_for = 0

    # -- store ---------------------------------------------------------------------------------
    def _ready_store(self) -> bool:
        """True when the store is open and reachable (opening and loading it the first time)."""
        try:
            if self.store is None:
                store = open_store(self.conf, self.context, self.transactional_id)
                try:
                    current = store.get(CURRENT_KEY)
                    meta = RotatingState(store, META_KEY)
                except StateUnavailableError:
                    close(store)
                    raise
                self.store, self.meta = store, meta
                self.current = int(current) if current is not None else 1
            if not available(self.store):
                raise StateUnavailableError(f"transactional {self.transactional_id}", "no connection")
        except StateUnavailableError as exc:
            if not self.unavailable_since_logged:
                log.warning("transactional %s: state store unavailable, no transaction starts "
                            "until it returns: %s", self.transactional_id, exc)
                self.unavailable_since_logged = True
            return False
        if self.unavailable_since_logged:
            log.warning("transactional %s: state store back", self.transactional_id)
            self.unavailable_since_logged = False
        return True

    # -- spout ---------------------------------------------------------------------------------
    def next_tuple(self) -> None:
        self._sync()

    def ack(self, msg_id: Any) -> None:
        attempt: TransactionAttempt = msg_id
        status = self.active.get(attempt.transaction_id)
        if status is None or status.attempt != attempt:
            return  # an abandoned attempt
        if status.state == PROCESSING:
            status.state = PROCESSED
        elif status.state == COMMITTING:
            del self.active[attempt.transaction_id]
            self.committed_unsaved = attempt.transaction_id
        self._sync()

    def fail(self, msg_id: Any) -> None:
        attempt: TransactionAttempt = msg_id
        txid = attempt.transaction_id
        status = self.active.get(txid)
        if status is None or status.attempt != attempt:
            return
        log.info("transactional %s: %s failed in the %s phase; it and every later transaction "
                 "start again", self.transactional_id, attempt, status.state)
        for t in [t for t in self.active if t >= txid]:
            del self.active[t]
        self._sync()

    def _sync(self) -> None:
        if not self._ready_store():
            return
        assert self.store is not None and self.meta is not None
        try:
            if self.committed_unsaved is not None:
                done = self.committed_unsaved
                if not self._save_committed(done):
                    return
                self.meta.cleanup_before(done)
                self.committed_unsaved = None
                self.current = done + 1
            head = self.active.get(self.current)
            if head is not None and head.state == PROCESSED:
                if not self._in_step_with_store():
                    return
                head.state = COMMITTING
                self.emit([head.attempt.to_wire()], msg_id=head.attempt, stream=COMMIT_STREAM)
            if len(self.active) >= self.max_active:
                return
            committed = self.current - 1 if self.current > 1 else None
            for txid in range(self.current, self.current + self.max_active):
                if txid in self.active:
                    continue
                if not self.meta.has(txid) and self.ready_for != txid:
                    if not self.coordinator.is_ready():
                        break
                    self.ready_for = txid  # asked once per new txid, even if storing fails
                metadata, _ = self.meta.get_or_create(txid, self.coordinator.initialize_transaction)
                attempt = TransactionAttempt(txid, random.getrandbits(63))
                self.active[txid] = _Status(attempt)
                self.emit([attempt.to_wire(), metadata, committed], msg_id=attempt,
                          stream=BATCH_STREAM)
        except StateUnavailableError as exc:
            log.warning("transactional %s: state store operation failed (retrying): %s",
                        self.transactional_id, exc)

    # -- fencing -------------------------------------------------------------------------------
    def _stored_current(self) -> int:
        assert self.store is not None
        stored = self.store.get(CURRENT_KEY)
        return int(stored) if stored is not None else 1

    def _save_committed(self, done: int) -> bool:
        """Store ``done + 1`` as the next txid after the commit of ``done`` completed; False
        (and back in step with the store) when the store is past ``done`` already: another
        coordinator committed on meanwhile. A write of ours that was applied although it raised
        (a lost reply) is found as written."""
        assert self.store is not None
        if isinstance(self.store, Store):  # compare-and-set: only over ``done``
            if self.store.update(CURRENT_KEY, lambda old: done + 1 if (old or 1) == done
                                 else None):
                return True
        elif self._stored_current() == done:
            self.store.put(CURRENT_KEY, done + 1)
            return True
        stored = self._stored_current()
        if stored == done + 1:
            return True
        self._resync(stored)
        return False

    def _in_step_with_store(self) -> bool:
        """True when the store's next txid is this coordinator's: the only txid it may commit.

        A coordinator whose host was cut off while its executors moved elsewhere finds the
        store again when the cut heals, before its worker is stopped; meanwhile the new
        coordinator committed on, so its own next txid is one the committers applied already
        and the stored txid of their values is a later one: committing it again would apply
        its batch twice. Read before every commit tuple (one read per commit)."""
        stored = self._stored_current()
        if stored == self.current:
            return True
        self._resync(stored)
        return False

    def _resync(self, stored: int) -> None:
        """Drop what is in flight and continue from the store's next txid ``stored``."""
        log.warning("transactional %s: next txid %d is not the store's %d (another "
                    "coordinator committed meanwhile); in-flight transactions dropped, resuming "
                    "from the store", self.transactional_id, self.current, stored)
        assert self.meta is not None
        self.active.clear()
        self.committed_unsaved = None
        self.current = stored
        self.meta.reload()

    def close(self) -> None:
        try:
            self.coordinator.close()
        finally:
            close(self.store)
