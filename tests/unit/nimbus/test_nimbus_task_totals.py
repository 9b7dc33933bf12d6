"""Nimbus's topology summary counts what its assignment runs: ``num_executors`` and
``num_tasks`` with the ackers, as Storm's ``TopologySummary`` does (its UI's ``executorsTotal`` and
``tasksTotal``, and ``stormpy list``)."""

from __future__ import annotations

from pathlib import Path

from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

from stormpy.nimbus.info import topology_info, topology_summary
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.topologies import TopologyManager
from wordcount import build


def test_the_summary_counts_every_assigned_task_ackers_included(tmp_path: Path) -> None:
    state = FakeClusterState()
    state.add_supervisor("sup-a", [6700, 6701])
    manager = TopologyManager(state, BundleStore(NimbusDirs(tmp_path / "nimbus")),  # type: ignore[arg-type]
                              {}, clock=SimClock())
    spec = build(100).create_topology()
    user_tasks = sum(c.num_tasks for c in spec.components.values())
    manager.submit("wc", staged_bundle(tmp_path, "wc"), spec,
                   {"topology.workers": 2, "topology.acker.executors": 3}, "active")
    base = manager.base_by_name("wc")
    assignment = state.assignment(base.topology_id)
    summary = topology_summary(base, assignment, 0.0)
    assert summary["num_tasks"] == user_tasks + 3
    assert summary["num_executors"] == len(assignment.executors)
    layout = manager.layout(base)
    info = topology_info(base, assignment, layout, {}, {}, 0.0)
    assert info["num_tasks"] == sum(c["tasks"] for c in info["components"].values())
    assert topology_summary(base, None, 0.0)["num_tasks"] == 0  # nothing assigned yet
