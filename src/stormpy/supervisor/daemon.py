"""The supervisor daemon: runs the worker processes ZooKeeper's assignments give this host.

Contract of :class:`Supervisor` (see also docs/cluster-contract.md):

* ``start()`` claims the supervisor id (persisted under ``storm.local.dir``, so a restart keeps
  it), logs to ``<log dir>/supervisor-<id>.log``, connects to ZooKeeper, ADOPTS worker processes
  still running from a previous run of this id (pid file + process identity; their heartbeats are
  then judged like any other; :mod:`~stormpy.supervisor.adoption`), registers the ephemeral
  ``SupervisorInfo`` and starts three threads: heartbeat (re-registers every
  ``supervisor.heartbeat.frequency.secs``, and at once after a worker restart, publishing its
  ``worker_launches`` and ``worker_restarts`` counters in ``SupervisorInfo.stats`` and each
  slot's restarts, last exit reason and crash loop in ``SupervisorInfo.workers``, and the port
  of the host's log server, :mod:`stormpy.logviewer`, which it runs on ``logviewer.port``), sync,
  download, and the relay of its workers' heartbeats to the leading Nimbus over RPC every
  ``task.heartbeat.frequency.secs`` (:mod:`~stormpy.supervisor.heartbeat_relay`; workers write
  no heartbeat to ZooKeeper). All are :class:`~stormpy.host.service.Service` loops (download's
  is the DownloadQueue's). Slow downloads, worker launches or a slow Nimbus never delay the
  heartbeat.
* Sync runs on every ZooKeeper change of the assignments and at least every
  ``supervisor.monitor.frequency.secs``, and when a worker exits: it queues downloads of missing
  topologies, stops workers no longer assigned (or whose executors changed), restarts workers that
  exited, have a heartbeat older than ``supervisor.worker.timeout.secs``, or gave none within
  ``supervisor.worker.start.timeout.secs`` of launch, launches missing workers whose code is
  present (all three in :class:`~stormpy.supervisor.reconcile.WorkerReconciler`; a worker that
  keeps exiting within seconds of its launch is relaunched with a growing delay, see
  :class:`~stormpy.supervisor.launcher.RelaunchBackoff`; a failed download is retried with a
  growing delay too, see :class:`~stormpy.supervisor.download.DownloadQueue`), and removes
  ``stormdist`` and worker directories of topologies no longer assigned
  (:mod:`~stormpy.supervisor.cleanup`).
  When ZooKeeper cannot be read, the last known assignments stay in force (no worker is stopped
  for a ZooKeeper outage).
* Stopping a worker: SIGTERM, ``supervisor.worker.shutdown.sleep.secs`` of grace (its default is
  in :mod:`stormpy.config`), SIGKILL, then the worker's whole process group is killed.
* ``stop()`` stops the threads, stops every worker (unless ``stop_workers=False``, which leaves
  them running for a later adoption), unregisters, disconnects and releases the id.
  ``run_forever()`` (of the :class:`~stormpy.host.daemon.Daemon` base) runs until SIGTERM/SIGINT
  and then stops.
  Stopping never waits for ZooKeeper: it first puts the cluster state into shutdown mode, so
  ZooKeeper calls still running in its threads fail at once while ZooKeeper is unreachable;
  unregistering is then skipped (the ephemeral node vanishes when the session expires). Workers
  are stopped all the same.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import yaml

import stormpy
from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.cluster.records import Assignment, SupervisorInfo
from stormpy.cluster.state import ClusterState
from stormpy.cluster.zk_start import connect_at_start
from stormpy.config import SettingError, local_dir, log_dir, merged, setting
from stormpy.host.daemon import Daemon, log_to_file
from stormpy.host.service import Service
from stormpy.logviewer.server import LogviewerServer
from stormpy.supervisor.adoption import adopt_workers
from stormpy.supervisor.bundle_return import BundleReturner
from stormpy.supervisor.cleanup import remove_unused
from stormpy.supervisor.download import BundleDownloader, DownloadQueue
from stormpy.supervisor.heartbeat_relay import HeartbeatRelay
from stormpy.supervisor.launcher import WorkerHandle, terminate_workers
from stormpy.supervisor.local_state import claim_supervisor_id
from stormpy.supervisor.reconcile import WorkerReconciler
from stormpy.supervisor.sync import LocalAssignment, assigned_slots

__all__ = ["Supervisor"]


def _ports(value: Any) -> tuple[int, ...]:
    if isinstance(value, int | str):
        value = [value]
    return tuple(sorted({int(p) for p in value}))


def _positive(conf: Mapping[str, Any], key: str) -> float:
    """``conf[key]`` as seconds > 0 (a loop interval), else a SettingError naming ``key``."""
    value = conf[key]
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = 0.0
    if isinstance(value, bool) or not seconds > 0:
        raise SettingError(key, f"must be a number of seconds > 0, got {value!r}")
    return seconds


class Supervisor(Daemon):
    """One supervisor daemon configured by ``conf`` (daemon keys: ``supervisor.*``,
    ``storm.zookeeper.*``, ``storm.local.dir``, ``storm.log.dir``, ``nimbus.*``).

    ``root_logging=True`` (the ``stormpy supervisor`` command) sends every log record of the
    process to the supervisor log; otherwise (embedded in tests or ``dev-cluster``) only this
    supervisor's own records go there.
    """

    def __init__(self, conf: Mapping[str, Any], *, root_logging: bool = False) -> None:
        super().__init__()
        self.conf = merged(conf)
        self.host = str(setting(self.conf, "supervisor.host"))
        self.ports = _ports(setting(self.conf, "supervisor.slots.ports"))
        self.local_dir = local_dir(self.conf).resolve()
        self.log_dir = log_dir(self.conf).resolve()
        self.conf["storm.local.dir"] = str(self.local_dir)
        self.conf["storm.log.dir"] = str(self.log_dir)
        self.heartbeat_secs = _positive(self.conf, "supervisor.heartbeat.frequency.secs")
        self.monitor_secs = _positive(self.conf, "supervisor.monitor.frequency.secs")
        self.worker_timeout = float(self.conf["supervisor.worker.timeout.secs"])
        self.start_timeout = float(self.conf["supervisor.worker.start.timeout.secs"])
        self.shutdown_grace = float(self.conf["supervisor.worker.shutdown.sleep.secs"])
        self.root_logging = root_logging
        self.start_time = time.time()
        self.supervisor_id: str | None = None
        self.dirs: SupervisorDirs | None = None
        self.state: ClusterState | None = None
        self.log = logging.getLogger("stormpy.supervisor")
        self._log_handler: logging.Handler | None = None
        self._id_lock: IO[str] | None = None
        self._assignments: dict[str, Assignment] = {}
        self._problems: list[str] = []
        self._downloads: DownloadQueue | None = None
        self._returner: BundleReturner | None = None
        self._reconciler: WorkerReconciler | None = None
        self._relay: HeartbeatRelay | None = None
        self.logviewer: LogviewerServer | None = None
        #: published in the supervisor's ZooKeeper record (SupervisorInfo.stats)
        self.counters: dict[str, float] = {"worker_launches": 0.0, "worker_restarts": 0.0}
        self._heartbeat = Service("supervisor-heartbeat", self._register, interval=self.heartbeat_secs,
                                  first_delay=self.heartbeat_secs,
                                  expected_errors=(ClusterStateError, OSError))
        self._sync = Service("supervisor-sync", self.sync_once, interval=self.monitor_secs)
        self._started = False
        self._stopped = False
        self.syncs = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Supervisor:
        """Claim the id, connect, adopt, register and start the threads; return self."""
        if self._started:
            raise RuntimeError("a Supervisor can be started only once")
        self._started = True
        if not self.ports:
            raise ValueError("supervisor.slots.ports is empty: a supervisor needs at least one port")
        self.supervisor_id, self._id_lock = claim_supervisor_id(self.local_dir, self.host, self.ports)
        self.dirs = SupervisorDirs(self.local_dir, self.supervisor_id, self.log_dir)
        self._setup_logging()
        self.log.info("supervisor %s starting: host %s, slots %s, local dir %s", self.supervisor_id,
                      self.host, list(self.ports), self.local_dir)
        try:
            self._write_worker_conf()
            self.state = connect_at_start(self.conf, self._stop_requested, self.log)
            self._downloads = DownloadQueue(BundleDownloader(self.conf, self.dirs, log=self.log),
                                            self._sync.wake, log=self.log)
            self._returner = BundleReturner(self.conf, self.dirs, self.state, log=self.log)
            self._reconciler = WorkerReconciler(
                self.dirs, worker_timeout=self.worker_timeout, start_timeout=self.start_timeout,
                shutdown_grace=self.shutdown_grace, log=self.log, on_exit=self._sync.wake,
                stopping=lambda: self._sync.stopping, env=_worker_env, counters=self.counters)
            self._reconciler.workers.update(
                adopt_workers(self.dirs, self.ports, self.shutdown_grace, self.log))
            self._start_logviewer()
            self._register()
            reconciler = self._reconciler
            self._relay = HeartbeatRelay(
                self.conf, self.dirs, self.supervisor_id, log=self.log,
                running=lambda: {port: h.topology_id for port, h in reconciler.snapshot().items()})
        except ClusterStateError as exc:
            self.log.error("supervisor could not start: %s", exc)
            self._release()
            raise
        except BaseException:
            self.log.exception("supervisor could not start")
            self._release()
            raise
        self._downloads.start()
        self._relay.start()
        for service in (self._heartbeat, self._sync):
            service.log = self.log
            service.start()
        return self

    def stop(self, *, stop_workers: bool = True) -> None:
        """Stop the daemon (and its workers unless ``stop_workers=False``); idempotent."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        self.log.info("supervisor %s stopping%s", self.supervisor_id,
                      "" if stop_workers else " (leaving its workers running)")
        self._heartbeat.request_stop()
        self._sync.request_stop()
        if self.state is not None:
            self.state.begin_shutdown()  # threads blocked on an unreachable ZooKeeper return now
        if self._downloads is not None:
            self._downloads.stop(self.shutdown_grace + 10.0)
        if self._returner is not None:
            self._returner.stop(self.shutdown_grace + 10.0)
        if self._relay is not None:
            self._relay.stop(self.shutdown_grace + 10.0)
        for service in (self._heartbeat, self._sync):
            service.stop(self.shutdown_grace + 10.0)
        if stop_workers and self._reconciler is not None:
            terminate_workers(self._reconciler.take_all(), self.shutdown_grace, self.log)
        if self.state is not None and self.supervisor_id is not None:
            if not self.state.connected:
                self.log.warning("ZooKeeper is unreachable: not unregistering (the supervisor's node "
                                 "vanishes when its session expires)")
            else:
                try:
                    self.state.unregister_supervisor(self.supervisor_id)
                except ClusterStateError as exc:
                    self.log.warning("could not unregister: %s", exc)
        self.log.info("supervisor %s stopped", self.supervisor_id)
        self._release()

    def _release(self) -> None:
        if self.logviewer is not None:
            self.logviewer.stop()
            self.logviewer = None
        if self.state is not None:
            self.state.close()
            self.state = None
        if self._id_lock is not None:
            self._id_lock.close()
            self._id_lock = None
        if self._log_handler is not None:
            logging.getLogger().removeHandler(self._log_handler)
            self.log.removeHandler(self._log_handler)
            self._log_handler.close()
            self._log_handler = None

    def run_forever(self) -> None:
        """Start (if needed), run until SIGTERM/SIGINT or :meth:`request_stop`, then stop."""
        if not self._started:
            self.start()
        super().run_forever()

    def __enter__(self) -> Supervisor:
        return self.start() if not self._started else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- introspection -------------------------------------------------------------------------
    def workers(self) -> dict[int, WorkerHandle]:
        """port → handle of every worker this supervisor currently runs (a copy)."""
        return self._reconciler.snapshot() if self._reconciler is not None else {}

    def sync_now(self) -> None:
        """Ask for a sync round as soon as possible."""
        self._sync.wake()

    @property
    def log_path(self) -> Path | None:
        """The supervisor's log file (known after :meth:`start`)."""
        return self.dirs.supervisor_log if self.dirs else None

    # -- setup ---------------------------------------------------------------------------------
    def _setup_logging(self) -> None:
        assert self.dirs is not None
        who = f"supervisor {self.supervisor_id}"
        if self.root_logging:
            self._log_handler = log_to_file(self.dirs.supervisor_log, who)
        else:
            self.log = logging.getLogger(f"stormpy.supervisor.{self.supervisor_id}")
            self._log_handler = log_to_file(self.dirs.supervisor_log, who, logger=self.log)

    def _write_worker_conf(self) -> None:
        """The daemon conf handed to workers (``--conf-file``), as plain YAML."""
        assert self.dirs is not None
        self.dirs.root.mkdir(parents=True, exist_ok=True)
        plain = json.loads(json.dumps(self.conf, default=str))
        tmp = self.dirs.conf_file.with_name(".conf.yaml.tmp")
        tmp.write_text(yaml.safe_dump(plain, sort_keys=True))
        os.replace(tmp, self.dirs.conf_file)

    def _start_logviewer(self) -> None:
        """The host's log server (``logviewer.port``; -1 runs none). A port already taken (a
        log server of another supervisor of this host, say) is logged, not fatal."""
        if int(setting(self.conf, "logviewer.port")) < 0:
            return
        def running() -> list[tuple[str, int]]:
            return [(h.topology_id, h.port) for h in self.workers().values()]

        try:
            self.logviewer = LogviewerServer(self.conf, logs=self.log_dir, running=running,
                                             logger=self.log).start()
        except (OSError, RuntimeError) as exc:
            self.log.error("no log server: cannot serve logviewer.port %s: %s",
                           setting(self.conf, "logviewer.port"), exc)

    def _register(self) -> None:
        assert self.state is not None and self.supervisor_id is not None
        workers: list[dict[str, Any]] = []
        if self._reconciler is not None:
            running = [(port, h.launched_at) for port, h in self._reconciler.snapshot().items()]
            workers = self._reconciler.exits.records(running, time.time())
        self.state.register_supervisor(SupervisorInfo(
            supervisor_id=self.supervisor_id, host=self.host, ports=self.ports,
            start_time=self.start_time, version=stormpy.__version__, stats=dict(self.counters),
            workers=tuple(workers),
            logviewer_port=self.logviewer.port if self.logviewer is not None else None))

    # -- sync ----------------------------------------------------------------------------------
    def _read_assignments(self) -> dict[str, Assignment]:
        assert self.state is not None
        try:
            self._assignments = self.state.assignments(callback=self._sync.wake)
        except ClusterStateError as exc:
            self.log.warning("cannot read assignments (keeping the last known ones): %s", exc)
        return self._assignments

    def sync_once(self) -> None:
        """One sync round (normally run by the sync thread)."""
        assert self.dirs is not None and self.supervisor_id is not None
        assert self._reconciler is not None
        desired, problems = assigned_slots(self._read_assignments(), self.supervisor_id, self.ports)
        if problems != self._problems:
            for problem in problems:
                self.log.warning("assignment problem: %s", problem)
            self._problems = problems
        for topology_id in sorted({la.topology_id for la in desired.values()}):
            if not self.dirs.is_downloaded(topology_id) and self._downloads is not None:
                self._downloads.request(topology_id)
        restarts = self.counters["worker_restarts"]
        self._reconciler.replace(desired)
        if self.counters["worker_restarts"] != restarts:
            self._heartbeat.wake()  # publish the restart (and why) now, not at the next heartbeat
        if not self._sync.stopping:
            self._reconciler.launch(desired)
        self._clean_up(desired)
        if self._returner is not None:
            self._returner.poll()  # code a Nimbus leader lost and asks back (nimbus/recovery.py)
        self.syncs += 1

    def _clean_up(self, desired: dict[int, LocalAssignment]) -> None:
        """Remove code and worker directories of topologies this supervisor no longer runs."""
        assert self.dirs is not None and self._reconciler is not None
        with self._reconciler.lock:
            running = self._reconciler.workers.values()
            keep = {la.topology_id for la in desired.values()} | {h.topology_id for h in running}
            keep |= self._downloads.pending() if self._downloads is not None else set()
            slots = {(h.topology_id, h.port) for h in running}
            slots |= {(la.topology_id, port) for port, la in desired.items()}
        remove_unused(self.dirs, keep, slots, self.log)


def _worker_env() -> dict[str, str]:
    """The environment of worker processes: ours, unbuffered (prints reach the worker log at once),
    with stormpy's own location on PYTHONPATH."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    src = str(Path(stormpy.__file__).resolve().parents[1])
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if src not in parts:
        env["PYTHONPATH"] = os.pathsep.join([src, *parts])
    return env
