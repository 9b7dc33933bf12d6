"""Emits that cannot be delivered fail with an error naming the component and the stream."""

from __future__ import annotations

import datetime

import pytest

from stormpy import EmitError, Spout, TopologyBuilder
from stormpy.testing import Capture, LocalCluster
from stormpy.worker import WorkerError


class BadSpout(Spout):
    outputs = ["v"]

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.done = False

    def next_tuple(self) -> None:
        if self.done:
            return
        self.done = True
        if self.mode == "object":
            self.emit([datetime.datetime(2020, 1, 1)], msg_id=1)
        elif self.mode == "nested":
            self.emit([{"k": [1, {2, 3}]}])
        elif self.mode == "bigint":
            self.emit([2 ** 70])
        elif self.mode == "stream":
            self.emit(["x"], stream="missing")
        elif self.mode == "arity":
            self.emit(["x", "y"])
        elif self.mode == "direct":
            self.emit_direct(1, ["x"])
        elif self.mode == "scalar":
            self.emit("x")


@pytest.mark.parametrize("mode, message", [
    ("object", r"component 'bad', stream 'default': cannot serialise datetime\.datetime"),
    ("nested", r"component 'bad', stream 'default': cannot serialise builtins\.set"),
    ("bigint", r"component 'bad', stream 'default'.*64 bits"),
    ("stream", r"component 'bad' emitted on undeclared stream 'missing'"),
    ("arity", r"component 'bad', stream 'default': emitted 2 values for fields \['v'\]"),
    ("direct", r"component 'bad': emit_direct on stream 'default'"),
    ("scalar", r"emit takes a list of values"),
])
def test_bad_emits_stop_the_topology_with_a_named_error(mode: str, message: str) -> None:
    b = TopologyBuilder()
    b.set_spout("bad", BadSpout, kwargs={"mode": mode})
    b.set_bolt("sink", Capture()).shuffle_grouping("bad")
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        with pytest.raises(WorkerError) as info:
            cluster.wait_for(lambda: False, 10, "the failure")
        assert info.value.component == "bad"
        assert isinstance(info.value.__cause__, EmitError)
        assert info.match(message) or pytest.fail(str(info.value.__cause__))


def test_error_message_is_kept_for_the_component() -> None:
    b = TopologyBuilder()
    b.set_spout("bad", BadSpout, kwargs={"mode": "object"})
    b.set_bolt("sink", Capture()).shuffle_grouping("bad")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: worker.failure is not None, 10, "failure")
        errors = list(worker.errors["bad"])
        assert "cannot serialise datetime.datetime" in errors[-1]["error"]
