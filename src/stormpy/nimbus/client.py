"""NimbusClient: the operator/submitter side of the Nimbus RPC (used by the CLI and tests).

Every call goes through :class:`~stormpy.rpc.RpcClient`: each attempt waits at most
``timeout_secs`` and a call makes ``1 + retries`` attempts (retries are answered from the server's
cache, never executed twice), so a dead Nimbus gives
:class:`~stormpy.rpc.errors.UnreachableError` / :class:`~stormpy.rpc.errors.RpcTimeoutError`
instead of a hang. :meth:`NimbusClient.check_reachable` answers within ``connect_timeout_secs``
whether anything listens on Nimbus's port at all. Server-side refusals arrive as the typed errors
of :mod:`stormpy.rpc.errors`; a Nimbus that requires ``nimbus.rpc.auth.token`` answers every call
without the same ``auth_token`` with :class:`~stormpy.rpc.errors.AuthorizationError`.
:meth:`NimbusClient.from_config` takes the timeout, retries and token from the config.

Nimbus HA: a client knows a list of seed addresses (``nimbus.seeds``; an explicit address is the
only seed). A standby answers writes with :class:`~stormpy.rpc.errors.NotLeaderError` naming the
leader, and the client switches to it and calls again; one that names no leader (none elected
yet, or it is cut off from ZooKeeper) makes the client ask the other seeds who leads, for up to
``leader_wait_secs``. When the Nimbus it talks to stops answering
and it has other seeds, it asks them (``get_leader``) who leads now and switches, for up to
``leader_wait_secs`` (``nimbus.leader.wait.secs``); a switch to another Nimbus sends the call with a
new request id there. :meth:`NimbusClient.submit` restarts the whole upload and submit on the new
leader when the leader changed during it (an upload session lives on one Nimbus only); if the
lost leader had already accepted the submit, the topology found under that name is the answer.
With a single seed a dead Nimbus is an error at once, as before.

A dead Nimbus is found at connect time: every RPC client of this module waits at most
``connect_timeout_secs`` for the TCP connection (a refused one fails at once), so a client whose
Nimbus died costs that, not ``timeout_secs`` per attempt, before it asks the seeds; asking
continues every half second until a seed names a live leader, so a write issued during a failover
completes about half a second after the standby took over. The last leader found for a set of
seeds is remembered for the process (and, with ``remember=True``, in a small file under
``$STORMPY_CACHE_DIR`` or ``~/.cache/stormpy``, so the next CLI command starts there).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from stormpy.config import DEFAULTS, rpc_auth_token
from stormpy.config.multilang import check_multilang_settings
from stormpy.nimbus.leader_memo import remember_leader, remembered_leader
from stormpy.rpc import RpcClient
from stormpy.rpc.curve import server_public_key
from stormpy.rpc.errors import (
    AlreadyExistsError,
    NotFoundError,
    NotLeaderError,
    RpcError,
    RpcTimeoutError,
    UnreachableError,
    UploadError,
)
from stormpy.topology.spec import refuse_local_classes

__all__ = ["CONNECT_TIMEOUT_SECS", "NimbusClient", "find_leader", "parse_address", "seed_addresses"]

log = logging.getLogger(__name__)

Progress = Callable[[int, int], Any]


def parse_address(address: str, default_port: int = int(DEFAULTS["nimbus.thrift.port"])) -> tuple[str, int]:
    """``"host:port"`` (or ``"host"``) → ``(host, port)``; ValueError naming the bad part."""
    host, sep, port = address.rpartition(":")
    if not sep:
        host, port = address, str(default_port)
    if not host:
        raise ValueError(f"Nimbus address {address!r} has no host (expected host:port)")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"Nimbus address {address!r} has no valid port (expected host:port)")
    return host, int(port)


def _component_configs(spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Component id → its config, from a spec document (malformed parts left to Nimbus)."""
    components = spec.get("components")
    if not isinstance(components, Mapping):
        return {}
    return {cid: c["config"] for cid, c in components.items()
            if isinstance(c, Mapping) and isinstance(c.get("config"), Mapping)}


def seed_addresses(conf: Mapping[str, Any]) -> list[str]:
    """``host:port`` of ``nimbus.host`` then every ``nimbus.seeds`` entry (``host`` or
    ``host:port``; the port defaults to ``nimbus.thrift.port``), duplicates removed, order kept.
    A config naming neither gets the default host on its ``nimbus.thrift.port``."""
    port = int(conf.get("nimbus.thrift.port") or DEFAULTS["nimbus.thrift.port"])
    seeds = conf.get("nimbus.seeds") or []
    entries = [conf.get("nimbus.host"), *([seeds] if isinstance(seeds, str) else seeds)]
    if not any(entries):
        entries = [DEFAULTS["nimbus.host"]]
    out: list[str] = []
    for entry in entries:
        if not entry:
            continue
        host, p = parse_address(str(entry), port)
        if host in ("0.0.0.0", "*"):
            host = "127.0.0.1"
        if f"{host}:{p}" not in out:
            out.append(f"{host}:{p}")
    return out


#: Seconds a client waits for the TCP connection to a Nimbus before it counts it as dead.
CONNECT_TIMEOUT_SECS = 2.0

def find_leader(seeds: Sequence[str], *, auth_token: str | None = None,
                timeout_secs: float = 2.0, connect_timeout_secs: float = CONNECT_TIMEOUT_SECS,
                curve_server_key: bytes | None = None) -> str | None:
    """Ask each seed in turn who leads; the first answer naming a leader wins (None: nobody knows).
    A seed that accepts no connection within ``connect_timeout_secs`` is skipped."""
    for seed in seeds:
        host, port = parse_address(seed)
        client = RpcClient(host, port, timeout_secs=timeout_secs, retries=0, auth_token=auth_token,
                           service="Nimbus", connect_timeout_secs=connect_timeout_secs,
                           curve_server_key=curve_server_key)
        try:
            answer = client.call("get_leader")
        except RpcError:
            continue
        finally:
            client.close()
        if isinstance(answer, Mapping):
            if answer.get("is_leader"):
                return seed
            if isinstance(answer.get("leader"), str):
                return str(answer["leader"])
    return None


class NimbusClient:
    """Calls to the leading Nimbus, starting at ``host:port`` (see the module docstring)."""

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
        """A client for ``address`` (``host:port``), else ``nimbus.host``/``nimbus.thrift.port``.

        ``timeout_secs``, ``retries`` and ``auth_token`` default to ``nimbus.rpc.timeout.secs``,
        ``nimbus.rpc.retries`` and ``nimbus.rpc.auth.token``, ``curve_server_key`` to
        ``nimbus.rpc.curve.public.key``; keyword arguments override them.
        """
        kwargs.setdefault("timeout_secs",
                          float(conf.get("nimbus.rpc.timeout.secs", DEFAULTS["nimbus.rpc.timeout.secs"])))
        kwargs.setdefault("retries", int(conf.get("nimbus.rpc.retries", DEFAULTS["nimbus.rpc.retries"])))
        kwargs.setdefault("auth_token", rpc_auth_token(conf))
        kwargs.setdefault("curve_server_key", server_public_key(conf))
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
        ``leader_wait_secs`` after the first failure)."""
        deadline: float | None = None
        while True:
            try:
                return self.rpc.call(method, **args)
            except NotLeaderError as exc:
                if exc.leader is not None and exc.leader != self.address:
                    self._switch(exc.leader)
                    continue
                deadline = deadline or time.monotonic() + self.leader_wait_secs
                if time.monotonic() >= deadline:
                    raise
                # it knows no leader (e.g. it is cut off from ZooKeeper): another seed may
                leader = find_leader([s for s in self.seeds if s != self.address], auth_token=self.auth_token,
                                     connect_timeout_secs=self.connect_timeout_secs,
                                     curve_server_key=self.curve_server_key)
                if leader is not None and leader != self.address:
                    self._switch(leader)
                else:
                    time.sleep(0.5)
            except RpcTimeoutError:  # UnreachableError included
                deadline = deadline or time.monotonic() + self.leader_wait_secs
                if len(self.seeds) < 2 or time.monotonic() >= deadline:
                    raise
                leader = find_leader(self.seeds, auth_token=self.auth_token,
                                     connect_timeout_secs=self.connect_timeout_secs,
                                     curve_server_key=self.curve_server_key)
                if leader is not None and leader != self.address:
                    self._switch(leader)
                else:
                    time.sleep(0.5)

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
        return find_leader(self.seeds, auth_token=self.auth_token,
                           connect_timeout_secs=self.connect_timeout_secs,
                           curve_server_key=self.curve_server_key)

    # -- uploads ---------------------------------------------------------------------------------
    def upload_bundle(self, path: str | os.PathLike[str], progress: Progress | None = None) -> str:
        """Upload the bundle file in chunks; return its bundle key. ``progress(sent, total)``."""
        file = Path(path)
        size = file.stat().st_size
        digest = hashlib.sha256()
        begun = self.call("begin_upload", size=size)
        upload_id, chunk_size = begun["upload_id"], int(begun["chunk_size"])
        sent = 0
        with open(file, "rb") as stream:
            while chunk := stream.read(chunk_size):
                digest.update(chunk)
                answer = self.call("upload_chunk", upload_id=upload_id, data=chunk, offset=sent)
                sent += len(chunk)
                if answer.get("received") != sent:
                    raise UploadError(f"Nimbus acknowledged {answer.get('received')} bytes, expected {sent}")
                if progress is not None:
                    progress(sent, size)
        result = self.call("finish_upload", upload_id=upload_id, sha256=digest.hexdigest())
        return str(result["bundle_key"])

    def download_bundle(self, bundle_key: str, dest: str | os.PathLike[str],
                        progress: Progress | None = None) -> Path:
        """Download a topology's bundle to ``dest`` and check its sha256; return ``dest``."""
        begun = self.call("begin_download", bundle_key=bundle_key)
        size, expected = int(begun["size"]), str(begun["sha256"])
        out = Path(dest)
        digest = hashlib.sha256()
        received = 0
        with open(out, "wb") as stream:
            while True:
                data = self.call("download_chunk", download_id=begun["download_id"],
                                     offset=received)["data"]
                if not data:
                    break
                stream.write(data)
                digest.update(data)
                received += len(data)
                if progress is not None:
                    progress(received, size)
        if received != size or digest.hexdigest() != expected:
            out.unlink(missing_ok=True)
            raise UploadError(f"download of {bundle_key} is corrupt ({received}/{size} bytes, "
                              "sha256 mismatch)")
        return out

    # -- lifecycle -------------------------------------------------------------------------------
    def submit_topology(self, name: str, bundle_key: str, spec: Mapping[str, Any],
                        conf: Mapping[str, Any] | None = None, *, active: bool = True) -> str:
        """Submit an uploaded bundle with its spec document; return the topology id.
        InvalidTopologyError (before any call) when the spec names a class defined inside a
        function, which the cluster's workers could not import; SettingError (before any call)
        for a bad multilang setting in ``conf`` or a component's config."""
        refuse_local_classes(spec)
        check_multilang_settings(conf or {}, _component_configs(spec))
        result = self.call("submit_topology", name=name, bundle_key=bundle_key, spec=dict(spec),
                           conf=dict(conf or {}), initial_status="active" if active else "inactive")
        self.warnings = [str(w) for w in result.get("warnings") or []]
        for warning in self.warnings:
            log.warning("Nimbus: %s", warning)
        return str(result["topology_id"])

    def submit(self, name: str, bundle_path: str | os.PathLike[str], spec: Mapping[str, Any],
               conf: Mapping[str, Any] | None = None, *, active: bool = True,
               progress: Progress | None = None) -> str:
        """Upload ``bundle_path`` and submit it; return the topology id. Starts over on the new
        leader when the leader changes meanwhile (see the module docstring)."""
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

    def ping(self, timeout_secs: float | None = None) -> bool:
        return self.rpc.ping(timeout_secs)
