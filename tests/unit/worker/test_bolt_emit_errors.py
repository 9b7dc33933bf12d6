"""A bolt's bad emits stop the topology with an error naming the component and the stream, as a
spout's do (test_emit_errors.py): undeclared stream, wrong number of values, values that are not
a list, values that cannot be serialised."""

from __future__ import annotations

import datetime

import pytest

from stormpy import Bolt, EmitError, Stream, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError


class BadBolt(Bolt):
    """Emits wrongly, as its input says, on stream "out" (fields a, b)."""

    outputs = [Stream(["a", "b"], name="out")]

    def execute(self, tup: Tuple) -> None:
        mode = tup.values[0]
        if mode == "stream":
            self.emit(["x", "y"], stream="elsewhere")
        elif mode == "arity":
            self.emit(["x", "y", "z"], stream="out")
        elif mode == "string":
            self.emit("xy", stream="out")  # a str of the right length is still not a list
        elif mode == "object":
            self.emit(["x", datetime.date(2020, 1, 2)], stream="out")


@pytest.mark.parametrize("mode, message", [
    ("stream", "component 'bad' emitted on undeclared stream 'elsewhere' (declared: ['out'])"),
    ("arity", "component 'bad', stream 'out': emitted 3 values for fields ['a', 'b']"),
    ("string", "component 'bad', stream 'out': emit takes a list of values, got str"),
    ("object", "component 'bad', stream 'out': cannot serialise datetime.date value "
               "datetime.date(2020, 1, 2); emit plain data"),
])
def test_a_bolts_bad_emit_is_a_named_error(mode: str, message: str) -> None:
    feeder = FeederSpout(["mode"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("bad", BadBolt).shuffle_grouping("feeder")
    b.set_bolt("sink", Capture()).shuffle_grouping("bad", "out")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.open()
    feeder.feed([mode])
    with pytest.raises(WorkerError) as info:
        for _ in range(3):
            worker.run_once()
    assert info.value.component == "bad"
    assert isinstance(info.value.__cause__, EmitError)
    assert str(info.value.__cause__).startswith(message), str(info.value.__cause__)
