"""The Nimbus daemon: ``Nimbus(conf)`` with ``start`` / ``stop`` / ``run_forever``.

``start`` creates the local directories, connects to ZooKeeper (``storm.zookeeper.*``), removes
leftover uploads, serves
the RPC methods on ``nimbus.host:nimbus.thrift.port`` (port 0 picks a free one: read
:attr:`Nimbus.port`) from ``nimbus.rpc.handler.threads`` threads, refusing every request without
the shared secret ``nimbus.rpc.auth.token`` when one is set (AuthorizationError), registers an
ephemeral ``nimbuses/<nimbus-id>`` node, joins the leader election and starts bundle replication.
Once elected it resumes managing the topologies found in ZooKeeper and the bundle store and starts
the monitor. ``stop`` undoes all of it and is idempotent. It is a
:class:`~stormpy.host.daemon.Daemon`: ``request_stop`` / ``run_forever``.
:func:`run_nimbus` is what ``stormpy nimbus`` runs: file logging to ``<log dir>/nimbus.log``,
SIGTERM/SIGINT → clean stop, exit code.

High availability (Storm's Nimbus HA): any number of Nimbus processes may run against one cluster.
They elect a leader through ZooKeeper (:mod:`stormpy.nimbus.leadership`); only the leader runs the
monitor (scheduling, timeouts, kill/rebalance waits) and accepts writes, the others stand by,
answer reads, refuse writes with ``not the leader, leader is host:port``, and replicate every
bundle (:mod:`stormpy.nimbus.replication`). A standby elected leader resumes the topologies from
ZooKeeper and its replicated store, as a restarted Nimbus does; running workers are not touched.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from stormpy import __version__
from stormpy.client import NimbusClient
from stormpy.client._addresses import BIND_ALL_HOSTS
from stormpy.cluster import ClusterState, ClusterStateError
from stormpy.cluster.records import encode_value
from stormpy.cluster.watches import Watch
from stormpy.cluster.zk_start import connect_at_start
from stormpy.config import DEFAULTS, log_dir, rpc_auth_token, setting
from stormpy.host.daemon import Daemon, log_to_file
from stormpy.nimbus.downloads import DownloadManager
from stormpy.nimbus.handler import NimbusHandler
from stormpy.nimbus.leadership import Leadership
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.monitor import Monitor
from stormpy.nimbus.pending_actions import ActionTimers
from stormpy.nimbus.recovery import BundleRecovery
from stormpy.nimbus.replication import Replicator
from stormpy.nimbus.store import BundleStore
from stormpy.nimbus.topologies import TopologyManager
from stormpy.nimbus.uploads import UploadManager
from stormpy.nimbus.worker_beats import WorkerBeats
from stormpy.rpc import RpcServer
from stormpy.rpc.curve import server_secret_key

__all__ = ["Nimbus", "advertised_host", "bind_address", "run_nimbus"]

log = logging.getLogger(__name__)


def bind_address(host: str) -> str:
    """An address ZeroMQ can bind: IPs and ``*`` as they are, host names resolved (``nimbus`` in
    docker-compose resolves to the container's own address)."""
    if host in ("*", ""):
        return "*" if host == "*" else "0.0.0.0"
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return socket.gethostbyname(host)


def advertised_host(conf: Mapping[str, Any]) -> str:
    """The host name clients are given for this Nimbus (its leader record, its summary):
    ``nimbus.host`` as it is, unless it binds every interface (``0.0.0.0``, ``*``, empty); then
    ``storm.local.hostname``, else this machine's host name. ``0.0.0.0`` names no host a remote
    client can reach."""
    host = str(setting(conf, "nimbus.host"))
    if host not in BIND_ALL_HOSTS and host:
        return host
    name = setting(conf, "storm.local.hostname")
    return str(name) if name else socket.gethostname()


class Nimbus(Daemon):
    """One Nimbus daemon (see the module docstring)."""

    log = log

    def __init__(self, conf: Mapping[str, Any], *, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.conf = {**DEFAULTS, **conf}
        self.clock = clock
        self.dirs = NimbusDirs.from_config(self.conf)
        self.host = str(self.conf["nimbus.host"])
        self.advertised_host = advertised_host(self.conf)
        self.state: ClusterState | None = None
        self.manager: TopologyManager | None = None
        self.monitor: Monitor | None = None
        #: the workers' heartbeats supervisors send while this Nimbus leads (in memory only)
        self.worker_beats = WorkerBeats()
        self.uploads: UploadManager | None = None
        self.downloads: DownloadManager | None = None
        self.server: RpcServer | None = None
        self.leadership: Leadership | None = None
        self.replicator: Replicator | None = None
        self.recovery: BundleRecovery | None = None
        self._lead_lock = threading.Lock()
        self._supervisor_watch: Watch | None = None
        self.nimbus_id = ""
        self.started_at = 0.0
        self._shut_down = False
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> Nimbus:
        """Start serving; raises (after cleaning up) when ZooKeeper or the port is unavailable."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        conf = self.conf
        self.dirs.ensure()
        self.nimbus_id = self._load_nimbus_id()
        self.started_at = self.clock()
        self.state = connect_at_start(conf, self._stop_requested, log)
        self.state.ensure_layout()
        expiration = float(conf["nimbus.file.copy.expiration.secs"])
        chunk = int(conf["nimbus.upload.chunk.size.bytes"])
        self.uploads = UploadManager(self.dirs, max_bundle_bytes=int(conf["nimbus.max.bundle.size.bytes"]),
                                     expiration_secs=expiration, chunk_size=chunk, clock=self.clock,
                                     max_sessions=int(conf["nimbus.upload.max.sessions"]),
                                     max_sessions_per_client=int(conf["nimbus.upload.max.sessions.per.client"]),
                                     idle_secs=min(float(conf["nimbus.upload.idle.secs"]), expiration))
        self.uploads.clear_leftovers()
        self.downloads = DownloadManager(chunk_size=chunk, expiration_secs=expiration, clock=self.clock)
        self.manager = TopologyManager(self.state, BundleStore(self.dirs), conf, clock=self.clock)
        handler = NimbusHandler(self.manager, self.uploads, self.downloads, nimbus_info=self.info,
                                on_change=self._wake_monitor, is_leader=self.is_leader,
                                leader_address=self.leader_address, replicate=self._await_replicas,
                                conf=conf, worker_beats=self.worker_beats)
        max_bytes = max(64 * 1024 * 1024, 4 * chunk)
        threads = int(conf["nimbus.rpc.handler.threads"])
        if threads < 1:
            raise ValueError(f"nimbus.rpc.handler.threads must be at least 1, got {threads}")
        token = rpc_auth_token(conf)
        self.server = RpcServer(bind_address(self.host), int(conf["nimbus.thrift.port"]), handler,
                                auth_token=token, curve_secret_key=server_secret_key(conf),
                                max_workers=threads, max_message_bytes=max_bytes,
                                name="nimbus").start()
        handler.rpc_stats = self.server.call_stats
        if token is not None:
            log.info("Nimbus RPC requires the shared secret of nimbus.rpc.auth.token")
        self.state.storage.create_ephemeral(self.state.paths.nimbus(self.nimbus_id),
                                            encode_value(self.info()))
        self.replicator = Replicator(
            self.state, self.manager.store, self.dirs, self.nimbus_id, is_leader=self.is_leader,
            leader_address=self.leader_address,
            client_factory=lambda address: NimbusClient.from_config(conf, address),
            poll_secs=float(conf["nimbus.monitor.freq.secs"]), housekeeping=self._standby_housekeeping)
        self.replicator.start()
        self.recovery = BundleRecovery(self.state, self.manager.store, self.replicator)
        handler.recovery = self.recovery
        self.leadership = Leadership(self.state.storage, self.state.paths.nimbus_leader(), self.address,
                                     on_elected=self._on_elected, on_deposed=self._on_deposed).start()
        if (not self.leadership.wait_settled(float(conf["storm.zookeeper.connection.timeout"]) / 1000)
                and not self.stop_requested):
            log.warning("no Nimbus leader elected yet; this one keeps contending")
        log.info("Nimbus %s (stormpy %s) serving on %s:%d, local dir %s", self.nimbus_id, __version__,
                 self.host, self.port, self.dirs.local_dir)

    def stop(self) -> None:
        """Stop the monitor, the RPC server and the ZooKeeper session; idempotent.

        Never waits for an unreachable ZooKeeper: the cluster state is put into shutdown mode first,
        so monitor rounds and RPC calls blocked on ZooKeeper fail at once and stopping stays prompt.
        """
        with self._lock:
            # first: the state goes into shutdown mode (the threads stopped below must not wait
            # on ZooKeeper), and run_forever in another thread returns
            self.request_stop()
            if self.leadership is not None:
                self.leadership.stop()
            if self.replicator is not None:
                self.replicator.stop()
            self._cancel_supervisor_watch()
            if self.monitor is not None:
                self.monitor.stop()
            if self.server is not None:
                self.server.close()
            if self.uploads is not None:
                self.uploads.close()
            if self.state is not None:
                self.state.close()
            self.monitor = self.server = self.uploads = self.state = None
            self.leadership = self.replicator = self.recovery = None
            if not self._shut_down:
                self._shut_down = True
                log.info("Nimbus %s stopped", self.nimbus_id)

    def request_stop(self) -> None:
        """Also put the ZooKeeper state into shutdown mode (a flag: safe in a signal handler), so
        a start still waiting on an unreachable ZooKeeper (the leader election) gives up at once."""
        state = self.state
        if state is not None:
            state.begin_shutdown()
        super().request_stop()

    def __enter__(self) -> Nimbus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- properties ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound RPC port (after :meth:`start`)."""
        if self.server is None:
            raise RuntimeError("Nimbus is not running")
        return self.server.port

    @property
    def address(self) -> str:
        """``host:port`` clients use (:func:`advertised_host`)."""
        return f"{self.advertised_host}:{self.port}"

    # -- leadership ------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True while this Nimbus leads (see :class:`~stormpy.nimbus.leadership.Leadership`)."""
        return self.leadership is not None and self.leadership.is_leader()

    def leader_address(self) -> str | None:
        """``host:port`` of the leading Nimbus, or None when none is known."""
        return self.leadership.leader_address() if self.leadership is not None else None

    def _on_elected(self) -> None:
        """Take over: resume the topologies found in ZooKeeper and start the monitor."""
        with self._lead_lock:
            manager = self.manager
            if manager is None or self.state is None:
                raise RuntimeError("Nimbus is stopping")
            manager.timers = ActionTimers()
            if self.replicator is not None:
                self.replicator.sync()  # fetch what this Nimbus lacks before resume drops anything
            resumed = manager.resume()
            if resumed:
                log.info("leading %d topologies: %s", len(resumed), ", ".join(resumed))
            recovery = self.recovery
            if recovery is not None:
                recovery.request_missing(dict.fromkeys(resumed))
            self.worker_beats.clear()  # what an earlier term received is stale
            self.monitor = Monitor(manager, self.conf, uploads=self.uploads, downloads=self.downloads,
                                   clock=self.clock, beats=self.worker_beats,
                                   on_missing_bundle=recovery.request if recovery is not None else None)
            self.monitor.start()
            try:  # a vanished supervisor wakes the monitor (else it is noticed at the next round)
                self._supervisor_watch = self.state.watch_supervisor_ids(self.monitor.supervisors_changed)
            except ClusterStateError as exc:
                log.warning("cannot watch the supervisors (the monitor notices a lost one at its "
                            "next round): %s", exc)

    def _on_deposed(self) -> None:
        """Stand by again: stop the monitor, forget pending kill/rebalance waits and the
        in-memory StormBases and assignments (a standby reads them from ZooKeeper)."""
        with self._lead_lock:
            self._cancel_supervisor_watch()
            monitor, self.monitor = self.monitor, None
            if monitor is not None:
                monitor.stop()
            if self.manager is not None:
                self.manager.timers = ActionTimers()
                self.manager.stand_by()

    def _cancel_supervisor_watch(self) -> None:
        watch, self._supervisor_watch = self._supervisor_watch, None
        if watch is not None:
            watch.cancel()

    def _wake_monitor(self) -> None:
        monitor = self.monitor
        if monitor is not None:
            monitor.wake()

    def _await_replicas(self, topology_id: str, count: int, timeout_secs: float, strict: bool) -> str | None:
        if self.replicator is None:
            raise RuntimeError("Nimbus is stopping")
        return self.replicator.await_replicas(topology_id, count, timeout_secs, strict=strict)

    def _standby_housekeeping(self) -> None:
        """What the monitor does on the leader and a standby still needs: expire download sessions
        (and uploads left from a time it led)."""
        if self.is_leader():
            return
        if self.downloads is not None:
            self.downloads.expire()
        if self.uploads is not None:
            self.uploads.expire()

    def info(self) -> dict[str, Any]:
        """This Nimbus's summary (the ``nimbus`` part of ``get_cluster_info``)."""
        port = self.server.port if self.server is not None else int(self.conf["nimbus.thrift.port"])
        return {"id": self.nimbus_id, "host": self.advertised_host, "port": port, "version": __version__,
                "leader": self.is_leader(),
                "start_time": self.started_at, "uptime_secs": round(self.clock() - self.started_at, 1)}

    def _load_nimbus_id(self) -> str:
        path = self.dirs.id_file
        try:
            value = path.read_text().strip()
            if value:
                return value
        except FileNotFoundError:
            pass
        value = f"nimbus-{uuid.uuid4().hex[:12]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
        return value


def run_nimbus(conf: Mapping[str, Any], *, echo: Callable[[str], Any] = print) -> int:
    """Run Nimbus in the foreground until SIGTERM/SIGINT; return the exit code (0 on a clean stop)."""
    merged = {**DEFAULTS, **conf}
    log_path = log_dir(merged) / "nimbus.log"
    log_to_file(log_path, "nimbus")
    nimbus = Nimbus(merged)
    with nimbus.stopping_on_signals():  # a signal while starting stops it too
        try:
            try:
                nimbus.start()
            except Exception as exc:
                log.exception("Nimbus failed to start")
                echo(f"error: Nimbus failed to start: {exc} (log: {log_path})")
                return 1
            echo(f"Nimbus serving on {nimbus.address} (log: {log_path}); SIGTERM or Ctrl-C stops it")
            nimbus.run_forever()
            return 0
        finally:
            nimbus.stop()
