"""The process cluster's daemons with stand-in children (a script in place of ``python``): the
command line, environment, directory and config each daemon gets, the ports chosen, the log
files and their dump, the bounded waits, and every child stopped (daemons and stray workers)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from stormpy.cluster import SupervisorInfo
from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.local import _processes
from stormpy.local._processes import DaemonProcess, ProcessCluster, end_processes, find_processes
from stormpy.rpc.errors import RpcError

#: a stand-in for ``python``: ignores SIGTERM when stubborn, records how it was launched, says so
#: on stdout, then sleeps
STAND_IN = """#!/bin/sh
{trap}
{{ printf '%s\\n' "$@"; echo "cwd=$(pwd)"; echo "conf=$STORMPY_CONF"
   echo "unbuffered=$PYTHONUNBUFFERED"; }} > launch.txt
echo "daemon $3 up"
exec sleep 60
"""


def _stand_in(path: Path, *, stubborn: bool = False) -> str:
    path.write_text(STAND_IN.format(trap="trap '' TERM" if stubborn else ""))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def python(tmp_path: Path) -> str:
    return _stand_in(tmp_path / "python-stand-in")


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts (killed at the end if still running)."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _sleeper(started: list[subprocess.Popen[bytes]], *args: str,
             ignore_term: bool = False) -> subprocess.Popen[bytes]:
    code = ("import signal, time\n"
            + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
            + "print('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"  # handler installed
    return proc


@pytest.fixture(autouse=True)
def only_own_processes_ended(sleepers: list[subprocess.Popen[bytes]],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster's stop may end only processes its test started: a broken process match fails
    the test instead of signalling the machine's other processes."""
    real_end = _processes.end_processes

    def guarded_end(pids: list[int], grace_secs: float) -> None:
        assert set(pids) <= {p.pid for p in sleepers}, f"stop would end processes it did not start: {pids}"
        real_end(pids, grace_secs)
    monkeypatch.setattr(_processes, "end_processes", guarded_end)


# -- finding and ending processes ----------------------------------------------------------------
def test_find_processes_matches_every_needle_sorted_by_pid(sleepers: list[subprocess.Popen[bytes]]) -> None:
    tag = f"stormpy-test-{uuid.uuid4().hex}"
    procs = [_sleeper(sleepers, tag, "alpha"), _sleeper(sleepers, tag, "beta")]
    found = find_processes(tag)
    assert [pid for pid, _ in found] == sorted(p.pid for p in procs)
    assert dict(found)[procs[1].pid] == [sys.executable, "-c", psutil.Process(procs[1].pid).cmdline()[2],
                                         tag, "beta"]
    assert find_processes(tag, "beta") == [(procs[1].pid, psutil.Process(procs[1].pid).cmdline())]
    assert find_processes(tag, "gamma") == []


def test_find_processes_leaves_out_this_process() -> None:
    mine = psutil.Process().cmdline()
    assert os.getpid() not in [pid for pid, _ in find_processes(*mine)]


def test_end_processes_terminates_kills_the_stubborn_and_skips_the_gone(
        sleepers: list[subprocess.Popen[bytes]]) -> None:
    polite = _sleeper(sleepers)
    stubborn = _sleeper(sleepers, ignore_term=True)
    gone = _sleeper(sleepers)
    gone.kill()
    gone.wait()
    end_processes([polite.pid, stubborn.pid, gone.pid], grace_secs=0.5)
    # both reaped by the time it returns (the stubborn one ignores SIGTERM: it was killed)
    assert not psutil.pid_exists(polite.pid) and not psutil.pid_exists(stubborn.pid)


# -- one daemon ----------------------------------------------------------------------------------
def _launch_record(daemon: DaemonProcess) -> list[str]:
    path = daemon.workdir / "launch.txt"
    wait_for(lambda: path.exists() and path.read_text().endswith("\n") and "unbuffered=" in path.read_text(),
             30, "the stand-in to record its launch")
    return path.read_text().splitlines()


def test_a_daemon_runs_python_m_stormpy_cli_in_its_own_directory(python: str, tmp_path: Path) -> None:
    workdir = tmp_path / "base" / "supervisor-0"
    daemon = DaemonProcess("supervisor", "supervisor-0", workdir, {"b": 2, "a": [1]}, python)
    assert daemon.pid is None and not daemon.running
    try:
        daemon.start()
        assert daemon.running and daemon.pid is not None
        conf = workdir / "stormpy.yaml"
        assert conf.read_text() == "a:\n- 1\nb: 2\n"
        assert _launch_record(daemon) == ["-m", "stormpy.cli", "supervisor", "--config", str(conf),
                                          f"cwd={workdir}", f"conf={conf}", "unbuffered=1"]
        out = workdir / "supervisor-0.out"
        wait_for(lambda: out.read_text() == "daemon supervisor up\n", 30, "the daemon's stdout")
        pid = daemon.pid
        daemon.start()  # already running: nothing new
        assert daemon.pid == pid
    finally:
        code = daemon.stop(grace_secs=10)
    assert code == -signal.SIGTERM
    assert not daemon.running and daemon.pid == pid


def test_a_restarted_daemon_appends_to_its_output(python: str, tmp_path: Path) -> None:
    daemon = DaemonProcess("nimbus", "nimbus", tmp_path / "nimbus", {}, python)
    daemon.start()
    first = daemon.pid
    out = tmp_path / "nimbus" / "nimbus.out"
    wait_for(lambda: out.read_text() == "daemon nimbus up\n", 30, "the first start's output")
    assert daemon.stop(kill=True) == -signal.SIGKILL
    daemon.start()
    try:
        assert daemon.pid != first
        wait_for(lambda: out.read_text() == "daemon nimbus up\n" * 2, 30, "the second start's output")
    finally:
        daemon.stop()


def test_a_daemon_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    daemon = DaemonProcess("nimbus", "nimbus", tmp_path / "n", {}, _stand_in(tmp_path / "py", stubborn=True))
    daemon.start()
    _launch_record(daemon)
    daemon.signal_stop()  # SIGTERM, ignored
    assert daemon.running
    assert daemon.stop(grace_secs=0.5) == -signal.SIGKILL
    assert daemon.stop() == -signal.SIGKILL  # stopped already: the code again
    daemon.signal_stop()  # no process: nothing to signal


def test_signal_stop_sends_sigterm_or_sigkill_without_waiting(python: str, tmp_path: Path) -> None:
    for kill, sig in ((False, signal.SIGTERM), (True, signal.SIGKILL)):
        daemon = DaemonProcess("ui", "ui", tmp_path / f"ui-{kill}", {}, python)
        daemon.start()
        _launch_record(daemon)
        daemon.signal_stop(kill=kill)
        assert daemon.proc is not None and daemon.proc.wait(10) == -sig
        assert daemon.stop() == -sig


def test_a_daemon_never_started_stops_with_no_code(python: str, tmp_path: Path) -> None:
    daemon = DaemonProcess("nimbus", "nimbus", tmp_path / "n", {}, python)
    assert daemon.stop() is None
    daemon.signal_stop()
    assert not (tmp_path / "n").exists()


def test_a_daemons_log_files_are_its_log_and_out_files(python: str, tmp_path: Path) -> None:
    daemon = DaemonProcess("nimbus", "nimbus", tmp_path / "n", {}, python)
    for rel in ("logs/nimbus.log", "nimbus.out", "logs/workers/w.log", "stormpy.yaml", "logs/x.txt"):
        (tmp_path / "n" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "n" / rel).write_text("x")
    (tmp_path / "n" / "dir.log").mkdir()
    assert daemon.log_files() == [tmp_path / "n" / rel for rel in
                                  ("logs/nimbus.log", "logs/workers/w.log", "nimbus.out")]


# -- the cluster's layout ------------------------------------------------------------------------
def test_a_cluster_needs_a_nimbus(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^a cluster needs at least one Nimbus, got nimbuses=0$"):
        ProcessCluster("zk:2181", nimbuses=0, base_dir=tmp_path)


def test_each_daemon_gets_its_directory_ports_and_config(tmp_path: Path) -> None:
    cluster = ProcessCluster("zk1:2181,zk2:2181,", supervisors=2, base_dir=tmp_path, zk_root="/root",
                             conf={"nimbus.seeds": ["elsewhere:1"], "nimbus.thrift.port": 1,
                                   "topology.debug": True}, nimbus_port=7000,
                             slot_ports=[[7100, 7101], [7200]], host="127.0.0.2", nimbuses=2,
                             python="py")
    base = tmp_path.resolve()
    assert cluster.base_dir == base
    assert cluster.nimbus_ports == [7000, 7001] and cluster.nimbus_port == 7000
    assert cluster.nimbus_address == "127.0.0.2:7000"
    assert [d.name for d in cluster.daemons()] == ["nimbus", "nimbus-1", "supervisor-0", "supervisor-1"]
    assert [d.kind for d in cluster.daemons()] == ["nimbus", "nimbus", "supervisor", "supervisor"]
    assert cluster.nimbus is cluster.nimbuses[0]
    assert cluster.python == "py" and all(d.python == "py" for d in cluster.daemons())
    assert cluster.ui is None and cluster.ui_port is None and cluster.ui_url is None
    seeds = ["127.0.0.2:7000", "127.0.0.2:7001"]

    def common(name: str) -> dict[str, object]:
        return {"storm.zookeeper.servers": ["zk1:2181", "zk2:2181"], "storm.zookeeper.root": "/root",
                "storm.local.dir": str(base / name / "local"), "storm.log.dir": str(base / name / "logs"),
                "nimbus.host": "127.0.0.2", "nimbus.seeds": seeds, "supervisor.host": "127.0.0.2",
                "topology.debug": True}
    assert cluster.nimbuses[1].workdir == base / "nimbus-1"
    assert cluster.nimbuses[1].conf == {**common("nimbus-1"), "nimbus.thrift.port": 7001}
    assert cluster.nimbuses[0].conf == {**common("nimbus"), "nimbus.thrift.port": 7000}
    assert cluster.supervisors[1].workdir == base / "supervisor-1"
    assert cluster.supervisors[1].conf == {**common("supervisor-1"), "nimbus.thrift.port": 7000,
                                           "supervisor.slots.ports": [7200], "logviewer.port": 0}
    assert cluster.supervisors[0].conf["supervisor.slots.ports"] == [7100, 7101]


def test_the_extra_conf_may_name_the_log_server_port(tmp_path: Path) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=1, base_dir=tmp_path, conf={"logviewer.port": 8123},
                             nimbus_port=7000, slot_ports=[[7100]])
    assert cluster.supervisors[0].conf["logviewer.port"] == 8123


def test_free_ports_are_chosen_when_none_are_given(tmp_path: Path) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=3, slots_per_supervisor=2, base_dir=tmp_path,
                             nimbuses=2, ui=True)
    assert [len(p) for p in cluster.slot_ports] == [2, 2, 2]
    every = [*cluster.nimbus_ports, *(p for ports in cluster.slot_ports for p in ports)]
    assert len(set(every)) == 8 and all(p > 0 for p in every)
    assert [s.conf["supervisor.slots.ports"] for s in cluster.supervisors] == cluster.slot_ports
    assert cluster.ui is not None and isinstance(cluster.ui_port, int) and cluster.ui_port > 0
    assert cluster.ui_url == f"http://127.0.0.1:{cluster.ui_port}"
    assert cluster.ui.kind == "ui" and cluster.ui.workdir == tmp_path.resolve() / "ui"
    assert cluster.ui.conf["ui.host"] == "127.0.0.1" and cluster.ui.conf["ui.port"] == cluster.ui_port
    assert "supervisor.slots.ports" not in cluster.ui.conf
    assert cluster.daemons()[-1] is cluster.ui


def test_a_given_ui_port_is_used(tmp_path: Path) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, ui=True, ui_port=9999)
    assert cluster.ui_port == 9999 and cluster.ui_url == "http://127.0.0.1:9999"
    without = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path)
    with pytest.raises(RuntimeError, match="^this ProcessCluster was created without ui=True$"):
        without.start_ui(1)


# -- stopping ------------------------------------------------------------------------------------
def test_stop_ends_every_daemon_and_every_worker_left_from_its_directories(
        python: str, sleepers: list[subprocess.Popen[bytes]]) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=2, python=python, ui=True)
    base = cluster.base_dir
    assert base.is_dir() and base.name.startswith("stormpy-cluster-")
    for daemon in cluster.daemons():
        daemon.start()
    worker = _sleeper(sleepers, "stormpy.worker.process", str(base / "supervisor-0" / "local"), "topo-1",
                      ignore_term=True)
    other = _sleeper(sleepers, "stormpy.worker.process", "/elsewhere")
    assert cluster.worker_processes("topo-1") == [(worker.pid, psutil.Process(worker.pid).cmdline())]
    assert cluster.worker_processes("topo-2") == []
    assert [pid for pid, _ in cluster.worker_processes()] == [worker.pid]
    cluster.stop()
    assert [d.running for d in cluster.daemons()] == [False] * 4
    assert all(d.proc is not None and d.proc.returncode == -signal.SIGTERM for d in cluster.daemons())
    assert not psutil.pid_exists(worker.pid)  # it ignores SIGTERM: killed after the grace
    assert other.poll() is None
    assert not base.exists()  # its own temporary directory
    cluster.stop()  # idempotent


def test_stop_keeps_a_given_base_directory(python: str, tmp_path: Path) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=1, base_dir=tmp_path / "b", python=python)
    cluster.supervisors[0].start()
    cluster.__exit__(None, None, None)
    proc = cluster.supervisors[0].proc
    assert proc is not None and proc.returncode == -signal.SIGTERM
    assert (tmp_path / "b" / "supervisor-0" / "stormpy.yaml").is_file()


# -- waiting and diagnostics ---------------------------------------------------------------------
def _with_logs(tmp_path: Path) -> ProcessCluster:
    cluster = ProcessCluster("zk:2181", supervisors=1, base_dir=tmp_path, nimbus_port=7000,
                             slot_ports=[[7100]])
    (tmp_path / "nimbus" / "logs").mkdir(parents=True)
    (tmp_path / "nimbus" / "logs" / "nimbus.log").write_text("".join(f"n{i}\n" for i in range(50)))
    (tmp_path / "supervisor-0").mkdir()
    (tmp_path / "supervisor-0" / "supervisor-0.out").write_text("s1\nneedle here\ns3\n")
    return cluster


def test_dump_logs_shows_the_tail_of_every_log_under_a_header(tmp_path: Path) -> None:
    cluster = _with_logs(tmp_path)
    assert cluster.log_files() == [tmp_path / "nimbus" / "logs" / "nimbus.log",
                                   tmp_path / "supervisor-0" / "supervisor-0.out"]
    assert cluster.dump_logs(lines=2) == ("===== nimbus/logs/nimbus.log =====\nn48\nn49\n"
                                          "===== supervisor-0/supervisor-0.out =====\nneedle here\ns3")
    assert cluster.dump_logs().splitlines()[1] == "n10"  # 40 lines by default
    assert list(cluster.iter_log_lines("needle")) == [(tmp_path / "supervisor-0" / "supervisor-0.out",
                                                       "needle here")]


def test_wait_for_returns_the_condition_value_and_names_what_timed_out(tmp_path: Path) -> None:
    cluster = _with_logs(tmp_path)
    calls = iter([None, RuntimeError("racing"), 0, "done"])

    def condition() -> object:
        value = next(calls)
        if isinstance(value, Exception):
            raise value
        return value
    assert cluster.wait_for(condition, 30, "x", interval=0.01) == "done"
    with pytest.raises(WaitTimeout) as info:
        cluster.wait_for(lambda: False, 0.2, "the impossible", interval=0.01)
    message = str(info.value)
    assert message.startswith("timed out after 0.2s waiting for the impossible\n")
    assert info.value.__suppress_context__  # the timeout alone, not the wait's own exception
    assert message.endswith("\n" + cluster.dump_logs())


def test_wait_for_fails_early_once_every_nimbus_exited(python: str, tmp_path: Path) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, python=python, nimbuses=2)
    assert cluster.wait_for(lambda: True, 1, "nothing") is True  # never started: not "exited"
    cluster.nimbuses[0].start()
    cluster.nimbuses[0].stop(kill=True)
    assert cluster.wait_for(lambda: 1, 1, "one Nimbus still never started") == 1
    cluster.nimbuses[1].start()
    cluster.nimbuses[1].stop()
    with pytest.raises(RuntimeError) as info:
        cluster.wait_for(lambda: False, 30, "a leader", interval=0.01)
    assert str(info.value) == ("Nimbus exited (code -9, -15) while waiting for a leader\n"
                               f"{cluster.dump_logs()}")
    with pytest.raises(WaitTimeout):
        cluster.wait_for(lambda: False, 0.2, "a leader", interval=0.01, check_daemons=False)
    assert cluster.leader_index() is None  # none runs: nobody asked


# -- a stand-in Nimbus and cluster state: starting, the leader, the supervisors, the clients -----
class StandInNimbuses:
    """``rpc_client`` in place of the real one: a probe per call, answering ``ping`` and
    ``get_leader`` as the test says, each call and close recorded."""

    def __init__(self) -> None:
        self.leader: str | None = None        # the address that says it leads
        self.answering: set[str] = set()      # addresses that answer ping
        self.failing: set[str] = set()        # addresses whose get_leader raises
        self.opened: list[tuple[str, dict[str, object], dict[str, object]]] = []
        self.calls: list[tuple[str, str, object]] = []
        self.closed: list[str] = []

    def __call__(self, conf: dict[str, object], address: str, **overrides: object) -> StandInNimbuses.Probe:
        self.opened.append((address, dict(conf), overrides))
        return StandInNimbuses.Probe(self, address)

    class Probe:
        def __init__(self, owner: StandInNimbuses, address: str) -> None:
            self.owner, self.address = owner, address

        def ping(self, timeout: float) -> bool:
            self.owner.calls.append((self.address, "ping", timeout))
            return self.address in self.owner.answering

        def call(self, method: str) -> dict[str, object]:
            self.owner.calls.append((self.address, method, None))
            if self.address in self.owner.failing:
                raise ConnectionError("starting")
            return {"is_leader": self.address == self.owner.leader}

        def close(self) -> None:
            self.owner.closed.append(self.address)


class StandInState:
    """The cluster state's supervisors, and whether it was closed."""

    def __init__(self) -> None:
        self.sups: dict[str, SupervisorInfo] = {}
        self.closed = False

    def add(self, sid: str, ports: list[int]) -> None:
        self.sups[sid] = SupervisorInfo(sid, "127.0.0.1", tuple(ports), 1.0, "test")

    def supervisors(self) -> dict[str, SupervisorInfo]:
        return dict(self.sups)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def nimbuses(monkeypatch: pytest.MonkeyPatch) -> StandInNimbuses:
    stand_in = StandInNimbuses()
    monkeypatch.setattr(_processes, "rpc_client", stand_in)
    return stand_in


@pytest.fixture
def zk_state(monkeypatch: pytest.MonkeyPatch) -> tuple[StandInState, list[tuple[object, ...]]]:
    state = StandInState()
    connects: list[tuple[object, ...]] = []

    class Connecting:
        @staticmethod
        def connect(zk: str, root: str, *, connect_timeout_secs: float) -> StandInState:
            connects.append((zk, root, connect_timeout_secs))
            return state
    monkeypatch.setattr(_processes, "ClusterState", Connecting)
    return state, connects


def _two_by_two(python: str, tmp_path: Path, **kwargs: object) -> ProcessCluster:
    return ProcessCluster("zk1:2181", supervisors=2, base_dir=tmp_path / "c", zk_root="/r", python=python,
                          nimbus_port=7000, slot_ports=[[7100, 7101], [7200]], nimbuses=2,
                          conf={"nimbus.rpc.auth.token": "t"}, **kwargs)  # type: ignore[arg-type]


def test_start_waits_for_every_nimbus_a_leader_and_every_supervisor(
        python: str, tmp_path: Path, nimbuses: StandInNimbuses,
        zk_state: tuple[StandInState, list[tuple[object, ...]]]) -> None:
    state, connects = zk_state
    nimbuses.answering = {"127.0.0.1:7000", "127.0.0.1:7001"}
    nimbuses.leader = "127.0.0.1:7001"
    state.add("sup-b", [7200])
    state.add("sup-a", [7101, 7100])
    state.add("elsewhere", [9000])
    cluster = _two_by_two(python, tmp_path)
    try:
        assert cluster.start(timeout_secs=10) is cluster
        assert [d.running for d in cluster.daemons()] == [True] * 4
        assert connects == [("zk1:2181", "/r", 30)]
        pings = [(a, t) for a, m, t in nimbuses.calls if m == "ping"]
        assert pings[0] == ("127.0.0.1:7000", 1.0) and pings[-1] == ("127.0.0.1:7001", 1.0)
        assert nimbuses.opened[0] == ("127.0.0.1:7000", {"nimbus.rpc.auth.token": "t"},
                                      {"timeout_secs": 1.0, "retries": 0})
        assert set(nimbuses.closed) == {a for a, _, _ in nimbuses.opened}
        assert len(nimbuses.closed) == len(nimbuses.opened)  # every probe closed
        assert cluster.supervisor_ids() == {0: "sup-a", 1: "sup-b"}
        assert cluster.supervisor_infos()[1] == state.sups["sup-b"]
        nimbuses.calls.clear()
        assert cluster.leader_index() == 1
        assert [(a, m) for a, m, _ in nimbuses.calls] == [("127.0.0.1:7000", "get_leader"),
                                                          ("127.0.0.1:7001", "get_leader")]
        # every probe (answering, leading) with the cluster's conf, bounded: 1 s, no retry
        assert {(a, str(c), str(o)) for a, c, o in nimbuses.opened} == {
            (a, "{'nimbus.rpc.auth.token': 't'}", "{'timeout_secs': 1.0, 'retries': 0}")
            for a in ("127.0.0.1:7000", "127.0.0.1:7001")}
    finally:
        cluster.stop()
    assert state.closed and cluster._state is None


def test_the_leader_is_the_first_running_nimbus_that_says_so(
        python: str, tmp_path: Path, nimbuses: StandInNimbuses) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, python=python, nimbuses=3,
                             nimbus_port=7000)
    try:
        for daemon in cluster.nimbuses[1:]:
            daemon.start()
        nimbuses.leader = "127.0.0.1:7000"  # says so but does not run: not asked
        assert cluster.leader_index() is None
        assert [a for a, _, _ in nimbuses.calls] == ["127.0.0.1:7001", "127.0.0.1:7002"]
        nimbuses.failing = {"127.0.0.1:7001"}
        nimbuses.leader = "127.0.0.1:7002"
        assert cluster.leader_index() == 2
        assert nimbuses.closed == ["127.0.0.1:7001", "127.0.0.1:7002"] * 2
        nimbuses.failing = set()
        nimbuses.leader = "127.0.0.1:7001"
        assert cluster.leader_index() == 1
    finally:
        cluster.stop()


def test_a_start_that_never_gets_an_answer_names_the_nimbus_and_stops_the_cluster(
        python: str, tmp_path: Path, nimbuses: StandInNimbuses) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=1, base_dir=tmp_path / "c", python=python,
                             nimbus_port=7000, slot_ports=[[7100]])
    with pytest.raises(WaitTimeout) as info:
        cluster.start(timeout_secs=0.5)
    assert str(info.value).startswith("timed out after 0.5s waiting for nimbus to answer\n"
                                      "===== nimbus/nimbus.out =====\n")
    assert cluster.nimbus.proc is not None and not cluster.nimbus.running
    assert cluster.supervisors[0].proc is None  # never reached
    assert nimbuses.closed == ["127.0.0.1:7000"]


def test_a_start_without_a_leader_or_a_supervisor_says_which(
        python: str, tmp_path: Path, nimbuses: StandInNimbuses,
        zk_state: tuple[StandInState, list[tuple[object, ...]]]) -> None:
    state, _ = zk_state
    nimbuses.answering = {"127.0.0.1:7000", "127.0.0.1:7001"}
    with pytest.raises(WaitTimeout) as no_leader:
        _two_by_two(python, tmp_path / "a").start(timeout_secs=0.5)
    assert str(no_leader.value).startswith("timed out after 0.5s waiting for a Nimbus leader\n=====")
    nimbuses.leader = "127.0.0.1:7000"
    state.add("sup-a", [7100, 7101])
    cluster = _two_by_two(python, tmp_path / "b")
    with pytest.raises(WaitTimeout) as unregistered:
        cluster.start(timeout_secs=0.5)
    assert str(unregistered.value).startswith(
        "timed out after 0.5s waiting for every supervisor to register in ZooKeeper\n=====")
    assert [d.running for d in cluster.daemons()] == [False] * 4
    assert state.closed


def test_a_supervisor_started_alone_waits_for_its_own_registration(
        python: str, tmp_path: Path, zk_state: tuple[StandInState, list[tuple[object, ...]]]) -> None:
    state, _ = zk_state
    cluster = _two_by_two(python, tmp_path)
    try:
        state.add("sup-a", [7100, 7101])
        with pytest.raises(WaitTimeout, match="supervisor-1 to register in ZooKeeper"):
            cluster.start_supervisor(1, timeout_secs=0.3)
        assert cluster.supervisors[1].running and not cluster.supervisors[0].running
        state.add("sup-b", [7200])
        cluster.start_supervisor(1, timeout_secs=30)
        assert cluster.stop_supervisor(1, kill=True) == -signal.SIGKILL
        assert cluster.stop_supervisor(0) is None  # never started
        cluster.supervisors[0].start()
        assert cluster.stop_supervisor(0) == -signal.SIGTERM
        cluster.nimbuses[1].start()
        assert cluster.stop_nimbus(index=1) == -signal.SIGTERM
        cluster.nimbuses[0].start()
        assert cluster.stop_nimbus(kill=True) == -signal.SIGKILL
        assert cluster.nimbuses[1].proc is not None and cluster.nimbuses[1].proc.returncode == -signal.SIGTERM
    finally:
        cluster.stop()


def test_clients_follow_the_cluster_and_are_closed_by_stop(
        python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[object, ...]] = []

    class Client:
        def __init__(self, *args: object, **kwargs: object) -> None:
            made.append((*args, kwargs))
            self.closed = False
            self.beats: object = {("n", 1): "beat-1", ("n", 2): "beat-2"}

        def worker_heartbeats(self, topology_id: str) -> object:
            if isinstance(self.beats, Exception):
                raise self.beats
            return {k: f"{v}:{topology_id}" for k, v in self.beats.items()}  # type: ignore[attr-defined]

        def close(self) -> None:
            self.closed = True
    monkeypatch.setattr(_processes.NimbusClient, "from_config", Client)
    cluster = _two_by_two(python, tmp_path)
    first = cluster.client()
    assert made == [({"nimbus.rpc.auth.token": "t"}, "127.0.0.1:7000",
                     {"timeout_secs": 10.0, "retries": 1, "seeds": ["127.0.0.1:7000", "127.0.0.1:7001"]})]
    cluster.client(timeout_secs=3, retries=4)
    assert made[1][2] == {"timeout_secs": 3, "retries": 4, "seeds": ["127.0.0.1:7000", "127.0.0.1:7001"]}
    assert cluster.worker_heartbeats("t-1") == {("n", 1): "beat-1:t-1", ("n", 2): "beat-2:t-1"}
    assert made[2][2] == {"timeout_secs": 5.0, "retries": 0, "seeds": ["127.0.0.1:7000", "127.0.0.1:7001"]}
    assert cluster.worker_heartbeat("t-2", "n", 2) == "beat-2:t-2"
    assert cluster.worker_heartbeat("t-2", "n", 3) is None
    assert len(made) == 3  # the heartbeats' client is kept
    beats = cluster._beats_client
    assert isinstance(beats, Client)
    beats.beats = RpcError("no leader")
    assert cluster.worker_heartbeats("t-1") == {}
    assert cluster.worker_heartbeat("t-1", "n", 1) is None
    cluster.stop()
    assert isinstance(first, Client) and first.closed and beats.closed


def test_start_ui_waits_until_the_ui_accepts_connections(python: str, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, python=python, ui=True,
                                 ui_port=port)
        try:
            cluster.start_ui(timeout_secs=30)
            assert cluster.ui is not None and cluster.ui.running
        finally:
            cluster.stop()


def test_start_ui_fails_at_once_when_the_ui_exits_or_never_listens(tmp_path: Path) -> None:
    quitter = tmp_path / "quitter"
    quitter.write_text("#!/bin/sh\necho 'ui failed to bind'\nexit 3\n")
    quitter.chmod(0o755)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, never listening
        cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path / "q", python=str(quitter),
                                 ui=True, ui_port=port)
        with pytest.raises(RuntimeError) as info:
            cluster.start_ui(timeout_secs=30)
        assert str(info.value) == ("the UI exited (code 3)\n===== ui/ui.out =====\nui failed to bind")
        cluster.stop()
        sleeper = _stand_in(tmp_path / "py")
        cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path / "s", python=sleeper,
                                 ui=True, ui_port=port)
        try:
            with pytest.raises(WaitTimeout) as timed_out:
                cluster.start_ui(timeout_secs=0.5)
            # a refused connection is "not yet", not an error to report
            assert str(timed_out.value).startswith(
                "timed out after 0.5s waiting for the UI to accept connections\n===== ui/")
        finally:
            cluster.stop()


def test_a_daemon_reads_nothing_and_runs_in_its_own_session(python: str, tmp_path: Path) -> None:
    daemon = DaemonProcess("nimbus", "nimbus", tmp_path / "n", {}, python)
    # the caller's stdin is a pipe here (as a terminal would be; pytest's is /dev/null already):
    # the daemon must not inherit it
    read_end, write_end = os.pipe()
    saved_stdin = os.dup(0)
    os.dup2(read_end, 0)
    try:
        daemon.start()
    finally:
        os.dup2(saved_stdin, 0)
        for fd in (saved_stdin, read_end, write_end):
            os.close(fd)
    try:
        _launch_record(daemon)
        pid = daemon.pid
        assert pid is not None
        assert os.getsid(pid) == pid  # its own session: a terminal's signals do not reach it
        assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
    finally:
        daemon.stop()


def test_stop_copes_with_its_own_directory_already_gone(python: str) -> None:
    cluster = ProcessCluster("zk:2181", supervisors=1, python=python)
    shutil.rmtree(cluster.base_dir)
    cluster.stop()
    assert not cluster.base_dir.exists()


def test_log_lines_skip_a_log_gone_and_show_undecodable_bytes_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _with_logs(tmp_path)
    (tmp_path / "nimbus" / "logs" / "nimbus.log").write_bytes(b"ok\nneedle \xff\xfe end\n")
    assert list(cluster.iter_log_lines("needle")) == [
        (tmp_path / "nimbus" / "logs" / "nimbus.log", "needle \ufffd\ufffd end"),
        (tmp_path / "supervisor-0" / "supervisor-0.out", "needle here")]
    assert cluster.dump_logs(lines=1).splitlines()[1] == "needle \ufffd\ufffd end"
    gone = tmp_path / "gone.log"  # listed, then removed before it was read
    monkeypatch.setattr(cluster, "log_files", lambda: [gone, *ProcessCluster.log_files(cluster)])
    assert [line for _, line in cluster.iter_log_lines("needle")] == ["needle \ufffd\ufffd end",
                                                                      "needle here"]
    assert cluster.dump_logs(lines=1) == ("===== nimbus/logs/nimbus.log =====\nneedle \ufffd\ufffd end\n"
                                          "===== supervisor-0/supervisor-0.out =====\ns3")


def test_the_ui_wait_does_not_depend_on_nimbus(python: str, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))  # listening only once the UI stand-in has launched
        cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, python=python, ui=True,
                                 ui_port=listener.getsockname()[1])
        cluster.nimbus.start()
        cluster.nimbus.stop(kill=True)  # every Nimbus exited: the UI still starts
        launched = tmp_path / "ui" / "launch.txt"

        def listen_once_launched() -> None:
            wait_for(launched.exists, 30, "the UI stand-in to launch")
            listener.listen()
        thread = threading.Thread(target=listen_once_launched)
        thread.start()
        try:
            cluster.start_ui(timeout_secs=30)
        finally:
            thread.join()
            cluster.stop()


def test_start_with_a_ui_returns_once_the_ui_listens(
        python: str, tmp_path: Path, nimbuses: StandInNimbuses,
        zk_state: tuple[StandInState, list[tuple[object, ...]]]) -> None:
    nimbuses.answering = {"127.0.0.1:7000"}
    nimbuses.leader = "127.0.0.1:7000"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, python=python, nimbus_port=7000,
                                 ui=True, ui_port=listener.getsockname()[1])
        try:
            cluster.start(timeout_secs=10)
            assert cluster.ui is not None and cluster.ui.running and cluster.nimbus.running
        finally:
            cluster.stop()


def test_a_nimbus_that_dies_on_start_fails_the_start_at_once(
        python: str, tmp_path: Path, nimbuses: StandInNimbuses) -> None:
    quitter = tmp_path / "quitter"
    quitter.write_text("#!/bin/sh\necho 'bad config'\nexit 3\n")
    quitter.chmod(0o755)
    cluster = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path / "c", python=str(quitter),
                             nimbus_port=7000)
    with pytest.raises(RuntimeError) as info:
        cluster.start_nimbus(timeout_secs=60)  # the first (and only) by default
    assert str(info.value) == ("Nimbus exited (code 3) while waiting for nimbus to answer\n"
                               "===== nimbus/nimbus.out =====\nbad config")
    assert nimbuses.opened == [("127.0.0.1:7000", {}, {"timeout_secs": 1.0, "retries": 0})]
    assert nimbuses.closed == ["127.0.0.1:7000"]


# -- the process match over a stand-in process table (nothing is signalled) ---------------------
class _TableEntry:
    """One row of a stand-in process table, as ``psutil.process_iter`` yields it."""

    def __init__(self, pid: int, cmdline: list[str] | None, attrs: list[str]) -> None:
        self.pid = pid
        self.info = {"cmdline": cmdline} if "cmdline" in attrs else {}


def _process_table(monkeypatch: pytest.MonkeyPatch,
                   rows: list[tuple[int, list[str] | None]]) -> list[object]:
    """Make ``psutil.process_iter`` list ``rows`` (pid, command line) instead of the machine's
    processes; returns the attribute lists it was asked for."""
    asked: list[object] = []

    def process_iter(attrs: list[str]) -> Iterator[_TableEntry]:
        asked.append(attrs)
        return iter([_TableEntry(pid, cmdline, list(attrs)) for pid, cmdline in rows])
    monkeypatch.setattr(_processes.psutil, "process_iter", process_iter)
    return asked


def test_find_processes_matches_the_command_lines_of_a_process_table(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = ["python", "-m", "stormpy.worker.process", "/base/supervisor-0/local", "topo-1"]
    asked = _process_table(monkeypatch, [
        (os.getpid(), ["python", "-m", "stormpy.worker.process", "/base"]),  # this process: never
        (300, worker),
        (200, ["python", "-m", "stormpy.worker.process", "/elsewhere", "topo-1"]),
        (100, ["", "python", "", "-m", "stormpy.worker.process", "/base/supervisor-1/local", ""]),
        (50, None),     # its command line could not be read
        (60, []),       # a zombie or a kernel thread: no command line
        (70, ["", ""]),
    ])
    assert find_processes("stormpy.worker.process", "/base") == [
        (100, ["python", "-m", "stormpy.worker.process", "/base/supervisor-1/local"]),  # empty args dropped
        (300, worker)]
    assert asked == [["cmdline"]]
    assert find_processes("/base", "topo-1") == [(300, worker)]
    # the command line is the arguments joined by a space: a needle may span arguments
    assert find_processes("-m stormpy.worker.process /base/supervisor-0") == [(300, worker)]
    assert find_processes("python -m") == [
        (100, ["python", "-m", "stormpy.worker.process", "/base/supervisor-1/local"]),
        (200, ["python", "-m", "stormpy.worker.process", "/elsewhere", "topo-1"]), (300, worker)]
    assert find_processes("nowhere") == []
    # no needle: every other process that has a command line, by pid
    assert [pid for pid, _ in find_processes()] == [100, 200, 300]


# -- the daemon's environment and output ---------------------------------------------------------
def test_a_daemon_inherits_the_environment_and_writes_stderr_to_its_out_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "py"
    script.write_text('#!/bin/sh\n'
                      'echo "mark=$STORMPY_TEST_MARK conf=$STORMPY_CONF unbuffered=$PYTHONUNBUFFERED"\n'
                      'echo "on stderr" >&2\nexec sleep 60\n')
    script.chmod(0o755)
    monkeypatch.setenv("STORMPY_TEST_MARK", "inherited")
    monkeypatch.setenv("STORMPY_CONF", "/the/caller/s.yaml")  # the daemon's own config wins
    monkeypatch.setenv("PYTHONUNBUFFERED", "0")
    daemon = DaemonProcess("nimbus", "nimbus", tmp_path / "n", {}, str(script))
    daemon.start()
    try:
        out = tmp_path / "n" / "nimbus.out"
        expected = f"mark=inherited conf={tmp_path / 'n' / 'stormpy.yaml'} unbuffered=1\non stderr\n"
        wait_for(lambda: out.read_text() == expected, 30, "the daemon's stdout and stderr")
    finally:
        daemon.stop()


# -- the cluster's defaults and the ports it picks -----------------------------------------------
def _recorded_free_ports(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """``free_ports`` handing out 6000, 6001, ... in order; returns the (count, host) asked."""
    asked: list[tuple[int, str]] = []
    next_ports = iter(range(6000, 7000))

    def free_ports(count: int, host: str) -> list[int]:
        asked.append((count, host))
        return [next(next_ports) for _ in range(count)]
    monkeypatch.setattr(_processes, "free_ports", free_ports)
    return asked


def test_the_defaults_one_nimbus_two_supervisors_of_two_slots_here_in_a_temporary_directory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _recorded_free_ports(monkeypatch)
    cluster = ProcessCluster("zk:2181")
    try:
        assert asked == [(1, "127.0.0.1"), (4, "127.0.0.1")]
        assert cluster.host == "127.0.0.1" and cluster.zk_root == "/stormpy"
        assert cluster.zk_connect == "zk:2181" and cluster.python == sys.executable
        assert cluster.base_dir.is_dir() and cluster.base_dir.name.startswith("stormpy-cluster-")
        assert cluster.base_dir.parent == Path(tempfile.gettempdir()).resolve()
        assert cluster.nimbus_ports == [6000] and cluster.slot_ports == [[6001, 6002], [6003, 6004]]
        assert [d.name for d in cluster.daemons()] == ["nimbus", "supervisor-0", "supervisor-1"]
        assert all(d.python == sys.executable for d in cluster.daemons())
        assert cluster.ui is None and cluster.ui_port is None
        assert cluster.extra_conf == {}
        base = cluster.base_dir
        assert cluster.supervisors[0].conf == {
            "storm.zookeeper.servers": ["zk:2181"], "storm.zookeeper.root": "/stormpy",
            "storm.local.dir": str(base / "supervisor-0" / "local"),
            "storm.log.dir": str(base / "supervisor-0" / "logs"), "nimbus.host": "127.0.0.1",
            "nimbus.seeds": ["127.0.0.1:6000"], "nimbus.thrift.port": 6000, "supervisor.host": "127.0.0.1",
            "supervisor.slots.ports": [6001, 6002], "logviewer.port": 0}
    finally:
        cluster.stop()
    assert not base.exists()


def test_free_ports_are_asked_of_the_clusters_host_nimbuses_then_slots_then_the_ui(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _recorded_free_ports(monkeypatch)
    cluster = ProcessCluster("zk:2181", supervisors=3, slots_per_supervisor=2, base_dir=tmp_path,
                             host="127.0.0.2", nimbuses=2, ui=True)
    assert asked == [(2, "127.0.0.2"), (6, "127.0.0.2"), (1, "127.0.0.2")]
    assert cluster.nimbus_ports == [6000, 6001] and cluster.nimbus_port == 6000
    assert cluster.slot_ports == [[6002, 6003], [6004, 6005], [6006, 6007]]
    assert cluster.ui_port == 6008 and cluster.ui is not None
    base = tmp_path.resolve()
    assert cluster.ui.conf == {
        "storm.zookeeper.servers": ["zk:2181"], "storm.zookeeper.root": "/stormpy",
        "storm.local.dir": str(base / "ui" / "local"), "storm.log.dir": str(base / "ui" / "logs"),
        "nimbus.host": "127.0.0.2", "nimbus.seeds": ["127.0.0.2:6000", "127.0.0.2:6001"],
        "nimbus.thrift.port": 6000, "supervisor.host": "127.0.0.2", "ui.host": "127.0.0.2", "ui.port": 6008}
    asked.clear()
    given = ProcessCluster("zk:2181", supervisors=1, slots_per_supervisor=3, base_dir=tmp_path, ui=True,
                           ui_port=9000, nimbus_port=7000)
    assert asked == [(3, "127.0.0.1")]  # only the slots: the Nimbus and UI ports are given
    assert given.slot_ports == [[6009, 6010, 6011]] and given.ui_port == 9000
    no_ui = ProcessCluster("zk:2181", supervisors=0, base_dir=tmp_path, ui_port=9000, nimbus_port=7000)
    assert no_ui.ui_port is None and no_ui.ui is None and no_ui.ui_url is None


def test_given_slot_ports_are_copied_and_a_relative_base_directory_is_made_absolute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ports = [[7100, 7101], [7200]]
    cluster = ProcessCluster("zk:2181", supervisors=5, base_dir="rel", nimbus_port=7000, slot_ports=ports)
    ports[0].append(7102)
    assert cluster.slot_ports == [[7100, 7101], [7200]]  # the caller's list is not shared
    assert cluster.supervisors[0].conf["supervisor.slots.ports"] == [7100, 7101]
    assert len(cluster.supervisors) == 2  # one per list of slot ports
    assert cluster.base_dir == tmp_path.resolve() / "rel" and not cluster._own_dir
    assert cluster.nimbus.workdir == tmp_path.resolve() / "rel" / "nimbus"
    assert cluster.nimbus.conf["storm.local.dir"] == str(tmp_path.resolve() / "rel" / "nimbus" / "local")
