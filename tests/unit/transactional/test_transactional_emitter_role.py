"""The coordinated bolt in its emitter role, driven by hand (a RecordingCollector for the runtime,
the in-memory store): a batch tuple makes the user emitter emit the transaction's tuples, the
emitter task reports how many it sent each downstream task anchored to the batch tuple, and acks
it; the batch tuple's committed txid lets the emitter forget older transactions; a commit tuple
commits only the attempt this task emitted; errors fail the tuple (so the transaction replays)
and are reported unless they are a FailedException or an unreachable store."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from tx_memory import NamedMemoryStore

from stormpy.state import MemoryBackend
from stormpy.testing import RecordingCollector, test_tuple
from stormpy.topology import FailedException, Tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import EmitError
from stormpy.topology._grouping import ALL, DIRECT, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import BOLT, SPOUT, ComponentSpec, InputSpec, TopologySpec
from stormpy.topology._streams import Stream
from stormpy.transactional import TransactionAttempt
from stormpy.transactional._api import (
    BatchOutputCollector,
    OpaquePartitionedTransactionalSpout,
    TransactionalSpout,
)
from stormpy.transactional._coordinated import CoordinatedBolt
from stormpy.transactional._store import StoreUnavailable
from stormpy.transactional._streams import BATCH_STREAM, COMMIT_STREAM, COORD_STREAM

CALLS: list[Any] = []
TX = "tx-emitter-role"


class Rows(TransactionalSpout):
    """Metadata ``n``: the batch is rows 0..n-1, row i sent to task 8 + i % 2; ``raise_in`` makes
    ``emit_batch`` or ``cleanup_before`` raise."""

    raise_in: dict[str, BaseException] = {}

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"rows": Stream(["tx", "i"], name="rows", direct=True)}

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        CALLS.append(("get_emitter", conf.get("transactional.store"), context.component_id))
        return RowsEmitter()


class RowsEmitter(TransactionalSpout.Emitter):
    def emit_batch(self, attempt: TransactionAttempt, metadata: Any,
                   collector: BatchOutputCollector) -> None:
        CALLS.append(("emit", attempt.key, metadata))
        if "emit" in Rows.raise_in:
            raise Rows.raise_in["emit"]
        for i in range(metadata):
            collector.emit_direct(8 + i % 2, [attempt, i], "rows")

    def cleanup_before(self, txid: int) -> None:
        CALLS.append(("cleanup", txid, type(txid)))
        if "cleanup" in Rows.raise_in:
            raise Rows.raise_in["cleanup"]

    def close(self) -> None:
        CALLS.append(("close",))


class Opaque(OpaquePartitionedTransactionalSpout):
    """One partition; each batch takes one more number than the last."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        return {"rows": Stream(["tx", "i"], name="rows", direct=True)}

    def get_emitter(self, conf: Mapping[str, Any], context: TopologyContext) -> Any:
        return OpaqueEmitter()


class OpaqueEmitter(OpaquePartitionedTransactionalSpout.Emitter):
    def emit_partition_batch(self, attempt: TransactionAttempt, collector: BatchOutputCollector,
                             partition: int, last_meta: Any) -> Any:
        start = 0 if last_meta is None else last_meta + 1
        collector.emit_direct(8, [attempt, start], "rows")
        return start

    def num_partitions(self) -> int:
        return 1


class BrokenStore(NamedMemoryStore):
    """A memory store whose writes raise ``error`` while it is set."""

    error: BaseException | None = None

    def put(self, key: str, value: Any) -> None:
        if BrokenStore.error is not None:
            raise BrokenStore.error
        super().put(key, value)


@pytest.fixture(autouse=True)
def _reset(monkeypatch: pytest.MonkeyPatch) -> Any:
    CALLS.clear()
    Rows.raise_in = {}
    BrokenStore.error = None
    NamedMemoryStore.forget(TX)
    monkeypatch.setattr("stormpy.transactional._coordinated.open_store",
                        lambda conf, context, name: BrokenStore(name))
    yield
    NamedMemoryStore.forget(TX)


def build(spout: type = Rows) -> tuple[CoordinatedBolt, RecordingCollector]:
    """The emitter ``spout`` (task 5) reads the coordinator's batch and commit streams; ``down``
    (tasks 8, 9) reads its counts."""
    kwargs: dict[str, Any] = {"role": "emitter", "target": class_path(spout), "target_kwargs": {},
                              "transactional_id": TX}
    bolt = CoordinatedBolt(**kwargs)
    col = RecordingCollector()
    col.bind(bolt, kwargs=kwargs, component_id="spout")
    me = ComponentSpec("spout", BOLT, class_path(CoordinatedBolt), kwargs=kwargs,
                       streams=CoordinatedBolt.declare_outputs(kwargs),
                       inputs=[InputSpec("coordinator", BATCH_STREAM, Grouping(ALL)),
                               InputSpec("coordinator", COMMIT_STREAM, Grouping(ALL))])
    down = ComponentSpec("down", BOLT, class_path(CoordinatedBolt),
                         inputs=[InputSpec("spout", COORD_STREAM, Grouping(DIRECT))])
    coordinator = ComponentSpec("coordinator", SPOUT, "x.Coordinator")
    layout = TaskLayout({"coordinator": [1], "spout": [5], "down": [8, 9]},
                        {1: "coordinator", 5: "spout", 8: "down", 9: "down"},
                        [Executor("coordinator", 1, 1), Executor("spout", 5, 5),
                         Executor("down", 8, 9)])
    context = TopologyContext("t-1", TopologySpec({"coordinator": coordinator, "spout": me,
                                                   "down": down}), layout, 5, [5], {},
                              state=MemoryBackend())
    bolt.prepare({"transactional.store": "memory"}, context)
    return bolt, col


def batch(txid: int, attempt: int, meta: Any, committed: int | None = None) -> Tuple:
    return test_tuple([[txid, attempt], meta, committed], "coordinator", BATCH_STREAM,
                      fields=["id", "meta", "committed"])


def commit(txid: int, attempt: int) -> Tuple:
    return test_tuple([[txid, attempt]], "coordinator", COMMIT_STREAM, fields=["id"])


def counts(col: RecordingCollector) -> list[tuple[int | None, list[Any], list[Tuple]]]:
    return [(e.task, e.values, e.anchors) for e in col.emitted if e.stream == COORD_STREAM]


def test_a_batch_tuple_emits_the_batch_reports_counts_per_task_and_is_acked() -> None:
    bolt, col = build()
    b = batch(1, 7, 3)
    bolt.execute(b)
    assert CALLS == [("get_emitter", "memory", "spout"), ("emit", (1, 7), 3)]
    assert [(e.task, e.values) for e in col.emitted if e.stream == "rows"] == [
        (8, [[1, 7], 0]), (9, [[1, 7], 1]), (8, [[1, 7], 2])]
    assert counts(col) == [(8, [[1, 7], 2], [b]), (9, [[1, 7], 1], [b])]
    assert col.acked == [b] and col.failed == [] and col.errors == []


def test_a_task_that_emits_nothing_still_reports_zero_to_every_downstream_task() -> None:
    bolt, col = build()
    b = batch(1, 1, 0)
    bolt.execute(b)
    assert counts(col) == [(8, [[1, 1], 0], [b]), (9, [[1, 1], 0], [b])] and col.acked == [b]


def test_the_committed_txid_cleans_up_older_transactions_only() -> None:
    bolt, col = build()
    bolt.execute(batch(1, 1, 1))
    bolt.execute(batch(2, 1, 1))
    assert [c for c in CALLS if c[0] == "cleanup"] == []  # nothing committed yet
    bolt.execute(batch(3, 1, 1, committed=2))
    assert [c for c in CALLS if c[0] == "cleanup"] == [("cleanup", 2, int)]
    col.clear()
    old, kept = commit(1, 1), commit(2, 1)
    bolt.execute(old)  # txid 1 was forgotten: its commit is not this task's to make
    bolt.execute(kept)
    assert col.failed == [old] and col.acked == [kept]


def test_a_commit_tuple_commits_only_the_attempt_this_task_emitted_and_only_once() -> None:
    bolt, col = build()
    bolt.execute(batch(1, 1, 1))
    bolt.execute(batch(1, 2, 1))  # a replay: the new attempt replaces the old one
    col.clear()
    stale, unknown, current = commit(1, 1), commit(4, 1), commit(1, 2)
    for t in (stale, unknown, current):
        bolt.execute(t)
    assert col.failed == [stale, unknown] and col.acked == [current]
    again = commit(1, 2)
    bolt.execute(again)  # committed: forgotten
    assert col.failed == [stale, unknown, again]


@pytest.mark.parametrize(("error", "reported"), [
    (RuntimeError("source gone"),
     "component 'spout' emit_batch failed for transaction 1 attempt 7: RuntimeError: source gone"),
    (FailedException("later"), None),
    (StoreUnavailable("no connection"), None)])
def test_an_emit_batch_error_fails_the_batch_tuple_and_reports_only_real_errors(
        error: BaseException, reported: str | None) -> None:
    bolt, col = build()
    Rows.raise_in["emit"] = error
    b = batch(1, 7, 2)
    bolt.execute(b)
    assert col.failed == [b] and col.acked == [] and counts(col) == []
    assert [str(e) for e in col.errors] == ([reported] if reported else [])
    c = commit(1, 7)
    bolt.execute(c)  # the batch was never emitted: its commit fails too
    assert col.failed == [b, c]


def test_an_emit_error_from_the_user_emitter_is_a_programming_error_and_propagates() -> None:
    bolt, col = build()
    Rows.raise_in["emit"] = EmitError("bad values")
    with pytest.raises(EmitError, match="bad values"):
        bolt.execute(batch(1, 1, 1))


def test_an_unreachable_store_during_cleanup_postpones_it_and_the_batch_still_counts() -> None:
    bolt, col = build()
    Rows.raise_in["cleanup"] = StoreUnavailable("down")
    b = batch(5, 1, 1, committed=4)
    bolt.execute(b)
    assert col.acked == [b] and col.failed == [] and col.errors == [] and len(counts(col)) == 2
    Rows.raise_in["cleanup"] = RuntimeError("not a store problem")
    with pytest.raises(RuntimeError, match="not a store problem"):
        bolt.execute(batch(6, 1, 1, committed=5))


def test_an_opaque_emitter_records_its_batch_at_commit_and_a_failed_commit_is_replayed() -> None:
    bolt, col = build(Opaque)
    bolt.execute(batch(1, 1, None))
    assert [e.values for e in col.emitted if e.stream == "rows"] == [[[1, 1], 0]]
    BrokenStore.error = StoreUnavailable("down")
    c1 = commit(1, 1)
    bolt.execute(c1)  # postponed: failed, not reported
    assert col.failed == [c1] and col.errors == []
    BrokenStore.error = RuntimeError("disk full")
    bolt.execute(batch(1, 2, None))  # the replay of txid 1 emits the same batch again
    c2 = commit(1, 2)
    bolt.execute(c2)
    assert col.failed == [c1, c2]
    assert [str(e) for e in col.errors] == [
        "component 'spout' commit failed for transaction 1 attempt 2: RuntimeError: disk full"]
    BrokenStore.error = None
    bolt.execute(batch(1, 3, None))
    c3 = commit(1, 3)
    bolt.execute(c3)
    assert col.acked[-1] == c3
    assert [e.values for e in col.emitted if e.stream == "rows"] == [
        [[1, 1], 0], [[1, 2], 0], [[1, 3], 0]]
    col.clear()
    bolt.execute(batch(2, 1, None, committed=1))
    assert [e.values for e in col.emitted if e.stream == "rows"] == [[[2, 1], 1]]  # after batch 1


def test_cleanup_closes_the_user_emitter_and_the_store() -> None:
    bolt, _col = build()
    bolt.execute(batch(1, 1, 1))
    store: Any = bolt.store()
    closed: list[bool] = []
    store.close = lambda: closed.append(True)
    bolt.cleanup()
    assert CALLS[-1] == ("close",) and closed == [True]
