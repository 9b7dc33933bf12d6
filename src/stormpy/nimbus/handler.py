"""The Nimbus RPC methods (docs/cluster-contract.md), with argument validation.

Each method checks its arguments and answers with a typed error from :mod:`stormpy.rpc.errors`
(``InvalidRequestError`` for malformed arguments, ``TopologyRefusedError`` for specs, configs and
names that are refused, ``UploadError`` for uploads, ``NotFoundError`` for unknown names, keys and
components, ``AlreadyExistsError`` for a name in use). The server keeps serving after any of them.

Nimbus HA: methods that change cluster state (uploads, submit, kill, activate, deactivate,
rebalance) run only on the leader; a standby refuses them with
:class:`~stormpy.rpc.errors.NotLeaderError` ``not the leader, leader is host:port``. Reads and
bundle downloads are served by every Nimbus (a standby serves the bundles it replicated), except
the workers' heartbeats: supervisors send them to the leader only
(``send_supervisor_worker_heartbeats``), which holds them in memory, so ``get_worker_heartbeats``
is the leader's and a standby's ``get_topology_info`` has no worker figures.
``get_leader`` tells any caller who leads. A leader that loses ZooKeeper during a write
(submit, kill, activate, deactivate, rebalance) answers it with NotLeaderError too, once it
noticed, so clients follow the new leader instead of seeing an InternalError. A submit is answered only once
``topology.min.replication.count`` Nimbus hosts hold the bundle (see
:mod:`stormpy.nimbus.replication`); a count set explicitly and not met rolls it back, the default
count not met answers with ``warnings``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgpack

from stormpy.cluster import Assignment, ClusterStateError, StormBase, SupervisorInfo, WorkerHeartbeat
from stormpy.cluster.paths import parse_worker_key
from stormpy.cluster.records import DocumentError
from stormpy.cluster.worker_ops import (
    change_log_config,
    parse_level_setting,
    read_log_config,
    read_request,
    remove_request,
    submit_request,
)
from stormpy.config import DEFAULTS, SettingError, redacted, setting
from stormpy.config.validate import SUBMIT_WARNINGS_KEY
from stormpy.nimbus.downloads import DownloadManager
from stormpy.nimbus.info import cluster_summary, nimbus_summaries, topology_info
from stormpy.nimbus.recovery import BundleRecovery, degraded_reason
from stormpy.nimbus.replication import replication_target
from stormpy.nimbus.store import StoreError
from stormpy.nimbus.topologies import TopologyManager
from stormpy.nimbus.uploads import UploadManager
from stormpy.nimbus.validation import validate_topology_conf, validate_topology_name
from stormpy.nimbus.worker_beats import WorkerBeats
from stormpy.rpc import current_client, rpc_method
from stormpy.rpc.errors import (
    InvalidRequestError,
    NotFoundError,
    NotLeaderError,
    RpcError,
    TopologyRefusedError,
)
from stormpy.state._deployment import host_local_state_warning
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._spec import TopologySpec

__all__ = ["MAX_HEARTBEATS_PER_CALL", "NimbusHandler"]

#: the most worker heartbeats one ``send_supervisor_worker_heartbeats`` call may carry
MAX_HEARTBEATS_PER_CALL = 4096

T = TypeVar("T")


def _wait(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise InvalidRequestError(f"{what}: wait_secs must be a non-negative number, got {value!r}")
    return float(value)


class NimbusHandler:
    """RPC surface of one Nimbus; ``on_change`` is called after a state change (wakes the monitor)."""

    def __init__(self, manager: TopologyManager, uploads: UploadManager, downloads: DownloadManager, *,
                 nimbus_info: Callable[[], Mapping[str, Any]],
                 on_change: Callable[[], None] | None = None,
                 is_leader: Callable[[], bool] | None = None,
                 leader_address: Callable[[], str | None] | None = None,
                 replicate: Callable[[str, int, float, bool], str | None] | None = None,
                 recovery: BundleRecovery | None = None,
                 conf: Mapping[str, Any] | None = None,
                 worker_beats: WorkerBeats | None = None) -> None:
        self.manager = manager
        #: the workers' heartbeats supervisors send (:mod:`stormpy.nimbus.worker_beats`)
        self.worker_beats = worker_beats if worker_beats is not None else WorkerBeats()
        self.recovery = recovery
        #: this Nimbus's configuration, as ``get_nimbus_conf`` shows it (secrets hidden)
        self._conf = redacted(conf or {})
        self.uploads = uploads
        self.downloads = downloads
        self._nimbus_info = nimbus_info
        self._on_change = on_change or (lambda: None)
        self._is_leader = is_leader or (lambda: True)
        self._leader_address = leader_address or (lambda: None)
        self._replicate = replicate
        #: the RPC server's call counts (set by the daemon once its server exists)
        self.rpc_stats: Callable[[], dict[str, Any]] = lambda: {"calls": {}, "errors": {}, "refused": 0}

    def _require_leader(self, method: str) -> None:
        if self._is_leader():
            return
        raise self._not_leader(method, "changes cluster state and only the leader Nimbus accepts it")

    def _not_leader(self, method: str, why: str) -> NotLeaderError:
        leader = self._leader_address()
        where = f"leader is {leader}" if leader else "no leader is elected yet; retry shortly"
        return NotLeaderError(f"not the leader, {where} ({method} {why})")

    def _as_leader(self, method: str, change: Callable[[], T]) -> T:
        """Run ``change`` (a write of cluster state) as the leader. A ZooKeeper failure while this
        Nimbus lost its leadership meanwhile (a cut it noticed only during the call: the write
        then waits for ZooKeeper until kazoo suspends the session) is the NotLeaderError clients
        follow to the new leader, not an InternalError; a half-written submission is rolled back
        by whichever Nimbus leads next (``stormpy.nimbus.submission``)."""
        try:
            return change()
        except ClusterStateError as exc:
            if self._is_leader():
                raise
            raise self._not_leader(method, f"lost the leadership with its ZooKeeper connection "
                                           f"meanwhile: {exc}") from exc

    @rpc_method
    def get_leader(self) -> dict[str, Any]:
        info = self._nimbus_info()
        return {"leader": self._leader_address(), "is_leader": self._is_leader(),
                "self": f"{info.get('host')}:{info.get('port')}"}

    # -- uploads ---------------------------------------------------------------------------------
    @rpc_method
    def begin_upload(self, size: Any) -> dict[str, Any]:
        self._require_leader("begin_upload")
        return self.uploads.begin(size, current_client())

    @rpc_method
    def upload_chunk(self, upload_id: Any, data: Any, offset: Any) -> dict[str, Any]:
        self._require_leader("upload_chunk")
        return self.uploads.chunk(upload_id, data, offset)

    @rpc_method
    def finish_upload(self, upload_id: Any, sha256: Any) -> dict[str, Any]:
        self._require_leader("finish_upload")
        return {"bundle_key": self.uploads.finish(upload_id, sha256)}

    # -- lifecycle -------------------------------------------------------------------------------
    @rpc_method
    def submit_topology(self, name: Any, bundle_key: Any, spec: Any, conf: Any = None,
                        initial_status: Any = "active") -> dict[str, Any]:
        self._require_leader("submit_topology")
        name = validate_topology_name(name)
        self._check_spec_size(name, spec, conf)
        if initial_status not in ("active", "inactive"):
            raise InvalidRequestError("initial_status must be 'active' or 'inactive', "
                                      f"got {initial_status!r}")
        try:
            topology = TopologySpec.from_doc(spec)
        except InvalidTopologyError as exc:
            raise TopologyRefusedError(f"topology {name!r} refused: {exc}") from None
        topo_conf = validate_topology_conf(conf)
        staged = self.uploads.take(bundle_key)
        warnings: list[str] = []
        try:
            topology_id = self._as_leader("submit_topology", lambda: self.manager.submit(
                name, staged, topology, topo_conf, initial_status,
                before_activate=self._replication_hook(topo_conf, warnings)))
        except BaseException:
            if staged.path.exists():
                self.uploads.restage(staged)
            raise
        self._on_change()
        return {"topology_id": topology_id,
                "warnings": [*self._submit_warnings(topology_id), *warnings,
                             *self._state_warnings(name, topology, topo_conf)]}

    @rpc_method
    def kill_topology(self, name: Any, wait_secs: Any = None) -> dict[str, Any]:
        self._require_leader("kill_topology")
        wait = _wait(wait_secs, "kill_topology")
        self._as_leader("kill_topology", lambda: self.manager.kill(name, wait))
        self._on_change()
        return {}

    @rpc_method
    def activate(self, name: Any) -> dict[str, Any]:
        self._require_leader("activate")
        self._as_leader("activate", lambda: self.manager.set_active(name, True))
        return {}

    @rpc_method
    def deactivate(self, name: Any) -> dict[str, Any]:
        self._require_leader("deactivate")
        self._as_leader("deactivate", lambda: self.manager.set_active(name, False))
        return {}

    @rpc_method
    def debug(self, name: Any, component: Any = None, enable: Any = True,
              sampling_pct: Any = 10.0) -> dict[str, Any]:
        """Sampled tuples on or off (Storm's ``debug``): ``component`` None for every component,
        ``sampling_pct`` in (0, 100]."""
        self._require_leader("debug")
        if component is not None and (not isinstance(component, str) or not component):
            raise InvalidRequestError(f"debug: component must be a non-empty string, got {component!r}")
        if not isinstance(enable, bool):
            raise InvalidRequestError(f"debug: enable must be true or false, got {enable!r}")
        if not isinstance(sampling_pct, int | float) or isinstance(sampling_pct, bool) or \
                not 0 < sampling_pct <= 100:
            raise InvalidRequestError("debug: sampling_pct must be a number in (0, 100], "
                                      f"got {sampling_pct!r}")
        self._as_leader("debug", lambda: self.manager.set_debug(name, component, enable,
                                                                float(sampling_pct)))
        return {}

    @rpc_method
    def rebalance(self, name: Any, wait_secs: Any = None, num_workers: Any = None,
                  executors: Any = None) -> dict[str, Any]:
        self._require_leader("rebalance")
        wait = _wait(wait_secs, "rebalance")
        if num_workers is not None and (not isinstance(num_workers, int) or isinstance(num_workers, bool)
                                        or num_workers < 1):
            raise InvalidRequestError(f"rebalance: num_workers must be an integer >= 1, got {num_workers!r}")
        if executors is not None and (not isinstance(executors, Mapping) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 1
                for k, v in executors.items())):
            raise InvalidRequestError("rebalance: executors must map component names to integers >= 1, "
                                      f"got {executors!r}")
        self._as_leader("rebalance", lambda: self.manager.rebalance(
            name, wait, num_workers, dict(executors) if executors else None))
        self._on_change()
        return {}

    @rpc_method
    def restore_bundle(self, topology_id: Any, bundle_key: Any, spec: Any,
                       conf: Any = None) -> dict[str, Any]:
        """A supervisor sends back the code of a topology no Nimbus holds (uploaded like a
        submitter's bundle; see :mod:`stormpy.nimbus.recovery`); ``restored`` is False when a copy
        was already back."""
        self._require_leader("restore_bundle")
        tid = self._topology_id(topology_id)
        if self.recovery is None:
            raise InvalidRequestError("this Nimbus does not take bundles back")
        try:
            TopologySpec.from_doc(spec)
        except InvalidTopologyError as exc:
            raise TopologyRefusedError(f"topology {tid}: the spec sent back is refused: {exc}") from None
        topo_conf = validate_topology_conf(conf)
        staged = self.uploads.take(bundle_key)
        restored = self.recovery.restore(tid, staged, dict(spec), topo_conf)
        self._on_change()
        return {"restored": restored}

    # -- worker heartbeats (stormpy.nimbus.worker_beats) -----------------------------------------
    @rpc_method
    def send_supervisor_worker_heartbeats(self, supervisor_id: Any, heartbeats: Any) -> dict[str, Any]:
        """A supervisor's workers' heartbeats (Storm's ``sendSupervisorWorkerHeartbeats``): a list
        of :class:`~stormpy.cluster.records.WorkerHeartbeat` documents, each of a worker of that
        supervisor (its ``node``); only the leader takes them. Answers ``{"recorded": n}``."""
        if not self._is_leader():
            raise self._not_leader("send_supervisor_worker_heartbeats",
                                   "is taken only by the leader Nimbus, which judges the workers")
        if not isinstance(supervisor_id, str) or not supervisor_id:
            raise InvalidRequestError("send_supervisor_worker_heartbeats: supervisor_id must be a "
                                      f"non-empty string, got {supervisor_id!r}")
        if not isinstance(heartbeats, list) or len(heartbeats) > MAX_HEARTBEATS_PER_CALL:
            raise InvalidRequestError(f"send_supervisor_worker_heartbeats from {supervisor_id}: heartbeats "
                                      f"must be a list of at most {MAX_HEARTBEATS_PER_CALL} heartbeat maps")
        beats = []
        for i, doc in enumerate(heartbeats):
            try:
                beat = WorkerHeartbeat.from_doc(doc)
            except DocumentError as exc:
                raise InvalidRequestError(f"send_supervisor_worker_heartbeats from {supervisor_id}: "
                                          f"heartbeat {i}: {exc}") from None
            if beat.node != supervisor_id:
                raise InvalidRequestError(f"send_supervisor_worker_heartbeats from {supervisor_id}: "
                                          f"heartbeat {i} is of a worker of {beat.node!r}")
            beats.append(beat)
        return {"recorded": self.worker_beats.record(beats)}

    @rpc_method
    def get_worker_heartbeats(self, topology_id: Any) -> dict[str, Any]:
        """The newest heartbeat of each worker of ``topology_id`` the leader received
        (``{"heartbeats": [WorkerHeartbeat document, ...]}``); a standby refuses (it holds none)."""
        if not self._is_leader():
            raise self._not_leader("get_worker_heartbeats", "reads heartbeats only the leader Nimbus holds")
        tid = self._topology_id(topology_id)
        return {"heartbeats": [beat.to_doc() for _, beat in sorted(self.worker_beats.topology(tid).items())]}

    # -- information -----------------------------------------------------------------------------
    def _degraded(self, bases: Mapping[str, StormBase],
                  assignments: Mapping[str, Assignment | None]) -> dict[str, str | None]:
        if self.recovery is None:
            return {}
        holders = self.recovery.replicator.holder_counts(sorted(bases))
        return {tid: degraded_reason(base, assignments.get(tid), holders.get(tid, 0))
                for tid, base in bases.items()}

    @rpc_method
    def get_cluster_info(self) -> dict[str, Any]:
        state = self.manager.state
        records = self.manager.records  # the leader's are in memory
        bases, assignments = records.storm_bases(), records.assignments()
        now, this = time.time(), self._nimbus_info()
        nimbuses = nimbus_summaries(state.nimbus_records(), this, self._leader_address(), now)
        return cluster_summary(this, state.supervisors(), bases, assignments, now,
                               self._degraded(bases, assignments), nimbuses)

    @rpc_method
    def get_daemon_stats(self) -> dict[str, Any]:
        """This Nimbus's counters since it started: ``uploads`` (``finished``, ``bytes``,
        ``failed``), ``rpc`` (``calls`` and ``errors`` per method, ``refused``), its ``host``,
        ``port`` and ``is_leader``. Any Nimbus answers (not only the leader)."""
        info = self._nimbus_info()
        uploads = self.uploads.stats()
        return {"host": info.get("host"), "port": info.get("port"), "is_leader": self._is_leader(),
                "uploads": uploads, "rpc": self.rpc_stats()}

    @rpc_method
    def get_nimbus_conf(self) -> dict[str, Any]:
        """This Nimbus's configuration (Storm's ``getNimbusConf``): every key with its value,
        values of token/password/secret keys replaced by ``"*****"``."""
        return dict(self._conf)

    @rpc_method
    def get_topology_info(self, name: Any) -> dict[str, Any]:
        state = self.manager.state
        base = self.manager.base_by_name(name)
        tid = base.topology_id
        try:
            layout = self.manager.layout(base)
        except (StoreError, InvalidTopologyError, ValueError):
            layout = None
        assignment = self.manager.records.assignment(tid)
        nodes = [node for node, _ in assignment.workers()] if assignment is not None else []
        return topology_info(base, assignment, layout, self.worker_beats.topology(tid),
                             state.all_errors(tid), time.time(),
                             self._degraded({tid: base}, {tid: assignment}).get(tid),
                             state.supervisors_of(nodes),  # its workers' supervisors, not every one
                             warnings=[*self._submit_warnings(tid), *self._stored_state_warnings(tid)])

    def _submit_warnings(self, topology_id: str) -> list[str]:
        """The submit check's warnings stored with the topology's config (none when its
        description cannot be read)."""
        try:
            _, conf = self.manager.describe(topology_id)
        except (StoreError, InvalidTopologyError, ValueError, RpcError):
            return []
        return list(setting(conf, SUBMIT_WARNINGS_KEY) or [])

    def _stored_state_warnings(self, topology_id: str) -> list[str]:
        """:meth:`_state_warnings` of a running topology (none when its description cannot be
        read)."""
        try:
            spec, conf = self.manager.describe(topology_id)
        except (StoreError, InvalidTopologyError, ValueError, RpcError):
            return []
        return self._state_warnings(str(setting(conf, "topology.name") or topology_id), spec, conf)

    def _state_warnings(self, name: str, spec: TopologySpec, conf: Mapping[str, Any],
                        supervisors: Mapping[str, SupervisorInfo] | None = None) -> list[str]:
        """Where the topology's state lives, when that is a risk on this cluster, over
        ``supervisors`` (when not given, the ones Nimbus read last, by its latest round or
        schedule; none when they cannot be read now: the warning is advice, the submit stands)."""
        try:
            if supervisors is None:
                supervisors = self.manager.supervisors(fresh=False)
            hosts = {s.host for s in supervisors.values()}
        except ClusterStateError:
            return []
        warning = host_local_state_warning(name, spec, {**self._conf, **conf}, len(hosts))
        return [warning] if warning else []

    @rpc_method
    def get_topology_files(self, topology_id: Any) -> dict[str, Any]:
        stored = self.manager.stored(self._topology_id(topology_id))
        return {"spec": stored.spec, "conf": stored.conf, "bundle_key": stored.topology_id,
                "bundle_sha256": stored.bundle_sha256, "bundle_size": stored.bundle_size}

    # -- run-time operations on workers (stormpy.cluster.worker_ops) ----------------------------
    @rpc_method
    def set_log_config(self, name: Any, settings: Any = None, resets: Any = None) -> dict[str, Any]:
        """Apply ``LOGGER=LEVEL[:TIMEOUT_SECS]`` settings and logger resets to topology ``name``'s
        run-time log levels; answer the result in Storm's shape (``namedLoggerLevels``)."""
        tid = self.manager.base_by_name(name).topology_id
        if not isinstance(settings or [], list) or not isinstance(resets or [], list):
            raise InvalidRequestError("settings and resets must be lists of strings")
        try:
            parsed = [parse_level_setting(str(item)) for item in settings or []]
        except ValueError as exc:
            raise InvalidRequestError(str(exc)) from None
        loggers = [str(r) for r in resets or [] if str(r)]
        return change_log_config(self.manager.state, tid, parsed, loggers).to_storm_json()

    @rpc_method
    def get_log_config(self, name: Any) -> dict[str, Any]:
        """Topology ``name``'s run-time log levels in Storm's shape."""
        tid = self.manager.base_by_name(name).topology_id
        return read_log_config(self.manager.state, tid).to_storm_json()

    @rpc_method
    def request_worker_action(self, name: Any, host: Any, port: Any, action: Any,
                              args: Any = None) -> dict[str, Any]:
        """Ask the worker of topology ``name`` on ``host:port`` for ``action`` (``jstack``,
        ``heap``, ``cpu`` with ``args={"seconds": N}``); answer ``{"request": id}`` for
        :meth:`worker_action_result`."""
        tid = self.manager.base_by_name(name).topology_id
        if not isinstance(action, str) or not action.isidentifier():
            raise InvalidRequestError(f"action must be a word, got {action!r}")
        if args is not None and not isinstance(args, dict):
            raise InvalidRequestError(f"args must be a map, got {args!r}")
        assignment = self.manager.records.assignment(tid)
        workers = assignment.workers() if assignment is not None else {}
        for node, wport in workers:
            if assignment is not None and assignment.node_host.get(node) == host and wport == port:
                try:
                    path = submit_request(self.manager.state, tid, node, wport, action, args)
                except LookupError as exc:
                    raise NotFoundError(str(exc)) from None
                return {"request": path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1]}
        known = ", ".join(f"{assignment.node_host.get(n, n) if assignment else n}:{p}" for n, p in workers)
        raise NotFoundError(f"topology {name} has no worker on {host}:{port} (workers: {known or 'none'})")

    @rpc_method
    def worker_action_result(self, name: Any, request: Any) -> dict[str, Any]:
        """The state of a request of :meth:`request_worker_action`: ``{"status": "pending"}``,
        or ``done`` with ``result`` / ``failed`` with ``error`` (the request is then removed)."""
        tid = self.manager.base_by_name(name).topology_id
        worker, _, seq = str(request).partition("/")
        if not seq.startswith("r") or "/" in seq or not worker:
            raise InvalidRequestError(f"request {request!r} is not a request id")
        node, port = parse_worker_key(worker)
        path = f"{self.manager.state.paths.worker_requests(tid, node, port)}/{seq}"
        answer = read_request(self.manager.state, path)
        if answer is None:
            raise NotFoundError(f"no request {request} of topology {name}")
        if answer.status != "pending":
            remove_request(self.manager.state, path)
        return {"status": answer.status, "action": answer.action, "result": answer.result,
                "error": answer.error}

    # -- downloads -------------------------------------------------------------------------------
    @rpc_method
    def begin_download(self, bundle_key: Any) -> dict[str, Any]:
        stored = self.manager.stored(self._topology_id(bundle_key))
        return self.downloads.begin(stored.bundle_path, stored.bundle_size, stored.bundle_sha256)

    @rpc_method
    def download_chunk(self, download_id: Any, offset: Any) -> dict[str, Any]:
        return self.downloads.chunk(download_id, offset)

    # -- helpers ---------------------------------------------------------------------------------
    def _replication_hook(self, topo_conf: Mapping[str, Any],
                          warnings: list[str]) -> Callable[[str], None] | None:
        """Before activation: wait for topology.min.replication.count copies of the bundle; a
        warning for a default count not met goes to ``warnings``."""
        replicate = self._replicate
        if replicate is None:
            return None
        try:
            count, strict = replication_target({**DEFAULTS, **self.manager.conf}, topo_conf)
        except SettingError as exc:
            raise TopologyRefusedError(f"topology refused: {exc}") from None
        key = "topology.max.replication.wait.time.sec"
        wait = float(setting({**self.manager.conf, **topo_conf}, key))

        def hook(topology_id: str) -> None:
            warning = replicate(topology_id, count, wait, strict)
            if warning:
                warnings.append(str(warning))

        return hook

    def _check_spec_size(self, name: str, spec: Any, conf: Any) -> None:
        key = "nimbus.max.spec.size.bytes"
        limit = int(setting(self.manager.conf, key))
        try:
            size = len(msgpack.packb(spec, use_bin_type=True)) + len(msgpack.packb(conf, use_bin_type=True))
        except (TypeError, ValueError, OverflowError) as exc:
            raise TopologyRefusedError(f"topology {name!r} refused: spec and config must be plain data: "
                                       f"{exc}") from None
        if size > limit:
            raise TopologyRefusedError(f"topology {name!r} refused: its spec and config encode to {size} "
                                       f"bytes, beyond nimbus.max.spec.size.bytes ({limit})")

    @staticmethod
    def _topology_id(value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise InvalidRequestError(f"topology id must be a non-empty string, got {value!r}")
        return value
