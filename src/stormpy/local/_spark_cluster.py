"""A real Spark standalone cluster on this machine: a master and N workers started from the
installed PySpark's own launcher, for ``stormpy dev-spark``, ``stormpy dev-cluster --spark`` and
tests.

::

    with SparkStandalone(workers=1) as spark:      # free ports on 127.0.0.1, logs in a temp dir
        conf = {"spark.master": spark.master_url}  # spark://127.0.0.1:PORT

Every daemon is ``$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master …`` or
``… deploy.worker.Worker spark://…`` with ``SPARK_HOME`` the ``pyspark`` package directory (its
wheel ships the jars and ``bin/``); ``spark-class`` execs the JVM, so the process started is the
JVM itself.

Contract:

* :meth:`SparkStandalone.start` returns once the master is ALIVE and every worker has registered
  with it (found in their logs), or raises :class:`SparkClusterStartError` with the log tails;
  :class:`SparkClusterNotFound` when PySpark or Java is missing (the message says what to install).
* Logs: ``<base_dir>/master.log``, ``<base_dir>/worker-<i>.log``; executors work (and log) under
  ``<base_dir>/worker-<i>/``. ``base_dir=None``: a temporary directory removed by :meth:`stop`.
* :meth:`stop` sends SIGTERM to the workers (which stop their executors) and the master, SIGKILL
  after a grace period, then ends any executor JVM still running from this cluster (a worker killed
  with SIGKILL leaves its executors behind), so no JVM outlives it; idempotent. Started daemons
  get SIGTERM when the thread that started them dies (Linux).
* :meth:`stop_master` / :meth:`start_master` restart the master on the same port (workers register
  again on their own within Spark's retry interval, ~5-15 s); :meth:`executor_processes` lists the
  executor JVMs of a worker (tests kill them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from stormpy.host.daemon import serve_until_stopped
from stormpy.host.java import find_java, missing_java_reason
from stormpy.host.ports import free_ports
from stormpy.host.processes import parent_death_signal, terminate_popen
from stormpy.host.waiting import WaitTimeout, wait_for
from stormpy.local._processes import end_processes, find_processes

__all__ = ["SparkClusterNotFound", "SparkClusterStartError", "SparkStandalone", "run_dev_spark",
           "spark_home"]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
MASTER_READY = "I have been elected leader"
WORKER_READY = "Successfully registered with master"


class SparkClusterNotFound(RuntimeError):
    """PySpark or Java is missing; the message says what to install."""


class SparkClusterStartError(RuntimeError):
    """A daemon exited or did not become ready in time; the message has its log tail."""


def spark_home() -> Path:
    """The installed PySpark's directory, which is a Spark distribution (``bin/spark-class``)."""
    try:
        import pyspark
    except ImportError as exc:
        raise SparkClusterNotFound(f"a Spark cluster needs PySpark ({exc}); install it with: "
                                   "pip install 'stormpy-runtime[spark]'") from None
    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file():
        raise SparkClusterNotFound(f"{home} has no bin/spark-class: this PySpark install cannot "
                                   "launch Spark daemons")
    return home


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 32 * 1024))
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class _Daemon:
    """One spark-class JVM with its log file."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str],
                 ready: str, die_with_parent: bool) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.ready = ready
        self.die_with_parent = die_with_parent
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._offset = 0

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.running:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed by stop()
        self._offset = self._log.tell()
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            cwd=self.log_path.parent, env=self.env, start_new_session=True,
            preexec_fn=parent_death_signal() if self.die_with_parent else None)

    def is_ready(self) -> bool:
        """The ready line appeared in the log since the last start."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._offset)
                return self.ready.encode() in f.read()
        except OSError:
            return False

    def stop(self, grace_secs: float, *, kill: bool = False) -> None:
        if self.proc is not None:
            if kill and self.proc.poll() is None:
                self.proc.kill()
            terminate_popen(self.proc, grace_secs)
        if self._log is not None:
            self._log.close()
            self._log = None


class SparkStandalone:
    """A standalone Spark master and ``workers`` workers on ``host`` (see the module contract).

    ``worker_cores`` / ``worker_memory`` are what each worker offers to applications;
    ``master_port=0`` picks a free port (kept across :meth:`stop_master`/:meth:`start_master`).
    """

    def __init__(self, workers: int = 1, *, host: str = "127.0.0.1",
                 base_dir: str | os.PathLike[str] | None = None, master_port: int = 0,
                 worker_cores: int = 1, worker_memory: str = "1g",
                 startup_timeout_secs: float = 120.0, die_with_parent: bool = True) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        if worker_cores < 1:
            raise ValueError(f"worker_cores must be >= 1, got {worker_cores}")
        self.host = host
        self.workers_count = workers
        self._own_dir = base_dir is None
        self._base = Path(base_dir).resolve() if base_dir is not None else None
        self._requested_master_port = master_port
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.startup_timeout_secs = startup_timeout_secs
        self.die_with_parent = die_with_parent
        self.master: _Daemon | None = None
        self.workers: list[_Daemon] = []
        self.master_port = 0

    # -- addresses -------------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        """``spark://host:port`` for ``spark.master``."""
        if not self.master_port:
            raise RuntimeError("SparkStandalone.master_url is known only after start()")
        return f"spark://{self.host}:{self.master_port}"

    @property
    def base_dir(self) -> Path:
        if self._base is None:
            raise RuntimeError("SparkStandalone.base_dir is known only after start()")
        return self._base

    def worker_dir(self, index: int) -> Path:
        return self.base_dir / f"worker-{index}"

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> SparkStandalone:
        """Start the master and every worker; wait until all are ready (module contract)."""
        home = spark_home()
        if find_java() is None:
            raise SparkClusterNotFound(f"a Spark cluster needs Java: {missing_java_reason()}")
        if self._base is None:
            self._base = Path(tempfile.mkdtemp(prefix="stormpy-spark-"))
        else:
            self._base.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP=self.host,
                   SPARK_LOG_DIR=str(self._base), SPARK_NO_DAEMONIZE="1")
        ports = free_ports(2 + 2 * self.workers_count, self.host)
        self.master_port = self._requested_master_port or ports[0]
        spark_class = str(home / "bin" / "spark-class")
        self.master = _Daemon("master", [
            spark_class, MASTER_CLASS, "--host", self.host, "--port", str(self.master_port),
            "--webui-port", str(ports[1])], self._base / "master.log", env, MASTER_READY,
            self.die_with_parent)
        self.workers = []
        for i in range(self.workers_count):
            work = self.worker_dir(i)
            self.workers.append(_Daemon(f"worker-{i}", [
                spark_class, WORKER_CLASS, "--host", self.host, "--port", str(ports[2 + 2 * i]),
                "--webui-port", str(ports[3 + 2 * i]), "--cores", str(self.worker_cores),
                "--memory", self.worker_memory, "--work-dir", str(work), self.master_url],
                self._base / f"worker-{i}.log", env, WORKER_READY, self.die_with_parent))
        try:
            self.start_master()
            for worker in self.workers:
                worker.start()
            for worker in self.workers:
                self._wait_ready(worker)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, daemon: _Daemon) -> None:
        def exited() -> None:
            if not daemon.running:
                code = daemon.proc.returncode if daemon.proc is not None else None
                raise SparkClusterStartError(f"Spark {daemon.name} exited with status {code} "
                                             f"(log {daemon.log_path}):\n{_log_tail(daemon.log_path)}")

        try:
            wait_for(daemon.is_ready, self.startup_timeout_secs, f"Spark {daemon.name} to be ready",
                     interval=0.1, check=exited)
        except WaitTimeout:
            raise SparkClusterStartError(
                f"Spark {daemon.name} was not ready within {self.startup_timeout_secs:g} s "
                f"(log {daemon.log_path}):\n{_log_tail(daemon.log_path)}") from None

    def start_master(self) -> None:
        """Start (or restart) the master on its port and wait until it is ALIVE."""
        if self.master is None:
            raise RuntimeError("SparkStandalone.start() first")
        self.master.start()
        self._wait_ready(self.master)

    def stop_master(self, *, kill: bool = False, grace_secs: float = 10.0) -> None:
        """Stop the master (SIGTERM, or SIGKILL with ``kill``); workers and executors keep
        running and register again when it is back."""
        if self.master is not None:
            self.master.stop(grace_secs, kill=kill)

    def stop_worker(self, index: int, *, grace_secs: float = 10.0) -> None:
        """Stop worker ``index`` (SIGTERM: it stops its executors first) and end any executor of
        it that outlived it (one can, and would go on running the driver's tasks); returns once
        none is left."""
        self.workers[index].stop(grace_secs)
        strays = [pid for pid, _ in self.executor_processes(index)]
        if strays:
            end_processes(strays, grace_secs=5.0)

    def start_worker(self, index: int) -> None:
        """Start worker ``index`` again and wait until it has registered with the master."""
        worker = self.workers[index]
        worker.start()
        self._wait_ready(worker)

    def wait_workers_registered(self, timeout_secs: float = 60.0) -> None:
        """Wait until every running worker has (re-)registered with the master: the master's log
        shows one more 'Registering worker' per worker since it last started."""
        master = self.master
        if master is None:
            raise RuntimeError("SparkStandalone.start() first")
        wanted = sum(w.running for w in self.workers)

        def registered() -> bool:
            with open(master.log_path, "rb") as f:
                f.seek(master._offset)
                return f.read().count(b"Registering worker") >= wanted

        try:
            wait_for(registered, timeout_secs, f"{wanted} Spark workers to register", interval=0.2,
                     ignore=(OSError,))
        except WaitTimeout:
            raise SparkClusterStartError(f"{wanted} Spark workers did not register within "
                                         f"{timeout_secs:g} s:\n{_log_tail(master.log_path)}") from None

    def executor_processes(self, index: int | None = None) -> list[tuple[int, list[str]]]:
        """(pid, argv) of the executor JVMs launched by worker ``index`` (all workers: None)."""
        if self._base is None:
            return []
        dirs = [self.worker_dir(index)] if index is not None else [
            self.worker_dir(i) for i in range(len(self.workers))]
        found: dict[int, list[str]] = {}
        for work in dirs:
            for pid, argv in find_processes(EXECUTOR_CLASS):
                # the executor runs in its app's directory under the worker's work dir (a path
                # prefix: worker-1's is not worker-10's)
                with contextlib.suppress(OSError):
                    if Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(work):
                        found[pid] = argv
        return sorted(found.items())

    def stop(self, grace_secs: float = 10.0) -> None:
        """Stop workers (and their executors) and the master; end stray executors; idempotent."""
        for worker in self.workers:
            if worker.proc is not None and worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)  # in parallel
        for worker in self.workers:
            worker.stop(grace_secs)
        if self.master is not None:
            self.master.stop(grace_secs)
        strays = [pid for pid, _ in self.executor_processes()]
        if strays:
            end_processes(strays, grace_secs=5.0)
        if self._own_dir and self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def dead_daemons(self) -> list[str]:
        """Names of the daemons that exited on their own (stopped ones included)."""
        return [d.name for d in [*( [self.master] if self.master else []), *self.workers]
                if d.proc is not None and d.proc.poll() is not None]


def run_dev_spark(workers: int = 1, base_dir: str | os.PathLike[str] | None = None, *,
                  master_port: int = 0, worker_cores: int = 1, worker_memory: str = "1g",
                  echo: Callable[[str], Any] = print, stop_event: threading.Event | None = None,
                  on_ready: Callable[[SparkStandalone], Any] | None = None) -> int:
    """Run a standalone cluster until SIGINT/SIGTERM (handlers only on the main thread) or
    ``stop_event``; return 0, or 1 when a daemon died on its own (its log tail is echoed).
    Raises SparkClusterNotFound / SparkClusterStartError when it cannot start."""
    cluster = SparkStandalone(workers, base_dir=base_dir, master_port=master_port,
                              worker_cores=worker_cores, worker_memory=worker_memory)

    def start() -> None:
        cluster.start()
        echo(f"Spark master serving on {cluster.master_url} with {workers} worker(s) "
             f"({worker_cores} core(s), {worker_memory} each); logs in {cluster.base_dir}")
        echo(f"point Spark bolts at it with: -c spark.master={cluster.master_url}; Ctrl-C stops it")
        if on_ready is not None:
            on_ready(cluster)

    def exited() -> int | None:
        dead = cluster.dead_daemons()
        if not dead:
            return None
        for daemon in [cluster.master, *cluster.workers]:
            if daemon is not None and daemon.name in dead:
                echo(f"Spark {daemon.name} exited; last log lines:\n{_log_tail(daemon.log_path)}")
        return 1

    return serve_until_stopped(start, cluster.stop, exited, stopping="stopping the Spark cluster",
                               echo=echo, stop_event=stop_event)
