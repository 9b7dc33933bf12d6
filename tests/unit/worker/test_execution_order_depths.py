"""The order a worker runs its tasks in a round (worker/factory.py): spouts first, bolts by their
longest distance from a spout, ackers last; cycles are cut at the number of components."""

from __future__ import annotations

from dataclasses import dataclass

from stormpy import Bolt, TopologyBuilder
from stormpy.testing import FeederSpout
from stormpy.topology._spec import TopologySpec
from stormpy.worker.factory import _depths, execution_order


class Pass(Bolt):
    outputs = ["v"]

    def execute(self, tup):  # type: ignore[no-untyped-def]
        self.ack(tup)


@dataclass
class FakeRunner:
    """What execution_order reads of a task runner."""

    component_id: str
    task_id: int


def _diamond() -> TopologySpec:
    # s -> a -> b -> c, and s -> c directly: c's longest distance is 3, whatever input comes last
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("a", Pass).shuffle_grouping("s")
    b.set_bolt("b", Pass).shuffle_grouping("a")
    b.set_bolt("c", Pass).shuffle_grouping("b").shuffle_grouping("s")
    return b.create_topology()


def test_depth_is_the_longest_distance_from_a_spout() -> None:
    assert _depths(_diamond()) == {"s": 0, "a": 1, "b": 2, "c": 3}


def test_a_cycle_is_cut_at_the_number_of_components() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    b.set_bolt("x", Pass).shuffle_grouping("s").shuffle_grouping("y")
    b.set_bolt("y", Pass).shuffle_grouping("x")
    spec = b.create_topology()
    depths = _depths(spec)
    n = len(spec.components)
    assert depths["s"] == 0
    assert max(depths.values()) == n  # the cycle raised its depths until the cut, not past it
    assert sorted(depths.values()) == [0, n - 1, n]


def test_ackers_run_after_the_deepest_bolt_and_ties_go_by_task_id() -> None:
    spec = _diamond()
    # the acker has the lowest task id: only its depth puts it last
    runners = [FakeRunner("__acker", 1), FakeRunner("c", 2), FakeRunner("b", 4), FakeRunner("a", 6),
               FakeRunner("a", 5), FakeRunner("s", 7)]
    order = execution_order(spec, runners)  # type: ignore[arg-type]
    assert [(r.component_id, r.task_id) for r in order] == [
        ("s", 7), ("a", 5), ("a", 6), ("b", 4), ("c", 2), ("__acker", 1)]
