"""The worker's link to ZooKeeper and Nimbus, driven round by round in-process: assignment changes
connect and disconnect exactly the right peers, status changes (de)activate the spouts, a changed
component debug setting reaches the event logger, a removed assignment or changed executors stop
the worker once, and the published heartbeat carries exact figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import Assignment, StormBase, WorkerHeartbeat
from stormpy.worker.cluster_link import ClusterLink
from stormpy.worker.peers import WorkerPeers

MINE = ((1, 1), (2, 2))


class FakeWorker:
    """The executor loop as the link sees it; calls handed to the loop run at once."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.tasks: dict[int, str] = {1: "task-1", 2: "task-2"}
        self.stats: list[dict[str, Any]] = [
            {"component": "spout", "task": 1, "emitted": {"default": 5}, "transferred": 5,
             "executed": 0, "acked": 4, "failed": 1, "latency_sum": 0.5, "latency_count": 4},
            {"component": "bolt", "task": 2, "emitted": {}, "transferred": 0, "executed": 5,
             "acked": 5, "failed": 0, "latency_sum": 0.0, "latency_count": 0,
             "metrics": {"m": 2}}]

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        fn()

    def task_stats(self) -> list[dict[str, Any]]:
        return self.stats

    def transfer_stats(self) -> dict[str, float]:
        return {"frames_refused": 2.0}

    def set_active(self, active: bool) -> None:
        self.calls.append(("set_active", active))

    def update_peers(self, task_peers: dict[int, str]) -> None:
        self.calls.append(("update_peers", task_peers))


class FakeTransport:
    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls

    def set_peers(self, addresses: dict[str, str]) -> None:
        self.calls.append(("set_peers", addresses))


class FakeState:
    """ClusterState for one topology: the assignment and StormBase the link reads (with the
    callbacks it arms), and the heartbeat channel."""

    def __init__(self) -> None:
        self.executors: dict[tuple[int, int], tuple[str, int]] = {
            (1, 1): ("me", 6700), (2, 2): ("me", 6700), (3, 3): ("b", 6701)}
        self.hosts = {"me": "hm", "b": "hb", "c": "hc"}
        self.removed = False
        self.status: str | None = "active"
        self.debug: dict[str, Any] = {}
        self.callbacks: list[Any] = []
        self.fail: Exception | None = None
        self.earlier: dict[tuple[str, int], WorkerHeartbeat] = {}
        self.written: list[WorkerHeartbeat] = []

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment | None:
        assert topology_id == "t-1"
        self.callbacks.append(callback)
        if self.fail is not None:
            raise self.fail
        if self.removed:
            return None
        return Assignment(topology_id=topology_id, bundle_key="b", executors=dict(self.executors),
                          node_host=dict(self.hosts))

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase | None:
        self.callbacks.append(callback)
        if self.status is None:
            return None
        return StormBase(topology_id=topology_id, name="t", status=self.status, num_workers=1,
                         launch_time=0.0, owner="o", component_debug=dict(self.debug))

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        return self.earlier

    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None:
        self.written.append(beat)


def make_link(state: FakeState, tmp_path: Path, exits: list[str] | None = None,
              event_logger: Any = None, **conf: float) -> tuple[ClusterLink, FakeWorker]:
    worker = FakeWorker()
    link = ClusterLink(state, worker, FakeTransport(worker.calls),  # type: ignore[arg-type]
                       topology_id="t-1", node="me", port=6700, executors=MINE,
                       peers=WorkerPeers({3: "b:6701"}, {"b:6701": "hb:6701"}), active=True,
                       conf={"worker.heartbeat.frequency.secs": 1.0,
                             "task.heartbeat.frequency.secs": 3.0,
                             "supervisor.monitor.frequency.secs": 10.0, **conf},
                       heartbeat_path=tmp_path / "heartbeat",
                       on_exit=(exits if exits is not None else []).append,
                       heartbeats=state, event_logger=event_logger)
    return link, worker


def test_a_moved_executor_reconnects_exactly_the_changed_peers(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path)
    link.sync()
    assert worker.calls == []  # nothing changed
    state.executors[(3, 3)] = ("c", 6702)
    state.executors[(4, 4)] = ("b", 6701)
    link.sync()
    assert worker.calls == [("set_peers", {"b:6701": "hb:6701", "c:6702": "hc:6702"}),
                            ("update_peers", {3: "c:6702", 4: "b:6701"})]
    assert link.peers == WorkerPeers({3: "c:6702", 4: "b:6701"},
                                     {"b:6701": "hb:6701", "c:6702": "hc:6702"})
    worker.calls.clear()
    del state.executors[(4, 4)]
    link.sync()
    assert worker.calls == [("set_peers", {"c:6702": "hc:6702"}), ("update_peers", {3: "c:6702"})]
    assert state.callbacks == [link.trigger] * 6  # every read re-arms its watch


def test_a_status_change_deactivates_and_reactivates_the_spouts(tmp_path: Path) -> None:
    state = FakeState()
    link, worker = make_link(state, tmp_path)
    state.status = "inactive"
    link.sync()
    link.sync()
    state.status = None  # no StormBase: inactive
    link.sync()
    state.status = "active"
    link.sync()
    assert worker.calls == [("set_active", False), ("set_active", True)]
    assert link.active is True


def test_the_worker_stops_once_when_its_assignment_is_removed(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, worker = make_link(state, tmp_path, exits)
    state.removed = True
    link.sync()
    link.sync()
    assert exits == ["its topology's assignment was removed"]
    assert worker.calls == []


def test_the_worker_stops_when_its_own_executors_change(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, worker = make_link(state, tmp_path, exits)
    state.executors[(2, 2)] = ("b", 6701)
    state.status = "inactive"
    link.sync()
    assert exits == ["its executors changed from [(1, 1), (2, 2)] to [(1, 1)]"]
    assert worker.calls == []  # nothing else applied


def test_a_zookeeper_failure_changes_nothing(tmp_path: Path) -> None:
    state = FakeState()
    exits: list[str] = []
    link, worker = make_link(state, tmp_path, exits)
    state.fail = ClusterStateError("ZooKeeper did not answer")
    state.removed = True
    link.sync()
    assert exits == [] and worker.calls == []
