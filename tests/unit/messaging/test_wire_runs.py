"""Runs on the wire (``messaging/codec.py``): the tuples a sender writes to one task of another
worker go as runs of one (destination, stream, source), in emit order per source-destination
pair (a tuple in several trees and a columnar batch between them keep their place); the
receiver checks a run once for its destination, stream and source and each row for its values
and ids, drops and counts what is malformed (never fatal) and queues the rest in order; and two
workers exchanging real frames keep the order of every source-destination pair."""

from __future__ import annotations

from collections import deque
from typing import Any

import msgpack
import pytest
from inbound_kit import FIELDS, InboundHarness
from transfer_kit import COMPONENTS, make_transfer, sent_records
from transport_fakes import ScriptedTransport, half_worker

from stormpy import Bolt, Spout, TopologyBuilder
from stormpy.messaging.codec import RUN_ITEMS, decode_frame
from stormpy.messaging.inproc import InprocHub
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._errors import EmitError
from stormpy.topology._fields import Fields
from stormpy.topology._tuple import Tuple
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.edges import EdgeIds
from stormpy.worker.transfer import Transfer

ONE = Fields(["v"])


def tup(value: object, stream: str = "default", src: int = 1, root: int = 0, edge: int = 0,
        anchors: dict[int, int] | None = None, fields: Fields | None = ONE) -> Tuple:
    return Tuple([value], stream, src, COMPONENTS[src], fields, root, edge, anchors)


def draws(x: int, c: int, n: int) -> list[int]:
    """The next ``n`` edge ids of a generator at state ``(x, c)``."""
    ids = EdgeIds(0)
    ids.restart(x, c)
    return [ids.next() for _ in range(n)]


def test_tuples_for_one_task_go_as_runs_of_one_stream_and_source_in_emit_order() -> None:
    transfer, transport, dispatch, _qs = make_transfer()
    d4, d5 = dispatch.deliver[4], dispatch.deliver[5]
    edges = dispatch.edges_for[4]     # what the emits draw a tuple for task 4's edge from
    assert edges is not dispatch.edges and dispatch.edges_for[1] is dispatch.edges
    x, c = edges.x, edges.c
    ea, eb, eh, ej, ek, em = draws(x, c, 6)
    d4(tup("a", root=7, edge=edges.next()))
    d5(tup("x"))
    d4(tup("b", root=7, edge=edges.next()))  # joins the run of "a" (task 5's run sits between)
    d4(tup("c", src=2))               # another source: a new run
    d4(tup("d"))                      # back to source 1: a new run after "c"
    d4(tup("e", anchors={1: 2, 3: 4}))  # several trees: a single tuple record
    d4(tup("f"))                      # a new run after it
    d4(tup("g", stream="s"))          # another stream: a new run
    d4(tup("h", stream="s", root=5, edge=edges.next()))  # tracked after untracked: a new run
    d4(tup("i", stream="__ack_ack", fields=None))  # no declared fields (acker): single
    d4(tup("j", stream="s", root=5, edge=edges.next()))
    d4(tup("k", stream="s", root=6, edge=edges.next()))  # another root: the same run
    d4(tup("l", stream="s", root=6, edge=99))  # an edge not drawn for task 4: single
    d4(tup("m", stream="s", root=6, edge=edges.next()))  # a new run after it
    transfer.flush()
    (peer, frame), = transport.sent
    raw = decode_frame(frame)
    assert [len(r) for r in raw] == [RUN_ITEMS, RUN_ITEMS, RUN_ITEMS, RUN_ITEMS, 7, RUN_ITEMS,
                                     RUN_ITEMS, RUN_ITEMS, 7, RUN_ITEMS, 7, RUN_ITEMS]
    # the edges travel as the state they were drawn from; the roots run-length coded
    assert raw[0] == [4, "default", 1, 2, [x, c, 7, 2], [["a", "b"]]]
    assert raw[1] == [5, "default", 1, 1, None, [["x"]]]
    assert (raw[9][3], raw[9][4][2:], raw[9][5]) == (2, [5, 1, 6, 1], [["j", "k"]])
    to4 = [(r[2], r[1], r[6][0], r[3], r[4]) for p, r in sent_records(transport) if r[0] == 4]
    assert to4 == [(1, "default", "a", 7, ea), (1, "default", "b", 7, eb),
                   (2, "default", "c", 0, 0), (1, "default", "d", 0, 0),
                   (1, "default", "e", 0, 0), (1, "default", "f", 0, 0), (1, "s", "g", 0, 0),
                   (1, "s", "h", 5, eh), (1, "__ack_ack", "i", 0, 0), (1, "s", "j", 5, ej),
                   (1, "s", "k", 6, ek), (1, "s", "l", 6, 99), (1, "s", "m", 6, em)]
    assert peer == "b"


def test_a_batch_record_closes_the_run_and_a_full_box_closes_every_run() -> None:
    transfer, transport, dispatch, _qs = make_transfer(batch=4)
    dispatch.deliver[4](tup("a"))
    dispatch.deliver_batch[4](ColumnBatch(None, "default", 1, "spout", FIELDS, 0, 0, None,
                                          [["w"], [1]], 1))
    dispatch.deliver[4](tup("b"))
    dispatch.deliver[4](tup("c"))      # the fourth: the box is sent at once
    dispatch.deliver[4](tup("d"))      # a new frame, a new run
    transfer.flush()
    first, second = (decode_frame(f) for _p, f in transport.sent)
    assert [len(r) for r in first] == [RUN_ITEMS, 8, RUN_ITEMS]
    assert first[2][3:] == [2, None, [["b", "c"]]]
    assert second == [[4, "default", 1, 1, None, [["d"]]]]


def test_a_list_of_tuples_fills_one_run_and_the_box_counts_tuples() -> None:
    transfer, transport, dispatch, _qs = make_transfer(batch=3)
    dispatch.deliver_many[4]([tup(i) for i in range(5)])
    transfer.flush()
    assert [decode_frame(f) for _p, f in transport.sent] == [
        [[4, "default", 1, 3, None, [[0, 1, 2]]]],
        [[4, "default", 1, 2, None, [[3, 4]]]]]


def test_a_run_of_several_fields_carries_one_column_per_field() -> None:
    transfer, transport, dispatch, _qs = make_transfer()
    two = Fields(["w", "n"])
    edges = dispatch.edges_for[4]
    x, c = edges.x, edges.c
    for i in range(3):
        dispatch.deliver[4](Tuple([f"w{i}", i], "default", 1, "spout", two, 9, edges.next()))
    transfer.flush()
    (_p, frame), = transport.sent
    assert decode_frame(frame) == [[4, "default", 1, 3, [x, c, 9, 3],
                                    [["w0", "w1", "w2"], [0, 1, 2]]]]


def test_a_run_is_checked_once_and_its_rows_queued_in_order() -> None:
    h = InboundHarness()
    n = h.take([10, "default", 1, 3, [5, 6, 11, 1, 13, 2], [["a", "b", "d"], [1, 2, 4]]],
               [10, "default", 1, 1, None, [["c"], [3]]])
    assert n == 4 and h.inbound.rejected == {}
    a, b, d, c = h.queued[10]
    ea, eb, ed = draws(5, 6, 3)
    assert (a.values, a.stream, a.task, a.component, a.fields, a.root, a.edge, a.anchors) == \
        (["a", 1], "default", 1, "src", FIELDS, 11, ea, None)
    assert (b.values, b.root, b.edge) == (["b", 2], 13, eb)
    assert (d.values, d.root, d.edge) == (["d", 4], 13, ed)
    assert (c.values, c.root, c.edge) == (["c", 3], 0, 0)


def test_a_run_of_one_field_and_of_no_field_is_read() -> None:
    h = InboundHarness()
    n = h.take([10, "empty", 1, 2, None, []], [10, "empty", 1, 1, [1, 2, 3, 1], []])
    assert n == 3 and h.inbound.rejected == {}
    assert [(t.values, t.root, t.edge) for t in h.queued[10]] == [([], 0, 0), ([], 0, 0),
                                                                  ([], 3, draws(1, 2, 1)[0])]


GOOD = [10, "default", 1, 0, 0, None, ["ok", 1]]


@pytest.mark.parametrize("run, reason, queued", [
    ([99, "default", 1, 1, None, [["w"], [1]]], "unknown destination task", 0),
    ([10, "other", 1, 1, None, [["w"], [1]]], "unexpected stream", 0),
    ([10, "default", 2, 1, None, [["w"], [1]]], "unexpected stream", 0),
    ([30, "__ack_ack", 1, 1, None, [[1, 2]]], "unexpected stream", 0),  # acker streams: single
    ([10, "default", 1, 0, None, [[], []]], "malformed run", 0),
    ([10, "default", 1, "1", None, [["w"], [1]]], "malformed run", 0),
    ([10, "default", 1, 1, None, "cols"], "malformed run", 0),
    ([10, "default", 1, 1, None, [["w"]]], "malformed run", 0),
    ([10, "default", 1, 2, None, [["w", "v"], [1]]], "malformed run", 0),
    ([10, "default", 1, 1, None, [["w"], 1]], "malformed run", 0),
    ([10, "default", 1, 1, [1], [["w"], [1]]], "malformed run", 0),
    ([10, "default", 1, 1, "ids", [["w"], [1]]], "malformed run", 0),
    ([10, "default", 1, 1, [1, 2, 3], [["w"], [1]]], "malformed run", 0),
    ([10, "default", 1, 2, [1, 2, "r", 2], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [1, 2, 3, 2.0], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [1, 2, 3, 1], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [1, 2, 3, 0, 4, 2], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [1, 2, 3, 3, 4, -1], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [2 ** 30, 2, 3, 2], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [1, -1, 3, 2], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([10, "default", 1, 2, [1.5, 2, 3, 2], [["w", "v"], [1, 2]]], "malformed run", 0),
    ([[10], "default", 1, 1, None, [["w"], [1]]], "malformed tuple", 0),
])
def test_a_malformed_run_or_row_is_dropped_counted_and_the_rest_of_the_frame_kept(
        run: list[Any], reason: str, queued: int) -> None:
    h = InboundHarness()
    n = h.take(GOOD, run, GOOD)
    assert h.inbound.rejected == {reason: 1}
    assert n == 2 + queued
    values = [t.values for t in h.queued[10]]
    assert values[0] == ["ok", 1] and values[-1] == ["ok", 1] and len(values) == 2 + queued
    if queued:  # the run's good tuple, in its place between the two good ones
        assert values[1] in (["w", 1], ["v", 2])


class Numbers(Spout):
    """Emits 0..count-1, alternating two streams, each with a message id."""

    outputs = ["n"]

    def __init__(self, count: int) -> None:
        self.count = count
        self.i = 0
        self.acked = 0

    def next_tuple(self) -> None:
        if self.i < self.count:
            self.emit([self.i], msg_id=self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked += 1


class Relay(Bolt):
    """Re-emits each number anchored, every third one to two inputs' trees (a tuple in several
    trees goes as a single record between the runs)."""

    outputs = ["n"]

    def prepare(self, conf: Any, context: Any) -> None:
        self.prev: Any = None

    def execute(self, tup: Tuple) -> None:
        anchors = [tup, self.prev] if self.prev is not None and tup.values[0] % 3 == 0 else [tup]
        self.emit(tup.values, anchors=anchors)
        if self.prev is not None:
            self.ack(self.prev)
        self.prev = tup

    def cleanup(self) -> None:
        pass


class Record(Bolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.seen: list[tuple[int, int]] = []

    def execute(self, tup: Tuple) -> None:
        self.seen.append((tup.task, tup.values[0]))
        self.ack(tup)


def test_two_workers_keep_the_order_of_every_source_destination_pair_and_ack_everything() -> None:
    count = 600
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, 1, kwargs={"count": count})
    b.set_bolt("relay", Relay, 2).shuffle_grouping("numbers")
    b.set_bolt("record", Record, 2).fields_grouping("relay", ["n"])
    conf = {"topology.acker.executors": 1, "topology.transfer.batch.size": 7}
    spec = b.create_topology()
    layout = Worker(WorkerConfig("t", spec, conf, local_tasks=[])).layout
    comp = layout.component_tasks
    owner = {t: "a" for t in layout.task_component}
    owner.update({t: "b" for t in comp["record"]})
    owner[comp["relay"][1]] = "b"  # one relay task with the records, one across
    hub = InprocHub()
    workers = [Worker(WorkerConfig("t", spec, conf, layout=layout,
                                   local_tasks=[t for t, k in owner.items() if k == key],
                                   task_peers={t: k for t, k in owner.items() if k != key}),
                      transport=hub.transport(key)) for key in ("a", "b")]
    for w in workers:
        w.open()
    spout = next(r.instance for r in workers[0].tasks.values() if r.component_id == "numbers")
    for _ in range(20_000):
        if spout.acked >= count - 2:  # each relay task holds its last tuple unacked
            break
        for w in workers:
            w.run_once()
    assert spout.acked >= count - 2
    seen = [(t, v) for w in workers for r in w.tasks.values() if r.component_id == "record"
            for t, v in r.instance.seen]
    assert sorted(v for _t, v in seen) == list(range(count))
    for relay in comp["relay"]:  # per relay task, each record task saw its numbers in order
        for rec in comp["record"]:
            got = [v for w in workers for r in w.tasks.values() if r.task_id == rec
                   for t, v in r.instance.seen if t == relay]
            assert got == sorted(got)
    assert all(not w.rejected for w in workers)


def test_a_flush_interval_holds_an_outbox_that_is_not_full_until_it_has_passed() -> None:
    now = [0.0]
    transport = ScriptedTransport()
    dispatch = Dispatch(6, [])
    transfer = Transfer(transport, dispatch, 3, COMPONENTS, [deque()], 10,
                        clock=lambda: now[0], flush_interval=0.002)
    transfer.route({4: "b", 5: "b"}, frozenset({1, 2, 3}))
    dispatch.deliver[4](tup("a"))
    transfer.flush()                   # the first round end that sees it: held
    now[0] = 0.0015
    dispatch.deliver[4](tup("b"))
    transfer.flush()                   # not yet 2 ms
    assert transport.sent == []
    now[0] = 0.0021
    transfer.flush()
    (_p, frame), = transport.sent
    assert decode_frame(frame) == [[4, "default", 1, 2, None, [["a", "b"]]]]
    for v in "cde":                    # a full box goes at once, interval or not
        dispatch.deliver[5](tup(v))
    assert len(transport.sent) == 2
    transfer.flush()
    assert len(transport.sent) == 2


def test_a_run_whose_values_cannot_be_packed_is_named_by_component_and_stream() -> None:
    transfer, _transport, dispatch, _qs = make_transfer()
    dispatch.deliver[4](tup("fine", src=2, stream="words"))
    dispatch.deliver[4](tup(object(), src=2, stream="words"))
    with pytest.raises(EmitError, match="^component 'bolt', stream 'words': cannot serialise "
                                        "values for task 4"):
        transfer.flush()


def test_a_worker_fed_malformed_runs_keeps_running_and_delivers_the_good_ones() -> None:
    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    worker, transport, tasks = half_worker(feeder, capture, {"topology.acker.executors": 1})
    f, sink = tasks["f"][0], tasks["sink"][0]
    transport.inbox += [
        msgpack.packb([[sink, "default", f, 2, None, [["a", "b"], [1, 2]]],
                       [sink, "default", f, 2, None, [["x"], [1, 2]]],        # short column
                       [sink, "default", f, 1, [5], [["x"], [1]]],             # one id for one tuple
                       [sink, "nope", f, 1, None, [["x"], [1]]],              # unknown stream
                       [sink, "default", f, 1, [5, 6, 7, 1], [["c"], [3]]]]),
        msgpack.packb([[sink, "default", f, -1, None, []]]),                  # n < 1
    ]
    for _ in range(3):
        worker.run_once()
    assert worker.failure is None
    assert capture.values == [["a", 1], ["b", 2], ["c", 3]]
    assert worker.rejected == {"malformed run": 3, "unexpected stream": 1}
