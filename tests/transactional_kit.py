"""Components and a recorder for the transactional-topology tests (importable by path in the
test process, which is where local-mode workers run)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from stormpy import BasicBolt, Stream, TopologyContext, Tuple
from stormpy.connectors.spark import SparkCommitterBolt
from stormpy.topology._errors import FailedException
from stormpy.transactional import (
    BatchBolt,
    BatchOutputCollector,
    Committer,
    OpaquePartitionedTransactionalSpout,
    SqliteState,
    TransactionalSpout,
    TransactionAttempt,
)

_lock = threading.Lock()
_events: dict[str, list[tuple[Any, ...]]] = {}


def new_log() -> str:
    key = uuid.uuid4().hex
    with _lock:
        _events[key] = []
    return key


def record(key: str, *event: Any) -> None:
    with _lock:
        _events[key].append(event)


def events(key: str, kind: str | None = None) -> list[tuple[Any, ...]]:
    with _lock:
        return [e for e in _events[key] if kind is None or e[0] == kind]


def _first_attempt(log: str, what: str, attempt: TransactionAttempt) -> bool:
    """True the first time ``what`` is asked for this txid (later attempts get False)."""
    with _lock:
        seen = [e for e in _events[log] if e[0] == "seen" and e[1] == what
                and e[2] == attempt.transaction_id]
        _events[log].append(("seen", what, attempt.transaction_id, attempt.attempt_id))
    return not seen


class CountingBolt(BatchBolt):
    """Counts its tuples of the batch; records ``("finish", component, task, txid, attempt id,
    count)``; emits ``[id, count]``. ``fail_txids``: the first attempt of these fails in
    ``execute`` (FailedException) — or in finish_batch when no tuple arrived."""

    outputs = ["id", "count"]

    def __init__(self, log: str, fail_txids: list[int] | None = None) -> None:
        self.log = log
        self.fail_txids = fail_txids or []

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.context = context
        self.count = 0

    def _maybe_fail(self) -> None:
        if self.id.transaction_id in self.fail_txids and \
                _first_attempt(self.log, f"fail-{self.context.task_id}", self.id):
            record(self.log, "failed", self.id.transaction_id, self.id.attempt_id)
            raise FailedException(f"failing {self.id} on purpose")

    def execute(self, tup: Tuple) -> None:
        assert isinstance(tup[0], TransactionAttempt) and tup[0] == self.id
        self._maybe_fail()
        self.count += 1

    def finish_batch(self) -> None:
        self._maybe_fail()
        record(self.log, "finish", self.context.component_id, self.context.task_id,
               self.id.transaction_id, self.id.attempt_id, self.count)
        self.emit([self.id, self.count])


class DirectForwarder(BatchBolt):
    """Sends each tuple on to one task of ``target`` (chosen from the row) with emit_direct."""

    outputs = [Stream(["id", "value"], name="direct", direct=True)]

    def __init__(self, target: str) -> None:
        self.target = target

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.tasks = context.tasks_of(self.target)

    def execute(self, tup: Tuple) -> None:
        value = tup.values[1]
        self.emit_direct(self.tasks[value % len(self.tasks)], [self.id, value], stream="direct")


class Splitter(BasicBolt):
    """A non-batch bolt: forwards each tuple's second value, per tuple."""

    outputs = ["id", "value"]

    def process(self, tup: Tuple) -> None:
        self.emit([tup[0], tup.values[1]])


class SumCommitter(Committer):
    """Sums ``value[1]`` of its inputs; at commit adds the sum to ``database`` (a SQLite file,
    key ``total``; opaque values when ``opaque``) and records ``("commit", txid, attempt, sum)``.
    ``fail_txids``: the first commit attempt of these raises after updating the state."""

    outputs = ["id", "sum"]

    def __init__(self, log: str, database: str | None = None, opaque: bool = False,
                 fail_txids: list[int] | None = None, count_tuples: bool = False) -> None:
        self.log = log
        self.database = database
        self.opaque = opaque
        self.fail_txids = fail_txids or []
        self.count_tuples = count_tuples

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.sum = 0

    def execute(self, tup: Tuple) -> None:
        self.sum += 1 if self.count_tuples else tup.values[1]

    def finish_batch(self) -> None:
        txid = self.id.transaction_id
        if self.database:
            state = SqliteState(self.database)
            try:
                if self.opaque:
                    state.update_opaque("total", txid, lambda v: (v or 0) + self.sum)
                    record(self.log, "applied", txid)
                else:
                    before = state.get("total")
                    if before is None or before.txid != txid:
                        record(self.log, "applied", txid)
                    state.update("total", txid, lambda v: (v or 0) + self.sum)
            finally:
                state.close()
        if txid in self.fail_txids and _first_attempt(self.log, "commit", self.id):
            record(self.log, "commit-error", txid, self.id.attempt_id)
            raise RuntimeError(f"commit of {txid} broke on purpose")
        record(self.log, "commit", txid, self.id.attempt_id, self.sum)
        self.emit([self.id, self.sum])


class SizedSpout(TransactionalSpout):
    """Transaction ``t`` (1-based) holds ``sizes[t-1]`` tuples ``[attempt, i]``, spread over the
    emitter tasks; the metadata is the size."""

    outputs = ["tx", "n"]

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes

    def get_coordinator(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return SizedCoordinator(self.sizes)

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return SizedEmitter(context.task_index, len(context.component_tasks))


class SizedCoordinator(TransactionalSpout.Coordinator):
    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.started = 0

    def is_ready(self) -> bool:
        if self.started >= len(self.sizes):
            return False
        self.started += 1
        return True

    def initialize_transaction(self, txid: int, prev_metadata: Any) -> Any:
        return {"n": self.sizes[txid - 1] if txid <= len(self.sizes) else 0}


class SizedEmitter(TransactionalSpout.Emitter):
    def __init__(self, index: int, tasks: int) -> None:
        self.index = index
        self.tasks = tasks

    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        for i in range(self.index, metadata["n"], self.tasks):
            collector.emit([attempt, i])


class FlakyOpaqueSpout(OpaquePartitionedTransactionalSpout):
    """Partitions of ``[value]`` rows; a batch takes ``take`` rows after the previous batch, but
    the first attempt of every transaction takes only half as many (so a replay differs)."""

    outputs = ["tx", "value"]

    def __init__(self, data: list[list[int]], take: int, log: str, batches: int) -> None:
        self.data = data
        self.take = take
        self.log = log
        self.batches = batches

    def get_coordinator(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return LimitedCoordinator(self.batches)

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return FlakyOpaqueEmitter(self.data, self.take, self.log)


class LimitedCoordinator(OpaquePartitionedTransactionalSpout.Coordinator):
    """Ready for ``batches`` new transactions."""

    def __init__(self, batches: int) -> None:
        self.left = batches

    def is_ready(self) -> bool:
        self.left -= 1
        return self.left >= 0


class FlakyOpaqueEmitter(OpaquePartitionedTransactionalSpout.Emitter):
    def __init__(self, data: list[list[int]], take: int, log: str) -> None:
        self.data = data
        self.take = take
        self.log = log

    def num_partitions(self) -> int:
        return len(self.data)

    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, last_meta: Any) -> Any:
        start = last_meta["end"] if last_meta else 0
        first = _first_attempt(self.log, f"opaque-{partition}", attempt)
        amount = max(1, self.take // 2) if first else self.take
        end = min(len(self.data[partition]), start + amount)
        for i in range(start, end):
            collector.emit([attempt, self.data[partition][i]])
        return {"end": end}


class ForgetfulBolt(BatchBolt):
    """Emits tuples without the attempt in front (a programming error)."""

    outputs = ["value"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup.values[1]])


class BackgroundCommitter(Committer):
    """Commits off the loop with ``finish_in_background``: ``work`` records the commit (and
    raises on the first attempt of ``fail_txids``), ``then`` emits on the loop."""

    outputs = ["id", "sum"]

    def __init__(self, log: str, fail_txids: list[int] | None = None) -> None:
        self.log = log
        self.fail_txids = fail_txids or []

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext,
                collector: BatchOutputCollector, id: TransactionAttempt) -> None:  # noqa: A002
        super().prepare(conf, context, collector, id)
        self.sum = 0

    def execute(self, tup: Tuple) -> None:
        self.sum += tup.values[1]

    def finish_batch(self) -> None:
        txid = self.id.transaction_id

        def work() -> int:
            assert threading.current_thread().name.startswith("stormpy-bg")
            if txid in self.fail_txids and _first_attempt(self.log, "bg", self.id):
                record(self.log, "commit-error", txid, self.id.attempt_id)
                raise RuntimeError(f"background commit of {txid} broke on purpose")
            record(self.log, "commit", txid, self.id.attempt_id, self.sum)
            return self.sum

        self.collector.finish_in_background(work, lambda total: self.emit([self.id, total]))


class FlakySparkCommitter(SparkCommitterBolt):
    """A SparkCommitterBolt whose first commit of ``fail_txid`` fails after the Parquet write
    (so the replay finds the txid written); records ``("parquet", txid, written)``."""

    def __init__(self, path: str, log: str, fail_txid: int) -> None:
        super().__init__(path)
        self.log = log
        self.fail_txid = fail_txid

    def written(self, written: bool) -> None:
        txid = self.id.transaction_id
        record(self.log, "parquet", txid, written)
        if txid == self.fail_txid and _first_attempt(self.log, "parquet", self.id):
            raise RuntimeError(f"commit of {txid} broke after writing")
        super().written(written)
