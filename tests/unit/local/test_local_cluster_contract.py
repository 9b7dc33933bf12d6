"""LocalCluster's contract as a user sees it (Storm's LocalCluster): submit, the refusals naming
the topology or setting, kill (deactivated, waited, stopped, its state removed), activate and
deactivate over every in-process worker, simulated time moving only on ``advance_time``, state
kept per instance, stats, errors and metrics summed over the workers, and shutdown stopping every
worker thread. In-process, under simulated time where time matters; each test well under a
second."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
from clock_bolts_kit import Sleepy

from stormpy import Bolt, InvalidTopologyError, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.config import SettingError
from stormpy.config.validate import SUBMIT_WARNINGS_KEY
from stormpy.local import LocalCluster, TopologyNotFound, _cluster
from stormpy.state import MemoryBackend
from stormpy.testing import Capture, FeederSpout, SimulatedClock, simulated_time
from stormpy.topology import clock
from stormpy.topology._metrics_consumer import ConsumerContext, IMetricsConsumer, TaskInfo
from stormpy.topology._state import CHECKPOINTS, TRANSACTIONAL, StateStoreError


class Switched(Spout):
    """Emits nothing; notes each activate and deactivate with its task id, and the clock's
    time at every ``next_tuple``."""

    outputs = ["v"]
    events: list[tuple[str, int]] = []
    times: list[float] = []
    lock = threading.Lock()

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.task = context.task_id
        self.clock = context.clock
        self.conf = conf

    def activate(self) -> None:
        with self.lock:
            Switched.events.append(("activate", self.task))

    def deactivate(self) -> None:
        with self.lock:
            Switched.events.append(("deactivate", self.task))

    def next_tuple(self) -> None:
        now = self.clock.now()
        with self.lock:
            if not Switched.times or Switched.times[-1] != now:
                Switched.times.append(now)


class Reporter(Bolt):
    """Reports each tuple's value as an error and registers a metric (its task id)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        task = context.task_id
        context.register_metric("me", lambda: task)

    def execute(self, tup: Tuple) -> None:
        self.report_error(str(tup.values[0]))
        self.ack(tup)


@pytest.fixture(autouse=True)
def _clear() -> None:
    Switched.events = []
    Switched.times = []


def switched(spouts: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("s", Switched, spouts)
    return b.create_topology()


def fed(feeder: FeederSpout, bolt: Any, parallelism: int = 1) -> Any:
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("b", bolt, parallelism).shuffle_grouping("feed")
    return b.create_topology()


def spout_tasks(cluster: LocalCluster, name: str) -> list[int]:
    """The task ids of the topology's spout ``s`` (the ackers' come first)."""
    layout = cluster.worker(name).layout
    return sorted(t for t, c in layout.task_component.items() if c == "s")


def events() -> list[tuple[str, int]]:
    with Switched.lock:
        return sorted(Switched.events)


def local_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"local-{name}-")]


# -- submit ------------------------------------------------------------------------------------

def test_a_submitted_topology_runs_under_its_name_with_an_id_and_the_merged_conf() -> None:
    with LocalCluster(simulated_time=True, conf={"a.key": 1, "b.key": 1}) as cluster:
        worker = cluster.submit_topology("t", {"b.key": 2}, switched())
        assert cluster.topologies() == ["t"]
        assert cluster.worker("t") is worker and cluster.workers_of("t") == [worker]
        assert re.fullmatch(r"t-[0-9a-f]{8}", worker.topology_id)
        assert worker.conf["topology.name"] == "t"
        assert (worker.conf["a.key"], worker.conf["b.key"]) == (1, 2)
        assert worker.conf[SUBMIT_WARNINGS_KEY] is None and cluster.warnings_of("t") == []
        assert [t.name for t in local_threads("t")] == ["local-t-0"]
        (task,) = spout_tasks(cluster, "t")
        cluster.wait_for(lambda: events() == [("activate", task)], 10, "the spout activated")
        cluster.submit_topology("u", None, switched())
        assert cluster.topologies() == ["t", "u"]
        assert cluster.worker("u").topology_id != worker.topology_id


def test_a_topology_id_is_new_for_each_submit_of_a_name() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        first = cluster.submit_topology("t", {}, switched()).topology_id
        cluster.kill_topology("t")
        second = cluster.submit_topology("t", {}, switched()).topology_id
        assert first != second and second.startswith("t-")


def test_the_cluster_conf_is_a_copy_under_every_topology() -> None:
    conf = {"my.key": "x"}
    with LocalCluster(simulated_time=True, conf=conf) as cluster:
        conf["my.key"] = "changed"
        assert cluster.conf == {"my.key": "x"}
        assert cluster.submit_topology("t", None, switched()).conf["my.key"] == "x"


def test_a_second_submit_of_a_running_name_is_refused_naming_it() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched())
        with pytest.raises(ValueError, match=r"^topology 't' is already running$"):
            cluster.submit_topology("t", {}, switched())
        with pytest.raises(ValueError, match=r"^topology 't' is already running$"):
            cluster.check_topology("t", {}, switched())
        assert cluster.topologies() == ["t"] and len(local_threads("t")) == 1


def test_bad_settings_are_refused_naming_them_and_the_topology_conf_wins() -> None:
    with LocalCluster(simulated_time=True, conf={"topology.max.spout.pending": -1}) as cluster:
        with pytest.raises(SettingError) as err:
            cluster.submit_topology("t", None, switched())
        assert err.value.setting == "topology.max.spout.pending"
        assert cluster.topologies() == [] and local_threads("t") == []
        # the topology's own conf is laid over the cluster's before the check
        assert cluster.check_topology("t", {"topology.max.spout.pending": 5}, switched()) == []
        cluster.submit_topology("t", {"topology.max.spout.pending": 5}, switched())
        assert cluster.topologies() == ["t"]


def test_an_invalid_topology_is_refused_and_nothing_starts() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Switched)
    b.set_bolt("b", Capture()).shuffle_grouping("missing")
    with LocalCluster(simulated_time=True) as cluster:
        with pytest.raises(InvalidTopologyError, match="missing"):
            cluster.check_topology("t", None, b.create_topology())
        with pytest.raises(InvalidTopologyError, match="missing"):
            cluster.submit_topology("t", None, b.create_topology())
        assert cluster.topologies() == []


def test_warnings_are_kept_per_topology_and_in_its_conf() -> None:
    warned = {"topology.no.such.setting": 1}
    with LocalCluster(simulated_time=True) as cluster:
        checked = cluster.check_topology("t", warned, switched())
        assert checked and all("topology.no.such.setting" in w for w in checked)
        worker = cluster.submit_topology("t", warned, switched())
        assert cluster.warnings_of("t") == checked
        assert worker.conf[SUBMIT_WARNINGS_KEY] == checked
        cluster.warnings_of("t").clear()  # a copy
        assert cluster.warnings_of("t") == checked
        cluster.kill_topology("t")
        with pytest.raises(TopologyNotFound):
            cluster.warnings_of("t")
        cluster.submit_topology("t", {}, switched())
        assert cluster.warnings_of("t") == []


def test_an_unknown_name_is_refused_naming_it_and_the_running_topologies() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("b", {}, switched())
        cluster.submit_topology("a", {}, switched())
        expected = r"^\"no topology named 'x' \(running: \['a', 'b'\]\)\"$"
        for call in (cluster.worker, cluster.workers_of, cluster.warnings_of, cluster.kill_topology,
                     cluster.activate, cluster.deactivate, cluster.get_stats, cluster.errors,
                     cluster.get_metrics, cluster.wait_until_quiet):
            with pytest.raises(TopologyNotFound, match=expected):
                call("x")
        assert issubclass(TopologyNotFound, KeyError)
        assert cluster.topologies() == ["a", "b"]


def test_a_topology_submitted_inactive_starts_nothing_until_activated() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched(), active=False)
        cluster.advance_time(2)
        assert events() == [] and Switched.times == []
        cluster.activate("t")
        (task,) = spout_tasks(cluster, "t")
        cluster.wait_for(lambda: events() == [("activate", task)], 10, "the spout activated")


# -- several in-process workers ----------------------------------------------------------------

def test_several_workers_run_under_one_id_with_one_acker_each() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        first = cluster.submit_topology("t", {}, switched(3), workers=3)
        workers = cluster.workers_of("t")
        assert workers[0] is first and len(workers) == 3
        assert {w.topology_id for w in workers} == {first.topology_id}
        assert [t.name for t in sorted(local_threads("t"), key=lambda t: t.name)] == \
            ["local-t-0", "local-t-1", "local-t-2"]
        # Storm's default: one acker executor per worker
        assert all(w.conf["topology.workers"] == 3 for w in workers)
        assert len(first.layout.acker_tasks) == 3
        assert all(w.state is cluster.state for w in workers)
        cluster.workers_of("t").clear()  # a copy
        assert len(cluster.workers_of("t")) == 3


def test_a_topology_workers_setting_of_its_own_is_kept() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", {"topology.workers": 2}, switched(3), workers=3)
        assert worker.conf["topology.workers"] == 2


def test_activate_and_deactivate_reach_every_spout_task_of_every_worker() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched(3), active=False, workers=3)
        cluster.activate("t")
        tasks = spout_tasks(cluster, "t")
        assert len(tasks) == 3
        activated = [("activate", t) for t in tasks]
        cluster.wait_for(lambda: events() == activated, 10, "every spout task activated")
        cluster.deactivate("t")
        cluster.wait_for(lambda: events() == activated + [("deactivate", t) for t in tasks],
                         10, "every spout task deactivated")


def test_one_topologys_switch_leaves_another_alone() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched(), active=False)
        cluster.submit_topology("u", {}, switched(), active=False)
        cluster.activate("u")
        cluster.wait_for(lambda: len(events()) == 1, 10, "one spout activated")
        cluster.wait_until_quiet()
        assert all(not w.active for w in cluster.workers_of("t"))
        assert all(w.active for w in cluster.workers_of("u"))
        cluster.deactivate("u")
        cluster.wait_for(lambda: len(events()) == 2, 10, "that spout deactivated")
        assert all(not w.active for w in cluster.workers_of("u"))


# -- kill ----------------------------------------------------------------------------------------

def test_kill_with_a_wait_deactivates_first_waits_then_stops_and_forgets() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        sim = cluster.clock
        assert isinstance(sim, SimulatedClock)
        cluster.submit_topology("t", {}, switched(2), workers=2)
        cluster.wait_for(lambda: len(events()) == 2, 10, "the spouts activated")
        threads = local_threads("t")
        spout_tasks_seen = spout_tasks(cluster, "t")
        start = sim.now()
        cluster.kill_topology("t", wait_secs=30)
        assert sim.now() == start + 30  # the wait, in simulated time
        a, b = spout_tasks_seen
        assert events() == [("activate", a), ("activate", b), ("deactivate", a), ("deactivate", b)]
        assert all(not t.is_alive() for t in threads)
        assert cluster.topologies() == []
        with pytest.raises(TopologyNotFound):
            cluster.worker("t")


def test_kill_without_a_wait_stops_at_once_and_moves_no_time() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched())
        cluster.wait_for(lambda: len(events()) == 1, 10, "the spout activated")
        start = cluster.clock.now()
        threads = local_threads("t")
        (task,) = spout_tasks(cluster, "t")
        cluster.kill_topology("t")
        assert cluster.clock.now() == start
        assert all(not t.is_alive() for t in threads)
        assert events() == [("activate", task)]  # stopped, not deactivated first
        assert cluster.topologies() == []


def test_kill_with_a_wait_in_real_time_really_waits() -> None:
    with LocalCluster() as cluster:
        cluster.submit_topology("t", {}, switched())
        cluster.wait_for(lambda: len(events()) == 1, 10, "the spout activated")
        (task,) = spout_tasks(cluster, "t")
        start = time.monotonic()
        cluster.kill_topology("t", wait_secs=0.05)
        assert time.monotonic() - start >= 0.05
        assert events() == [("activate", task), ("deactivate", task)]


def test_kill_removes_that_topologys_state_and_only_its() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        kept = cluster.submit_topology("kept", {}, switched()).topology_id
        gone = cluster.submit_topology("gone", {}, switched()).topology_id
        for topology_id in (kept, gone):
            cluster.state.store(CHECKPOINTS, topology_id).put("k", 1)
            cluster.state.store(TRANSACTIONAL, topology_id).put("k", 2)
        cluster.kill_topology("gone")
        assert cluster.state.store(CHECKPOINTS, gone).children() == []
        assert cluster.state.store(TRANSACTIONAL, gone).children() == []
        assert cluster.state.store(CHECKPOINTS, kept).get("k") == 1
        assert cluster.state.store(TRANSACTIONAL, kept).get("k") == 2


class FailingDrop(MemoryBackend):
    def __init__(self) -> None:
        super().__init__()
        self.dropped: list[str] = []

    def drop(self, topology_id: str) -> None:
        self.dropped.append(topology_id)
        raise StateStoreError(f"memory:*/{topology_id}", "refused")


def test_state_that_cannot_be_removed_does_not_fail_the_kill_or_the_shutdown() -> None:
    backend = FailingDrop()
    with LocalCluster(simulated_time=True, state=backend) as cluster:
        assert cluster.state is backend
        first = cluster.submit_topology("t", {}, switched()).topology_id
        cluster.kill_topology("t")
        assert cluster.topologies() == [] and backend.dropped == [first]
        second = cluster.submit_topology("t", {}, switched()).topology_id
    assert backend.dropped == [first, second]


def test_a_kill_releases_a_component_sleeping_in_simulated_time_but_no_later_one() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        sim = cluster.clock
        assert isinstance(sim, SimulatedClock)
        for round_ in range(3):
            feeder, capture = FeederSpout(["v"]), Capture()
            cluster.submit_topology("t", {}, fed(feeder, Sleepy))
            feeder.feed([round_])
            # a loop thread of a topology submitted after a kill may get the killed one's
            # thread id: its sleeps must still wait for simulated time
            cluster.wait_for(lambda: sim.sleepers == 1, 10, "the bolt to sleep")
            cluster.kill_topology("t")
            assert sim.sleepers == 0 and capture.values == []


# -- simulated time ------------------------------------------------------------------------------

def test_simulated_time_moves_only_on_advance_time_in_steps() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched())
        cluster.wait_for(lambda: len(Switched.times) == 1, 10, "the spout running")
        start = Switched.times[0]
        cluster.wait_until_quiet("t")
        assert Switched.times == [start] and cluster.clock.now() == start
        cluster.advance_time(2.5)
        assert cluster.clock.now() == start + 2.5
        # every step was seen by the spout: each went quiet before the next
        assert Switched.times == [start, start + 1, start + 2, start + 2.5]
        cluster.advance_time(1, step=0.5)
        assert Switched.times[4:] == [start + 3, start + 3.5]
        cluster.sleep(2)
        assert cluster.clock.now() == start + 5.5
        assert Switched.times[-1] == start + 5.5


def test_advance_time_needs_simulated_time() -> None:
    with LocalCluster() as cluster:
        assert not isinstance(cluster.clock, SimulatedClock)
        with pytest.raises(RuntimeError, match=r"^advance_time needs "
                                                r"LocalCluster\(simulated_time=True\)$"):
            cluster.advance_time(1)


def test_simulated_time_is_process_wide_and_ends_with_the_cluster() -> None:
    assert not clock.simulating()
    with LocalCluster(simulated_time=True) as cluster:
        assert clock.simulating() and isinstance(cluster.clock, SimulatedClock)
    assert not clock.simulating()
    with LocalCluster(simulated_time=False) as real:
        assert not isinstance(real.clock, SimulatedClock) and not clock.simulating()
    with LocalCluster() as default:
        assert not isinstance(default.clock, SimulatedClock)
    with simulated_time() as sim:
        with LocalCluster() as joined:  # None joins an active simulation
            assert joined.clock is sim
        assert clock.simulating()  # the block's simulation outlives the cluster
        with pytest.raises(ValueError, match=r"^LocalCluster\(simulated_time=False\) inside "
                                             r"simulated_time\(\): simulated time is process-wide; "
                                             r"drop the argument or leave the block$"):
            LocalCluster(simulated_time=False)
    assert not clock.simulating()


def test_shutdown_twice_leaves_simulated_time_once() -> None:
    with simulated_time():
        cluster = LocalCluster(simulated_time=True)
        cluster.shutdown()
        cluster.shutdown()
        assert clock.simulating()  # the outer block's simulation is still there
    assert not clock.simulating()


# -- state ---------------------------------------------------------------------------------------

def test_state_is_kept_per_cluster_instance() -> None:
    with LocalCluster(simulated_time=True) as first, LocalCluster(simulated_time=True) as second:
        assert isinstance(first.state, MemoryBackend) and first.state is first.state
        assert second.state is not first.state
        first.state.store(CHECKPOINTS, "x-1").put("k", 1)
        assert second.state.store(CHECKPOINTS, "x-1").get("k") is None


class FakeZk:
    """Stands in for the ZooKeeper storage: records how it was opened and closed."""

    made: list[FakeZk] = []

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.hosts = "zk1:2181"
        self.root = "/storm"
        self.operation_timeout_secs = 5.0
        self.started = 0
        self.closed = 0
        FakeZk.made.append(self)

    @classmethod
    def from_config(cls, conf: Mapping[str, Any]) -> FakeZk:
        return cls(conf)

    def start(self) -> FakeZk:
        self.started += 1
        return self

    def close(self) -> None:
        self.closed += 1


def test_a_conf_naming_zookeeper_keeps_state_there_and_shutdown_closes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    FakeZk.made = []
    monkeypatch.setattr(_cluster, "ZkStorage", FakeZk)
    cluster = LocalCluster(simulated_time=True, conf={"storm.zookeeper.servers": ["zk1"]})
    try:
        assert FakeZk.made == []  # nothing opened before state is needed
        state = cluster.state
        assert isinstance(state, _cluster.ZkBackend) and cluster.state is state
        (zk,) = FakeZk.made
        assert zk.conf["storm.zookeeper.servers"] == ["zk1"]
        assert zk.conf["storm.zookeeper.root"] == "/stormpy"  # defaults under the cluster's conf
        assert (zk.started, zk.closed) == (1, 0)
    finally:
        cluster.shutdown()
    assert zk.closed == 1
    cluster.shutdown()
    assert zk.closed == 1 and len(FakeZk.made) == 1


# -- stats, errors, metrics ----------------------------------------------------------------------

def test_stats_errors_and_metrics_are_summed_over_every_worker() -> None:
    feeder = FeederSpout(["v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, fed(feeder, Reporter, 2), workers=2)
        for i in range(4):
            feeder.feed([f"e{i}"])
            cluster.advance_time(1)
        cluster.wait_for(lambda: len(feeder.acked) == 4, 10, "every tuple acked")
        cluster.wait_until_quiet("t")
        stats = cluster.get_stats("t")
        assert sorted(stats) == ["b", "feed"]  # no system component
        assert stats["feed"]["emitted"] == 4 and stats["b"]["executed"] == 4
        assert stats["b"]["acked"] == 4
        errors = cluster.errors("t")
        assert [e["error"] for e in errors] == ["e0", "e1", "e2", "e3"]  # oldest first
        assert [e["time"] for e in errors] == sorted(e["time"] for e in errors)
        assert {e["component"] for e in errors} == {"b"}
        bolts = sorted(t for t, c in cluster.worker("t").layout.task_component.items() if c == "b")
        assert {e["task"] for e in errors} == set(bolts)  # both bolt tasks, one in each worker
        assert sorted(sorted(set(w.local_tasks) & set(bolts)) for w in cluster.workers_of("t")) \
            == [[b] for b in bolts]
        assert cluster.errors("t", "b") == errors and cluster.errors("t", "feed") == []
        errors[0]["error"] = "changed"
        assert cluster.errors("t")[0]["error"] == "e0"  # copies
        assert cluster.get_metrics("t") == {"b": {str(b): {"me": b} for b in bolts}}


def test_metrics_of_a_stopped_worker_are_read_off_its_loop() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        feeder = FeederSpout(["v"])
        cluster.submit_topology("t", {}, fed(feeder, Reporter))
        cluster.wait_until_quiet("t")
        worker = cluster.worker("t")
        worker.stop()
        assert not worker.running
        (bolt,) = [t for t, c in worker.layout.task_component.items() if c == "b"]
        assert cluster.get_metrics("t") == {"b": {str(bolt): {"me": bolt}}}


# -- waits ---------------------------------------------------------------------------------------

class Boom(Bolt):
    def execute(self, tup: Tuple) -> None:
        raise RuntimeError("boom in the bolt")


def test_waits_raise_a_failed_workers_error_at_once() -> None:
    feeder = FeederSpout(["v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("quiet", {}, switched())
        cluster.submit_topology("t", {"topology.max.error.report.per.interval": 5},
                                fed(feeder, Boom))
        feeder.feed([1])
        with pytest.raises(Exception, match="boom in the bolt"):
            cluster.wait_for(lambda: False, 30, "never")
        with pytest.raises(Exception, match="boom in the bolt"):
            cluster.wait_until_quiet("t")
        with pytest.raises(Exception, match="boom in the bolt"):
            cluster.wait_until_quiet()
        cluster.wait_until_quiet("quiet")


def test_wait_for_names_what_it_waited_for() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched())
        with pytest.raises(TimeoutError, match="the impossible"):
            cluster.wait_for(lambda: False, 0.05, "the impossible")
        cluster.wait_for(lambda: True)


class Busy(Spout):
    """Emits forever: its worker never goes quiet."""

    outputs = ["v"]

    def next_tuple(self) -> None:
        self.emit([1])


def test_wait_until_quiet_gives_up_naming_the_busy_topology() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Busy)
    with LocalCluster(simulated_time=True) as cluster:
        topology_id = cluster.submit_topology("busy", {"topology.acker.executors": 0},
                                              b.create_topology()).topology_id
        with pytest.raises(TimeoutError) as err:
            cluster.wait_until_quiet("busy", timeout=0.2)
        assert str(err.value) == f"topologies [{topology_id!r}] still busy after 0.2s"


# -- shutdown ------------------------------------------------------------------------------------

def test_shutdown_stops_every_worker_thread_and_removes_every_state() -> None:
    cluster = LocalCluster(simulated_time=True)
    ids = [cluster.submit_topology(name, {}, switched(2), workers=2).topology_id
           for name in ("t", "u")]
    threads = local_threads("t") + local_threads("u")
    assert len(threads) == 4
    for topology_id in ids:
        cluster.state.store(CHECKPOINTS, topology_id).put("k", 1)
    cluster.shutdown()
    assert all(not t.is_alive() for t in threads)
    assert cluster.topologies() == []
    assert all(cluster.state.store(CHECKPOINTS, i).children() == [] for i in ids)
    assert not clock.simulating()


# -- what every worker of a topology shares with the cluster -----------------------------------

class Keeper(Bolt):
    """Keeps each tuple's value in the topology's state, under its task id."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.store = context.state_store()
        self.task = context.task_id

    def execute(self, tup: Tuple) -> None:
        self.store.put(f"task-{self.task}", tup.values[0])
        self.ack(tup)


@pytest.mark.parametrize("workers", [1, 2])
def test_components_keep_state_in_the_clusters_backend(workers: int) -> None:
    feeder = FeederSpout(["v"])
    with LocalCluster(simulated_time=True) as cluster:
        topology_id = cluster.submit_topology("t", {}, fed(feeder, Keeper, workers),
                                              workers=workers).topology_id
        assert re.fullmatch(r"t-[0-9a-f]{8}", topology_id)
        for i in range(4):
            feeder.feed([i])
        cluster.wait_for(lambda: len(feeder.acked) == 4, 10, "every tuple acked")
        stored = cluster.state.store(CHECKPOINTS, topology_id)
        bolts = sorted(t for t, c in cluster.worker("t").layout.task_component.items() if c == "b")
        assert sorted(stored.children()) == sorted(f"task-{b}" for b in bolts)
        cluster.kill_topology("t")
        assert stored.children() == []


class Ticked(Bolt):
    """Counts the tick tuples each task gets (every 5 s)."""

    component_config = {"topology.tick.tuple.freq.secs": 5}
    ticks: dict[int, int] = {}

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.task = context.task_id

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            with Switched.lock:
                Ticked.ticks[self.task] = Ticked.ticks.get(self.task, 0) + 1
        self.ack(tup)


def test_every_worker_of_a_topology_runs_on_the_simulated_clock() -> None:
    Ticked.ticks = {}
    feeder = FeederSpout(["v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, fed(feeder, Ticked, 2), workers=2)
        bolts = sorted(t for t, c in cluster.worker("t").layout.task_component.items() if c == "b")
        cluster.advance_time(10)
        assert Ticked.ticks == {b: 2 for b in bolts}  # ticks at 5 s and 10 s, in both workers


def test_the_cluster_conf_counts_for_the_rules_between_settings_with_storms_defaults() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Switched)
    b.set_bolt("win", Keeper).shuffle_grouping("s") \
        .add_configuration("topology.message.timeout.secs.min", 45)
    spec = b.create_topology()
    with LocalCluster(simulated_time=True) as cluster:
        # no timeout set: Storm's default (30 s) is below the component's need
        with pytest.raises(SettingError, match="got 30;") as err:
            cluster.submit_topology("t", None, spec)
        assert err.value.setting == "topology.message.timeout.secs"
    with LocalCluster(simulated_time=True, conf={"topology.message.timeout.secs": 60}) as cluster:
        assert cluster.check_topology("t", None, spec) == []
        with pytest.raises(SettingError, match="got 10;"):
            cluster.check_topology("t", {"topology.message.timeout.secs": 10}, spec)
        cluster.submit_topology("t", None, spec)
        assert cluster.topologies() == ["t"]


# -- metrics consumers ---------------------------------------------------------------------------

CONSUMED: list[tuple[str, Any]] = []


class Consumer(IMetricsConsumer):
    def prepare(self, conf: Mapping[str, Any], argument: Any, context: ConsumerContext) -> None:
        with Switched.lock:
            CONSUMED.append(("prepare", context))

    def handle_data_points(self, task_info: TaskInfo, data_points: dict[str, Any]) -> None:
        pass

    def cleanup(self) -> None:
        with Switched.lock:
            CONSUMED.append(("cleanup", None))


def consumed() -> list[tuple[str, Any]]:
    with Switched.lock:
        return list(CONSUMED)


@pytest.mark.parametrize("stop", ["kill", "shutdown"])
def test_each_worker_has_its_metrics_consumers_and_they_end_with_the_topology(stop: str) -> None:
    CONSUMED.clear()
    conf = {"topology.metrics.consumer.register": [{"class": Consumer}]}
    cluster = LocalCluster(simulated_time=True)
    try:
        cluster.submit_topology("t", conf, switched(2), workers=2)
        workers = cluster.workers_of("t")
        cluster.wait_for(lambda: len(consumed()) == 2, 10, "both consumers prepared")
        contexts = sorted((c for _, c in consumed()), key=lambda c: c.tasks)
        assert contexts == sorted((ConsumerContext(w.topology_id, w.hostname, 0,
                                                   tuple(w.local_tasks)) for w in workers),
                                  key=lambda c: c.tasks)
        if stop == "kill":
            cluster.kill_topology("t")
        else:
            cluster.shutdown()
        assert consumed()[2:] == [("cleanup", None), ("cleanup", None)]
    finally:
        cluster.shutdown()


def test_shutdown_releases_a_component_sleeping_in_simulated_time() -> None:
    feeder, capture = FeederSpout(["v"]), Capture()
    cluster = LocalCluster(simulated_time=True)
    try:
        sim = cluster.clock
        assert isinstance(sim, SimulatedClock)
        cluster.submit_topology("t", {}, fed(feeder, Sleepy), workers=2)
        threads = local_threads("t")
        feeder.feed([1])
        cluster.wait_for(lambda: sim.sleepers == 1, 10, "the bolt to sleep")
        cluster.wait_until_quiet(timeout=5)  # a worker asleep in simulated time counts as quiet
    finally:
        cluster.shutdown()  # returns (does not wait for 30 simulated seconds)
    assert sim.sleepers == 0 and capture.values == []
    assert all(not t.is_alive() for t in threads)


class Blocked(Bolt):
    """Holds its worker's loop until released."""

    release = threading.Event()
    holding = threading.Event()

    def execute(self, tup: Tuple) -> None:
        Blocked.holding.set()
        Blocked.release.wait(60)
        self.ack(tup)


def test_reading_a_workers_metrics_fails_naming_the_wait_when_its_loop_is_held() -> None:
    Blocked.release = threading.Event()
    Blocked.holding = threading.Event()
    feeder = FeederSpout(["v"])
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", {}, fed(feeder, Blocked))
        feeder.feed([1])
        assert Blocked.holding.wait(30)
        unblock = threading.Timer(5, Blocked.release.set)  # a loop that never answered in time
        unblock.start()
        try:
            with pytest.raises(TimeoutError) as err:
                LocalCluster._on_loop(worker, worker.task_stats, timeout=0.05)
            assert str(err.value) == "the executor loop did not answer within 0.05 s"
        finally:
            Blocked.release.set()
            unblock.cancel()


def test_wait_for_names_the_condition_by_default() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        with pytest.raises(TimeoutError) as err:
            cluster.wait_for(lambda: False, 0.05)
        assert str(err.value) == "timed out after 0.05s waiting for condition"


def test_a_kill_after_a_deactivate_does_not_deactivate_the_spouts_again() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, switched(2), workers=2)
        a, b = spout_tasks(cluster, "t")
        cluster.wait_for(lambda: len(events()) == 2, 10, "the spouts activated")
        cluster.deactivate("t")
        cluster.deactivate("t")  # already inactive: nothing more
        cluster.wait_for(lambda: len(events()) == 4, 10, "the spouts deactivated")
        cluster.kill_topology("t", wait_secs=5)
        assert events() == [("activate", a), ("activate", b), ("deactivate", a), ("deactivate", b)]


class Pass(Bolt):
    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit(list(tup.values), anchors=tup)
        self.ack(tup)


@pytest.mark.parametrize("simulated", [True, False])
def test_after_wait_until_quiet_every_tuple_crossed_every_worker(simulated: bool) -> None:
    feeder, capture = FeederSpout(["v"]), Capture()
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("pass", Pass, 3).shuffle_grouping("feed")
    b.set_bolt("sink", capture, 3).shuffle_grouping("pass")
    with LocalCluster(simulated_time=simulated) as cluster:
        cluster.submit_topology("t", {"topology.acker.executors": 0}, b.create_topology(),
                                workers=3)
        for i in range(40):
            feeder.feed([i])
            cluster.wait_until_quiet("t" if i % 2 else None)
            # each tuple went spout -> pass -> sink, across the workers' queues, before the
            # wait returned
            assert len(capture.values) == i + 1
