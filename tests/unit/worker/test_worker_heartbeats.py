"""The worker's heartbeats: the local one (supervisor liveness) never waits for its heartbeat
channel (ZooKeeper syncs, Nimbus), the published one carries the counters of earlier incarnations,
and the configured timeouts keep Storm's ordering (worker heartbeat < supervisor's worker timeout
<= Nimbus's task timeout)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from supervisor_kit import FAST as SUPERVISOR_KIT_FAST

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import Assignment, StormBase, WorkerHeartbeat
from stormpy.config import DEFAULTS
from stormpy.testing import wait_for
from stormpy.testing._cluster import FAST_TIMEOUTS
from stormpy.worker.cluster_link import ClusterLink
from stormpy.worker.heartbeats import add_base, carried_counters, component_stats
from stormpy.worker.peers import WorkerPeers

EXECUTORS = ((1, 1), (2, 2))


def doc(task: int, component: str, acked: int, emitted: int) -> dict[str, Any]:
    return {"component": component, "task": task, "emitted": {"default": emitted},
            "transferred": emitted, "executed": acked, "acked": acked, "failed": 0,
            "latency_sum": 0.0, "latency_count": 0}


class LoopStub:
    """The executor loop as the link sees it: answers task_stats on call_soon_threadsafe."""

    def __init__(self) -> None:
        self.acked = 0

    def call_soon_threadsafe(self, fn: Callable[[], None]) -> None:
        self.acked += 1
        fn()

    def task_stats(self) -> list[dict[str, Any]]:
        return [doc(1, "spout", self.acked, self.acked), doc(2, "bolt", self.acked, 0)]

    def transfer_stats(self) -> dict[str, float]:
        return {"frames_refused": 2.0, "frames_held": 1.0, "backpressure_rounds": 3.0,
                "backpressure_secs": 0.5}

    def set_active(self, active: bool) -> None:
        pass


class StalledState:
    """ClusterState whose every call waits until ``resume`` (a stalled ZooKeeper), then fails
    with ClusterStateError as a timed-out ZooKeeper call does, until ``healthy`` is set."""

    def __init__(self, earlier: list[WorkerHeartbeat]) -> None:
        self.resume = threading.Event()
        self.healthy = False
        self.earlier = earlier
        self.written: list[WorkerHeartbeat] = []

    def _call(self) -> None:
        self.resume.wait(30)
        if not self.healthy:
            raise ClusterStateError("ZooKeeper did not answer")

    def assignment(self, topology_id: str, callback: Any = None) -> Assignment:
        self._call()
        return Assignment(topology_id=topology_id, bundle_key="b",
                          executors={e: ("node", 6700) for e in EXECUTORS},
                          node_host={"node": "127.0.0.1"})

    def storm_base(self, topology_id: str, callback: Any = None) -> StormBase:
        self._call()
        return StormBase(topology_id=topology_id, name="t", status="active", num_workers=1,
                         launch_time=0.0, owner="test")

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        self._call()
        return {(b.node, b.port): b for b in self.earlier}

    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None:
        self._call()
        self.written.append(beat)


def make_link(state: StalledState, tmp_path: Path, zk_beat_secs: float = 0.05) -> ClusterLink:
    return ClusterLink(state, LoopStub(), None, topology_id="t-1", node="node",  # type: ignore[arg-type]
                       port=6700, executors=EXECUTORS, peers=WorkerPeers({}, {}), active=True,
                       conf={"worker.heartbeat.frequency.secs": 0.05,
                             "task.heartbeat.frequency.secs": zk_beat_secs,
                             "supervisor.monitor.frequency.secs": 0.1},
                       heartbeat_path=tmp_path / "heartbeat", on_exit=lambda reason: None,
                       heartbeats=state)


def local_beat_time(path: Path) -> float:
    return float(msgpack.unpackb(path.read_bytes())["time"])


def test_local_heartbeat_goes_on_while_zookeeper_is_stalled(tmp_path: Path) -> None:
    state = StalledState([])
    link = make_link(state, tmp_path).start()
    try:
        wait_for(lambda: link.local_heartbeats >= 5, 10, "local heartbeats while ZooKeeper stalls")
        first = local_beat_time(tmp_path / "heartbeat")
        wait_for(lambda: local_beat_time(tmp_path / "heartbeat") > first, 10,
                 "the local heartbeat file to be renewed")
        assert state.written == [] and link.heartbeats == 0
        state.healthy = True
        state.resume.set()
        wait_for(lambda: link.heartbeats >= 1, 10, "the ZooKeeper heartbeat once ZooKeeper is back")
    finally:
        state.healthy = True
        state.resume.set()
        link.stop()
    beat = state.written[-1]
    assert beat.stats["spout"]["acked"] > 0 and "counters_carried" not in beat.process
    # the worker's backpressure figures ride in the process map
    assert beat.process["frames_refused"] == 2.0 and beat.process["backpressure_secs"] == 0.5


def test_the_zookeeper_heartbeat_is_written_once_per_task_heartbeat_period(tmp_path: Path) -> None:
    state = StalledState([])
    state.healthy = True
    state.resume.set()
    link = make_link(state, tmp_path, zk_beat_secs=3600).start()
    try:
        wait_for(lambda: link.heartbeats == 1, 10, "the first ZooKeeper heartbeat, at once")
        wait_for(lambda: link.local_heartbeats >= 20, 10, "local heartbeats going on")
    finally:
        link.stop()
    assert len(state.written) == 1  # the ZooKeeper write load is workers / task.heartbeat.frequency.secs
    assert link.task_heartbeat_secs == 3600


def test_zookeeper_heartbeat_continues_the_counters_of_earlier_incarnations(tmp_path: Path) -> None:
    old = WorkerHeartbeat(topology_id="t-1", node="node", port=6700, time=100.0, uptime=50.0,
                          executors=EXECUTORS, tasks=(doc(1, "spout", 1000, 1200),))
    older = WorkerHeartbeat(topology_id="t-1", node="other", port=6701, time=50.0, uptime=50.0,
                            executors=EXECUTORS, tasks=(doc(1, "spout", 7, 7), doc(2, "bolt", 900, 0)))
    state = StalledState([old, older])
    state.healthy = True
    state.resume.set()
    link = make_link(state, tmp_path).start()
    try:
        wait_for(lambda: link.heartbeats >= 1, 10, "a ZooKeeper heartbeat")
    finally:
        link.stop()
    beat = state.written[0]
    assert beat.stats["spout"]["acked"] > 1000 and beat.stats["spout"]["emitted"] > 1200
    assert beat.stats["bolt"]["acked"] > 900
    assert beat.process["counters_carried"] == 1.0


def test_carried_counters_take_the_newest_entry_and_ignore_malformed_ones() -> None:
    a = WorkerHeartbeat(topology_id="t", node="n", port=1, time=10.0, uptime=1.0,
                        tasks=(doc(1, "s", 5, 5), doc(3, "x", 1, 1)))
    b = WorkerHeartbeat(topology_id="t", node="n", port=2, time=20.0, uptime=1.0,
                        tasks=(doc(1, "s", 8, 8),))
    base = carried_counters([a, b], [1, 2])
    assert base == {1: doc(1, "s", 8, 8)}
    docs = add_base([doc(1, "s", 2, 3), doc(2, "b", 4, 0)], base)
    assert component_stats(docs)["s"]["acked"] == 10 and component_stats(docs)["s"]["emitted"] == 11
    assert docs[1] == doc(2, "b", 4, 0)


PRESETS = {"defaults": DEFAULTS, "stormpy.testing._cluster.FAST_TIMEOUTS": {**DEFAULTS, **FAST_TIMEOUTS},
           "supervisor_kit.FAST": {**DEFAULTS, **SUPERVISOR_KIT_FAST}}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_timeouts_keep_storms_ordering(name: str) -> None:
    conf = PRESETS[name]
    beat = float(conf["worker.heartbeat.frequency.secs"])
    worker_timeout = float(conf["supervisor.worker.timeout.secs"])
    task_timeout = float(conf["nimbus.task.timeout.secs"])
    # several worker heartbeats fit in the supervisor's timeout, which ends before Nimbus's:
    # the supervisor restarts a silent worker before Nimbus reassigns its executors
    assert 3 * beat <= worker_timeout <= task_timeout, (name, beat, worker_timeout, task_timeout)
    # Nimbus sees several heartbeats within its task timeout (each reaches it within two periods:
    # the worker's publication, then its supervisor's relay)
    zk_beat = max(beat, float(conf["task.heartbeat.frequency.secs"]))
    assert 3 * zk_beat <= task_timeout, (name, zk_beat, task_timeout)
    supervisor_beat = float(conf["supervisor.heartbeat.frequency.secs"])
    assert 2 * supervisor_beat <= float(conf["nimbus.supervisor.timeout.secs"]), name
    assert float(conf["supervisor.monitor.frequency.secs"]) < worker_timeout, name

