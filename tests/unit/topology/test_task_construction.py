"""How a worker builds its tasks: the config and context each component gets, the errors that
name a component that cannot be built, and the order in which task queues run each round."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.state import MemoryBackend
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError

SEEN: dict[int, tuple[dict[str, Any], TopologyContext]] = {}


class Remembers(Bolt):
    """Keeps the conf and context it was prepared with, per task."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        SEEN[context.task_id] = (dict(conf), context)

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_each_task_gets_its_components_config_over_the_topologys_and_its_own_context() -> None:
    SEEN.clear()
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("own", Remembers, 2, config={"shared": "component", "mine": 1}) \
        .shuffle_grouping("feeder")
    b.set_bolt("plain", Remembers).shuffle_grouping("feeder")
    spec = b.create_topology()
    probe = Worker(WorkerConfig("topo-1", spec, {}, local_tasks=[]))
    tasks = probe.layout.component_tasks
    here = [tasks["own"][1], *tasks["plain"], *tasks["__acker"]]
    backend = MemoryBackend()
    worker = Worker(WorkerConfig("topo-1", spec, {"shared": "topology"}, local_tasks=here,
                                 worker_port=6711), clock=SimulatedClock(), state=backend)
    worker.open()
    assert sorted(SEEN) == sorted([tasks["own"][1], *tasks["plain"]])
    conf, context = SEEN[tasks["own"][1]]
    assert conf["shared"] == "component" and conf["mine"] == 1
    assert (context.topology_id, context.task_id, context.component_id) == \
        ("topo-1", tasks["own"][1], "own")
    assert context.worker_port == 6711 and sorted(context.worker_tasks) == sorted(here)
    assert context.task_index == 1
    context.state_store().put("k", 5)  # the worker's backend, under this topology
    assert backend.store("checkpoints", "topo-1").get("k") == 5
    assert backend.store("checkpoints", "topo-2").get("k") is None
    (plain,) = tasks["plain"]
    assert SEEN[plain][0]["shared"] == "topology" and "mine" not in SEEN[plain][0]
    (acker,) = tasks["__acker"]
    assert worker.tasks[acker].conf["shared"] == "topology"
    assert "mine" not in worker.tasks[acker].conf


class CannotBuild(Bolt):
    def __init__(self, size: int) -> None:
        raise ValueError(f"no size {size}")

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_a_component_that_cannot_be_constructed_is_a_worker_error_naming_it() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("broken", CannotBuild, kwargs={"size": 3}).shuffle_grouping("feeder")
    spec = b.create_topology()
    with pytest.raises(WorkerError) as info:
        Worker(WorkerConfig("t", spec, {}))
    (task,) = Worker(WorkerConfig("t", spec, {}, local_tasks=[])).layout.component_tasks["broken"]
    assert (info.value.component, info.value.task) == ("broken", task)
    assert str(info.value) == (f"component 'broken': cannot construct "
                               f"{spec.components['broken'].class_path}: no size 3")
    assert isinstance(info.value.__cause__, ValueError)


def test_a_bad_auto_hook_names_the_first_user_component_not_the_acker() -> None:
    b = TopologyBuilder()
    b.set_spout("feeder", FeederSpout(["v"]))
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    spec = b.create_topology()
    conf = {"topology.auto.task.hooks": "not-a-list", "topology.acker.executors": 1}
    with pytest.raises(WorkerError) as info:
        Worker(WorkerConfig("t", spec, conf))
    (feeder,) = Worker(WorkerConfig("t", spec, conf, local_tasks=[])).layout \
        .component_tasks["feeder"]
    assert (info.value.component, info.value.task) == ("feeder", feeder)
    assert str(info.value).startswith("component 'feeder': task hooks: "
                                      "topology.auto.task.hooks must be a list")
    assert isinstance(info.value.__cause__, ValueError)


ORDER: list[str] = []


class Logs(Bolt):
    """Records its component on every tuple and passes it on (below 3), anchored."""

    outputs = ["n"]

    def __init__(self, name: str) -> None:
        self.name = name

    def execute(self, tup: Tuple) -> None:
        ORDER.append(self.name)
        if tup.values[0] < 3:
            self.emit([tup.values[0] + 1], anchors=tup)
        self.ack(tup)


def test_a_round_runs_tasks_by_their_longest_distance_from_a_spout() -> None:
    """``z`` feeds ``m`` feeds ``a``, which the spout also feeds directly: ``a`` is two steps
    further than its direct input, so one round takes the spout tuple through ``z`` and ``m``
    before ``a`` runs both its inputs, and the acker (last) completes the tree. (Queued
    tuples only: with chaining, tests/unit/worker/test_chaining.py.)"""
    ORDER.clear()
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("a", Logs, kwargs={"name": "a"}).shuffle_grouping("s").shuffle_grouping("m")
    b.set_bolt("z", Logs, kwargs={"name": "z"}).shuffle_grouping("s")
    b.set_bolt("m", Logs, kwargs={"name": "m"}).shuffle_grouping("z")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1,
                                                            "topology.worker.chaining": False}),
                    clock=SimulatedClock())
    worker.open()
    feeder.feed([0], msg_id="x")
    worker.run_once()  # the spout emits
    worker.run_once()
    assert ORDER == ["z", "m", "a", "a"]
    worker.run_once()  # the spout takes the acker's reply
    assert feeder.acked == ["x"]


def test_a_cycle_of_bolts_still_runs() -> None:
    ORDER.clear()
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("a", Logs, kwargs={"name": "a"}).shuffle_grouping("s").shuffle_grouping("b")
    b.set_bolt("b", Logs, kwargs={"name": "b"}).shuffle_grouping("a")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    feeder.feed([0], msg_id="x")
    for _ in range(8):
        worker.run_once()
    assert ORDER == ["a", "b", "a", "b"] and feeder.acked == ["x"]
