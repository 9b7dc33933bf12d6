"""The Spark standalone cluster of ``stormpy dev-spark`` with a stand-in ``spark-class`` (a small
Python script in a temporary SPARK_HOME, no JVM): the exact command lines, environment, directory
and ports of the master and its workers, the start waiting for each daemon's ready line and
naming what it waited for with the log tail, restarts, stop reaping every daemon and executor
and removing the directory it made, and the errors naming a missing PySpark or Java.

The stand-in writes a ``launch {...}`` line (its argv, directory and Spark environment), a line on
stderr, then its ready line, and sleeps; files in ``<SPARK_LOG_DIR>/standin/`` change that per
daemon (exit at once, never ready, ready after a delay, ignore SIGTERM, wait on SIGTERM for every
worker to get one). Executors are processes the test starts in a worker's work directory."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stormpy.host.waiting import wait_for
from stormpy.local import _spark_cluster
from stormpy.local._spark_cluster import (
    EXECUTOR_CLASS,
    SparkClusterNotFound,
    SparkClusterStartError,
    SparkStandalone,
    _Daemon,
    _log_tail,
    run_dev_spark,
    spark_home,
)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: the first port the stand-in ``free_ports`` hands out (the stand-ins bind nothing)
PORT = 47100
#: generous: the stand-ins are ready in milliseconds, the machine may be busy
START_SECS = 60.0
#: a stand-in executor JVM: runs until its parent (the test) is gone
EXECUTOR = "import os, time\nparent = os.getppid()\nwhile os.getppid() == parent:\n    time.sleep(0.2)\n"
#: a mutant that makes a stop or a wait hang fails its test instead of the run's timeout
pytestmark = pytest.mark.timeout(60)

STAND_IN = """#!{python} -S
import json, os, signal, sys, time
parent = os.getppid()
args = sys.argv[1:]
if args[0].endswith(".Master"):
    name = "master"
else:
    name = os.path.basename(args[args.index("--work-dir") + 1])
opts = os.path.join(os.environ["SPARK_LOG_DIR"], "standin")


def opt(what):
    try:
        with open(os.path.join(opts, name + "." + what)) as f:
            return f.read()
    except OSError:
        return None


print("launch " + json.dumps({{
    "argv": sys.argv, "cwd": os.getcwd(),
    "env": {{k: os.environ.get(k) for k in ("SPARK_HOME", "SPARK_LOCAL_IP", "SPARK_LOG_DIR",
                                          "SPARK_NO_DAEMONIZE", "STANDIN_INHERITED")}}}}), flush=True)
print(name + " says on stderr", file=sys.stderr, flush=True)
if opt("exit") is not None:
    print(name + " fails", flush=True)
    sys.exit(int(opt("exit")))
if opt("stubborn") is not None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if opt("rendezvous") is not None:
    wanted = int(opt("rendezvous"))
    met = os.path.join(opts, "terms")

    def on_term(*_):
        with open(met, "a") as f:
            f.write(name + "\\n")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with open(met) as f:
                if len(set(f.read().split())) >= wanted:
                    os._exit(0)
            time.sleep(0.01)
        os._exit(7)
    signal.signal(signal.SIGTERM, on_term)
if opt("delay") is not None:
    time.sleep(float(opt("delay")))
if opt("silent") is None:
    if name == "master":
        print("INFO Master: I have been elected leader! New state: ALIVE", flush=True)
    else:
        print("INFO Worker: Successfully registered with master " + args[-1], flush=True)
while os.getppid() == parent:  # a test killed half-way leaves nothing running
    time.sleep(0.2)
"""


def standin(base: Path, name: str, what: str, value: str = "") -> None:
    """Make the stand-in ``name`` (master, worker-0, ...) of the cluster in ``base`` do ``what``."""
    (base / "standin").mkdir(parents=True, exist_ok=True)
    (base / "standin" / f"{name}.{what}").write_text(value)


def launch(log: Path, index: int = 0) -> dict[str, Any]:
    """The ``index``-th launch record in a daemon's log."""
    records = [json.loads(line[len("launch "):]) for line in log.read_text().splitlines()
               if line.startswith("launch ")]
    return records[index]


class Home:
    """The stand-in SPARK_HOME and what the tests record of the cluster's calls."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / "pyspark"
        self.spark_class = self.dir / "bin" / "spark-class"
        self.port_calls: list[tuple[int, str]] = []
        self.executors: list[subprocess.Popen[bytes]] = []
        self.clusters: list[SparkStandalone] = []

    def cluster(self, workers: int = 1, **kwargs: Any) -> SparkStandalone:
        kwargs.setdefault("startup_timeout_secs", START_SECS)
        cluster = SparkStandalone(workers, **kwargs)
        self.clusters.append(cluster)
        return cluster

    def executor(self, work: Path) -> subprocess.Popen[bytes]:
        """A stand-in executor JVM in an application directory of the work dir ``work``."""
        app = work / "app-20260101000000-0000" / "0"
        app.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([sys.executable, "-S", "-c", EXECUTOR,
                                 EXECUTOR_CLASS, "--app-id", "app-20260101000000-0000"], cwd=app)
        self.executors.append(proc)
        wait_for(lambda: os.readlink(f"/proc/{proc.pid}/cwd") == str(app), 30, "the executor to run",
                 ignore=(OSError,))
        return proc


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    h = Home(tmp_path)
    (h.dir / "bin").mkdir(parents=True)
    (h.dir / "__init__.py").write_text("")
    h.spark_class.write_text(STAND_IN.format(python=sys.executable))
    h.spark_class.chmod(h.spark_class.stat().st_mode | stat.S_IXUSR)
    pyspark = types.ModuleType("pyspark")
    pyspark.__file__ = str(h.dir / "__init__.py")
    monkeypatch.setitem(sys.modules, "pyspark", pyspark)
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("#!/bin/sh\n")
    (jdk / "bin" / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    monkeypatch.setenv("STANDIN_INHERITED", "yes")
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))

    def ports(count: int, host: str = "127.0.0.1") -> list[int]:
        h.port_calls.append((count, host))
        return [PORT + i for i in range(count)]
    monkeypatch.setattr(_spark_cluster, "free_ports", ports)
    real_end = _spark_cluster.end_processes

    def guarded_end(pids: list[int], grace_secs: float) -> None:
        """A broken executor match must fail the test, not end other processes of the machine."""
        assert set(pids) <= {p.pid for p in h.executors}, f"would end processes it did not start: {pids}"
        real_end(pids, grace_secs)
    monkeypatch.setattr(_spark_cluster, "end_processes", guarded_end)
    yield h
    for cluster in h.clusters:
        for daemon in [cluster.master, *cluster.workers]:
            if daemon is not None and daemon.proc is not None and daemon.proc.poll() is None:
                daemon.proc.kill()
                daemon.proc.wait()
            if daemon is not None and daemon._log is not None:
                daemon._log.close()
    for proc in h.executors:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _gone(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is not None


# -- finding PySpark and Java --------------------------------------------------------------------
def test_spark_home_is_the_pyspark_package_directory(home: Home, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    link = tmp_path / "linked"
    link.symlink_to(home.dir)
    sys.modules["pyspark"].__file__ = str(link / "__init__.py")
    assert spark_home() == home.dir.resolve()


def test_a_missing_pyspark_is_named_with_the_install_command(home: Home,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(SparkClusterNotFound) as info:
        spark_home()
    assert str(info.value) == ("a Spark cluster needs PySpark (import of pyspark halted; None in "
                               "sys.modules); install it with: pip install 'stormpy-runtime[spark]'")
    assert info.value.__cause__ is None and info.value.__suppress_context__
    cluster = home.cluster(base_dir=home.root / "spark")
    with pytest.raises(SparkClusterNotFound, match="needs PySpark"):
        cluster.start()
    assert cluster.master is None and not (home.root / "spark").exists()


def test_a_pyspark_without_its_launcher_is_refused(home: Home) -> None:
    home.spark_class.unlink()
    home.spark_class.mkdir()  # not a file
    with pytest.raises(SparkClusterNotFound) as info:
        spark_home()
    assert str(info.value) == (f"{home.dir} has no bin/spark-class: this PySpark install cannot "
                               "launch Spark daemons")


def test_a_missing_java_is_named_and_nothing_starts(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    nojdk = home.root / "nojdk"
    nojdk.mkdir()
    monkeypatch.setenv("JAVA_HOME", str(nojdk))
    cluster = home.cluster()
    with pytest.raises(SparkClusterNotFound) as info:
        cluster.start()
    assert str(info.value) == f"a Spark cluster needs Java: JAVA_HOME={nojdk} has no executable bin/java"
    assert cluster.master is None and cluster.workers == [] and home.port_calls == []
    assert list(Path(tempfile.gettempdir()).iterdir()) == []


# -- settings --------------------------------------------------------------------------------------
def test_the_defaults_before_start() -> None:
    cluster = SparkStandalone()
    assert (cluster.workers_count, cluster.host, cluster.worker_cores, cluster.worker_memory,
            cluster.startup_timeout_secs, cluster.die_with_parent) == (1, "127.0.0.1", 1, "1g", 120.0, True)
    assert cluster.master is None and cluster.workers == [] and cluster.master_port == 0
    assert cluster.executor_processes() == [] and cluster.dead_daemons() == []
    with pytest.raises(RuntimeError) as info:
        _ = cluster.base_dir
    assert str(info.value) == "SparkStandalone.base_dir is known only after start()"
    with pytest.raises(RuntimeError) as info:
        _ = cluster.master_url
    assert str(info.value) == "SparkStandalone.master_url is known only after start()"


def test_bad_counts_are_refused_with_the_value() -> None:
    with pytest.raises(ValueError) as info:
        SparkStandalone(-1)
    assert str(info.value) == "workers must be >= 0, got -1"
    with pytest.raises(ValueError) as info:
        SparkStandalone(1, worker_cores=0)
    assert str(info.value) == "worker_cores must be >= 1, got 0"
    assert SparkStandalone(0, worker_cores=1).workers_count == 0


def test_a_relative_base_dir_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cluster = SparkStandalone(2, base_dir="rel")
    assert cluster.base_dir == tmp_path.resolve() / "rel"
    assert cluster.worker_dir(1) == tmp_path.resolve() / "rel" / "worker-1"


# -- start: command lines, environment, ports, logs -----------------------------------------------
def test_master_and_workers_get_their_command_lines_environment_and_ports(home: Home) -> None:
    base = home.root / "nested" / "spark"
    cluster = home.cluster(2, host="127.0.0.2", base_dir=base, worker_cores=3, worker_memory="512m")
    with _stdin_a_pipe():  # what the daemons must not inherit
        assert cluster.start() is cluster
    assert home.port_calls == [(6, "127.0.0.2")]
    assert cluster.master_port == PORT and cluster.master_url == f"spark://127.0.0.2:{PORT}"
    spark_class = str(home.dir.resolve() / "bin" / "spark-class")
    env = {"SPARK_HOME": str(home.dir.resolve()), "SPARK_LOCAL_IP": "127.0.0.2",
           "SPARK_LOG_DIR": str(base), "SPARK_NO_DAEMONIZE": "1", "STANDIN_INHERITED": "yes"}
    assert cluster.master is not None and cluster.master.log_path == base / "master.log"
    assert launch(base / "master.log") == {
        "argv": [spark_class, MASTER_CLASS, "--host", "127.0.0.2", "--port", str(PORT),
                 "--webui-port", str(PORT + 1)], "cwd": str(base), "env": env}
    for i in range(2):
        assert cluster.workers[i].name == f"worker-{i}"
        assert cluster.workers[i].log_path == base / f"worker-{i}.log"
        assert launch(base / f"worker-{i}.log") == {
            "argv": [spark_class, WORKER_CLASS, "--host", "127.0.0.2", "--port", str(PORT + 2 + 2 * i),
                     "--webui-port", str(PORT + 3 + 2 * i), "--cores", "3", "--memory", "512m",
                     "--work-dir", str(base / f"worker-{i}"), f"spark://127.0.0.2:{PORT}"],
            "cwd": str(base), "env": env}
        assert cluster.worker_dir(i) == base / f"worker-{i}"
    for daemon in [cluster.master, *cluster.workers]:
        assert daemon.proc is not None and daemon.running
        pid = daemon.proc.pid
        assert os.getsid(pid) == pid  # a session of its own
        assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
        assert os.readlink(f"/proc/{pid}/fd/1") == os.readlink(f"/proc/{pid}/fd/2") == str(daemon.log_path)
        assert f"{daemon.name} says on stderr" in daemon.log_path.read_text()
    cluster.stop()


@contextlib.contextmanager
def _stdin_a_pipe() -> Iterator[None]:
    """This process's standard input is a pipe for the block (a terminal, a shell's pipe)."""
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)


def test_the_default_cluster_and_a_requested_master_port(home: Home) -> None:
    base = home.root / "spark"
    base.mkdir()  # an existing directory is used as it is
    cluster = home.cluster(base_dir=base, master_port=47999).start()
    assert home.port_calls == [(4, "127.0.0.1")]
    assert cluster.master_url == "spark://127.0.0.1:47999"
    assert launch(base / "master.log")["argv"][2:] == ["--host", "127.0.0.1", "--port", "47999",
                                                       "--webui-port", str(PORT + 1)]
    assert len(cluster.workers) == 1
    assert launch(base / "worker-0.log")["argv"][2:] == [
        "--host", "127.0.0.1", "--port", str(PORT + 2), "--webui-port", str(PORT + 3), "--cores", "1",
        "--memory", "1g", "--work-dir", str(base / "worker-0"), "spark://127.0.0.1:47999"]
    cluster.stop()
    assert base.is_dir() and (base / "master.log").is_file()  # a given directory is kept
    assert cluster.base_dir == base


def test_start_returns_once_the_master_and_every_worker_are_ready(home: Home) -> None:
    base = home.root / "spark"
    standin(base, "master", "delay", "0.5")
    standin(base, "worker-1", "delay", "0.5")
    cluster = home.cluster(2, base_dir=base).start()
    assert "I have been elected leader" in (base / "master.log").read_text()
    for i in range(2):
        assert "Successfully registered with master" in (base / f"worker-{i}.log").read_text()
    assert cluster.dead_daemons() == []
    cluster.stop()


def test_a_worker_that_exits_fails_the_start_with_its_status_and_log(home: Home) -> None:
    base = home.root / "spark"
    standin(base, "worker-1", "exit", "3")
    cluster = home.cluster(2, base_dir=base)
    with pytest.raises(SparkClusterStartError) as info:
        cluster.start()
    log = base / "worker-1.log"
    assert str(info.value) == (f"Spark worker-1 exited with status 3 (log {log}):\n"
                               + "\n".join(log.read_text().splitlines()))
    assert "worker-1 fails" in str(info.value)
    # everything it started is stopped
    assert cluster.master is not None and cluster.master.proc is not None
    assert cluster.master.proc.returncode == -signal.SIGTERM
    assert cluster.workers[0].proc is not None and cluster.workers[0].proc.returncode == -signal.SIGTERM


def test_a_master_never_ready_times_out_naming_it_and_starts_no_worker(home: Home) -> None:
    base = home.root / "spark"
    standin(base, "master", "silent")
    cluster = home.cluster(1, base_dir=base, startup_timeout_secs=0.5)
    with pytest.raises(SparkClusterStartError) as info:
        cluster.start()
    log = base / "master.log"
    assert str(info.value) == (f"Spark master was not ready within 0.5 s (log {log}):\n"
                               + "\n".join(log.read_text().splitlines()))
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert cluster.workers[0].proc is None and not (base / "worker-0.log").exists()
    assert cluster.master is not None and cluster.master.proc is not None
    assert cluster.master.proc.returncode == -signal.SIGTERM


def test_a_failed_start_removes_the_temporary_directory_it_made(home: Home) -> None:
    cluster = home.cluster(0, startup_timeout_secs=0.5)
    # the stand-in reads its options from the log directory, unknown before start: no ready line
    # because the launcher exits at once
    home.spark_class.write_text("#!/bin/sh\nexit 4\n")
    with pytest.raises(SparkClusterStartError, match=r"^Spark master exited with status 4 \(log "):
        cluster.start()
    assert list(Path(tempfile.gettempdir()).iterdir()) == []


# -- the temporary directory -----------------------------------------------------------------------
def test_without_a_base_dir_a_temporary_one_is_made_and_removed_by_stop(home: Home) -> None:
    cluster = home.cluster(1)
    with cluster as spark:
        assert spark is cluster
        base = cluster.base_dir
        assert base.parent == Path(tempfile.gettempdir()) and base.name.startswith("stormpy-spark-")
        assert (base / "master.log").is_file() and (base / "worker-0.log").is_file()
        assert launch(base / "master.log")["env"]["SPARK_LOG_DIR"] == str(base)
        procs = [d.proc for d in [cluster.master, *cluster.workers] if d is not None]
    assert not base.exists()
    assert all(p is not None and p.returncode == -signal.SIGTERM for p in procs)
    with pytest.raises(RuntimeError, match="known only after start"):
        _ = cluster.base_dir
    cluster.stop()  # idempotent
    assert cluster.executor_processes() == []
    cluster.start()  # a new temporary directory
    assert cluster.base_dir.is_dir() and cluster.base_dir != base
    cluster.stop()
    assert list(Path(tempfile.gettempdir()).iterdir()) == []


def test_stop_copes_with_its_temporary_directory_already_gone(home: Home) -> None:
    cluster = home.cluster(0).start()
    shutil.rmtree(cluster.base_dir)
    cluster.stop()
    with pytest.raises(RuntimeError, match="known only after start"):
        _ = cluster.base_dir


# -- restarts ----------------------------------------------------------------------------------------
def test_the_master_restarts_on_its_port_and_waits_for_a_new_ready_line(home: Home) -> None:
    base = home.root / "spark"
    cluster = home.cluster(1, base_dir=base, startup_timeout_secs=0.5).start()
    master = cluster.master
    assert master is not None and master.proc is not None
    first = master.proc
    cluster.stop_master()
    assert first.returncode == -signal.SIGTERM
    assert cluster.workers[0].running and cluster.dead_daemons() == ["master"]
    standin(base, "master", "silent")  # the old ready line must not count
    with pytest.raises(SparkClusterStartError, match="^Spark master was not ready within 0.5 s"):
        cluster.start_master()
    assert master.running  # not ready is not stopped: a later start_master waits for it again
    cluster.stop_master()
    standin(base, "master", "delay", "0.3")
    (base / "standin" / "master.silent").unlink()
    cluster.startup_timeout_secs = START_SECS
    cluster.start_master()
    assert master.is_ready() and master.running
    text = (base / "master.log").read_text()
    assert text.count("elected leader") == 2 and text.count("launch ") == 3  # appended
    assert launch(base / "master.log", 2)["argv"][5] == str(PORT)
    cluster.stop_master(kill=True)
    assert master.proc is not None and master.proc.returncode == -signal.SIGKILL
    cluster.stop()


def test_a_master_ignoring_sigterm_is_killed_after_the_grace(home: Home) -> None:
    base = home.root / "spark"
    standin(base, "master", "stubborn")
    cluster = home.cluster(0, base_dir=base).start()
    cluster.stop_master(grace_secs=0.2)
    assert cluster.master is not None and cluster.master.proc is not None
    assert cluster.master.proc.returncode == -signal.SIGKILL
    cluster.stop()


def test_start_master_and_the_registration_wait_need_a_started_cluster(home: Home) -> None:
    cluster = home.cluster(1)
    for call in (cluster.start_master, cluster.wait_workers_registered):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == "SparkStandalone.start() first"
    cluster.stop_master()  # nothing to stop


def test_a_worker_stops_with_its_executors_and_starts_again(home: Home) -> None:
    base = home.root / "spark"
    cluster = home.cluster(2, base_dir=base).start()
    mine = home.executor(base / "worker-0")
    other = home.executor(base / "worker-1")
    first = cluster.workers[0].proc
    cluster.stop_worker(0)
    assert first is not None and first.returncode == -signal.SIGTERM
    assert _gone(mine)  # ended by the time it returns
    assert other.poll() is None and cluster.workers[1].running
    assert cluster.dead_daemons() == ["worker-0"]
    cluster.start_worker(0)
    assert cluster.workers[0].running and cluster.workers[0].is_ready()
    assert cluster.workers[0].proc is not first
    assert (base / "worker-0.log").read_text().count("Successfully registered") == 2
    cluster.stop()


def test_a_worker_ignoring_sigterm_is_killed_after_the_grace(home: Home) -> None:
    base = home.root / "spark"
    standin(base, "worker-0", "stubborn")
    cluster = home.cluster(1, base_dir=base).start()
    cluster.stop_worker(0, grace_secs=0.2)
    assert cluster.workers[0].proc is not None and cluster.workers[0].proc.returncode == -signal.SIGKILL
    cluster.stop()


def test_a_restarted_worker_that_never_registers_times_out(home: Home) -> None:
    base = home.root / "spark"
    cluster = home.cluster(1, base_dir=base).start()
    cluster.stop_worker(0)
    standin(base, "worker-0", "silent")
    cluster.startup_timeout_secs = 0.3
    with pytest.raises(SparkClusterStartError) as info:
        cluster.start_worker(0)
    log = base / "worker-0.log"
    assert str(info.value).startswith(f"Spark worker-0 was not ready within 0.3 s (log {log}):\n")
    cluster.stop()


# -- executors ---------------------------------------------------------------------------------------
def test_executors_are_found_by_the_work_dir_they_run_in(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    base = home.root / "spark"
    cluster = home.cluster(2, base_dir=base).start()
    first = home.executor(base / "worker-0")
    second = home.executor(base / "worker-1")
    third = home.executor(base / "worker-0")
    argv = [sys.executable, "-S", "-c", EXECUTOR, EXECUTOR_CLASS, "--app-id",
            "app-20260101000000-0000"]
    gone = subprocess.Popen([sys.executable, "-S", "-c", ""])
    gone.wait()
    real_find = _spark_cluster.find_processes
    needles: list[tuple[str, ...]] = []

    def find(*args: str) -> list[tuple[int, list[str]]]:
        needles.append(args)
        # a listed process that is gone by the time its directory is read is skipped
        return sorted([*real_find(*args), (gone.pid, [EXECUTOR_CLASS])])
    monkeypatch.setattr(_spark_cluster, "find_processes", find)
    assert cluster.executor_processes(0) == sorted([(first.pid, argv), (third.pid, argv)])
    assert cluster.executor_processes(1) == [(second.pid, argv)]
    assert cluster.executor_processes() == sorted([(first.pid, argv), (second.pid, argv), (third.pid, argv)])
    assert set(needles) == {(EXECUTOR_CLASS,)}
    cluster.stop()
    assert _gone(first) and _gone(second) and _gone(third)


def test_a_worker_index_does_not_match_the_work_dirs_of_longer_indexes(home: Home) -> None:
    base = home.root / "spark"
    cluster = home.cluster(11, base_dir=base)
    tenth = home.executor(base / "worker-10")
    assert cluster.executor_processes(1) == []
    assert [pid for pid, _ in cluster.executor_processes(10)] == [tenth.pid]


# -- the registration wait -------------------------------------------------------------------------
def test_the_registration_wait_counts_the_running_workers_since_the_master_started(home: Home) -> None:
    base = home.root / "spark"
    cluster = home.cluster(3, base_dir=base).start()
    master_log = base / "master.log"

    def register() -> None:
        with open(master_log, "a") as f:
            f.write("INFO Master: Registering worker 127.0.0.1:1 with 1 cores, 1024.0 MiB RAM\n")
    register()
    register()
    with pytest.raises(SparkClusterStartError) as info:
        cluster.wait_workers_registered(0.3)
    assert str(info.value) == ("3 Spark workers did not register within 0.3 s:\n"
                               + "\n".join(master_log.read_text().splitlines()))
    assert info.value.__cause__ is None and info.value.__suppress_context__
    register()
    cluster.wait_workers_registered(0.3)
    cluster.stop_worker(2)  # only running workers are waited for
    cluster.stop_master()
    cluster.start_master()  # registrations before the restart do not count
    with pytest.raises(SparkClusterStartError, match="^2 Spark workers did not register within 0.3 s"):
        cluster.wait_workers_registered(0.3)
    register()
    register()
    cluster.wait_workers_registered(0.3)
    master_log.unlink()  # an unreadable log is not yet, not an error
    with pytest.raises(SparkClusterStartError, match="^2 Spark workers did not register within 0.2 s"):
        cluster.wait_workers_registered(0.2)
    cluster.stop()


# -- stop ----------------------------------------------------------------------------------------------
def test_stop_sends_sigterm_to_every_worker_before_waiting_for_any(home: Home) -> None:
    base = home.root / "spark"
    for i in range(2):
        # each exits 0 only once both got SIGTERM (7 after 5 s otherwise)
        standin(base, f"worker-{i}", "rendezvous", "2")
    cluster = home.cluster(2, base_dir=base).start()
    cluster.stop()
    assert [w.proc.returncode for w in cluster.workers if w.proc is not None] == [0, 0]
    assert cluster.master is not None and cluster.master.proc is not None
    assert cluster.master.proc.returncode == -signal.SIGTERM


def test_stop_kills_what_ignores_sigterm_and_ends_every_executor(home: Home) -> None:
    base = home.root / "spark"
    for name in ("master", "worker-0"):
        standin(base, name, "stubborn")
    cluster = home.cluster(2, base_dir=base).start()
    executors = [home.executor(base / "worker-0"), home.executor(base / "worker-1")]
    cluster.stop(grace_secs=0.3)
    codes = [d.proc.returncode for d in [cluster.master, *cluster.workers] if d is not None and d.proc]
    assert codes == [-signal.SIGKILL, -signal.SIGKILL, -signal.SIGTERM]
    assert all(_gone(e) for e in executors)
    assert cluster.dead_daemons() == ["master", "worker-0", "worker-1"]
    cluster.stop()  # idempotent


def test_dead_daemons_names_the_daemons_that_exited(home: Home) -> None:
    cluster = home.cluster(2, base_dir=home.root / "spark").start()
    assert cluster.dead_daemons() == []
    for daemon in (cluster.workers[1], cluster.master):
        assert daemon is not None and daemon.proc is not None
        daemon.proc.kill()
        daemon.proc.wait()
    assert cluster.dead_daemons() == ["master", "worker-1"]
    cluster.stop()


def test_daemons_get_sigterm_when_the_thread_that_started_them_ends(home: Home) -> None:
    bound = home.cluster(1, base_dir=home.root / "bound")
    free = home.cluster(1, base_dir=home.root / "free", die_with_parent=False)
    for cluster in (free, bound):
        starter = threading.Thread(target=cluster.start)
        starter.start()
        starter.join()
    for daemon in [bound.master, *bound.workers]:
        assert daemon is not None and daemon.proc is not None
        wait_for(daemon.proc.poll, 30, f"{daemon.name} to get its parent-death signal")
        assert daemon.proc.returncode == -signal.SIGTERM
    # their thread ended before the other's
    assert free.master is not None and free.master.running and free.workers[0].running
    free.stop()
    bound.stop()


# -- one daemon ------------------------------------------------------------------------------------
def _open_fds_to(path: Path) -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                count += 1
        except OSError:
            continue
    return count


def test_a_daemon_starts_once_appends_to_its_log_and_closes_it(tmp_path: Path) -> None:
    log = tmp_path / "deep" / "er" / "d.log"
    script = ("import sys\nprint('up', flush=True)\n"
              "print('ready!' if sys.argv[1] == 'ready' else 'not yet', flush=True)\n" + EXECUTOR)
    daemon = _Daemon("d", [sys.executable, "-S", "-c", script, "ready"], log, dict(os.environ), "ready!",
                     False)
    assert not daemon.is_ready() and not daemon.running  # no log yet
    try:
        daemon.start()
        first = daemon.proc
        daemon.start()  # running: nothing launched
        assert daemon.proc is first
        wait_for(daemon.is_ready, 30, "the daemon's ready line")
        assert _open_fds_to(log) == 1
        daemon.stop(5.0)
        assert _open_fds_to(log) == 0 and first is not None and first.returncode == -signal.SIGTERM
        daemon.stop(5.0)  # twice: nothing left to do
        daemon.argv[-1] = "silent"
        daemon.start()  # the directory exists now
        wait_for(lambda: log.read_text().count("not yet") == 1, 30, "the second start's output")
        assert not daemon.is_ready()  # the first start's line does not count
        assert log.read_text().splitlines() == ["up", "ready!", "up", "not yet"]
        daemon.stop(5.0, kill=True)
        assert daemon.proc is not None and daemon.proc.returncode == -signal.SIGKILL
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()


# -- log tails ---------------------------------------------------------------------------------------
def test_a_log_tail_is_the_last_lines_of_the_last_32_kib(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    data = b"".join(b"line %05d\n" % i for i in range(5000))  # 50,000 bytes
    log.write_bytes(data)
    assert _log_tail(log) == "\n".join(f"line {i:05d}" for i in range(4970, 5000))
    assert _log_tail(log, 3) == "line 04997\nline 04998\nline 04999"
    assert _log_tail(log, 10_000) == "\n".join(data[-32 * 1024:].decode().splitlines())
    small = tmp_path / "small.log"
    small.write_bytes(b"first\nbad \xff byte\nlast")
    assert _log_tail(small) == "first\nbad \ufffd byte\nlast"
    assert _log_tail(tmp_path / "missing.log") == ""


# -- stormpy dev-spark -------------------------------------------------------------------------------
def _dev_spark(on_ready: Callable[[SparkStandalone], Any], *, stop: bool = True,
               **kwargs: Any) -> tuple[int, list[str], list[SparkStandalone]]:
    """``run_dev_spark`` on this thread; its event is set once it is ready (``stop``)."""
    lines: list[str] = []
    seen: list[SparkStandalone] = []
    stop_event = threading.Event()

    def ready(cluster: SparkStandalone) -> None:
        seen.append(cluster)
        on_ready(cluster)
        if stop:
            stop_event.set()
    code = run_dev_spark(echo=lines.append, stop_event=stop_event, on_ready=ready, **kwargs)
    return code, lines, seen


def test_dev_spark_prints_its_address_and_stops_on_its_event(home: Home) -> None:
    def check(cluster: SparkStandalone) -> None:
        assert cluster.master is not None and cluster.master.running
        base.append(cluster.base_dir)
    base: list[Path] = []
    code, lines, seen = _dev_spark(check)
    url = f"spark://127.0.0.1:{PORT}"
    assert code == 0 and lines == [
        f"Spark master serving on {url} with 1 worker(s) (1 core(s), 1g each); logs in {base[0]}",
        f"point Spark bolts at it with: -c spark.master={url}; Ctrl-C stops it",
        "stopping the Spark cluster"]
    cluster = seen[0]
    assert cluster.workers_count == 1 and cluster.worker_cores == 1 and cluster.worker_memory == "1g"
    assert home.port_calls == [(4, "127.0.0.1")]
    assert not base[0].exists()  # stopped and its temporary directory removed
    daemons = [d for d in [cluster.master, *cluster.workers] if d is not None]
    assert all(d.proc is not None and d.proc.returncode == -signal.SIGTERM for d in daemons)


def test_dev_spark_passes_its_settings_on(home: Home) -> None:
    base = home.root / "spark"
    code, lines, seen = _dev_spark(lambda cluster: None, workers=2, base_dir=base, master_port=47555,
                                   worker_cores=2, worker_memory="2g")
    assert code == 0 and lines[0] == (f"Spark master serving on spark://127.0.0.1:47555 with 2 worker(s) "
                                      f"(2 core(s), 2g each); logs in {base}")
    assert launch(base / "worker-1.log")["argv"][2:] == [
        "--host", "127.0.0.1", "--port", str(PORT + 4), "--webui-port", str(PORT + 5), "--cores", "2",
        "--memory", "2g", "--work-dir", str(base / "worker-1"), "spark://127.0.0.1:47555"]
    assert base.is_dir()


def test_dev_spark_reports_a_daemon_that_died_with_its_log_tail(home: Home) -> None:
    base = home.root / "spark"

    def kill_worker(cluster: SparkStandalone) -> None:
        proc = cluster.workers[1].proc
        assert proc is not None
        proc.kill()
        proc.wait()
    code, lines, _ = _dev_spark(kill_worker, stop=False, workers=2, base_dir=base)
    log = base / "worker-1.log"
    assert code == 1
    assert lines[2:] == [f"Spark worker-1 exited; last log lines:\n{_log_tail(log)}"]
    assert "Successfully registered" in lines[2]
