"""NimbusClient: the submitter/operator side of the Nimbus RPC (the CLI, the UI, local mode, tests).

Every call goes through :class:`~stormpy.rpc.RpcClient`: each attempt waits at most
``timeout_secs`` and a call makes ``1 + retries`` attempts (retries are answered from the server's
cache, never executed twice), so a dead Nimbus gives
:class:`~stormpy.rpc.errors.UnreachableError` / :class:`~stormpy.rpc.errors.RpcTimeoutError`
instead of a hang. :meth:`NimbusClient.check_reachable` answers within ``connect_timeout_secs``
whether anything listens on Nimbus's port at all. Server-side refusals arrive as the typed errors
of :mod:`stormpy.rpc.errors`; a Nimbus that requires ``nimbus.rpc.auth.token`` answers every call
without the same ``auth_token`` with :class:`~stormpy.rpc.errors.AuthorizationError`.
:meth:`NimbusClient.from_config` takes the timeout, retries, token, CURVE key and seeds from the
config (:func:`~stormpy.client._settings.rpc_settings`,
:func:`~stormpy.client._addresses.seed_addresses`).

Nimbus HA: a client knows a list of seed addresses (``nimbus.seeds``; an explicit address is the
only seed). A standby answers writes with :class:`~stormpy.rpc.errors.NotLeaderError` naming the
leader, and the client switches to it and calls again; one that names no leader (none elected
yet, or it is cut off from ZooKeeper), or names itself although it refuses (its old leader node
lingers after a restart), makes the client ask the other seeds who leads, pausing between rounds
(a :class:`~stormpy.host.backoff.Backoff` from 50 ms up to 1 s), for up to ``leader_wait_secs``.
When the Nimbus it talks to stops answering and it has other seeds, it asks them (``get_leader``)
who leads now and switches, for up to ``leader_wait_secs`` (``nimbus.leader.wait.secs``); the
first switch of a call goes at once, later rounds pause the same way; a switch to another Nimbus
sends the call with a new request id there. :meth:`NimbusClient.submit` restarts the whole upload
and submit on the new leader when the leader changed during it (an upload session lives on one
Nimbus only); if the lost leader had already accepted the submit, the topology found under that
name is the answer.
With a single seed a dead Nimbus is an error at once, as before.

A dead Nimbus is found at connect time: every RPC client of this module waits at most
``connect_timeout_secs`` for the TCP connection (a refused one fails at once), so a client whose
Nimbus died costs that, not ``timeout_secs`` per attempt, before it asks the seeds; asking
continues, with the same growing pause, until a seed names a live leader. The last leader found
for a set of seeds is remembered for the process, whatever the order of the seeds (and, with
``remember=True``, in a small file under ``$STORMPY_CACHE_DIR`` or ``~/.cache/stormpy``, so the
next CLI command starts there; :mod:`stormpy.client._leader_memo`). Bundles travel through
:mod:`stormpy.client._transfer`.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from stormpy.client._addresses import CONNECT_TIMEOUT_SECS, connectable, parse_address, seed_addresses
from stormpy.client._leader import find_leader
from stormpy.client._leader_memo import remember_leader, remembered_leader
from stormpy.client._settings import rpc_settings
from stormpy.client._transfer import Progress, download_bundle, upload_bundle
from stormpy.cluster.records import WorkerHeartbeat
from stormpy.config import DEFAULTS
from stormpy.config.validate import WARNING_LOG_EXTRA, check_topology_config
from stormpy.host.backoff import Backoff
from stormpy.rpc import RpcClient
from stormpy.rpc.errors import (
    AlreadyExistsError,
    NotFoundError,
    NotLeaderError,
    RpcTimeoutError,
    UnreachableError,
    UploadError,
)
from stormpy.topology._spec import TopologySpec, refuse_local_classes

__all__ = ["LEADER_PAUSE_CAP_SECS", "LEADER_PAUSE_FIRST_SECS", "NimbusClient"]

log = logging.getLogger(__name__)

#: The first pause between two rounds of asking for the leader within one call ...
LEADER_PAUSE_FIRST_SECS = 0.05
#: ... doubling (with jitter) up to this; the call gives up after ``leader_wait_secs``.
LEADER_PAUSE_CAP_SECS = 1.0


def _connectable(address: str | None) -> str | None:
    """The address to connect to for a leader a Nimbus named (None: none, or malformed)."""
    if address is None:
        return None
    try:
        return connectable(address)
    except ValueError:
        return None


class NimbusClient:
    """Calls to the leading Nimbus, starting at ``host:port`` (see the module docstring).

    Without settings a client waits 10 s per attempt with one retry, follows a change of leader
    for up to 30 s and remembers the leader it found in the process only;
    :meth:`from_config` takes these from the config instead."""

    def __init__(self, host: str, port: int, *, timeout_secs: float = 10.0, retries: int = 1,
                 connect_timeout_secs: float = CONNECT_TIMEOUT_SECS, auth_token: str | None = None,
                 seeds: Sequence[str] = (), leader_wait_secs: float = 30.0,
                 remember: bool = False, curve_server_key: bytes | None = None) -> None:
        self.host = host
        self.port = int(port)
        self.connect_timeout_secs = connect_timeout_secs
        self.timeout_secs = timeout_secs
        self.retries = retries
        self.auth_token = auth_token
        self.curve_server_key = curve_server_key
        self.seeds = [f"{host}:{self.port}", *[s for s in seeds if s != f"{host}:{self.port}"]]
        self._seed_key = list(self.seeds)
        self._remember_in_file = remember
        self.leader_wait_secs = leader_wait_secs
        #: warnings Nimbus gave with the last submit (e.g. the bundle is on fewer hosts than wanted)
        self.warnings: list[str] = []
        if len(self.seeds) > 1:
            last = remembered_leader(self._seed_key, from_file=remember)
            if last is not None and last != self.address:
                self.host, self.port = parse_address(last)
        self.rpc = self._rpc_client()

    def _rpc_client(self) -> RpcClient:
        return RpcClient(self.host, self.port, timeout_secs=self.timeout_secs, retries=self.retries,
                         auth_token=self.auth_token, service="Nimbus",
                         connect_timeout_secs=self.connect_timeout_secs,
                         curve_server_key=self.curve_server_key)

    @classmethod
    def from_config(cls, conf: Mapping[str, Any], address: str | None = None, **kwargs: Any) -> NimbusClient:
        """A client for ``address`` (``host:port``), else for the seeds of ``conf``
        (:func:`~stormpy.client._addresses.seed_addresses`), starting at the first.

        ``timeout_secs``, ``retries``, ``auth_token``, ``curve_server_key`` and
        ``connect_timeout_secs`` come from :func:`~stormpy.client._settings.rpc_settings`,
        ``leader_wait_secs`` from ``nimbus.leader.wait.secs``; keyword arguments override them.
        """
        kwargs = rpc_settings(conf, **kwargs)
        kwargs.setdefault("leader_wait_secs",
                          float(conf.get("nimbus.leader.wait.secs", DEFAULTS["nimbus.leader.wait.secs"])))
        if address:
            host, port = parse_address(address)
        else:
            seeds = seed_addresses(conf)
            kwargs.setdefault("seeds", seeds)
            host, port = parse_address(seeds[0])
        return cls(host, port, **kwargs)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def close(self) -> None:
        self.rpc.close()

    def __enter__(self) -> NimbusClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def check_reachable(self) -> None:
        """Raise UnreachableError quickly when nothing accepts TCP connections on Nimbus's port (on
        any seed's port: the client switches to the first seed that accepts)."""
        problems = []
        for address in [self.address, *[s for s in self.seeds if s != self.address]]:
            host, port = parse_address(address)
            try:
                with socket.create_connection((host, port), timeout=self.connect_timeout_secs):
                    pass
            except OSError as exc:
                problems.append(f"{address} ({exc.strerror or exc})")
                continue
            if address != self.address:
                self._switch(address)
            return
        raise UnreachableError(f"Nimbus at {', '.join(problems)} is unreachable; is `stormpy nimbus` running "
                               "there? (set --nimbus host:port, or nimbus.host / nimbus.thrift.port / "
                               "nimbus.seeds)")

    def call(self, method: str, /, **args: Any) -> Any:
        """Any RPC method by name, sent to the leader (following a change of leader for up to
        ``leader_wait_secs`` after the first failure, pausing between rounds of asking)."""
        deadline: float | None = None
        pause = Backoff(LEADER_PAUSE_FIRST_SECS, LEADER_PAUSE_CAP_SECS, jitter=0.2)
        switched = False  # the first switch of a call goes at once, later rounds pause
        while True:
            try:
                return self.rpc.call(method, **args)
            except NotLeaderError as exc:
                deadline = deadline or time.monotonic() + self.leader_wait_secs
                named = _connectable(exc.leader)
                if (switched or named in (None, self.address)) and time.monotonic() >= deadline:
                    raise
                # it names no leader (cut off from ZooKeeper), or itself (a stale leader node):
                # another seed may know better
                leader = named if named not in (None, self.address) else self._ask_seeds(
                    [s for s in self.seeds if s != self.address])
            except RpcTimeoutError:  # UnreachableError included
                deadline = deadline or time.monotonic() + self.leader_wait_secs
                if len(self.seeds) < 2 or time.monotonic() >= deadline:
                    raise
                leader = self._ask_seeds(self.seeds)
            if leader is not None and leader != self.address:
                self._switch(leader)
                if not switched:
                    switched = True
                    continue
            time.sleep(min(pause.failed(), max(0.0, deadline - time.monotonic())))

    def _ask_seeds(self, seeds: Sequence[str]) -> str | None:
        return find_leader(seeds, auth_token=self.auth_token,
                           connect_timeout_secs=self.connect_timeout_secs,
                           curve_server_key=self.curve_server_key)

    def _switch(self, address: str) -> None:
        """Talk to the Nimbus at ``address`` from now on."""
        log.info("Nimbus leader is now %s (was %s)", address, self.address)
        self.rpc.close()
        self.host, self.port = parse_address(address)
        if address not in self.seeds:
            self.seeds.append(address)
        if len(self._seed_key) > 1:
            remember_leader(self._seed_key, address, to_file=self._remember_in_file)
        self.rpc = self._rpc_client()

    def leader(self) -> str | None:
        """``host:port`` of the leading Nimbus as the seeds see it (None: none known)."""
        return self._ask_seeds(self.seeds)

    # -- uploads ---------------------------------------------------------------------------------
    def upload_bundle(self, path: str | os.PathLike[str], progress: Progress | None = None) -> str:
        """Upload the bundle file in chunks; return its bundle key. ``progress(sent, total)``."""
        return upload_bundle(self.call, path, progress)

    def download_bundle(self, bundle_key: str, dest: str | os.PathLike[str],
                        progress: Progress | None = None) -> Path:
        """Download a topology's bundle to ``dest`` and check its sha256; return ``dest``."""
        download_bundle(self.call, bundle_key, dest, progress=progress)
        return Path(dest)

    # -- lifecycle -------------------------------------------------------------------------------
    def submit_topology(self, name: str, bundle_key: str, spec: Mapping[str, Any],
                        conf: Mapping[str, Any] | None = None, *, active: bool = True) -> str:
        """Submit an uploaded bundle with its spec document; return the topology id.
        InvalidTopologyError (before any call) when the spec names a class defined inside a
        function, which the cluster's workers could not import. (:meth:`submit` runs the submit
        check first; Nimbus runs it in any case.)"""
        refuse_local_classes(spec)
        result = self.call("submit_topology", name=name, bundle_key=bundle_key, spec=dict(spec),
                           conf=dict(conf or {}), initial_status="active" if active else "inactive")
        self.warnings = [str(w) for w in result.get("warnings") or []]
        for warning in self.warnings:
            log.warning("Nimbus: %s", warning, extra=WARNING_LOG_EXTRA)
        return str(result["topology_id"])

    def submit(self, name: str, bundle_path: str | os.PathLike[str], spec: Mapping[str, Any],
               conf: Mapping[str, Any] | None = None, *, active: bool = True,
               progress: Progress | None = None) -> str:
        """Upload ``bundle_path`` and submit it; return the topology id. Starts over on the new
        leader when the leader changes meanwhile (see the module docstring). The config passes the
        submit check before anything is uploaded (SettingError naming the key; InvalidTopologyError
        for a malformed spec)."""
        check_topology_config(conf or {}, TopologySpec.from_doc(spec).components)
        deadline = time.monotonic() + self.leader_wait_secs + 2 * self.timeout_secs * (1 + self.retries)
        retried = False
        while True:
            started_at = self.address
            try:
                key = self.upload_bundle(bundle_path, progress)
                return self.submit_topology(name, key, spec, conf, active=active)
            except AlreadyExistsError:
                if not retried:
                    raise
                existing = self.topology_info(name)  # the lost leader accepted it before it died
                return str(existing.get("id") or existing.get("topology_id"))
            except (UploadError, NotFoundError, RpcTimeoutError, NotLeaderError):
                if self.address == started_at or time.monotonic() >= deadline:
                    raise
                log.warning("Nimbus leader changed to %s during the submit of %s; starting over",
                            self.address, name)
                retried = True

    def kill(self, name: str, wait_secs: float | None = None) -> None:
        self.call("kill_topology", name=name, wait_secs=wait_secs)

    def activate(self, name: str) -> None:
        self.call("activate", name=name)

    def deactivate(self, name: str) -> None:
        self.call("deactivate", name=name)

    def debug(self, name: str, component: str | None = None, enable: bool = True,
              sampling_pct: float = 10.0) -> None:
        """Sampled tuples on or off for the topology or one of its components."""
        self.call("debug", name=name, component=component, enable=enable, sampling_pct=sampling_pct)

    def rebalance(self, name: str, wait_secs: float | None = None, num_workers: int | None = None,
                  executors: Mapping[str, int] | None = None) -> None:
        self.call("rebalance", name=name, wait_secs=wait_secs, num_workers=num_workers,
                      executors=dict(executors) if executors else None)

    # -- information -----------------------------------------------------------------------------
    def cluster_info(self) -> dict[str, Any]:
        return dict(self.call("get_cluster_info"))

    def daemon_stats(self) -> dict[str, Any]:
        """The counters of the Nimbus answering (``get_daemon_stats``)."""
        return dict(self.call("get_daemon_stats"))

    def topology_info(self, name: str) -> dict[str, Any]:
        return dict(self.call("get_topology_info", name=name))

    def topology_files(self, topology_id: str) -> dict[str, Any]:
        return dict(self.call("get_topology_files", topology_id=topology_id))

    # -- worker heartbeats (held by the leader, in memory) ---------------------------------------
    def send_worker_heartbeats(self, supervisor_id: str, heartbeats: Sequence[WorkerHeartbeat]) -> int:
        """Send a supervisor's workers' heartbeats to the leader (``send_supervisor_worker_heartbeats``);
        the number it kept."""
        answer = self.call("send_supervisor_worker_heartbeats", supervisor_id=supervisor_id,
                           heartbeats=[beat.to_doc() for beat in heartbeats])
        return int(answer.get("recorded", 0))

    def worker_heartbeats(self, topology_id: str) -> dict[tuple[str, int], WorkerHeartbeat]:
        """(node, port) → the newest heartbeat the leader holds of each worker of ``topology_id``
        (``get_worker_heartbeats``)."""
        answer = self.call("get_worker_heartbeats", topology_id=topology_id)
        beats = [WorkerHeartbeat.from_doc(doc) for doc in answer.get("heartbeats", [])]
        return {(beat.node, beat.port): beat for beat in beats}

    def ping(self, timeout_secs: float | None = None) -> bool:
        return self.rpc.ping(timeout_secs)
