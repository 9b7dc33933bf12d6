"""Whatever path an emit takes inside a bolt (untracked, anchored to one tree or several, with
or without ackers, observed), the receiver gets the emitting task, its component, the stream
and the stream's fields; an observer sees every emit with its targets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, EmitError, Stream, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError


class Emitter(Bolt):
    """Emits each input on stream "out" as ``mode`` says (``pair``: anchored to the last two
    inputs, a join)."""

    outputs = [Stream(["word", "n"], name="out"), Stream(["v"], name="direct", direct=True)]

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.last: Tuple | None = None

    def execute(self, tup: Tuple) -> None:
        values = [tup.values[0], 1]
        if self.mode == "unanchored":
            self.emit(values, stream="out")
        elif self.mode == "anchored":
            self.emit(values, anchors=tup, stream="out")
        elif self.mode == "list":
            self.emit(values, anchors=[tup], stream="out")
        elif self.mode == "pair":
            if self.last is None:
                self.last = tup
                return
            self.emit(values, anchors=[self.last, tup], stream="out")
            self.ack(self.last)
        self.ack(tup)


MODES = ["unanchored", "anchored", "list", "pair"]


def build(mode: str) -> tuple[FeederSpout, Capture, Any]:
    feeder = FeederSpout(["v"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("emitter", Emitter, kwargs={"mode": mode}).shuffle_grouping("feeder")
    b.set_bolt("sink", sink).shuffle_grouping("emitter", "out")
    b.set_bolt("direct-sink", Capture()).direct_grouping("emitter", "direct")
    return feeder, sink, b.create_topology()


def run(spec: Any, conf: Mapping[str, Any], **kwargs: Any) -> Worker:
    worker = Worker(WorkerConfig("t", spec, conf), clock=SimulatedClock(), **kwargs)
    worker.open()
    return worker


@pytest.mark.parametrize("ackers", [0, 1])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("observed", [False, True])
def test_the_receiver_sees_who_emitted_on_which_stream_with_which_fields(
        mode: str, ackers: int, observed: bool) -> None:
    feeder, sink, spec = build(mode)
    seen: list[tuple[str, str, list[Any], list[int]]] = []
    observer = (lambda c, s, v, t: seen.append((c, s, v, t))) if observed else None
    worker = run(spec, {"topology.acker.executors": ackers}, observer=observer)
    feeder.feed(["a"], msg_id=1)
    feeder.feed(["b"], msg_id=2)
    for _ in range(8):
        worker.run_once()
    (emitter,) = worker.layout.component_tasks["emitter"]
    (sink_task,) = worker.layout.component_tasks["sink"]
    expected = [["b", 1]] if mode == "pair" else [["a", 1], ["b", 1]]
    assert sink.values == expected
    for tup in sink.tuples:
        assert (tup.task, tup.component, tup.stream) == (emitter, "emitter", "out")
        assert tup.fields == Fields(["word", "n"]) and tup["n"] == 1
    assert sorted(feeder.acked) == [1, 2]
    if observed:
        emits = [e for e in seen if e[0] == "emitter"]
        assert emits == [("emitter", "out", v, [sink_task]) for v in expected]


class BadDirect(Bolt):
    outputs = [Stream(["v"], name="direct", direct=True)]

    def execute(self, tup: Tuple) -> None:
        self.emit_direct(2, ["one", "too many"], stream="direct")


def test_a_direct_emit_of_the_wrong_arity_names_its_stream() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("bad", BadDirect).shuffle_grouping("feeder")
    b.set_bolt("sink", Capture()).direct_grouping("bad", "direct")
    worker = run(b.create_topology(), {})
    feeder.feed([1])
    with pytest.raises(WorkerError) as info:
        for _ in range(3):
            worker.run_once()
    assert isinstance(info.value.__cause__, EmitError)
    assert str(info.value.__cause__) == ("component 'bad', stream 'direct': emitted 2 values for "
                                         "fields ['v']")
