"""Edge ids are 62-bit; ``emit_many`` hands each target
task its share of a batch at once; ``ack_many`` folds runs of one tree's tuples into the round's
ack buffer with the same XOR per root as one ``ack`` per tuple."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.edges import EDGE_BITS


def test_edge_ids_are_62_bit() -> None:
    assert EDGE_BITS == 62  # the collision odds in edges.py are computed for 62 bits


class Splitter(Bolt):
    """Splits each sentence into words with emit_many; with ``acks`` records the ack buffer
    each way of acking would produce."""

    outputs = ["word"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        for tup in tuples:
            self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack_many(tuples)


class Recorder(Bolt):
    """Keeps its tuples and acks each batch with ack_many (tuples of several trees, runs of
    one tree interleaved with others)."""

    outputs: list[str] = []

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        self.got: list[Tuple] = []

    def execute_batch(self, tuples: list[Tuple]) -> None:
        self.got.extend(tuples)
        self.ack_many(tuples)


def test_batch_acks_of_interleaved_trees_complete_every_tree() -> None:
    feeder = FeederSpout(["sentence"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", Splitter, 2).shuffle_grouping("feeder")
    b.set_bolt("sink", Recorder, 2).fields_grouping("split", ["word"])
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    for i in range(20):
        feeder.feed([f"a b a c {i} b a"], msg_id=i)
    for _ in range(30):
        worker.run_once()
    assert sorted(feeder.acked) == list(range(20)) and not feeder.failed
    sink_tuples = [t for r in worker.tasks.values() if r.component_id == "sink"
                   for t in r.instance.got]
    assert len(sink_tuples) == 20 * 7
    assert all(0 < t.edge < 2 ** 62 for t in sink_tuples)


def test_emit_many_sends_each_target_task_its_tuples_in_emit_order() -> None:
    feeder = FeederSpout(["sentence"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("split", Splitter).shuffle_grouping("feeder")
    b.set_bolt("sink", sink, 3).shuffle_grouping("split")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.open()
    feeder.feed(["w0 w1 w2 w3 w4 w5 w6 w7 w8"])
    for _ in range(5):
        worker.run_once()
    by_task = {task: [v[0] for v in values] for task, values in sink.by_task.items()}
    assert sorted(w for ws in by_task.values() for w in ws) == [f"w{i}" for i in range(9)]
    for words in by_task.values():  # shuffle: every third word, in order
        assert len(words) == 3 and words == sorted(words, key=lambda w: int(w[1:]))
