"""The process cluster's daemons with stand-in children (a script in place of ``python``): the
command line, environment, directory and config each daemon gets, the ports chosen, the log
files and their dump, the bounded waits, and every child stopped (daemons and stray workers)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.local import _processes
from stormpy.local._processes import DaemonProcess, ProcessCluster, end_processes, find_processes

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
    assert all(d.python == "py" for d in cluster.daemons())
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
    assert "the impossible" in message
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
