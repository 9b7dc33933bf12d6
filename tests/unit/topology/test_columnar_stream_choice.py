"""Which streams the task factory makes columnar: a stream is columnar only when every subscriber
is a bolt defining ``execute_columns``; a subscriber whose class cannot be imported here is taken
as one that takes tuples (its own task reports the error; tuples are always safe)."""

from __future__ import annotations

import dataclasses

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology._columns import ColumnBatch
from stormpy.topology._spec import TopologySpec
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig


class Split(Bolt):
    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit_many([[w] for w in tup.values[0].split()], tup)
        self.ack(tup)


class Columns(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)

    def execute_columns(self, batch: ColumnBatch) -> None:
        self.ack(batch)


def _spec() -> TopologySpec:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["sentence"]))
    b.set_bolt("split", Split).shuffle_grouping("feeder")
    b.set_bolt("columns", Columns).shuffle_grouping("split")
    return b.create_topology()


def _split_router_columns(spec: TopologySpec) -> bool:
    """Whether split's default stream is columnar in a worker holding the feeder and split only
    (the subscriber's class is not constructed there)."""
    probe = Worker(WorkerConfig("t", spec, {"topology.acker.executors": 0}, local_tasks=[]))
    tasks = [t for c in ("feeder", "split") for t in probe.layout.component_tasks[c]]
    worker = Worker(WorkerConfig("t", spec, {"topology.acker.executors": 0}, local_tasks=tasks),
                    clock=SimulatedClock())
    (split,) = worker.layout.component_tasks["split"]
    return bool(worker.tasks[split].routers["default"].columns)


def test_a_stream_towards_a_columnar_bolt_is_columnar() -> None:
    assert _split_router_columns(_spec()) is True


def test_a_subscriber_whose_class_cannot_be_imported_gets_tuples() -> None:
    spec = _spec()
    spec.components["columns"] = dataclasses.replace(spec.components["columns"],
                                                     class_path="no_such_module_here:Columns")
    assert _split_router_columns(spec) is False
