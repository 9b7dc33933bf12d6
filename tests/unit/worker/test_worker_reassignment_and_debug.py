"""A worker re-routes tuples when its peers change, logs every emit of a ``topology.debug``
topology, and records a component's crash as its whole traceback."""

from __future__ import annotations

import logging
import traceback

import pytest
from transport_fakes import ScriptedTransport

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError


def test_update_peers_moves_remote_tasks_and_drops_tuples_for_tasks_without_a_place() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture(), 2).all_grouping("feeder")
    spec = b.create_topology()
    conf = {"topology.acker.executors": 0}
    layout = Worker(WorkerConfig("t", spec, conf, local_tasks=[])).layout
    (spout,) = layout.component_tasks["feeder"]
    first, second = layout.component_tasks["sink"]
    transport = ScriptedTransport()
    worker = Worker(WorkerConfig("t", spec, conf, local_tasks=[spout],
                                 task_peers={first: "a", second: "a"}),
                    transport=transport, clock=SimulatedClock())
    worker.open()
    feeder.feed([1])
    worker.run_once()
    assert sorted(transport.sent_tasks()) == [("a", first), ("a", second)]
    worker.update_peers({first: "b"})  # second has no place for now
    feeder.feed([2])
    worker.run_once()
    assert transport.sent_tasks()[2:] == [("b", first)]
    assert worker.dispatch.dropped == 1


def test_a_debug_topology_logs_every_emit(caplog: pytest.LogCaptureFixture) -> None:
    # not debug but observed (every emit reaches the worker, which must not log it); debug and
    # not observed (the task itself reports its emits)
    for debug, observer in ((False, lambda *args: None), (True, None)):
        feeder = FeederSpout(["v"])
        b = TopologyBuilder()
        b.set_spout("feeder", feeder)
        b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
        worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.debug": debug}),
                        clock=SimulatedClock(), observer=observer)
        worker.open()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="stormpy.worker"):
            feeder.feed(["hello"])
            for _ in range(3):
                worker.run_once()
        emitted = [r.getMessage() for r in caplog.records if r.getMessage().startswith("emitted")]
        assert len(emitted) == (1 if debug else 0), emitted
        if debug:
            assert "feeder" in emitted[0] and "'hello'" in emitted[0]


class Crashing(Bolt):
    raised: list[BaseException] = []

    def execute(self, tup: Tuple) -> None:
        exc = ZeroDivisionError("no way")
        Crashing.raised.append(exc)
        raise exc


def test_a_crash_is_recorded_as_its_whole_traceback() -> None:
    Crashing.raised.clear()
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("crashing", Crashing).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.open()
    feeder.feed([1])
    with pytest.raises(WorkerError, match="component 'crashing' task .* raised "
                                          "ZeroDivisionError: no way"):
        for _ in range(3):
            worker.run_once()
    (exc,) = Crashing.raised
    (error,) = worker.errors["crashing"]
    assert error["error"] == "".join(traceback.format_exception(exc)).rstrip()




@pytest.mark.parametrize("name, expected", [(None, "worker-topo-1"), ("custom", "custom")])
def test_start_runs_the_loop_on_a_named_daemon_thread(name: str | None, expected: str) -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("topo-1", b.create_topology(), {}))
    thread = worker.start(name)
    try:
        assert thread.name == expected and thread.daemon is True
        assert worker.running
    finally:
        worker.stop()
    assert not worker.running and worker.failure is None
