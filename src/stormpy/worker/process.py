"""The cluster worker process: ``python -m stormpy.worker.process`` (started by a supervisor).

::

    python -m stormpy.worker.process --topology-id T --supervisor-id S --port P --local-dir L
                                     [--conf-file F]

Contract (docs/cluster-contract.md, "Worker process"):

* Logs to ``<storm.log.dir or L/logs>/worker-T-P.log``, rotated at ``worker.log.max.size.mb``
  (stdout and stderr follow the current file); a :class:`~stormpy.worker.control.WorkerControl`
  thread applies run-time log levels and answers dump and profile requests. ``F`` is the daemon
  configuration (YAML;
  without it ``stormpy.config.load_config()``); the topology's own ``topology.*`` keys and the keys
  of every registered connector section (``spark.*``, ...; see
  :func:`stormpy.config.topology_prefixes`) from ``topology.msgpack`` override the daemon's, every
  other key is the daemon's. The component classes are imported first, so the connectors they
  use have registered their sections.
* Reads ``L/supervisor/S/stormdist/T/topology.msgpack`` and puts ``.../code`` first on
  ``sys.path``; reads the assignment and StormBase from ZooKeeper; runs the executors assigned to
  ``(S, P)`` in a :class:`~stormpy.worker.loop.Worker` on the main thread (components keep
  state in ZooKeeper through ``context.state_store``, on the worker's session), over a
  :class:`~stormpy.messaging.zmq_transport.ZmqTransport` bound on
  ``<worker.bind.host or supervisor.host>:P``; a :class:`~stormpy.worker.cluster_link.ClusterLink`
  thread follows assignment/status changes and heartbeats.
* Once the loop has stopped, ZooKeeper calls fail at once while ZooKeeper is unreachable (the
  cluster state is put into shutdown mode), so a worker exits promptly on SIGTERM during a
  ZooKeeper outage; errors still queued for ZooKeeper are then only logged.
* Exit codes: 0 after SIGTERM/SIGINT (loop stopped, components closed), when the topology's
  assignment disappears, when this worker has no executors (any more) or its executors changed;
  1 when a component failed (the error is reported to ZooKeeper first); 2 when it cannot start
  (missing files, ZooKeeper unreachable, port taken).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tracemalloc
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import msgpack

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.cluster.state import ClusterState
from stormpy.cluster.zk_acls import worker_zk_identity
from stormpy.config import load_config, merged, read_config_file, setting, topology_prefixes
from stormpy.host.daemon import log_to_file
from stormpy.host.log_files import CappedLogHandler
from stormpy.messaging.curve import topology_keys
from stormpy.messaging.zmq_transport import ZmqTransport
from stormpy.state._zookeeper import ZkBackend
from stormpy.topology._event_log import EVENTLOGGER_EXECUTORS
from stormpy.topology._imports import import_object
from stormpy.topology._layout import TaskLayout, compute_layout
from stormpy.topology._metrics_consumer import ConsumerContext
from stormpy.topology._spec import TopologySpec
from stormpy.worker.cluster_link import ClusterLink
from stormpy.worker.control import WorkerControl
from stormpy.worker.error_reporter import ErrorReporter
from stormpy.worker.errors import WorkerError
from stormpy.worker.event_logger import EventLogger
from stormpy.worker.factory import WorkerConfig
from stormpy.worker.heartbeat_channel import SupervisorRelay
from stormpy.worker.loop import Worker
from stormpy.worker.metrics_consumers import MetricsFeed
from stormpy.worker.peers import WorkerPeers, local_executors, tasks_of, worker_peers

__all__ = ["EXIT_COMPONENT_FAILED", "EXIT_OK", "EXIT_STARTUP_FAILED", "main", "worker_conf"]

log = logging.getLogger("stormpy.worker.process")

EXIT_OK = 0
EXIT_COMPONENT_FAILED = 1
EXIT_STARTUP_FAILED = 2


class StartupError(Exception):
    """The worker cannot start; the message says why."""


def worker_conf(daemon_conf: Mapping[str, Any], topology_conf: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults ← daemon conf ← topology conf, except that only the keys under
    :func:`~stormpy.config.topology_prefixes` (``topology.*`` and the registered connector
    sections') of the topology conf count: ZooKeeper, supervisor and worker settings are the local
    daemon's, except that a secured topology's workers use its ZooKeeper identity instead of the
    daemons' (:func:`~stormpy.cluster.zk_acls.worker_zk_identity`)."""
    prefixes = topology_prefixes()
    conf = merged(daemon_conf, topology_conf)
    conf.update({k: v for k, v in daemon_conf.items() if not k.startswith(prefixes)})
    conf.update(worker_zk_identity(daemon_conf, topology_conf))
    return conf


def import_components(spec: TopologySpec) -> None:
    """Import every component class of ``spec`` (and so the connectors they use, which register
    their config sections). A class that fails to import is skipped here: building the tasks
    reports it as that component's error."""
    for comp in spec.components.values():
        try:
            import_object(comp.class_path)
        except Exception as exc:  # noqa: BLE001 - reported when the Worker builds the task
            log.debug("component %s: %s does not import yet: %s", comp.id, comp.class_path, exc)


def read_topology_file(path: Path) -> tuple[TopologySpec, dict[str, Any]]:
    """``(spec, conf)`` from a ``topology.msgpack``; StartupError naming the file otherwise."""
    try:
        doc = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
        return TopologySpec.from_doc(doc["spec"]), dict(doc.get("conf") or {})
    except FileNotFoundError:
        raise StartupError(f"{path} does not exist (was the topology downloaded?)") from None
    except Exception as exc:  # noqa: BLE001 - any defect of the file is a startup error
        raise StartupError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc


def setup_logging(log_file: Path, topology_id: str, port: int, conf: Mapping[str, Any]) -> None:
    """Log INFO and up to ``log_file`` only, with the worker's identity in every line; the file
    rotates at ``worker.log.max.size.mb`` keeping ``worker.log.backups`` files, stdout and stderr
    following it (:class:`~stormpy.host.log_files.CappedLogHandler`). The handler passes every
    level, so a logger set to DEBUG at run time (``stormpy set-log-level``) shows its records."""
    max_mb = float(setting(conf, "worker.log.max.size.mb"))
    backups = int(setting(conf, "worker.log.backups"))
    log_to_file(log_file, f"worker {topology_id}:{port} pid %(process)d", replace=True,
                handler=CappedLogHandler(log_file, int(max_mb * 1024 * 1024), backups,
                                         capture_stdio=True))
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.NOTSET)
    frames = int(setting(conf, "worker.profiler.tracemalloc.frames"))
    if frames > 0:
        tracemalloc.start(frames)


class WorkerProcess:
    """One worker process run: start, loop on the main thread, shut down, return the exit code."""

    def __init__(self, args: argparse.Namespace, daemon_conf: Mapping[str, Any]) -> None:
        self.args = args
        self.daemon_conf = dict(daemon_conf)
        self.topology_id: str = args.topology_id
        self.node: str = args.supervisor_id
        self.port: int = args.port
        self.dirs = SupervisorDirs(args.local_dir, self.node, daemon_conf.get("storm.log.dir"))
        self.worker: Worker | None = None
        self.state: ClusterState | None = None
        self.exit_reason: str | None = None

    def request_stop(self, reason: str) -> None:
        """Stop the loop (any thread, signal handlers included); the first reason is kept.

        ZooKeeper calls stop waiting for a lost connection from now on (a worker blocked on an
        unreachable ZooKeeper while starting gives up at once and exits 0).
        """
        if self.exit_reason is None:
            self.exit_reason = reason
        if self.state is not None:
            self.state.begin_shutdown()
        if self.worker is not None:
            self.worker.stop()

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.request_stop(f"received {signal.Signals(signum).name}")

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        log.info("worker starting: pid %d, topology %s, node %s, port %d", os.getpid(),
                 self.topology_id, self.node, self.port)
        spec, topology_conf = read_topology_file(self.dirs.topology_file(self.topology_id))
        code_dir = self.dirs.code_dir(self.topology_id)
        sys.path.insert(0, str(code_dir))
        import_components(spec)
        conf = worker_conf(self.daemon_conf, topology_conf)
        conf["worker.code.dir"] = str(code_dir)
        self.dirs.worker_dir(self.topology_id, self.port).mkdir(parents=True, exist_ok=True)
        try:
            state = ClusterState.from_config(conf)
        except Exception as exc:  # noqa: BLE001
            raise StartupError(f"cannot connect to ZooKeeper: {exc}") from exc
        self.state = state
        if self.exit_reason is not None:
            state.begin_shutdown()
        try:
            return self._run_connected(state, spec, conf)
        finally:
            state.close()

    def _run_connected(self, state: ClusterState, spec: TopologySpec, conf: dict[str, Any]) -> int:
        try:
            assignment = state.assignment(self.topology_id)
            base = state.storm_base(self.topology_id)
        except ClusterStateError as exc:
            if self.exit_reason is not None:
                log.info("stopping before start: %s (%s)", self.exit_reason, exc)
                return EXIT_OK
            raise StartupError(f"cannot read the state of {self.topology_id}: {exc}") from exc
        if assignment is None:
            log.info("topology %s has no assignment; nothing to run", self.topology_id)
            return EXIT_OK
        executors = local_executors(assignment, self.node, self.port)
        if not executors:
            log.info("no executors of %s are assigned to %s:%d; nothing to run", self.topology_id,
                     self.node, self.port)
            return EXIT_OK
        layout = compute_layout(spec, conf, base.component_executors if base else None)
        peers = worker_peers(assignment, self.node, self.port)
        active = base is not None and base.status == "active"
        host = setting(conf, "supervisor.host")
        bind_host = setting(conf, "worker.bind.host") or host
        # the worker's errors carry the supervisor's host, here and in ZooKeeper alike
        reporter = ErrorReporter(state, self.topology_id, host, self.port).start()
        try:
            try:
                transport = ZmqTransport(bind_host, self.port, conf, curve=topology_keys(conf))
            except OSError as exc:
                raise StartupError(str(exc)) from exc
            try:
                return self._run_worker(state, spec, conf, layout, executors, peers, active,
                                        transport, reporter)
            finally:
                transport.close()
        finally:
            reporter.close()

    def _run_worker(self, state: ClusterState, spec: TopologySpec, conf: dict[str, Any],
                    layout: TaskLayout, executors: tuple[tuple[int, int], ...], peers: WorkerPeers,
                    active: bool,
                    transport: ZmqTransport, reporter: ErrorReporter) -> int:
        transport.set_peers(peers.addresses)
        try:
            config = WorkerConfig(self.topology_id, spec, conf, layout=layout,
                                  local_tasks=tasks_of(executors), task_peers=peers.task_peers,
                                  active=active, worker_port=self.port,
                                  hostname=reporter.hostname)
            worker = Worker(config, transport=transport, on_error=reporter.report,
                            state=ZkBackend(state.storage))
        except WorkerError as exc:
            log.error("cannot create the tasks: %s", exc)
            reporter.report(exc.component, exc.task, str(exc))
            return EXIT_COMPONENT_FAILED
        self.worker = worker
        if self.exit_reason is not None:
            log.info("stopping before start: %s", self.exit_reason)
            return EXIT_OK
        events = None if conf.get(EVENTLOGGER_EXECUTORS) == 0 else EventLogger(
            self.dirs.worker_events_log(self.topology_id, self.port), self.topology_id,
            max_bytes=int(float(setting(conf, "worker.log.max.size.mb")) * 1024 * 1024),
            backups=int(setting(conf, "worker.log.backups"))).start()
        link = ClusterLink(state, worker, transport, topology_id=self.topology_id, node=self.node,
                           port=self.port, executors=executors, peers=peers, active=active, conf=conf,
                           heartbeat_path=self.dirs.heartbeat_file(self.topology_id, self.port),
                           on_exit=self.request_stop, event_logger=events,
                           heartbeats=SupervisorRelay(
                               self.dirs.nimbus_heartbeat_file(self.topology_id, self.port), conf))
        log.info("running executors %s (tasks %s), %s; peers %s", list(executors), tasks_of(executors),
                 "active" if active else "inactive", sorted(peers.addresses.items()))
        # the control channel opens before the first heartbeat: a worker seen is a worker asked
        control = WorkerControl(state, topology_id=self.topology_id, node=self.node, port=self.port,
                                log_dir=self.dirs.logs, conf=conf).start()
        link.start()
        feed = None
        if MetricsFeed.wanted(conf):
            host = setting(conf, "supervisor.host")
            feed = MetricsFeed(conf, ConsumerContext(self.topology_id, host, self.port,
                                                     tuple(tasks_of(executors))),
                               lambda: link.latest_stats).start()
        try:
            worker.run()
        except WorkerError as exc:
            log.error("worker stopped: %s", exc)
            return EXIT_COMPONENT_FAILED
        finally:
            # From here on ZooKeeper is written only while reachable (last errors, the link's
            # heartbeat): an outage must not hold up the exit.
            state.begin_shutdown()
            control.stop()
            link.stop()
            if feed is not None:
                feed.stop()
            if events is not None:
                events.stop()
        log.info("worker stopped cleanly: %s", self.exit_reason or "stop requested")
        return EXIT_OK


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line of the worker process."""
    parser = argparse.ArgumentParser(prog="python -m stormpy.worker.process",
                                     description="Run one stormpy cluster worker.")
    parser.add_argument("--topology-id", required=True)
    parser.add_argument("--supervisor-id", required=True)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--local-dir", required=True, help="storm.local.dir of the supervisor")
    parser.add_argument("--conf-file", help="daemon configuration (YAML)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a worker process; returns its exit code (see the module docstring)."""
    args = parse_args(argv)
    try:
        daemon_conf = read_config_file(args.conf_file) if args.conf_file else load_config()
    except Exception as exc:  # noqa: BLE001
        print(f"stormpy worker: cannot read configuration: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILED
    process = WorkerProcess(args, daemon_conf)
    setup_logging(process.dirs.worker_log(args.topology_id, args.port), args.topology_id, args.port,
                  merged(daemon_conf))
    try:
        return process.run()
    except StartupError as exc:
        log.error("worker cannot start: %s", exc)
        return EXIT_STARTUP_FAILED
    except Exception:
        log.exception("worker failed unexpectedly")
        return EXIT_COMPONENT_FAILED
    finally:
        logging.shutdown()


if __name__ == "__main__":
    sys.exit(main())
