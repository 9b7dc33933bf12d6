"""Apache Storm itself on a real cluster as the bench's peer: a Nimbus and one supervisor, each
its own JVM, beside a ZooKeeper, with the word count on worker JVMs the supervisor starts
(``python -m bench.peers --storm-cluster``).

Contract:

* :func:`build_home` lays out a Storm installation (``storm.home``) from Maven Central artifacts
  under ``bench/peers/storm/target/storm-home`` (git-ignored), the layout of Storm's binary
  distribution as far as the daemons and workers read it: ``lib/`` (``storm-server`` and what it
  needs: the daemons' classpath), ``lib-worker/`` (``storm-client`` and what it needs: the
  framework part of every worker's classpath), ``log4j2/cluster.xml`` and ``log4j2/worker.xml``
  (from ``bench/peers/storm/home/``). It rebuilds only when a source changed.
* :class:`StormCluster` starts a ZooKeeper (:class:`stormpy.cluster.zkserver.ZooKeeperServer`,
  free port), then Nimbus and one supervisor with ``workers`` slots, as Storm's ``storm nimbus``
  and ``storm supervisor`` commands start them (``-Dstorm.home``, ``-Dstorm.log.dir``, the
  ``cluster.xml`` log configuration, ``lib/*`` and the configuration directory on the classpath,
  ``STORM_CONF_DIR``), every port free and on 127.0.0.1, Storm's even scheduler
  (``DefaultScheduler``: ``topology.workers`` workers, executors spread evenly), and returns once
  Nimbus and the supervisor serve. Its files (``conf/storm.yaml``, ``storm-local/``, the daemons'
  and workers' logs under ``logs/``, the rounds' progress files) are under
  ``bench/peers/storm/target/storm-cluster`` (git-ignored), emptied when a cluster starts and kept
  afterwards for reading. :meth:`StormCluster.close` stops the supervisor, the worker JVMs it
  started (and their LogWriters), Nimbus and ZooKeeper, and then every process left whose command
  line names that directory; starting a cluster stops such leftovers first.
* :class:`StormClusterPeer` is :class:`bench.peers.storm_peer.StormPeer`'s counterpart on that
  cluster: a client JVM (``stormpy.bench.ClusterBench``, Storm's client classpath:
  ``lib-worker/*``, the configuration directory, the topology jar as ``storm.jar``) submits one
  topology per round with ``StormSubmitter`` and answers with the round's words, seconds (first
  emit to last word counted, and acked; the workers' clocks) and the worker JVMs' memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import psutil

from bench.peers import storm_peer
from stormpy.cluster.zkserver import ZooKeeperServer, require_java
from stormpy.host.child_server import ChildServer
from stormpy.host.ports import free_ports
from stormpy.host.processes import kill_process_group, processes_mentioning, terminate

HOME_SOURCES = storm_peer.PROJECT / "home"
HOME = storm_peer.TARGET / "storm-home"
RUN_DIR = storm_peer.TARGET / "storm-cluster"
#: touched after a complete layout
HOME_STAMP = HOME / ".built"
CLIENT_MAIN = "stormpy.bench.ClusterBench"
#: the workers' JVM options (``worker.childopts``; ``%HEAP-MEM%`` is ``worker.heap.memory.mb``,
#: 768 by default): Storm's default heap, G1, and none of the Java 8 GC logging flags of Storm's
#: default ``worker.childopts``
WORKER_CHILDOPTS = "-Xmx%HEAP-MEM%m -XX:+UseG1GC"
#: the client JVM only submits, kills and reads progress files
CLIENT_JVM_OPTS = ("-Xmx256m", "-XX:+UseSerialGC")


def _home_sources() -> list[Path]:
    return [*storm_peer.sources(), *(p for p in HOME_SOURCES.rglob("*") if p.is_file())]


def home_built() -> bool:
    """The layout is complete and newer than every source it comes from."""
    if not HOME_STAMP.exists():
        return False
    made = HOME_STAMP.stat().st_mtime
    return all(p.stat().st_mtime <= made for p in _home_sources())


def _mvn(args: Sequence[str], cwd: Path) -> None:
    res = subprocess.run(["mvn", "-q", "-B", *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"mvn {' '.join(args)} in {cwd} failed:\n{res.stdout[-4000:]}"
                           f"{res.stderr[-2000:]}")


def build_home() -> Path:
    """Build the topology jar (:func:`bench.peers.storm_peer.build`) and lay out the Storm
    installation (see the module doc) unless it is up to date; return its directory. Raises
    RuntimeError with Maven's output when a step fails."""
    storm_peer.build()
    if home_built():
        return HOME
    shutil.rmtree(HOME, ignore_errors=True)
    HOME.mkdir(parents=True)
    _mvn(["dependency:copy-dependencies", "-DincludeScope=runtime",
          f"-DoutputDirectory={HOME / 'lib'}"], storm_peer.PROJECT)
    _mvn(["dependency:copy-dependencies", "-DincludeScope=runtime",
          f"-Dstorm.version={storm_peer.storm_version()}",
          f"-DoutputDirectory={HOME / 'lib-worker'}"], HOME_SOURCES)
    shutil.copytree(HOME_SOURCES / "log4j2", HOME / "log4j2")
    HOME_STAMP.touch()
    return HOME


def storm_yaml(settings: Mapping[str, Any]) -> str:
    """``settings`` as a ``storm.yaml`` (one ``key: value`` line each; JSON values are YAML)."""
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in settings.items())


def _stop_leftovers(run_dir: Path) -> None:
    """Stop every process whose command line names ``run_dir`` (a daemon, a worker, a LogWriter
    of an earlier cluster there)."""
    procs = []
    for pid in processes_mentioning(str(run_dir)):
        with contextlib.suppress(psutil.NoSuchProcess):
            procs.append(psutil.Process(pid))
    terminate(procs, 10.0)


class StormDaemon(ChildServer):
    """One Storm daemon JVM (``main``) of the installation ``home``, configured by
    ``conf_dir/storm.yaml``, serving Thrift on ``port``; logs to ``logs_dir/<name>.log``."""

    main: ClassVar[str]
    name: ClassVar[str]
    #: the daemon's JVM options (Storm's defaults: ``nimbus.childopts``, ``supervisor.childopts``)
    childopts: ClassVar[tuple[str, ...]]

    def __init__(self, port: int, *, home: Path, conf_dir: Path, logs_dir: Path) -> None:
        super().__init__(port, work_dir=logs_dir / self.name, startup_timeout_secs=300.0)
        self.home = home
        self.conf_dir = conf_dir
        self.logs_dir = logs_dir
        self._java = ""

    def prepare(self) -> None:
        self._java = require_java()

    def command(self) -> list[str]:
        return [self._java, "-server", *self.childopts, f"-Ddaemon.name={self.name}",
                f"-Dstorm.home={self.home}", f"-Dstorm.log.dir={self.logs_dir}",
                "-Djava.deserialization.disabled=true", f"-Dlogfile.name={self.name}.log",
                f"-Dlog4j.configurationFile={self.home / 'log4j2' / 'cluster.xml'}",
                "-cp", os.pathsep.join([str(self.home / "lib" / "*"), str(self.conf_dir)]),
                self.main]

    def launch_env(self) -> Mapping[str, str]:
        # the supervisor puts STORM_CONF_DIR (else storm.home/conf) on each worker's classpath
        return {**os.environ, "STORM_CONF_DIR": str(self.conf_dir)}

    def serving(self) -> bool:
        socket.create_connection((self.host, self.port), timeout=1.0).close()
        return True


class NimbusDaemon(StormDaemon):
    kind = "Storm's Nimbus"
    main = "org.apache.storm.daemon.nimbus.Nimbus"
    name = "nimbus"
    childopts = ("-Xmx1024m",)


class SupervisorDaemon(StormDaemon):
    """The supervisor; :meth:`stop` also stops the worker JVMs (and their LogWriters) it
    started, which outlive a stopped supervisor in Storm."""

    kind = "Storm's supervisor"
    main = "org.apache.storm.daemon.supervisor.Supervisor"
    name = "supervisor"
    childopts = ("-Xmx256m",)

    def stop(self, grace_secs: float | None = None) -> None:
        pid = self.pid
        workers: list[psutil.Process] = []
        if pid is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                workers = psutil.Process(pid).children(recursive=True)
        super().stop(grace_secs)
        terminate(workers, 10.0)
        if pid is not None:
            kill_process_group(pid)  # the workers run in the supervisor's process group


class StormCluster:
    """ZooKeeper, Nimbus and one supervisor with ``workers`` slots (see the module doc). Use as
    a context manager."""

    def __init__(self, workers: int = 2, run_dir: Path = RUN_DIR, home: Path = HOME) -> None:
        if workers < 1:
            raise ValueError(f"workers {workers!r}: at least 1")
        self.workers = workers
        self.run_dir = run_dir.resolve()
        self.home = home
        self.conf_dir = self.run_dir / "conf"
        self.progress_dir = self.run_dir / "progress"
        self.logs_dir = self.run_dir / "logs"
        self._stack = contextlib.ExitStack()

    def start(self) -> Self:
        _stop_leftovers(self.run_dir)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        for d in (self.conf_dir, self.progress_dir, self.logs_dir):
            d.mkdir(parents=True)
        self._stack.callback(_stop_leftovers, self.run_dir)
        try:
            zk = self._stack.enter_context(
                ZooKeeperServer(data_dir=self.run_dir / "zookeeper").start())
            nimbus_port, supervisor_port, *slots = free_ports(2 + self.workers)
            (self.conf_dir / "storm.yaml").write_text(storm_yaml({
                "storm.zookeeper.servers": [zk.host],
                "storm.zookeeper.port": zk.port,
                "storm.local.dir": str(self.run_dir / "storm-local"),
                "storm.local.hostname": "127.0.0.1",
                "nimbus.seeds": ["127.0.0.1"],
                "nimbus.thrift.port": nimbus_port,
                "supervisor.thrift.port": supervisor_port,
                "supervisor.slots.ports": slots,
                "storm.scheduler": "org.apache.storm.scheduler.DefaultScheduler",
                "worker.childopts": WORKER_CHILDOPTS,
            }))
            dirs = {"home": self.home, "conf_dir": self.conf_dir, "logs_dir": self.logs_dir}
            self._stack.enter_context(NimbusDaemon(nimbus_port, **dirs).start())
            self._stack.enter_context(SupervisorDaemon(supervisor_port, **dirs).start())
        except BaseException:
            self.close()
            raise
        return self

    def client_classpath(self) -> str:
        """Storm's client classpath (what ``storm jar`` runs with) plus the topology jar."""
        return os.pathsep.join([str(storm_peer.JAR), str(self.home / "lib-worker" / "*"),
                                str(self.conf_dir)])

    def close(self) -> None:
        """Stop the supervisor and its workers, Nimbus, ZooKeeper and any leftover (idempotent)."""
        self._stack.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StormClusterPeer:
    """The word count on a :class:`StormCluster` of ``workers`` worker JVMs over the sentences of
    ``sentences_file`` (the ShellBolt runs ``python``). ``ready`` and :meth:`run` are
    :class:`bench.peers.storm_peer.StormPeer`'s; ``run`` also answers ``worker_pids`` (the
    worker JVMs that counted) and ``worker_rss_kb``. Use as a context manager."""

    def __init__(self, sentences_file: Path, python: str = sys.executable, workers: int = 2,
                 run_dir: Path = RUN_DIR) -> None:
        self.cluster = StormCluster(workers, run_dir, build_home()).start()
        try:
            self.client = storm_peer.JvmRounds(
                CLIENT_MAIN, [str(sentences_file.resolve()), python, str(workers),
                              str(self.cluster.progress_dir)],
                log_prefix="stormpy-storm-cluster-client-",
                jvm_opts=(*CLIENT_JVM_OPTS, f"-Dstorm.jar={storm_peer.JAR}"),
                classpath=self.cluster.client_classpath())
        except BaseException:
            self.cluster.close()
            raise
        self.ready = self.client.ready

    def run(self, workload: str, acking: bool, split: str, sentences: int) -> dict[str, Any]:
        """One round (see :meth:`bench.peers.storm_peer.StormPeer.run`); a RuntimeError names
        where the daemons' and workers' logs are."""
        try:
            return self.client.command(storm_peer.run_command(workload, acking, split, sentences))
        except RuntimeError as e:
            raise RuntimeError(f"{e}\n(the cluster's logs: {self.cluster.logs_dir})") from e

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.cluster.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
