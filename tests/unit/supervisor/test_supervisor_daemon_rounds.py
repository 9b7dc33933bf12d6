"""The supervisor daemon driven in-process: an in-memory cluster state instead of ZooKeeper,
a stand-in Nimbus over real RPC for the code, stand-in worker processes. What it registers,
an assignment downloaded and run, a removed one stopped and cleaned up, a worker that exits
restarted and its reason published at once, the last known assignments kept while ZooKeeper
cannot be read, workers left running for the next run to adopt, the id kept across restarts,
the settings it refuses, its log, its log server, and stopping in every state."""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from supervisor_stand_ins import (
    StandInNimbus,
    bundle_bytes,
    fake_python,
    gone,
    kill_left,
    run_record,
    stand_in_nimbus,
)

import stormpy
import stormpy.supervisor.daemon as daemon_module
import stormpy.supervisor.reconcile as reconcile_module
from stormpy.cluster import Assignment, ClusterStateError, SupervisorInfo, WorkerHeartbeat
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.cluster.paths import ZkPaths
from stormpy.config import SettingError
from stormpy.rpc import InternalError
from stormpy.supervisor import Supervisor
from stormpy.supervisor.daemon import _worker_env
from stormpy.supervisor.launcher import launch_worker
from stormpy.supervisor.local_state import claim_supervisor_id
from stormpy.testing import free_ports, wait_for
from stormpy.worker.heartbeat_channel import write_nimbus_heartbeat

THREADS = {"supervisor-heartbeat", "supervisor-sync", "supervisor-download", "supervisor-worker-heartbeats"}


class Hold:
    """A call that, once ``armed``, blocks (``entered`` set) until ``released``."""

    def __init__(self) -> None:
        self.armed = False
        self.entered = threading.Event()
        self.released = threading.Event()

    def __call__(self) -> None:
        if self.armed:
            self.entered.set()
            self.released.wait(30)


class MemoryStorage:
    def __init__(self) -> None:
        self.hold = Hold()
        self.wanted: set[str] = set()  # topologies the leader asks back
        self.paths = ZkPaths("/stormpy")

    def children(self, path: str) -> list[str]:
        self.hold()
        return sorted(self.wanted) if path == self.paths.bundle_wanted_root() else []

    def exists(self, path: str) -> bool:
        return any(path == self.paths.bundle_wanted(t) for t in self.wanted)


class MemoryClusterState:
    """The ClusterState calls a supervisor makes, in memory."""

    def __init__(self) -> None:
        self.assigns: dict[str, Assignment] = {}
        self.watch: Any = None
        self.hold = Hold()
        self.failing_registers = 0
        self.connected_with: tuple[Any, ...] = ()
        self.registered: list[SupervisorInfo] = []
        self.unregistered: list[str] = []
        self.connected = True
        self.broken_reads = False
        self.broken_unregister = False
        self.shut_down = False
        self.closed = False
        self.storage = MemoryStorage()
        self.paths = ZkPaths("/stormpy")

    def assignments(self, callback: Any = None) -> dict[str, Assignment]:
        self.watch = callback
        self.hold()
        if self.broken_reads:
            raise ClusterStateError("ZooKeeper is away")
        return dict(self.assigns)

    def register_supervisor(self, info: SupervisorInfo) -> None:
        if self.failing_registers > 0:
            self.failing_registers -= 1
            raise ClusterStateError("ZooKeeper lost the session")
        self.registered.append(info)

    def unregister_supervisor(self, supervisor_id: str) -> None:
        if self.broken_unregister:
            raise ClusterStateError("ZooKeeper said no")
        self.unregistered.append(supervisor_id)

    def begin_shutdown(self) -> None:
        self.shut_down = True

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryClusterState:
    made = MemoryClusterState()
    def connect(conf: Any, stop: Any, log: Any) -> MemoryClusterState:
        made.connected_with = (conf, stop, log)
        return made

    monkeypatch.setattr(daemon_module, "connect_at_start", connect)
    monkeypatch.setattr(reconcile_module, "launch_worker",
                        functools.partial(launch_worker, python=fake_python(tmp_path)))
    monkeypatch.setenv("STORMPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_EXECUTORS", "[[1, 1]]")
    return made


@pytest.fixture
def nimbus(tmp_path: Path) -> Iterator[StandInNimbus]:
    with stand_in_nimbus() as stand_in:
        stand_in.add("t-1", bundle_bytes(tmp_path, {"app.txt": "x"}), {"spouts": {}, "bolts": {}}, {})
        yield stand_in


@pytest.fixture
def supervisors() -> Iterator[list[Supervisor]]:
    made: list[Supervisor] = []
    yield made
    for sup in made:
        pids = [h.pid for h in sup.workers().values()]
        sup.stop()
        kill_left(*pids)


def conf_for(tmp_path: Path, nimbus: StandInNimbus | None = None, **more: Any) -> dict[str, Any]:
    return {"supervisor.slots.ports": [6701, 6700, 6700], "supervisor.host": "host-a",
            "storm.local.dir": str(tmp_path / "local"), "storm.log.dir": str(tmp_path / "logs"),
            "supervisor.heartbeat.frequency.secs": 600, "supervisor.monitor.frequency.secs": 600,
            "supervisor.worker.shutdown.sleep.secs": 2, "logviewer.port": -1,
            "task.heartbeat.frequency.secs": 600, "nimbus.rpc.retries": 0,
            "nimbus.seeds": [nimbus.address if nimbus else "127.0.0.1:1"], **more}


def start(supervisors: list[Supervisor], conf: dict[str, Any], **kw: Any) -> Supervisor:
    sup = Supervisor(conf, **kw)
    supervisors.append(sup)
    return sup.start()


def assign(state: MemoryClusterState, sup: Supervisor, **slots: tuple[int, int]) -> None:
    """``t_1=(port, task)``: topology t-1's executor (task, task) on ``port`` of ``sup``."""
    assert sup.supervisor_id is not None
    state.assigns = {}
    for name, (port, task) in slots.items():
        tid = name.replace("_", "-")
        state.assigns[tid] = Assignment(topology_id=tid, bundle_key=f"key-{tid}",
                                        executors={(task, task): (sup.supervisor_id, port)},
                                        node_host={sup.supervisor_id: "host-a"})


def start_running_t1(state: MemoryClusterState, supervisors: list[Supervisor],
                     conf: dict[str, Any]) -> tuple[Supervisor, Any]:
    """A started supervisor with t-1's worker assigned to port 6700 and launched; the worker's
    handle."""
    sup = start(supervisors, conf)
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()
    wait_for(lambda: 6700 in sup.workers(), 30, "the worker of t-1 to be launched")
    return sup, sup.workers()[6700]


def sync(sup: Supervisor) -> None:
    """Ask for a sync round and wait for one that started after the request."""
    target = sup.syncs + 2
    sup.sync_now()
    wait_for(lambda: sup.syncs >= target or (sup.sync_now() and False), 30, "two sync rounds")


def thread_names() -> set[str]:
    return {t.name for t in threading.enumerate()}


def test_a_started_supervisor_registers_writes_its_worker_conf_and_runs_its_threads(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    conf = conf_for(tmp_path, **{"an.object": Path("/some/path"),
                                 "storm.local.dir": str(tmp_path / "x" / ".." / "local"),
                                 "storm.log.dir": str(tmp_path / "x" / ".." / "logs")})
    before = time.time()
    sup = Supervisor(conf)
    assert sup.syncs == 0
    supervisors.append(sup)
    sup.start()
    sid = sup.supervisor_id
    assert sid is not None
    assert before <= sup.start_time <= time.time()
    assert state.connected_with == (sup.conf, sup._stop_requested, sup.log)  # noqa: SLF001
    wait_for(lambda: sup.syncs >= 1, 30, "the first sync round")
    assert len(state.registered) == 1  # the heartbeat's first round comes a period after start
    assert state.registered[0] == SupervisorInfo(
        supervisor_id=sid, host="host-a", ports=(6700, 6701), start_time=sup.start_time,
        version=stormpy.__version__, stats={"worker_launches": 0.0, "worker_restarts": 0.0}, workers=(),
        logviewer_port=None)
    dirs = SupervisorDirs(tmp_path / "local", sid, tmp_path / "logs")
    written = yaml.safe_load(dirs.conf_file.read_text())
    assert written["storm.local.dir"] == str((tmp_path / "local").resolve())
    assert written["storm.log.dir"] == str((tmp_path / "logs").resolve())
    assert written["an.object"] == "/some/path" and written["supervisor.host"] == "host-a"
    assert not list(dirs.root.glob(".conf.yaml.tmp"))
    assert thread_names() >= THREADS
    assert sup.log_path == dirs.supervisor_log
    assert f"supervisor {sid} starting" in dirs.supervisor_log.read_text()
    assert f" INFO [supervisor {sid}] " in dirs.supervisor_log.read_text()
    top = [line.split(":")[0] for line in dirs.conf_file.read_text().splitlines() if line[:1] not in " -"]
    assert top == sorted(top)
    assert sup.log.name == f"stormpy.supervisor.{sid}"
    with pytest.raises(RuntimeError, match="^a Supervisor can be started only once$"):
        sup.start()
    sup.stop()
    assert state.unregistered == [sid] and state.shut_down and state.closed
    assert not THREADS & thread_names()
    sup.stop()  # idempotent
    assert state.unregistered == [sid]
    assert f"supervisor {sid} stopped" in dirs.supervisor_log.read_text()
    # the id is released and a restart on the same local dir gets it back
    again = start(supervisors, conf)
    assert again.supervisor_id == sid


def test_an_assignment_is_downloaded_and_run_and_when_removed_stopped_and_cleaned_up(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus,
        supervisors: list[Supervisor]) -> None:
    conf = conf_for(tmp_path, nimbus, **{"logviewer.port": 0, "logviewer.host": "127.0.0.1"})
    sup = start(supervisors, conf)
    assert sup.dirs is not None
    wait_for(lambda: state.watch is not None, 30, "the first read of the assignments")
    assign(state, sup, t_1=(6700, 1))
    state.watch()  # ZooKeeper's watch on the assignments fires
    wait_for(lambda: 6700 in sup.workers(), 30, "the worker of t-1 to be launched")
    handle = sup.workers()[6700]
    assert (handle.topology_id, handle.executors) == ("t-1", ((1, 1),))
    assert sup.logviewer is not None and list(sup.logviewer.running()) == [("t-1", 6700)]
    assert sup.log_path is not None and "log server on " in sup.log_path.read_text()
    assert sup.dirs.is_downloaded("t-1")
    assert sup.counters == {"worker_launches": 1.0, "worker_restarts": 0.0}
    state.assigns = {}
    sync(sup)
    assert sup.workers() == {}
    wait_for(lambda: gone(handle.pid), 30, "the unassigned worker to stop")
    assert not sup.dirs.stormdist("t-1").exists()
    assert not sup.dirs.worker_dir("t-1", 6700).exists()


def test_a_worker_that_exits_is_restarted_and_why_is_published_at_once(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus, supervisors: list[Supervisor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_WORKER", "fail")
    sup = start(supervisors, conf_for(tmp_path, nimbus))
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()

    def published() -> dict[str, Any] | None:
        records = [w for info in state.registered for w in info.workers]
        return records[-1] if records else None

    record = wait_for(published, 30, "a worker's exit to be published")
    assert (record["topology_id"], record["port"]) == ("t-1", 6700)
    assert record["last_exit"].startswith("exit code 3: worker stopped: boom in ")
    assert state.registered[-1].stats["worker_restarts"] >= 1.0


def test_the_last_known_assignments_stay_while_zookeeper_cannot_be_read(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus,
        supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path, nimbus))
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()
    wait_for(lambda: 6700 in sup.workers(), 30, "the worker of t-1 to be launched")
    handle = sup.workers()[6700]
    registered = len(state.registered)
    state.broken_reads = True
    sync(sup)
    assert sup.workers() == {6700: handle} and handle.alive
    assert len(state.registered) == registered  # no restart: nothing published before the heartbeat
    sup.stop()
    assert sup.log_path is not None
    log = sup.log_path.read_text()
    assert f"stopping {handle.describe()}" in log
    assert log.count(f"supervisor {sup.supervisor_id} stopping") == 1
    sup.stop()
    assert sup.log_path.read_text().count(f"supervisor {sup.supervisor_id} stopping") == 1


def test_workers_left_running_are_adopted_by_the_next_run(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus,
        supervisors: list[Supervisor]) -> None:
    conf = conf_for(tmp_path, nimbus)
    first, handle = start_running_t1(state, supervisors, conf)
    assert first.dirs is not None
    wait_for(lambda: first.dirs.heartbeat_file("t-1", 6700).is_file(), 30, "its heartbeat")  # type: ignore[union-attr]
    first.stop(stop_workers=False)
    assert handle.alive
    second = start(supervisors, conf)
    assert second.supervisor_id == first.supervisor_id
    adopted = second.workers()[6700]
    assert (adopted.pid, adopted.adopted, adopted.executors) == (handle.pid, True, ((1, 1),))
    sync(second)
    assert second.workers() == {6700: adopted}  # still assigned, same executors: kept
    second.stop()
    wait_for(lambda: gone(handle.pid), 30, "the adopted worker to be stopped with its supervisor")


def test_stopping_without_zookeeper_or_with_a_failing_unregister_still_stops_everything(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path))
    state.connected = False
    sup.stop()
    assert state.unregistered == [] and state.closed
    assert sup.log_path is not None
    assert "ZooKeeper is unreachable: not unregistering" in sup.log_path.read_text()
    other = MemoryClusterState()
    other.broken_unregister = True
    sup2 = Supervisor(conf_for(tmp_path / "b"))
    supervisors.append(sup2)
    daemon_module.connect_at_start = lambda conf, stop, log: other  # type: ignore[assignment]
    sup2.start()
    sup2.stop()
    assert other.closed and not THREADS & thread_names()
    assert sup2.log_path is not None
    assert "could not unregister: ZooKeeper said no" in sup2.log_path.read_text()


@pytest.mark.parametrize("error", [ClusterStateError("no ZooKeeper at all"), RuntimeError("a bug")])
def test_a_failed_start_releases_the_id_and_the_log(
        tmp_path: Path, state: MemoryClusterState, monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def refuse(conf: Any, stop: Any, log: Any) -> Any:
        raise error

    monkeypatch.setattr(daemon_module, "connect_at_start", refuse)
    sup = Supervisor(conf_for(tmp_path))
    with pytest.raises(type(error)):
        sup.start()
    assert sup.supervisor_id is not None and sup.log_path is not None
    assert sup.log.handlers == []
    assert "supervisor could not start" in sup.log_path.read_text()
    again, lock = claim_supervisor_id(tmp_path / "local", "host-a", [6700, 6701])
    lock.close()
    assert again == sup.supervisor_id
    sup.stop()  # nothing more to stop


def test_a_started_supervisor_needs_a_port(tmp_path: Path, state: MemoryClusterState) -> None:
    with pytest.raises(ValueError,
                       match="^supervisor.slots.ports is empty: a supervisor needs at least one port$"):
        Supervisor(conf_for(tmp_path, **{"supervisor.slots.ports": []})).start()


@pytest.mark.parametrize("key", ["supervisor.heartbeat.frequency.secs", "supervisor.monitor.frequency.secs"])
@pytest.mark.parametrize("value", [0, -1, "abc", True, None])
def test_loop_intervals_must_be_positive_seconds(tmp_path: Path, key: str, value: Any) -> None:
    with pytest.raises(SettingError) as caught:
        Supervisor(conf_for(tmp_path, **{key: value}))
    assert str(caught.value) == f"{key}: must be a number of seconds > 0, got {value!r}"


def test_ports_and_intervals_are_read_from_the_conf(tmp_path: Path) -> None:
    sup = Supervisor(conf_for(tmp_path, **{"supervisor.slots.ports": "6703",
                                           "supervisor.heartbeat.frequency.secs": "2.5",
                                           "supervisor.monitor.frequency.secs": 0.5}))
    assert (sup.ports, sup.heartbeat_secs, sup.monitor_secs) == ((6703,), 2.5, 0.5)
    assert Supervisor(conf_for(tmp_path, **{"supervisor.slots.ports": 6704})).ports == (6704,)
    assert sup.workers() == {} and sup.log_path is None
    sup.stop()  # never started: nothing happens


def test_root_logging_sends_every_record_to_the_supervisor_log(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path), root_logging=True)
    assert sup.log.name == "stormpy.supervisor"
    assert sup.log_path is not None
    assert f" INFO [supervisor {sup.supervisor_id}] " in sup.log_path.read_text()
    logging.getLogger("stormpy.test.elsewhere").warning("a record from elsewhere")
    sup.stop()
    assert sup.log_path is not None and "a record from elsewhere" in sup.log_path.read_text()
    logging.getLogger("stormpy.test.elsewhere").warning("after the stop")
    assert "after the stop" not in sup.log_path.read_text()
    # embedded (the default), only the supervisor's own records go there
    own = start(supervisors, conf_for(tmp_path / "b"))
    logging.getLogger("stormpy.test.elsewhere").warning("not the supervisor's")
    own.stop()
    assert own.log_path is not None and "not the supervisor's" not in own.log_path.read_text()


def test_the_log_server_runs_on_its_port_and_a_taken_port_is_not_fatal(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path, **{"logviewer.port": 0, "logviewer.host": "127.0.0.1"}))
    assert sup.logviewer is not None and sup.logviewer.port > 0
    assert state.registered[-1].logviewer_port == sup.logviewer.port
    assert list(sup.logviewer.running()) == []
    sup.stop()
    assert sup.logviewer is None
    port = free_ports(1)[0]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        blocked = start(supervisors, conf_for(tmp_path / "b", **{"logviewer.port": port,
                                                                 "logviewer.host": "127.0.0.1"}))
        assert blocked.logviewer is None
        assert state.registered[-1].logviewer_port is None
        blocked.stop()
    assert blocked.log_path is not None
    assert f"no log server: cannot serve logviewer.port {port}" in blocked.log_path.read_text()


def test_the_context_manager_and_run_forever_start_and_stop(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    with Supervisor(conf_for(tmp_path)) as sup:
        assert sup.supervisor_id is not None and thread_names() >= THREADS
    assert state.unregistered == [sup.supervisor_id]
    runner = Supervisor(conf_for(tmp_path / "b"))
    supervisors.append(runner)
    thread = threading.Thread(target=runner.run_forever, name="test-run-forever")
    thread.start()
    wait_for(lambda: runner.supervisor_id is not None and len(state.registered) >= 2, 30,
             "the supervisor to start")
    runner.request_stop()
    thread.join(30)
    assert not thread.is_alive()
    assert state.unregistered[-1] == runner.supervisor_id


def test_workers_get_unbuffered_output_and_stormpy_on_their_path(monkeypatch: pytest.MonkeyPatch) -> None:
    src = str(Path(stormpy.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/a", "", "/b"]))
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    env = _worker_env()
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PYTHONPATH"] == os.pathsep.join([src, "/a", "/b"])
    assert {k: v for k, v in env.items() if k not in ("PYTHONUNBUFFERED", "PYTHONPATH")} == {
        k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONPATH")}
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/a", src]))
    assert _worker_env()["PYTHONPATH"] == os.pathsep.join(["/a", src])
    monkeypatch.delenv("PYTHONPATH")
    assert _worker_env()["PYTHONPATH"] == src
    assert json.dumps(_worker_env())  # plain strings only


def test_a_failure_after_connecting_closes_the_cluster_state(
        tmp_path: Path, state: MemoryClusterState, monkeypatch: pytest.MonkeyPatch) -> None:
    def adoption_fails(*args: Any) -> Any:
        raise RuntimeError("adoption broke")

    monkeypatch.setattr(daemon_module, "adopt_workers", adoption_fails)
    sup = Supervisor(conf_for(tmp_path))
    with pytest.raises(RuntimeError, match="adoption broke"):
        sup.start()
    assert state.closed and sup.state is None
    sup.stop()  # what start released is not stopped again
    assert state.unregistered == []


def test_a_started_supervisor_entered_again_is_itself(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path))
    with sup as entered:
        assert entered is sup
    assert state.unregistered == [sup.supervisor_id]


def test_an_assignment_problem_is_logged_once_while_it_lasts(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path))
    assign(state, sup, t_1=(6799, 1))
    sync(sup)
    sync(sup)
    assert sup.log_path is not None
    problem = ("assignment problem: topology t-1 is assigned to port 6799, which this supervisor "
               "does not offer")
    assert sup.log_path.read_text().count(problem) == 1
    assert sup.workers() == {}


def test_a_restart_is_published_with_the_worker_running_again(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus, supervisors: list[Supervisor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_WORKER", "fail-once")
    sup = start(supervisors, conf_for(tmp_path, nimbus, **{"supervisor.heartbeat.frequency.secs": 0.1}))
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()

    def relaunched() -> SupervisorInfo | None:
        for info in reversed(state.registered):
            if info.stats["worker_launches"] == 2.0 and info.workers:
                return info
        return None

    info = wait_for(relaunched, 30, "the relaunch to be published")
    [record] = info.workers
    assert (record["restarts"], record["quick_exits"], record["crash_looping"]) == (1, 1, False)


@pytest.mark.parametrize("busy", ["supervisor-download", "supervisor-bundle-return", "supervisor-sync"])
def test_stopping_waits_for_a_round_under_way(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus, supervisors: list[Supervisor],
        busy: str) -> None:
    chunk = Hold()
    nimbus.before_chunk = chunk
    hold = {"supervisor-download": chunk, "supervisor-bundle-return": state.storage.hold,
            "supervisor-sync": state.hold}[busy]
    sup = start(supervisors, conf_for(tmp_path, nimbus))
    wait_for(lambda: state.watch is not None, 30, "the first sync round")
    hold.armed = True
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()  # the sync round, the download it asks for or the bundle return it wakes
    assert hold.entered.wait(30)
    release = threading.Timer(0.5, hold.released.set)  # the round ends half a second later
    release.start()
    try:
        sup.stop()
        assert busy not in thread_names()  # stop waited for it
    finally:
        release.join()


def test_downloads_bundles_sent_back_and_heartbeats_relayed_are_told_in_the_supervisors_log(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus,
        supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path, nimbus, **{"task.heartbeat.frequency.secs": 0.1}))
    assert sup.dirs is not None and sup.log_path is not None
    state.storage.wanted = {"t-1"}  # the leader lost t-1's bundle and asks it back
    assign(state, sup, t_1=(6700, 1), t_2=(6701, 2))  # Nimbus has no t-2
    sup.sync_now()
    wait_for(lambda: 6700 in sup.workers(), 30, "the worker of t-1")
    wait_for(lambda: nimbus.restored, 30, "t-1's bundle sent back")
    assert nimbus.restored[0]["topology_id"] == "t-1"
    # the worker's heartbeat for Nimbus goes through the relay
    beat = WorkerHeartbeat("t-1", sup.supervisor_id, 6700, time.time(), 1.0, ((1, 1),))
    write_nimbus_heartbeat(sup.dirs.nimbus_heartbeat_file("t-1", 6700), beat)
    wait_for(lambda: nimbus.beats, 30, "the worker's heartbeat relayed to Nimbus")
    assert nimbus.beats[0][0] == sup.supervisor_id
    nimbus.beats_error = InternalError("the heartbeat store is down")
    write_nimbus_heartbeat(sup.dirs.nimbus_heartbeat_file("t-1", 6700),
                           WorkerHeartbeat("t-1", sup.supervisor_id, 6700, time.time() + 1, 1.0, ((1, 1),)))
    wait_for(lambda: "supervisor-worker-heartbeats: round failed" in sup.log_path.read_text(), 30,  # type: ignore[union-attr]
             "the relay's failure in the supervisor's log")
    wait_for(lambda: "cannot download topology t-2" in sup.log_path.read_text(), 30, "t-2's failure logged")
    log = sup.log_path.read_text()
    assert "downloaded topology t-1" in log
    assert "sent the code of topology t-1 back to Nimbus" in log


def test_code_being_downloaded_or_of_a_held_back_worker_is_kept(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus, supervisors: list[Supervisor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = Hold()
    chunk.armed = True
    nimbus.before_chunk = chunk
    monkeypatch.setenv("FAKE_WORKER", "fail")
    sup = start(supervisors, conf_for(tmp_path, nimbus))
    assert sup.dirs is not None
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()
    assert chunk.entered.wait(30)
    sync(sup)  # a sync round while the download runs: its temporary directory stays
    assert [p.name.startswith(".tmp-t-1-") for p in sup.dirs.stormdist_root.iterdir()] == [True]
    chunk.released.set()
    # the worker fails at once, twice: its relaunch is then held back a second
    wait_for(lambda: sup.counters["worker_restarts"] >= 2, 30, "two quick exits")
    sync(sup)
    assert sup.dirs.is_downloaded("t-1") and sup.dirs.worker_dir("t-1", 6700).is_dir()
    assert nimbus.calls.count("get_topology_files t-1") == 1


def test_a_zookeeper_unreadable_from_the_start_runs_nothing_and_keeps_syncing(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    state.broken_reads = True
    sup = start(supervisors, conf_for(tmp_path))
    sync(sup)
    assert sup.workers() == {}


def test_a_failed_registration_is_retried_by_the_heartbeat(
        tmp_path: Path, state: MemoryClusterState, supervisors: list[Supervisor]) -> None:
    sup = start(supervisors, conf_for(tmp_path, **{"supervisor.heartbeat.frequency.secs": 0.05}))
    state.failing_registers = 3
    wait_for(lambda: state.failing_registers == 0 and len(state.registered) >= 2, 30,
             "a registration after three failed ones")
    assert sup.log_path is not None
    log = sup.log_path.read_text()
    # a ZooKeeper error is expected: one warning for the run of failures, no traceback
    assert log.count("supervisor-heartbeat: round failed") == 1
    assert "WARNING" in log and "Traceback" not in log


def test_a_silent_worker_is_restarted_after_the_start_timeout(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus, supervisors: list[Supervisor],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_WORKER", "silent")
    sup = start(supervisors, conf_for(tmp_path, nimbus, **{"supervisor.worker.start.timeout.secs": 0.2}))
    assign(state, sup, t_1=(6700, 1))

    def restarted() -> bool:
        sup.sync_now()
        return sup.counters["worker_restarts"] >= 1

    wait_for(restarted, 30, "the silent worker's restart", interval=0.1)
    records = sup._reconciler.exits.records([], time.time())  # type: ignore[union-attr]  # noqa: SLF001
    assert records[0]["last_exit"].startswith("no heartbeat ")


def test_a_leftover_worker_on_a_taken_port_is_stopped_at_start(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus,
        supervisors: list[Supervisor]) -> None:
    conf = conf_for(tmp_path, nimbus)
    first, kept = start_running_t1(state, supervisors, conf)
    first.stop(stop_workers=False)
    assert first.dirs is not None
    (first.dirs.code_dir("t-9")).mkdir(parents=True)  # listed after t-1, whose worker has the port
    leftover = launch_worker(first.dirs, "t-9", 6700, [(9, 9)], python=fake_python(tmp_path))
    try:
        run_record(first.dirs, "t-9", 6700)
        second = start(supervisors, conf)
        wait_for(lambda: gone(leftover.pid), 30, "the leftover on the taken port to be stopped")
        assert second.workers()[6700].pid == kept.pid
    finally:
        kill_left(leftover.pid)


def test_a_download_under_way_finishes_after_its_assignment_is_removed(
        tmp_path: Path, state: MemoryClusterState, nimbus: StandInNimbus,
        supervisors: list[Supervisor]) -> None:
    chunk = Hold()
    chunk.armed = True
    nimbus.before_chunk = chunk
    sup = start(supervisors, conf_for(tmp_path, nimbus))
    assert sup.dirs is not None and sup.log_path is not None
    assign(state, sup, t_1=(6700, 1))
    sup.sync_now()
    assert chunk.entered.wait(30)
    state.assigns = {}
    sync(sup)  # t-1 is no longer assigned, but its download is under way: its files stay
    assert [p.name.startswith(".tmp-t-1-") for p in sup.dirs.stormdist_root.iterdir()] == [True]
    chunk.released.set()
    wait_for(lambda: "downloaded topology t-1" in sup.log_path.read_text(), 30,  # type: ignore[union-attr]
             "the download to finish")
    assert "cannot download topology t-1" not in sup.log_path.read_text()
