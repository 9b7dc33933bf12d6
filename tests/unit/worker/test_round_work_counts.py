"""What one loop round runs and reports: a batch bolt gets at most ``EXECUTE_BUDGET`` tuples per
round too, and a worker not yet opened (submitted inactive) still counts its callbacks as work."""

from __future__ import annotations

import logging

import pytest

from stormpy import Bolt, Spout, Stream, TopologyBuilder, Tuple
from stormpy.messaging.transport import NoTransport
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.loop import EXECUTE_BUDGET

BATCHES: list[list[int]] = []


class Batched(Bolt):
    """Records the values of each batch it is given; acks them all."""

    def execute(self, tup: Tuple) -> None:  # pragma: no cover - the batch form is used
        raise AssertionError("a batch bolt's tuples come through execute_batch")

    def execute_batch(self, tuples: list[Tuple]) -> None:
        BATCHES.append([t.values[0] for t in tuples])
        self.ack_many(tuples)


def test_a_batch_bolt_gets_at_most_the_execute_budget_per_round() -> None:
    BATCHES.clear()
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("batched", Batched).shuffle_grouping("feeder")
    n = EXECUTE_BUDGET + 10
    worker = Worker(WorkerConfig("t", b.create_topology(),
                                 {"topology.spout.max.batch.size": n,
                                  "topology.acker.executors": 0}), clock=SimulatedClock())
    worker.open()
    for i in range(n):
        feeder.feed([i])
    worker.run_once()  # the spout emits a round's worth (SPOUT_ROUND_TUPLES = EXECUTE_BUDGET)
    assert worker.run_once() == EXECUTE_BUDGET + 10  # the bolt's budget, then the spout's last 10
    assert [len(batch) for batch in BATCHES] == [EXECUTE_BUDGET]
    assert worker.run_once() == 10
    assert [len(batch) for batch in BATCHES] == [EXECUTE_BUDGET, 10]
    assert [v for batch in BATCHES for v in batch] == list(range(n))
    assert worker.stats()["batched"]["executed"] == n


def test_before_its_first_activation_a_round_still_counts_its_callbacks() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["n"]))
    b.set_bolt("batched", Batched).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}, active=False),
                    clock=SimulatedClock())
    worker.open()  # submitted inactive: nothing is opened yet
    ran: list[int] = []
    worker.call_soon_threadsafe(lambda: ran.append(1))
    assert worker.run_once() == 1 and ran == [1]
    assert worker.quiet_rounds == 0 and worker.rounds == 1
    assert worker.run_once() == 0 and worker.quiet_rounds == 1


class NamedPeers(NoTransport):
    """Hands the worker one undecodable frame and names where frames come from."""

    def __init__(self) -> None:
        self.frames = [b"\xc1not msgpack"]

    def receive(self, max_frames: int) -> list[bytes]:
        out, self.frames = self.frames, []
        return out

    def sender(self, frame: object) -> str:
        return "peer-b:6701"


def test_a_dropped_frame_is_logged_with_the_peer_it_came_from(
        caplog: pytest.LogCaptureFixture) -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["n"]))
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock(),
                    transport=NamedPeers())
    worker.open()
    with caplog.at_level(logging.WARNING, logger="stormpy"):
        worker.run_once()
    assert sum(worker.rejected.values()) == 1
    assert "latest from peer-b:6701" in caplog.text


class ChangesItsValues(Spout):
    """Emits a list holding a list, then puts an object into the inner one before the batch is
    sent (a misuse; the transfer reads the emitted list's items at emit, so only a value the
    list holds can still change before packing)."""

    outputs = [Stream(["v"])]

    def __init__(self) -> None:
        self.done = False

    def next_tuple(self) -> None:
        if not self.done:
            self.done = True
            inner: list[object] = ["x"]
            self.emit([inner])
            inner[0] = object()


def test_values_changed_after_their_emit_name_the_component_when_they_cannot_be_sent() -> None:
    b = TopologyBuilder()
    b.set_spout("changer", ChangesItsValues)
    b.set_bolt("sink", Capture()).shuffle_grouping("changer")
    spec = b.create_topology()
    probe = Worker(WorkerConfig("t", spec, {}, local_tasks=[]))
    tasks = probe.layout.component_tasks
    worker = Worker(WorkerConfig("t", spec, {}, local_tasks=tasks["changer"],
                                 task_peers={t: "peer" for t in tasks["sink"]}),
                    clock=SimulatedClock(), transport=NamedPeers())
    worker.open()
    with pytest.raises(Exception) as info:  # noqa: PT011 - the type is the runtime's to choose
        worker.run_once()
    assert "component 'changer', stream 'default': cannot serialise values" in str(info.value)
