"""Spout-side tracking: untracked emits carry their metadata, root ids stay non-zero 62-bit ids
pinned to the spout's own acker whatever the random source gives (``SpoutRoots.pin`` of the
drawn id, its extremes given directly), and complete latency adds up the time from emit to ack
of every tuple.

The clock of the spout runner is replaced here (``perf_counter`` of
``stormpy.worker.spout_task``): its extremes cannot be reached otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Spout, Stream, TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, spout_task


class Untracked(Spout):
    outputs = [Stream(["a", "b"], name="side")]

    def __init__(self) -> None:
        self.left = 2

    def next_tuple(self) -> None:
        if self.left:
            self.left -= 1
            self.emit([self.left, "x"], stream="side")


def test_untracked_spout_tuples_carry_task_component_stream_and_fields() -> None:
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("untracked", Untracked)
    b.set_bolt("sink", sink).shuffle_grouping("untracked", "side")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.open()
    for _ in range(3):
        worker.run_once()
    (spout,) = worker.layout.component_tasks["untracked"]
    assert sink.values == [[1, "x"], [0, "x"]]
    for tup in sink.tuples:
        assert (tup.task, tup.component, tup.stream) == (spout, "untracked", "side")
        assert tup.fields == Fields(["a", "b"]) and tup.root == 0


def spout_and_ackers(feeder: FeederSpout, sink: Capture, ackers: int) -> Worker:
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", sink).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": ackers}),
                    clock=SimulatedClock())
    worker.open()
    return worker


#: (ackers, the random id drawn, the root id made of it) for a spout task 4 whose ackers all run
#: in its worker (home acker ``4 % ackers``); shared with the spout-batch root test
ROOT_CASES = [
    (3, 5, 4),                    # moved down to the home acker's id (home: acker 1)
    (3, 2 ** 62 - 2, 2 ** 62 - 3),
    (3, 2 ** 62 - 1, 2 ** 62 - 3),  # moving up would pass 62 bits: the previous id instead
    (3, 0, 1),
    (1, 0, 1),                    # 0 means "no tree": the next id of the same acker
    (1, 2 ** 62 - 1, 2 ** 62 - 1),
]


def check_home_roots(worker: Worker, roots: list[int], ackers: int, drawn: int, root: int) -> None:
    """The spout's roots (its task is 4 with three ackers; its home acker ``task % ackers``):
    ``pin`` makes ``root`` of ``drawn``; the roots it emitted are non-zero 62-bit ids of its
    home acker, which alone holds them."""
    runner = next(r for r in worker.tasks.values() if r.component_id == "feeder")
    home = runner.task_id % ackers
    assert runner.roots.home == home and (ackers != 3 or runner.task_id == 4)
    assert runner.roots.pin(drawn) == root
    for r in roots:
        assert 0 < r < 2 ** 62 and r % ackers == home
    cores = worker.dispatch.acker_cores
    assert [len(c.ledger) for c in cores if c is not None] == [
        len(set(roots)) if i == home else 0 for i in range(ackers)]


@pytest.mark.parametrize("ackers, drawn, root", ROOT_CASES)
def test_root_ids_are_nonzero_62_bit_ids_of_the_home_acker_whatever_the_random_source_gives(
        ackers: int, drawn: int, root: int) -> None:
    """All ackers run in the spout's worker: the spout's home acker is ``task % ackers`` (acker
    1 for spout task 4 of three ackers, 0 with one), and each root id is the drawn random id
    moved to an id of that acker."""
    feeder, sink = FeederSpout(["v"]), Capture(ack=False)
    worker = spout_and_ackers(feeder, sink, ackers)
    feeder.feed(["x"], msg_id="m")
    feeder.feed(["y"], msg_id="n")
    for _ in range(3):
        worker.run_once()
    check_home_roots(worker, [t.root for t in sink.tuples], ackers, drawn, root)


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_complete_latency_sums_emit_to_ack_time_of_every_acked_tuple(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTime()
    monkeypatch.setattr(spout_task, "perf_counter", fake)
    feeder, sink = FeederSpout(["v"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", sink).shuffle_grouping("feeder")
    conf: Mapping[str, Any] = {"topology.acker.executors": 1, "topology.spout.max.batch.size": 1}
    worker = Worker(WorkerConfig("t", b.create_topology(), conf), clock=SimulatedClock())
    worker.open()
    feeder.feed([1], msg_id=1)
    worker.run_once()  # emitted at 100
    fake.now = 101.0
    feeder.feed([2], msg_id=2)
    worker.run_once()  # tuple 1 executed; tuple 2 emitted at 101
    fake.now = 104.0
    for _ in range(4):
        worker.run_once()
    assert sorted(feeder.acked) == [1, 2]
    (doc,) = [d for d in worker.task_stats() if d["component"] == "feeder"]
    assert doc["latency_count"] == 2
    assert doc["latency_sum"] == pytest.approx((104.0 - 100.0) + (104.0 - 101.0))
    assert worker.stats()["feeder"]["complete_latency_ms"] == pytest.approx(3500.0)
