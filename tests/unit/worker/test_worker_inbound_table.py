"""``worker/inbound.py`` on its own: the table of what each local task takes (``accepts``) and
``Inbound.take`` against hand-built frames: what is queued (every field of the Tuple or
ColumnBatch), what is dropped under which reason, the count returned, and the log line (reason,
detail, sender, claimed source, at most one per LOG_INTERVAL, counts since the last line)."""

from __future__ import annotations

import logging
from typing import Any

import msgpack
import pytest
from inbound_kit import FIELDS, TABLE, InboundHarness
from transport_fakes import ScriptedTransport

from stormpy import Bolt, Spout, Stream, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._fields import Fields
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker import inbound as inbound_module
from stormpy.worker.inbound import LOG_INTERVAL, ONE_ROOT, PAIRS, Inbound, accepts


class Src(Spout):
    outputs = [Stream(["word", "n"]), Stream(["x"], name="side")]


class Mid(Bolt):
    outputs = ["out"]

    def execute(self, tup: Any) -> None:
        self.ack(tup)


class Cols(Bolt):
    def execute_columns(self, batch: ColumnBatch) -> None:
        self.ack(batch)


def layout_and_table(local: str | None = None) -> tuple[Worker, dict[int, Any]]:
    b = TopologyBuilder()
    b.set_spout("src", Src, 2)
    b.set_bolt("mid", Mid, 2).shuffle_grouping("src").shuffle_grouping("src", "side")
    b.set_bolt("cols", Cols).shuffle_grouping("mid")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 2},
                                 local_tasks=[]))
    tasks = worker.layout.task_component
    return worker, accepts(worker.spec, worker.layout, sorted(tasks))


def test_accepts_lists_per_destination_and_source_task_the_streams_it_takes() -> None:
    worker, table = layout_and_table()
    comp = worker.layout.component_tasks
    src, mid, cols, ackers = comp["src"], comp["mid"], comp["cols"], comp["__acker"]
    assert sorted(table) == sorted(worker.layout.task_component)
    word_n, side, out = Fields(["word", "n"]), Fields(["x"]), Fields(["out"])
    for m in mid:  # a bolt: what it subscribes to, from each task of the source component
        assert table[m] == {s: {"default": (2, "src", word_n), "side": (1, "src", side)}
                            for s in src}
    assert table[cols[0]] == {m: {"default": (1, "mid", out)} for m in mid}
    for s in src:  # a spout: the acker replies, from acker tasks only
        assert table[s] == {a: {st: (ONE_ROOT, "__acker", None)
                                for st in ("__ack_ack", "__ack_fail", "__ack_reset_timeout")}
                            for a in ackers}
    for a in ackers:  # an acker: the acker streams from every task and from -1
        assert sorted(table[a]) == [-1, *sorted(worker.layout.task_component)]
        assert table[a][src[0]] == {"__ack_init": (3, "src", None), "__ack_ack": (PAIRS, "src", None),
                                    "__ack_fail": (1, "src", None),
                                    "__ack_reset_timeout": (1, "src", None)}
        assert table[a][-1]["__ack_ack"] == (PAIRS, "__system", None)
    assert table[mid[0]] is table[mid[1]]  # built once per component
    only = accepts(worker.spec, worker.layout, [mid[0]])
    assert list(only) == [mid[0]]


def test_valid_tuples_are_queued_with_every_field_and_counted() -> None:
    h = InboundHarness()
    n = h.take([10, "default", 1, 7, 8, {7: 9}, ["w", 3]],
               [20, "__ack_ack", 5, 0, 0, None, [99]],
               [30, "__ack_ack", 1, 0, 0, None, [1, 2, 3, 4]],
               [30, "__ack_fail", 1, 0, 0, None, [6]],
               [40, "default", 1, 11, 12, None, [["a", "b"], [1, 2]], 2],
               [10, "empty", 1, 0, 0, None, []],
               [40, "empty", 1, 0, 0, None, [], 3])
    assert n == 1 + 1 + 1 + 1 + 2 + 1 + 3 and h.inbound.rejected == {}
    assert [(x.stream, x.values) for x in h.queued[10][1:]] == [("empty", [])]
    assert [(x.stream, len(x), x.columns()) for x in h.queued[40][1:]] == [("empty", 3, [])]
    h.queued[10][1:] = []
    h.queued[40][1:] = []
    (t,) = h.queued[10]
    assert type(t) is Tuple
    assert (t.values, t.stream, t.task, t.component, t.fields, t.root, t.edge, t.anchors) == (
        ["w", 3], "default", 1, "src", FIELDS, 7, 8, {7: 9})
    (reply,) = h.queued[20]
    assert (reply.values, reply.component, reply.fields) == ([99], "__acker", None)
    assert [x.values for x in h.queued[30]] == [[1, 2, 3, 4], [6]]
    (batch,) = h.queued[40]
    assert type(batch) is ColumnBatch and batch.column("word") == ["a", "b"]
    assert (batch.n, batch.stream, batch.task, batch.component, batch.fields, batch.root,
            batch.edge, batch.anchors) == (2, "default", 1, "src", FIELDS, 11, 12, None)


@pytest.mark.parametrize("item, reason, detail", [
    ([99, "default", 1, 0, 0, None, ["w", 3]], "unknown destination task", "task 99"),
    ([10, "other", 1, 0, 0, None, ["w", 3]], "unexpected stream", "stream 'other' from task 1 to task 10"),
    ([10, "default", 2, 0, 0, None, ["w", 3]], "unexpected stream",
     "stream 'default' from task 2 to task 10"),
    ([10, "default", 1, 0, 0, None, ["w"]], "wrong values",
     "stream 'default' to task 10 expects 2 value(s), got ['w']"),
    ([10, "default", 1, 0, 0, None, "ab"], "wrong values", "expects 2 value(s), got 'ab'"),
    ([10, "empty", 1, 0, 0, None, [5]], "wrong values", "expects 0 value(s), got [5]"),
    ([40, "__ack_ack", 1, 0, 0, None, [[1], [2]], 1], "unexpected stream",
     "stream '__ack_ack' from task 1 to task 40"),
    ([30, "__ack_ack", 1, 0, 0, None, [1, 2, 3]], "wrong values",
     "expects an even number (>= 2) of values, got [1, 2, 3]"),
    ([30, "__ack_ack", 1, 0, 0, None, []], "wrong values", "expects an even number (>= 2) of values, got []"),
    ([20, "__ack_ack", 5, 0, 0, None, ["r"]], "wrong values", "expects one int root, got ['r']"),
    ([20, "__ack_ack", 5, 0, 0, None, [1, 2]], "wrong values", "expects one int root, got [1, 2]"),
    ([10, "default", 1, "r", 0, None, ["w", 3]], "bad tuple ids", "root 'r', edge 0, anchors None"),
    ([10, "default", 1, 0, 1.5, None, ["w", 3]], "bad tuple ids", "root 0, edge 1.5, anchors None"),
    ([10, "default", 1, 0, 0, [1], ["w", 3]], "bad tuple ids", "anchors [1]"),
    ([10, "default", 1, 0, 0, {1: "x"}, ["w", 3]], "bad tuple ids", "anchors {1: 'x'}"),
    ([10, "default", 1, 0, 0, {"k": 1}, ["w", 3]], "bad tuple ids", "anchors {'k': 1}"),
    ([[10], "default", 1, 0, 0, None, ["w", 3]], "malformed tuple", "TypeError"),
    ([10, "default", 1, 0, 0], "not a wire tuple", "not an array of 6, 7 or 8 items"),
    ("text", "not a wire tuple", "not an array of 6, 7 or 8 items"),
    ([10, "default", 1, 0, 0, None, [["a"], [1]], 1], "unknown destination task", "batch for task 10"),
    ([99, "default", 1, 0, 0, None, [["a"], [1]], 1], "unknown destination task", "batch for task 99"),
    ([40, "side", 1, 0, 0, None, [["a"], [1]], 1], "unexpected stream",
     "stream 'side' from task 1 to task 40"),
    ([40, "default", 7, 0, 0, None, [["a"], [1]], 1], "unexpected stream",
     "stream 'default' from task 7 to task 40"),
    ([40, "default", 1, 0, 0, None, [["a"], [1]], 0], "wrong values",
     "batch on stream 'default' to task 40 expects 2 column(s) of n > 0 values, "
     "got n 0, columns [['a'], [1]]"),
    ([40, "default", 1, 0, 0, None, [["a"], [1]], "1"], "wrong values", "got n '1'"),
    ([40, "default", 1, 0, 0, None, [["a"]], 1], "wrong values", "expects 2 column(s)"),
    ([40, "default", 1, 0, 0, None, [["a"], [1, 2]], 1], "wrong values", "columns [['a'], [1, 2]]"),
    ([40, "default", 1, 0, 0, None, [["a"], 1], 1], "wrong values", "columns [['a'], 1]"),
    ([40, "default", 1, 0, 0, None, "cols", 1], "wrong values", "columns 'cols'"),
    ([40, "default", 1, "r", 0, None, [["a"], [1]], 1], "bad tuple ids", "root 'r', edge 0"),
    ([40, "default", 1, 0, "e", None, [["a"], [1]], 1], "bad tuple ids", "edge 'e'"),
    ([40, "default", 1, 0, 0, {1: None}, [["a"], [1]], 1], "bad tuple ids", "anchors {1: None}"),
])
def test_each_bad_item_is_dropped_under_its_reason_and_logged_with_what_was_wrong(
        item: Any, reason: str, detail: str, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    h = InboundHarness()
    good = [10, "default", 1, 0, 0, None, ["ok", 1]]
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        n = h.take(good, item, good)
    assert n == 2 and [t.values for t in h.queued[10]] == [["ok", 1], ["ok", 1]]
    assert h.queued[40] == [] and h.inbound.rejected == {reason: 1}
    assert h.inbound.rejected_total == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("worker w-1: dropped 1 invalid inbound tuple(s)/frame(s) since the last "
                           f"report (1 in all); latest from tcp://peer:{len(h.last_frame)}")
    assert f": {reason}: " in line and detail in line, line
    if reason == "not a wire tuple":
        assert line.endswith(": not a wire tuple: not an array of 6, 7 or 8 items"), line
    claims = type(item) is list and len(item) in (7, 8) and reason != "malformed tuple"
    assert ("claiming source task " + repr(item[2]) in line) == claims, line
    assert ("claiming" in line) == claims


@pytest.mark.parametrize("frame, detail", [
    (b"\xc1 nonsense", "undecodable frame: "),
    (msgpack.packb({"a": 1}), "frame is a dict, not an array of tuples"),
    (msgpack.packb(5), "frame is a int, not an array of tuples"),
])
def test_undecodable_frames_count_once_and_the_next_frame_is_read(
        frame: bytes, detail: str, caplog: pytest.LogCaptureFixture) -> None:
    h = InboundHarness()
    good = msgpack.packb([[10, "default", 1, 0, 0, None, ["ok", 1]]])
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        assert h.inbound.take([frame, good, frame]) == 1
    assert h.inbound.rejected == {"undecodable frame": 2}
    line = caplog.records[0].getMessage()
    assert f"latest from tcp://peer:{len(frame)}: undecodable frame: {detail}" in line, line
    assert "claiming" not in line


def test_log_lines_are_at_most_one_per_interval_and_count_what_came_since(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(inbound_module.time, "monotonic", lambda: now[0])
    h = InboundHarness()
    bad = [99, "default", 1, 0, 0, None, ["w", 3]]
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        h.take(bad)
        now[0] += LOG_INTERVAL - 0.5
        h.take(bad, bad)  # within the interval: counted, not logged
        now[0] += 0.5
        h.take([10, "default", 1, 0, 0, None, "x" * 200])
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "dropped 1 invalid" in lines[0] and "(1 in all)" in lines[0]
    assert "dropped 3 invalid" in lines[1] and "(4 in all)" in lines[1]
    assert "claiming source task 1" in lines[1]
    assert "got '" + "x" * 76 + "..." in lines[1]  # a long value cut to 80 characters
    assert "x" * 78 not in lines[1]
    assert h.inbound.rejected == {"unknown destination task": 3, "wrong values": 1}


def test_the_first_drop_is_logged_whatever_the_clock_says(caplog: pytest.LogCaptureFixture,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inbound_module.time, "monotonic", lambda: 0.0)
    h = InboundHarness()
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        h.take([99, "default", 1, 0, 0, None, ["w", 3]])
    assert len(caplog.records) == 1


def test_a_sender_that_cannot_be_named_is_an_unknown_peer(caplog: pytest.LogCaptureFixture) -> None:
    def broken(frame: Any) -> str:
        raise RuntimeError("no address")

    for sender in (broken, lambda frame: ""):
        sink: list[Tuple] = []
        inbound = Inbound(TABLE, {10: sink.append}, sender, "w-2")
        with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
            inbound.take([b"\xc1"])
        assert "latest from an unknown peer: undecodable frame" in caplog.records[-1].getMessage()
        assert "claiming" not in caplog.records[-1].getMessage()  # no source task claimed


def test_a_value_repr_of_80_characters_is_kept_whole_and_of_81_cut(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(inbound_module.time, "monotonic", lambda: now[0])
    h = InboundHarness()
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        h.take([10, "default", 1, 0, 0, None, "y" * 78])  # repr adds two quotes: 80 characters
        now[0] += LOG_INTERVAL
        h.take([10, "default", 1, 0, 0, None, "z" * 79])  # 81
    first, second = (r.getMessage() for r in caplog.records)
    assert "got '" + "y" * 78 + "'" in first
    assert "got '" + "z" * 76 + "..." in second and "z" * 77 not in second


def test_a_workers_drop_report_names_the_topology_and_the_port(caplog: pytest.LogCaptureFixture) -> None:
    """A worker's report of dropped inbound frames names it as ``topology:port`` (several
    workers of several topologies write to one host's logs)."""
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    transport = ScriptedTransport()
    worker = Worker(WorkerConfig("wc-7-123", b.create_topology(), {}, worker_port=6702),
                    transport=transport)
    worker.open()
    transport.inbox.append(b"\xc1 nonsense")
    with caplog.at_level(logging.WARNING, logger="stormpy.worker"):
        worker.run_once()
    (line,) = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert line.startswith("worker wc-7-123:6702: dropped 1 invalid inbound tuple(s)/frame(s)"), line
