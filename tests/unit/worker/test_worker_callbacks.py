"""Work handed back to the executor loop: errors are attributed, jobs counted, cleanup ordered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.messaging.transport import NoTransport
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.worker import WorkerError

CLOSED: list[str] = []


class BackgroundBolt(Bolt):
    """Runs each tuple's work in the background; acks (or raises in on_done) on the loop."""

    def __init__(self, explode: bool = False) -> None:
        self.explode = explode

    def execute(self, tup: Tuple) -> None:
        def done(result: Any, error: BaseException | None) -> None:
            if self.explode:
                raise RuntimeError("on_done blew up")
            assert result == tup.values[0] * 2 and error is None
            self.ack(tup)
        self.run_in_background(lambda: tup.values[0] * 2, done)


class SoonBolt(Bolt):
    def execute(self, tup: Tuple) -> None:
        def later() -> None:
            raise ValueError("callback failed")
        self.call_soon_threadsafe(later)


def test_background_jobs_complete_and_ack_on_the_loop() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("f", feeder)
    b.set_bolt("bg", BackgroundBolt).shuffle_grouping("f")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        for i in range(20):
            feeder.feed([i], msg_id=i)
        cluster.wait_for(lambda: sorted(feeder.acked) == list(range(20)), 20, "acks")


@pytest.mark.parametrize("bolt, kwargs, message", [
    (BackgroundBolt, {"explode": True}, "on_done blew up"),
    (SoonBolt, {}, "callback failed"),
])
def test_callback_errors_stop_the_worker_naming_the_component(bolt: type, kwargs: dict[str, Any],
                                                              message: str) -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("f", feeder)
    b.set_bolt("cb", bolt, kwargs=kwargs).shuffle_grouping("f")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("t", {}, b.create_topology())
        feeder.feed([1], msg_id=1)
        with pytest.raises(WorkerError, match=message) as info:
            cluster.wait_for(lambda: False, 20, "the failure")
        assert info.value.component == "cb"
        assert message in worker.errors["cb"][-1]["error"]


class Recorder(Bolt):
    outputs = ["v"]

    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)

    def cleanup(self) -> None:
        CLOSED.append(self.name)


class RecordingSpout(Spout):
    outputs = ["v"]

    def close(self) -> None:
        CLOSED.append("spout")


def test_cleanup_runs_spouts_first_then_bolts_upstream_to_downstream() -> None:
    CLOSED.clear()
    b = TopologyBuilder()
    b.set_spout("zz-spout", RecordingSpout)
    # ids sort against the flow: "a-last" is downstream of "m-middle", downstream of "z-first"
    b.set_bolt("z-first", Recorder, kwargs={"name": "first"}).shuffle_grouping("zz-spout")
    b.set_bolt("m-middle", Recorder, kwargs={"name": "middle"}).shuffle_grouping("z-first")
    b.set_bolt("a-last", Recorder, kwargs={"name": "last"}).shuffle_grouping("m-middle")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_until_quiet()
    assert CLOSED == ["spout", "first", "middle", "last"]


class TickedByArgument(Bolt):
    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"topology.tick.tuple.freq.secs": kwargs["every"]}

    def __init__(self, every: float) -> None:
        pass

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.capture = None

    def execute(self, tup: Tuple) -> None:
        pass


def test_declare_config_derives_component_config_from_arguments() -> None:
    b = TopologyBuilder()
    b.set_spout("f", FeederSpout(["v"]))
    b.set_bolt("ticked", TickedByArgument, kwargs={"every": 2.5}).shuffle_grouping("f")
    b.set_bolt("overridden", TickedByArgument, kwargs={"every": 2.5},
               config={"topology.tick.tuple.freq.secs": 7}).shuffle_grouping("f")
    b.set_bolt("sink", Capture()).shuffle_grouping("f")
    spec = b.create_topology()
    assert spec.components["ticked"].config == {"topology.tick.tuple.freq.secs": 2.5}
    assert spec.components["overridden"].config == {"topology.tick.tuple.freq.secs": 7}


def test_an_error_outside_any_component_still_stops_the_worker_with_a_failure() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("f", feeder)
    b.set_bolt("sink", Capture()).shuffle_grouping("f")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("t", {}, b.create_topology())

        class BrokenTransport(NoTransport):
            def receive(self, max_frames: int) -> list[bytes]:
                raise OSError("transport exploded")
        worker.transport = BrokenTransport()
        with pytest.raises(WorkerError, match="transport exploded") as info:
            cluster.wait_for(lambda: False, 10, "the failure")
        assert info.value.component == "__system"
        assert "OSError: transport exploded" in worker.errors["__system"][-1]["error"]
