"""A tracked run's edges travel as one generator state (``messaging/codec.py``): the emits draw
the edge of a tuple for a task of another worker from that task's own generator
(``Dispatch.edges_for``), so the words a split emits anchored, one by one or with
``emit_many``, cross as runs with no id of their own, and every tree still completes on two
workers exchanging real frames."""

from __future__ import annotations

from typing import Any

from stormpy import Bolt, Spout, TopologyBuilder
from stormpy.messaging.codec import RUN_ITEMS, TUPLE_ITEMS, decode_frame
from stormpy.messaging.inproc import InprocHub
from stormpy.topology._tuple import Tuple
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.inbound import wire_tuples

SENTENCES = [f"w{i % 7} w{i % 5} w{i % 3} x{i}" for i in range(120)]


class Sentences(Spout):
    outputs = ["sentence"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def next_tuple(self) -> None:
        if self.i < len(SENTENCES):
            self.emit([SENTENCES[self.i]], msg_id=self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


class Split(Bolt):
    """Odd sentences word by word (``emit``), even ones at once (``emit_many``), anchored."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        words = [[w] for w in tup.values[0].split()]
        if tup.values[0].endswith(("0", "2", "4", "6", "8")):
            self.emit_many(words, anchors=tup)
        else:
            for w in words:
                self.emit(w, anchors=tup)
        self.ack(tup)


class Count(Bolt):
    def prepare(self, conf: Any, context: Any) -> None:
        self.words: list[str] = []

    def execute(self, tup: Tuple) -> None:
        self.words.append(tup.values[0])
        self.ack(tup)


def test_anchored_words_cross_as_runs_without_ids_and_every_tree_completes() -> None:
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences)
    b.set_bolt("split", Split).shuffle_grouping("sentences")
    b.set_bolt("count", Count, 2).fields_grouping("split", ["word"])
    spec = b.create_topology()
    conf = {"topology.acker.executors": 1, "topology.max.spout.pending": 16,
            "topology.transfer.batch.size": 9}
    layout = Worker(WorkerConfig("t", spec, conf, local_tasks=[])).layout
    counts = layout.component_tasks["count"]
    owner = {t: "a" for t in layout.task_component}
    owner[counts[1]] = "b"  # one count task across, the other beside the split
    hub = InprocHub()
    sent: list[bytes] = []
    workers = []
    for key in ("a", "b"):
        transport = hub.transport(key)
        if key == "a":
            send = transport.send

            def recording(peer: str, frame: bytes, send: Any = send) -> bool:
                sent.append(frame)
                return send(peer, frame)

            transport.send = recording  # type: ignore[method-assign]
        workers.append(Worker(WorkerConfig(
            "t", spec, conf, layout=layout,
            local_tasks=[t for t, k in owner.items() if k == key],
            task_peers={t: k for t, k in owner.items() if k != key}), transport=transport))
    for w in workers:
        w.open()
    spout = next(r.instance for r in workers[0].tasks.values() if r.component_id == "sentences")
    for _ in range(5_000):
        if len(spout.acked) == len(SENTENCES):
            break
        for w in workers:
            w.run_once()
    assert sorted(spout.acked) == list(range(len(SENTENCES))) and spout.failed == []
    assert all(not w.rejected for w in workers)
    words = [r.instance.words for w in workers for r in w.tasks.values()
             if r.component_id == "count"]
    assert sorted(x for ws in words for x in ws) == sorted(
        w for s in SENTENCES for w in s.split())
    records = [r for frame in sent for r in decode_frame(frame) if r[1] == "default"]
    assert records and all(len(r) == RUN_ITEMS for r in records)  # no word as a single tuple
    for r in records:  # [x, c, root, count, ...]: one state, roots with counts, no edges
        ids = r[4]
        assert len(ids) >= 4 and len(ids) % 2 == 0 and sum(ids[3::2]) == r[3]
    crossing = [t for frame in sent for t in wire_tuples(decode_frame(frame))
                if t[1] == "default"]
    far = workers[1].tasks[counts[1]].instance.words
    assert [t[6][0] for t in crossing] == far  # in emit order, each with its root and edge
    assert all(t[3] and t[4] and len(t) == TUPLE_ITEMS for t in crossing)
