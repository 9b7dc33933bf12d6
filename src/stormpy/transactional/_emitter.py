"""Emitter executors: the user's spout emitter seen as one interface by the emitter bolt.

``emit_batch(attempt, metadata, collector)``, ``cleanup_before(txid)``, ``commit(attempt)`` (only
opaque spouts commit), ``close()``. Partitioned emitters keep, per partition and transaction, the
metadata of the batch they emitted, in the store (``emitter/<partition>/<txid>``), so a replay emits
the identical batch even after a restart; opaque emitters record a partition's metadata only when
the transaction commits, and start a transaction's batch where the previous one ended (the latest
attempt of the previous transaction emitted by this task, else the last committed one). Opaque
emitters also record, before a batch is acknowledged, where each partition's batch of each attempt
started and what it took (``emitter-batches/<partition>/<txid>``): a replay that starts at the same
place emits the same batch again (``emit_partition_batch_again``), even after a restart, because
the committers may have committed the earlier attempt's values before the coordinator recorded the
commit; a replay that wrote fewer keys would leave the others counting the records again later.
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
        self.emitted: dict[int, RotatingState] = {}

    def mine(self, count: int) -> range:
        return range(self.index, int(count), self.tasks)

    def state(self, partition: int) -> RotatingState:
        state = self.states.get(partition)
        if state is None:
            state = self.states[partition] = RotatingState(self.store(), f"emitter/{partition}")
        return state

    def batches(self, partition: int) -> RotatingState:
        """The batches emitted for the partition per txid (opaque emitters): ``{"last": the
        metadata the batch followed, "meta": the batch's metadata}`` of the latest attempt."""
        batches = self.emitted.get(partition)
        if batches is None:
            batches = self.emitted[partition] = RotatingState(self.store(),
                                                               f"emitter-batches/{partition}")
        return batches

    def cleanup_before(self, txid: int) -> None:
        for state in [*self.states.values(), *self.emitted.values()]:
            state.cleanup_before(txid)


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
            batches = self.partitions.batches(p)
            earlier = batches.get(txid)
            if earlier is not None and earlier["last"] == last and earlier["meta"] is not None \
                    and earlier["meta"] != last:
                meta = self.emitter.emit_partition_batch_again(attempt, collector, p, last,
                                                               earlier["meta"])
            else:
                meta = self.emitter.emit_partition_batch(attempt, collector, p, last)
            metas[p] = meta
            batch = {"last": last, "meta": meta}
            if earlier != batch:  # stored before the batch tuple is acknowledged
                batches.put(txid, batch)

    def commit(self, attempt: TransactionAttempt) -> None:
        txid = attempt.transaction_id
        for p, meta in self.emitted.pop(txid, {}).items():
            self.partitions.state(p).put(txid, meta)

    def cleanup_before(self, txid: int) -> None:
        for t in [t for t in self.emitted if t < txid]:
            del self.emitted[t]
        self.partitions.cleanup_before(txid)


def make_executor(spout: Any, conf: Mapping[str, Any], context: TopologyContext,
                  store: Callable[[], StateStore]) -> EmitterExecutor:
    """The executor for the user spout instance ``spout`` (``store`` opens the store lazily)."""
    emitter = spout.get_emitter(conf, context)
    if isinstance(spout, PartitionedTransactionalSpout):
        return PartitionedEmitterExecutor(emitter, _Partitions(store, context))
    if isinstance(spout, OpaquePartitionedTransactionalSpout):
        return OpaqueEmitterExecutor(emitter, _Partitions(store, context))
    return EmitterExecutor(emitter)
