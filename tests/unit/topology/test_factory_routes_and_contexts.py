"""What the task factory (worker/factory.py) hands each task: emit_direct reaches every component
that subscribes directly, a custom grouping is prepared with the emitter's context and the stream
name, and a task's context carries the task's merged config."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormpy import Bolt, Stream, TopologyBuilder, TopologyContext
from stormpy.testing import FeederSpout
from stormpy.topology._component import CustomStreamGrouping
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig

PREPARED: list[tuple[str, int, str, list[int]]] = []


class Sink(Bolt):
    def execute(self, tup):  # type: ignore[no-untyped-def]
        self.ack(tup)


class Directs(Bolt):
    outputs = [Stream(["v"], name="picked", direct=True)]

    def execute(self, tup):  # type: ignore[no-untyped-def]
        self.ack(tup)


class Records(CustomStreamGrouping):
    """Remembers what prepare() was given; sends everything to the first target task."""

    def prepare(self, context: TopologyContext, stream: str, target_tasks: Sequence[int]) -> None:
        PREPARED.append((context.component_id, context.task_id, stream, list(target_tasks)))
        self.first = min(target_tasks)

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self.first]


def _worker(builder: TopologyBuilder, conf: dict[str, Any] | None = None) -> Worker:
    spec = builder.create_topology()
    probe = Worker(WorkerConfig("t-1", spec, {}, local_tasks=[]))
    every = sorted(t for ts in probe.layout.component_tasks.values() for t in ts)
    return Worker(WorkerConfig("t-1", spec, conf or {}, local_tasks=every), clock=SimulatedClock())


def test_emit_direct_reaches_a_task_of_every_directly_subscribed_component() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("src", Directs).shuffle_grouping("s")
    b.set_bolt("first", Sink, 2).direct_grouping("src", "picked")
    b.set_bolt("second", Sink, 2).direct_grouping("src", "picked")
    worker = _worker(b)
    tasks = worker.layout.component_tasks
    (src,) = tasks["src"]
    runner = worker.tasks[src]
    for target in (*tasks["first"], *tasks["second"]):
        runner.emit_direct(target, ["x"], None, "picked")
        assert list(worker.tasks[target].queue)[-1].values == ["x"]


def test_a_custom_grouping_is_prepared_with_the_emitters_context_and_the_stream() -> None:
    PREPARED.clear()
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("sink", Sink, 2).custom_grouping("s", Records)
    worker = _worker(b)
    tasks = worker.layout.component_tasks
    (spout,) = tasks["s"]
    prepared = list(PREPARED)
    assert prepared == [("s", spout, "default", sorted(tasks["sink"]))]


def test_a_tasks_context_carries_its_config() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("sink", Sink, config={"mine": 1}).shuffle_grouping("s")
    worker = _worker(b, {"shared": "topology"})
    (sink,) = worker.layout.component_tasks["sink"]
    conf = worker.tasks[sink].context.conf
    assert conf["mine"] == 1 and conf["shared"] == "topology"
