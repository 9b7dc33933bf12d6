"""``topology.batch.flush.interval.millis`` as a worker applies it: 0 (the default) sends a
frame for another worker at the end of the round that filled it; a longer interval holds an
outbox that is not full until that many milliseconds after it was first found waiting."""

from __future__ import annotations

from typing import Any

import pytest
from transport_fakes import ScriptedTransport

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig


def worker_feeding_a_peer(conf: dict[str, Any]) -> tuple[Worker, FeederSpout, ScriptedTransport]:
    """A worker running a feeder whose sink task runs in another worker (``peer``)."""
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    spec = b.create_topology()
    conf = {"topology.acker.executors": 0, **conf}
    layout = Worker(WorkerConfig("t", spec, conf, local_tasks=[])).layout
    (sink,) = layout.component_tasks["sink"]
    transport = ScriptedTransport()
    worker = Worker(WorkerConfig("t", spec, conf, layout=layout,
                                 local_tasks=[t for t in layout.task_component if t != sink],
                                 task_peers={sink: "peer"}),
                    transport=transport, clock=SimulatedClock())
    worker.open()
    return worker, feeder, transport


def test_without_a_flush_interval_a_frame_leaves_at_the_end_of_its_round() -> None:
    worker, feeder, transport = worker_feeding_a_peer({})
    feeder.feed(["x"])
    worker.run_once()
    assert [peer for peer, _frame in transport.sent] == ["peer"]


def test_a_flush_interval_holds_a_frame_that_is_not_full() -> None:
    """An hour's interval: the frame waits, round after round (the test ends long before)."""
    worker, feeder, transport = worker_feeding_a_peer(
        {"topology.batch.flush.interval.millis": 3_600_000})
    feeder.feed(["x"])
    for _ in range(5):
        worker.run_once()
    assert transport.sent == []
    assert worker._transfer._flush_interval == 3600.0  # milliseconds read as seconds / 1000


@pytest.mark.parametrize("millis, seconds", [(1, 0.001), (250, 0.25), (0, 0.0)])
def test_the_interval_is_read_in_milliseconds(millis: int, seconds: float) -> None:
    worker, _feeder, _transport = worker_feeding_a_peer(
        {"topology.batch.flush.interval.millis": millis})
    assert worker._transfer._flush_interval == seconds
