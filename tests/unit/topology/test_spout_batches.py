"""Spout batches: ``emit_batch(values_list, msg_ids)`` tracks a list of tuples as ONE unit (one
root, one pending entry, one acker entry); columnar subscribers get one ``ColumnBatch`` per
target task, others a tuple per values in that one tree. Ack, fail, timeout and replay of a
batch, max spout pending (counted in records), acking off, hooks and stats (counted in records),
checks before anything is sent. Simulated time throughout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder, Tuple
from stormpy.testing import LocalCluster
from stormpy.testing._unit import RecordingCollector
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._errors import EmitError
from stormpy.topology._hooks import EmitInfo, SpoutAckInfo, SpoutFailInfo, TaskHook

TIMEOUT = {"topology.message.timeout.secs": 10}
#: shared with the components of the running test (cleared before each)
LOG: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _clear() -> None:
    LOG.clear()
    LOG.update(acked=[], failed=[], ack_calls=[], fail_calls=[], batches=[], tuples=[],
               values=[], hook=[], errors=[])
    ColumnSink.FAIL = ColumnSink.KEEP = TupleSink.FAIL = -1


class BatchSpout(Spout):
    """Emits ``batches`` batches of ``size`` records with emit_batch (ids ``(b, i)``); a failed
    batch's ids are emitted again as one batch. ``many``: defines ack_many/fail_many."""

    outputs = ["n"]

    def __init__(self, batches: int = 3, size: int = 5, many: bool = False,
                 ids: bool = True) -> None:
        self.todo = [[(b, i) for i in range(size)] for b in range(batches)]
        self.ids = ids
        if many:
            self.ack_many = self._ack_many
            self.fail_many = self._fail_many

    def next_tuple(self) -> None:
        if self.todo:
            ids = self.todo.pop(0)
            targets = self.emit_batch([[b * 100 + i] for b, i in ids],
                                      ids if self.ids else None)
            assert len(targets) == len(ids)

    def ack(self, msg_id: Any) -> None:
        LOG["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        LOG["failed"].append(msg_id)
        self.todo.append([msg_id])

    def _ack_many(self, msg_ids: list[Any]) -> None:
        LOG["ack_calls"].append(list(msg_ids))
        LOG["acked"].extend(msg_ids)

    def _fail_many(self, msg_ids: list[Any]) -> None:
        LOG["fail_calls"].append(list(msg_ids))
        LOG["failed"].extend(msg_ids)
        self.todo.append(list(msg_ids))  # the batch is replayed as a batch


class ColumnSink(Bolt):
    """Columnar: records each batch; fails a batch holding FAIL once; keeps (never acks) a batch
    holding KEEP."""

    FAIL = -1
    KEEP = -1

    def execute_columns(self, batch: ColumnBatch) -> None:
        col = batch.column("n")
        LOG["batches"].append((batch.component, len(batch), bool(batch.root)))
        LOG["values"].extend(col)
        if ColumnSink.FAIL in col:
            ColumnSink.FAIL = -1
            self.fail(batch)
        elif ColumnSink.KEEP not in col:
            self.ack(batch)

    def execute(self, tup: Tuple) -> None:
        LOG["tuples"].append(tup.values[0])
        self.ack(tup)


class TupleSink(Bolt):
    """Per tuple: records it; fails the tuple whose value is FAIL (once), acks the others."""

    FAIL = -1

    def execute(self, tup: Tuple) -> None:
        v = tup.values[0]
        LOG["tuples"].append((v, tup.root))
        if v == TupleSink.FAIL:
            TupleSink.FAIL = -1
            self.fail(tup)
        else:
            self.ack(tup)


def _topology(spout_kwargs: Mapping[str, Any], sink: type[Bolt] = ColumnSink,
              sinks: int = 2, fields: bool = False) -> Any:
    b = TopologyBuilder()
    b.set_spout("spout", BatchSpout, kwargs=dict(spout_kwargs))
    declarer = b.set_bolt("sink", sink, sinks)
    if fields:
        declarer.fields_grouping("spout", ["n"])
    else:
        declarer.shuffle_grouping("spout")
    return b.create_topology()


def _all_ids(batches: int, size: int) -> list[tuple[int, int]]:
    return [(b, i) for b in range(batches) for i in range(size)]


def test_a_batch_is_one_column_batch_per_target_task_and_acks_every_id() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, _topology({"batches": 4, "size": 6}))
        cluster.wait_for(lambda: len(LOG["acked"]) == 24, 10, "24 ids acked")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
        docs = [d for d in worker.task_stats() if d["component"] == "spout"]
        spout = worker.tasks[docs[0]["task"]]
        pending = spout.n_pending, len(spout.pending)
    assert sorted(LOG["acked"]) == _all_ids(4, 6) and LOG["failed"] == []
    # shuffle over 2 tasks: each emit_batch makes one batch per task, all tracked
    assert len(LOG["batches"]) == 8 and all(c == "spout" and n == 3 and tracked
                                            for c, n, tracked in LOG["batches"])
    assert LOG["tuples"] == [] and sorted(LOG["values"]) == sorted(b * 100 + i
                                                                   for b, i in _all_ids(4, 6))
    assert stats["spout"]["emitted"] == stats["spout"]["transferred"] == 24
    assert stats["spout"]["acked"] == 24 and stats["spout"]["failed"] == 0
    assert stats["sink"]["executed"] == stats["sink"]["acked"] == 24
    assert docs[0]["latency_count"] == 24  # the complete latency counts records
    assert pending == (0, 0)


def test_ack_many_takes_a_batch_of_ids_at_once_in_emit_order() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology({"batches": 3, "size": 4, "many": True}))
        cluster.wait_for(lambda: len(LOG["acked"]) == 12, 10, "12 ids acked")
    assert sorted(map(tuple, LOG["ack_calls"])) == [tuple((b, i) for i in range(4))
                                                    for b in range(3)]


def test_towards_tuple_bolts_the_batch_is_one_tree_and_a_failed_tuple_fails_every_id() -> None:
    TupleSink.FAIL = 102  # record (1, 2)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology({"batches": 3, "size": 4}, TupleSink))
        cluster.wait_for(lambda: len(LOG["acked"]) == 12, 10, "every id acked in the end")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    first = LOG["tuples"][:12]
    roots: dict[int, set[int]] = {}
    for v, root in first:
        roots.setdefault(v // 100, set()).add(root)
    assert all(len(r) == 1 and 0 not in r for r in roots.values())  # one root per batch
    assert len({next(iter(r)) for r in roots.values()}) == 3
    assert sorted(LOG["failed"]) == [(1, i) for i in range(4)]  # the whole batch failed
    assert sorted(LOG["acked"]) == _all_ids(3, 4)  # replayed one by one, then acked
    assert stats["spout"]["failed"] == 4 and stats["spout"]["acked"] == 12


def test_a_failed_column_batch_fails_every_id_and_the_replayed_batch_completes() -> None:
    ColumnSink.FAIL = 3  # record (0, 3)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT,
                                _topology({"batches": 2, "size": 4, "many": True}, sinks=1))
        cluster.wait_for(lambda: len(LOG["acked"]) == 8, 10, "every id acked in the end")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert LOG["fail_calls"] == [[(0, i) for i in range(4)]]
    assert sorted(LOG["acked"]) == _all_ids(2, 4)
    assert [n for _, n, _ in LOG["batches"]] == [4, 4, 4]  # the replay is one batch again
    assert stats["spout"]["failed"] == 4 and stats["spout"]["acked"] == 8
    assert stats["sink"]["failed"] == 4


def test_an_unacked_batch_times_out_as_a_whole() -> None:
    ColumnSink.KEEP = 101  # record (1, 1): its batch is never acked
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology({"batches": 3, "size": 3}, sinks=1))
        cluster.wait_for(lambda: len(LOG["acked"]) == 6, 10, "the other batches acked")
        ColumnSink.KEEP = -1  # the replays are acked
        cluster.advance_time(TIMEOUT["topology.message.timeout.secs"] * 2 + 1)
        cluster.wait_for(lambda: len(LOG["acked"]) == 9, 10, "the timed-out batch replayed")
        stats = cluster.get_stats("t")
    assert sorted(LOG["failed"]) == [(1, 0), (1, 1), (1, 2)]
    assert sorted(LOG["acked"]) == _all_ids(3, 3)
    assert stats["spout"]["failed"] == 3


def test_max_spout_pending_counts_the_records_of_batches() -> None:
    """10 pending records at most: batches of 4 stop after the third (12 pending), and the
    spout goes on once those time out."""
    conf = {**TIMEOUT, "topology.max.spout.pending": 10}

    class Keep(Bolt):
        def execute_columns(self, batch: ColumnBatch) -> None:
            LOG["batches"].append(len(batch))  # never acked

    b = TopologyBuilder()
    b.set_spout("spout", BatchSpout, kwargs={"batches": 6, "size": 4})
    b.set_bolt("sink", Keep).shuffle_grouping("spout")
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", conf, b.create_topology())
        cluster.wait_for(lambda: len(LOG["batches"]) == 3, 10, "three batches")
        cluster.wait_until_quiet()
        held = len(LOG["batches"])
        spout = next(r for r in worker.tasks.values() if r.component_id == "spout")
        n_pending = spout.n_pending
        cluster.advance_time(TIMEOUT["topology.message.timeout.secs"] * 2 + 1)
        cluster.wait_for(lambda: len(LOG["batches"]) > 3, 10, "more batches after the timeouts")
    assert held == 3 and n_pending == 12
    assert len(LOG["failed"]) >= 12


def test_acking_off_takes_the_untracked_path_and_acks_every_id_at_the_round_end() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 0},
                                _topology({"batches": 3, "size": 5, "many": True}))
        cluster.wait_for(lambda: len(LOG["acked"]) == 15, 10, "15 ids acked")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert sorted(LOG["acked"]) == _all_ids(3, 5) and len(LOG["ack_calls"]) == 3
    assert all(not tracked for _, _, tracked in LOG["batches"])
    assert sorted(LOG["values"]) == sorted(b * 100 + i for b, i in _all_ids(3, 5))
    assert stats["spout"]["acked"] == 15 and stats["spout"]["emitted"] == 15


def test_without_message_ids_a_batch_is_untracked_and_never_acked() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, _topology({"batches": 2, "size": 3, "ids": False}))
        cluster.wait_for(lambda: len(LOG["values"]) == 6, 10, "6 records")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert LOG["acked"] == [] and all(not tracked for _, _, tracked in LOG["batches"])
    assert stats["spout"]["acked"] == 0 and stats["sink"]["acked"] == 6


def test_fields_grouping_splits_a_batch_across_two_workers_in_one_tree() -> None:
    conf = {**TIMEOUT, "topology.acker.executors": 2}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, _topology({"batches": 5, "size": 8}, sinks=2,
                                                     fields=True), workers=2)
        cluster.wait_for(lambda: len(LOG["acked"]) == 40, 20, "40 ids acked")
    assert sorted(LOG["acked"]) == _all_ids(5, 8) and LOG["failed"] == []
    assert sum(n for _, n, _ in LOG["batches"]) == 40


class Hook(TaskHook):
    def emit(self, info: EmitInfo) -> None:
        LOG["hook"].append(("emit", info.values[0], len(info.out_tasks)))

    def spout_ack(self, info: SpoutAckInfo) -> None:
        LOG["hook"].append(("ack", info.message_id, info.complete_latency_ms is not None))

    def spout_fail(self, info: SpoutFailInfo) -> None:
        LOG["hook"].append(("fail", info.message_id, info.fail_latency_ms is not None))


@pytest.mark.parametrize("many", [False, True])
def test_hooks_see_one_event_per_record(many: bool) -> None:
    ColumnSink.FAIL = 1  # record (0, 1)
    conf = {**TIMEOUT, "topology.auto.task.hooks": [f"{__name__}:Hook"]}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, _topology({"batches": 2, "size": 3, "many": many},
                                                     sinks=1))
        cluster.wait_for(lambda: len(LOG["acked"]) == 6, 10, "6 ids acked")
        cluster.wait_until_quiet()
    events = LOG["hook"]
    emits = [e for e in events if e[0] == "emit"]
    # 6 records, then the failed batch's 3 again
    assert sorted(v for _, v, _ in emits) == [0, 0, 1, 1, 2, 2, 100, 101, 102]
    assert all(n == 1 for _, _, n in emits)
    acks = [e for e in events if e[0] == "ack"]
    fails = [e for e in events if e[0] == "fail"]
    assert sorted(m for _, m, _ in acks) == _all_ids(2, 3) and all(lat for _, _, lat in acks)
    assert sorted(m for _, m, _ in fails) == [(0, 0), (0, 1), (0, 2)]
    assert all(lat for _, _, lat in fails)


def test_everything_is_checked_before_anything_is_sent() -> None:
    class Bad(Spout):
        outputs = ["n"]

        def next_tuple(self) -> None:
            if LOG["errors"]:
                return
            for args in (([[1], [2]], [1]), ([[1], ["x", "y"]], [1, 2]), ([[1]], 7),
                         ("ab", None)):
                try:
                    self.emit_batch(*args)
                except EmitError as exc:
                    LOG["errors"].append(str(exc))
            try:
                self.emit_batch([[1]], [1], stream="nope")
            except EmitError as exc:
                LOG["errors"].append(str(exc))

    b = TopologyBuilder()
    b.set_spout("spout", Bad)
    b.set_bolt("sink", ColumnSink).shuffle_grouping("spout")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", TIMEOUT, b.create_topology())
        cluster.wait_for(lambda: len(LOG["errors"]) == 5, 10, "5 refusals")
        cluster.wait_until_quiet()
    assert LOG["values"] == [] and LOG["tuples"] == []
    errors = LOG["errors"]
    assert "1 message ids for 2 tuples" in errors[0]
    assert "fields" in errors[1]
    assert "list of message ids" in errors[2] and "int" in errors[2]
    assert "list of values lists" in errors[3]
    assert "undeclared stream 'nope'" in errors[4]


def test_the_recording_collector_records_emit_batch() -> None:
    collector = RecordingCollector()
    spout = collector.prepare(BatchSpout(batches=1, size=2))
    spout.next_tuple()
    assert [(e.values, e.msg_id) for e in collector.emitted] == [([0], (0, 0)), ([1], (0, 1))]


class CallOnce(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


def test_emit_batch_before_open_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="emit_batch"):
        CallOnce().emit_batch([[1]], [1])


class WhoSink(Bolt):
    """Per tuple: records where it came from (component, task, stream), its field by name and
    whether it is tracked; acks it."""

    def execute(self, tup: Tuple) -> None:
        LOG["tuples"].append((tup.component, tup.task, tup.stream, tup["n"], bool(tup.root)))
        self.ack(tup)


@pytest.mark.parametrize("ids", [True, False])
def test_tuples_of_a_batch_carry_their_source_stream_and_fields(ids: bool) -> None:
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT,
                                         _topology({"batches": 3, "size": 4, "ids": ids},
                                                   WhoSink, sinks=2))
        cluster.wait_for(lambda: len(LOG["tuples"]) == 12, 10, "12 tuples")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
        spout_task = next(r.task_id for r in worker.tasks.values() if r.component_id == "spout")
    assert sorted(LOG["tuples"]) == sorted(("spout", spout_task, "default", b * 100 + i, ids)
                                           for b, i in _all_ids(3, 4))
    # every tuple counted once, however many tasks its batch reached
    assert stats["spout"]["transferred"] == stats["spout"]["emitted"] == 12
    assert stats["sink"]["executed"] == 12
    assert sorted(LOG["acked"]) == (_all_ids(3, 4) if ids else [])
