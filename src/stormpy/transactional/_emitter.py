"""Emitter executors: the user's spout emitter seen as one interface by the emitter bolt.

``emit_batch(attempt, metadata, collector)``, ``cleanup_before(txid)``, ``commit(attempt)`` (only
opaque spouts commit), ``close()``. Partitioned emitters keep, per partition and transaction, the
metadata of the batch they emitted, in the store (``emitter/<partition>/<txid>``), so a replay emits
the identical batch even after a restart; opaque emitters record a partition's metadata only when
the transaction commits, and start a transaction's batch where the previous one ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stormpy.topology._context import TopologyContext
from stormpy.topology._state import StateStore
from stormpy.transactional._api import (
    BatchOutputCollector,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
)
from stormpy.transactional._attempt import TransactionAttempt
from stormpy.transactional._store import RotatingState


class EmitterExecutor:
    """A plain ``TransactionalSpout.Emitter``."""

    commits = False

    def __init__(self, emitter: Any) -> None:
        self.emitter = emitter

    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        self.emitter.emit_batch(attempt, metadata, collector)

    def cleanup_before(self, txid: int) -> None:
        self.emitter.cleanup_before(txid)

    def commit(self, attempt: TransactionAttempt) -> None:
        """Only committing executors get commit tuples."""

    def close(self) -> None:
        self.emitter.close()


class _Partitions:
    """This task's partitions (``p % tasks == index``) and their rotating states, opened lazily."""

    def __init__(self, store: Callable[[], StateStore], context: TopologyContext) -> None:
        self.store = store
        self.index = context.task_index
        self.tasks = len(context.component_tasks)
        self.states: dict[int, RotatingState] = {}

    def mine(self, count: int) -> range:
        return range(self.index, int(count), self.tasks)

    def state(self, partition: int) -> RotatingState:
        state = self.states.get(partition)
        if state is None:
            state = self.states[partition] = RotatingState(self.store(), f"emitter/{partition}")
        return state


class PartitionedEmitterExecutor(EmitterExecutor):
    def __init__(self, emitter: Any, partitions: _Partitions) -> None:
        super().__init__(emitter)
        self.partitions = partitions

    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        txid = attempt.transaction_id
        for p in self.partitions.mine(metadata):
            state = self.partitions.state(p)
            if state.has(txid):
                meta = state.get(txid)
                if meta is not None:
                    self.emitter.emit_partition_batch(attempt, collector, p, meta)
            elif state.has_later(txid):
                # A later transaction was emitted first (this one's batch tuple was lost with a
                # worker, or its metadata could not be stored): it took the partition's next
                # batch, so this transaction's batch of the partition is empty, for good.
                state.put(txid, None)
            else:
                meta = self.emitter.emit_partition_batch_new(attempt, collector, p,
                                                             state.last_before(txid))
                state.put(txid, meta)

    def cleanup_before(self, txid: int) -> None:
        for state in self.partitions.states.values():
            state.cleanup_before(txid)


class OpaqueEmitterExecutor(EmitterExecutor):
    commits = True

    def __init__(self, emitter: Any, partitions: _Partitions) -> None:
        super().__init__(emitter)
        self.partitions = partitions
        #: txid → partition → metadata of the batch emitted for it (not yet committed)
        self.emitted: dict[int, dict[int, Any]] = {}

    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        txid = attempt.transaction_id
        lower = [t for t in self.emitted if t < txid]
        previous = self.emitted[max(lower)] if lower else {}
        metas: dict[int, Any] = {}
        self.emitted[txid] = metas
        for p in self.partitions.mine(self.emitter.num_partitions()):
            state = self.partitions.state(p)
            last = previous[p] if p in previous else state.last_before(txid)
            metas[p] = self.emitter.emit_partition_batch(attempt, collector, p, last)

    def commit(self, attempt: TransactionAttempt) -> None:
        txid = attempt.transaction_id
        for p, meta in self.emitted.pop(txid, {}).items():
            self.partitions.state(p).put(txid, meta)

    def cleanup_before(self, txid: int) -> None:
        for t in [t for t in self.emitted if t < txid]:
            del self.emitted[t]
        for state in self.partitions.states.values():
            state.cleanup_before(txid)


def make_executor(spout: Any, conf: Mapping[str, Any], context: TopologyContext,
                  store: Callable[[], StateStore]) -> EmitterExecutor:
    """The executor for the user spout instance ``spout`` (``store`` opens the store lazily)."""
    emitter = spout.get_emitter(conf, context)
    if isinstance(spout, PartitionedTransactionalSpout):
        return PartitionedEmitterExecutor(emitter, _Partitions(store, context))
    if isinstance(spout, OpaquePartitionedTransactionalSpout):
        return OpaqueEmitterExecutor(emitter, _Partitions(store, context))
    return EmitterExecutor(emitter)
