"""Edge ids are 62-bit, drawn by the worker's ``EdgeIds`` (checked here: range, every bit
balanced, no short cycle, no XOR-cancellation among few consecutive ids, seeds); ``emit_many``
hands each target task its share of a batch at once; ``ack_many`` folds runs of one tree's
tuples into the round's ack buffer with the same XOR per root as one ``ack`` per tuple."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.edges import EDGE_BITS, EdgeIds


def test_edge_ids_are_62_bit() -> None:
    assert EDGE_BITS == 62  # the collision odds in edges.py are computed for 62 bits


def test_edge_ids_are_62_random_bits_every_bit_balanced() -> None:
    ids = EdgeIds(seed=12345)
    drawn = [ids.next() for _ in range(20_000)]
    assert all(0 <= d < 2 ** 62 for d in drawn)
    assert max(drawn) >= 2 ** 61  # the top bit is reached
    assert len(set(drawn)) == len(drawn)  # no repeat (a short cycle or a stuck state)
    for bit in range(62):  # each bit is set in about half the ids (binomial sd ~71)
        ones = sum((d >> bit) & 1 for d in drawn)
        assert 9_500 < ones < 10_500, (bit, ones)
    for lag in (1, 2, 3, 5, 31, 32, 64):  # no bit follows the one drawn `lag` ids earlier
        same = sum(((a ^ b) >> 17) & 1 for a, b in zip(drawn, drawn[lag:]))
        assert 9_400 < same < 10_600, (lag, same)


def test_no_few_consecutive_edge_ids_xor_to_zero() -> None:
    """The acker misses a tuple only when some of a tree's edges XOR to 0: among runs of up to 4
    consecutive ids (the edges of a small tree), no subset does."""
    ids = EdgeIds(seed=7)
    drawn = [ids.next() for _ in range(5_000)]
    for i in range(len(drawn) - 4):
        a, b, c, d = drawn[i:i + 4]
        assert 0 not in (a, b, c, d, a ^ b, a ^ c, a ^ d, b ^ c, b ^ d, c ^ d, a ^ b ^ c,
                         a ^ b ^ d, a ^ c ^ d, b ^ c ^ d, a ^ b ^ c ^ d)


def test_edge_ids_follow_their_seed_and_differ_between_seeds() -> None:
    first = [EdgeIds(seed=99).next() for _ in range(1)] + [0]
    a, b = EdgeIds(seed=99), EdgeIds(seed=99)
    assert [a.next() for _ in range(50)] == [b.next() for _ in range(50)]
    assert first[0] == EdgeIds(seed=99).next()
    c, d = EdgeIds(seed=1), EdgeIds(seed=2)
    assert {c.next() for _ in range(50)}.isdisjoint({d.next() for _ in range(50)})
    for seed in (0, 2 ** 64 - 1, -1, 2 ** 200):  # the extremes of the seed give a live state
        e = EdgeIds(seed=seed)
        assert len({e.next() for _ in range(100)}) == 100


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
