"""``ColumnBatch`` itself, its wire record (one per batch, values as columns) through the
transfer and the inbound checks, queued batch tuples in backpressure, and tuples emitted one at a
time anchored to a batch."""

from __future__ import annotations

import copy
import pickle
from collections import deque
from collections.abc import Mapping
from typing import Any

import pytest
from transport_fakes import ScriptedTransport

from stormpy import Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.messaging.codec import decode_frame
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._fields import Fields
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.inbound import Inbound, wire_tuples
from stormpy.worker.transfer import Transfer

FIELDS = Fields(["word", "count"])
COMPONENTS = {1: "split", 2: "count", 3: "count", 4: "far"}


def batch(rows: list[list[Any]], **ids: Any) -> ColumnBatch:
    return ColumnBatch(rows, "default", 1, "split", FIELDS, **ids)


def test_rows_and_columns_by_position_and_name() -> None:
    b = batch([["a", 1], ["b", 2], ["a", 3]], root=5, edge=6)
    assert len(b) == 3 and b.rows == [["a", 1], ["b", 2], ["a", 3]]
    assert b.column(0) == ["a", "b", "a"] and b.column("count") == [1, 2, 3]
    assert b.column(-1) == [1, 2, 3] and b.columns() == [["a", "b", "a"], [1, 2, 3]]
    assert b.tree_edges() == {5: 6} and not b.is_tick()
    assert "tuples=3" in repr(b)
    with pytest.raises(KeyError, match="nope"):
        b.column("nope")
    with pytest.raises(IndexError, match="no field 2"):
        b.column(2)


def test_a_batch_from_columns_builds_its_rows_and_copies_keep_everything() -> None:
    b = ColumnBatch(None, "default", 1, "split", FIELDS, 0, 0, {7: 8, 9: 10},
                    [["x", "y"], [1, 2]], 2)
    b.ack_val = 99
    assert b.rows == [["x", 1], ["y", 2]] and b.tree_edges() == {7: 8, 9: 10}
    for c in (copy.copy(b), pickle.loads(pickle.dumps(b))):
        assert (c.rows, c.column("word"), c.anchors, c.ack_val, c.n) == \
            (b.rows, ["x", "y"], {7: 8, 9: 10}, 99, 2)
    empty = ColumnBatch(None, "s", 1, "c", Fields([]), columns=[], n=3)
    assert empty.rows == [[], [], []] and empty.columns() == []
    with pytest.raises(ValueError, match="rows, or columns"):
        ColumnBatch(None, "s", 1, "c", None)
    with pytest.raises(KeyError, match="no declared fields"):
        ColumnBatch([[1]], "s", 1, "c", None).column("a")


def _inbound(puts: list[ColumnBatch]) -> Inbound:
    table = {2: {1: {"default": (2, "split", FIELDS)}}, 3: {1: {"default": (2, "split", FIELDS)}}}
    return Inbound(table, {2: lambda t: None, 3: lambda t: None}, lambda frame: "peer", "w",
                   {2: puts.append})


def test_a_batch_is_one_wire_record_and_arrives_as_the_same_batch() -> None:
    transport = ScriptedTransport()
    dispatch = Dispatch(4, [])
    transfer = Transfer(transport, dispatch, 100, COMPONENTS, [], 10)
    transfer.route({2: "b", 3: "b"}, frozenset({1}))
    dispatch.deliver_batch[2](batch([["a", 1], ["b", 2]], root=11, edge=22))
    dispatch.deliver_batch[2](batch([["c", 3]], anchors={5: 6, 7: 8}))
    transfer.flush()
    (peer, frame), = transport.sent
    records = wire_tuples(decode_frame(frame))
    assert peer == "b" and records == [
        [2, "default", 1, 11, 22, None, [["a", "b"], [1, 2]], 2],
        [2, "default", 1, 0, 0, {5: 6, 7: 8}, [["c"], [3]], 1]]
    puts: list[ColumnBatch] = []
    inbound = _inbound(puts)
    assert inbound.take([frame]) == 3 and inbound.rejected == {}
    first, second = puts
    assert (first.rows, first.root, first.edge, first.component, first.task) == \
        ([["a", 1], ["b", 2]], 11, 22, "split", 1)
    assert first.column("count") == [1, 2] and first.fields is FIELDS
    assert second.rows == [["c", 3]] and second.tree_edges() == {5: 6, 7: 8}
    dispatch.deliver_batch[4](batch([["x", 1], ["y", 2]]))  # a task with no place: dropped
    assert dispatch.dropped == 2


def test_malformed_batch_records_are_dropped_and_counted() -> None:
    puts: list[ColumnBatch] = []
    inbound = _inbound(puts)
    good = [2, "default", 1, 0, 0, None, [["a"], [1]], 1]
    frame = pack_records(
        [3, "default", 1, 0, 0, None, [["a"], [1]], 1],       # task 3 takes no batches
        [2, "other", 1, 0, 0, None, [["a"], [1]], 1],         # unexpected stream
        [2, "default", 1, 0, 0, None, [["a"]], 1],            # one column for two fields
        [2, "default", 1, 0, 0, None, [["a"], [1, 2]], 1],    # a column of the wrong length
        [2, "default", 1, 0, 0, None, [[], []], 0],           # no tuples
        [2, "default", 1, 0, 0, None, [["a"], [1]], "1"],     # n not an int
        [2, "default", 1, "r", 0, None, [["a"], [1]], 1],     # root not an int
        good)
    assert inbound.take([frame]) == 1 and len(puts) == 1
    assert inbound.rejected == {"unknown destination task": 1, "unexpected stream": 1,
                                "wrong values": 4, "bad tuple ids": 1}


def pack_records(*records: Any) -> bytes:
    import msgpack
    return msgpack.packb(list(records), use_bin_type=True)


def test_queued_batch_tuples_count_towards_backpressure() -> None:
    dispatch = Dispatch(4, [])
    queues: list[deque[Any]] = [deque(), deque()]
    transfer = Transfer(ScriptedTransport(), dispatch, 100, COMPONENTS, queues, 10,
                        queue_tasks=[2, 3])
    queues[1].append(batch([["a", 1]] * 9))
    dispatch.queued_rows[3] = 8  # one item holding 9 tuples
    assert not transfer.backpressured()
    dispatch.queued_rows[3] = 9  # 10 tuples: full
    assert transfer.backpressured() and transfer.queue_full == [0, 1]


FAILED_ONCE: list[bool] = []


class Splitter(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack(tup)


class Upper(Bolt):
    """Columnar: emits each word upper-cased ONE AT A TIME anchored to its batch (to a bolt
    that takes tuples), then acks the batch."""

    outputs = ["word"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        pass

    def execute_columns(self, b: ColumnBatch) -> None:
        for w in b.column(0):
            self.emit([w.upper()], b)
        self.ack(b)


class FailFirstBad(Bolt):
    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == "BAD" and not FAILED_ONCE:
            FAILED_ONCE.append(True)
            self.fail(tup)
        else:
            self.ack(tup)


def test_a_tuple_emitted_anchored_to_a_batch_joins_its_trees() -> None:
    FAILED_ONCE.clear()
    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", Splitter).shuffle_grouping("feeder")
    b.set_bolt("upper", Upper).shuffle_grouping("split")
    b.set_bolt("last", FailFirstBad).shuffle_grouping("upper")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {"topology.message.timeout.secs": 10}, b.create_topology())
        feeder.feed(["a b"], msg_id=1)
        feeder.feed(["c bad"], msg_id=2)
        cluster.wait_for(lambda: len(feeder.acked) + len(feeder.failed) == 2, 10, "2 done")
        cluster.wait_until_quiet()
        stats = cluster.get_stats("t")
    assert feeder.acked == [1] and feeder.failed == [2]
    assert stats["upper"]["executed"] == stats["upper"]["acked"] == 4
    assert stats["last"]["executed"] == 4
