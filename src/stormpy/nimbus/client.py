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
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from stormpy.config import DEFAULTS, rpc_auth_token
from stormpy.rpc import RpcClient
from stormpy.rpc.errors import UnreachableError, UploadError
from stormpy.topology.spec import refuse_local_classes

__all__ = ["NimbusClient", "parse_address"]

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


class NimbusClient:
    """Calls to one Nimbus at ``host:port``."""

    def __init__(self, host: str, port: int, *, timeout_secs: float = 10.0, retries: int = 1,
                 connect_timeout_secs: float = 3.0, auth_token: str | None = None) -> None:
        self.host = host
        self.port = int(port)
        self.connect_timeout_secs = connect_timeout_secs
        self.rpc = RpcClient(host, self.port, timeout_secs=timeout_secs, retries=retries,
                             auth_token=auth_token, service="Nimbus")

    @classmethod
    def from_config(cls, conf: Mapping[str, Any], address: str | None = None, **kwargs: Any) -> NimbusClient:
        """A client for ``address`` (``host:port``), else ``nimbus.host``/``nimbus.thrift.port``.

        ``timeout_secs``, ``retries`` and ``auth_token`` default to ``nimbus.rpc.timeout.secs``,
        ``nimbus.rpc.retries`` and ``nimbus.rpc.auth.token``; keyword arguments override them.
        """
        kwargs.setdefault("timeout_secs",
                          float(conf.get("nimbus.rpc.timeout.secs", DEFAULTS["nimbus.rpc.timeout.secs"])))
        kwargs.setdefault("retries", int(conf.get("nimbus.rpc.retries", DEFAULTS["nimbus.rpc.retries"])))
        kwargs.setdefault("auth_token", rpc_auth_token(conf))
        if address:
            host, port = parse_address(address)
        else:
            host = str(conf.get("nimbus.host", DEFAULTS["nimbus.host"]))
            port = int(conf.get("nimbus.thrift.port", DEFAULTS["nimbus.thrift.port"]))
            if host in ("0.0.0.0", "*"):
                host = "127.0.0.1"
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
        """Raise UnreachableError quickly when nothing accepts TCP connections on Nimbus's port."""
        try:
            with socket.create_connection((self.host, self.port), timeout=self.connect_timeout_secs):
                pass
        except OSError as exc:
            raise UnreachableError(f"Nimbus at {self.address} is unreachable ({exc.strerror or exc}); is "
                                   "`stormpy nimbus` running there? (set --nimbus host:port or nimbus.host / "
                                   "nimbus.thrift.port)") from None

    def call(self, method: str, /, **args: Any) -> Any:
        """Any RPC method by name."""
        return self.rpc.call(method, **args)

    # -- uploads ---------------------------------------------------------------------------------
    def upload_bundle(self, path: str | os.PathLike[str], progress: Progress | None = None) -> str:
        """Upload the bundle file in chunks; return its bundle key. ``progress(sent, total)``."""
        file = Path(path)
        size = file.stat().st_size
        digest = hashlib.sha256()
        begun = self.rpc.call("begin_upload", size=size)
        upload_id, chunk_size = begun["upload_id"], int(begun["chunk_size"])
        sent = 0
        with open(file, "rb") as stream:
            while chunk := stream.read(chunk_size):
                digest.update(chunk)
                answer = self.rpc.call("upload_chunk", upload_id=upload_id, data=chunk, offset=sent)
                sent += len(chunk)
                if answer.get("received") != sent:
                    raise UploadError(f"Nimbus acknowledged {answer.get('received')} bytes, expected {sent}")
                if progress is not None:
                    progress(sent, size)
        result = self.rpc.call("finish_upload", upload_id=upload_id, sha256=digest.hexdigest())
        return str(result["bundle_key"])

    def download_bundle(self, bundle_key: str, dest: str | os.PathLike[str],
                        progress: Progress | None = None) -> Path:
        """Download a topology's bundle to ``dest`` and check its sha256; return ``dest``."""
        begun = self.rpc.call("begin_download", bundle_key=bundle_key)
        size, expected = int(begun["size"]), str(begun["sha256"])
        out = Path(dest)
        digest = hashlib.sha256()
        received = 0
        with open(out, "wb") as stream:
            while True:
                data = self.rpc.call("download_chunk", download_id=begun["download_id"],
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
        function, which the cluster's workers could not import."""
        refuse_local_classes(spec)
        result = self.rpc.call("submit_topology", name=name, bundle_key=bundle_key, spec=dict(spec),
                               conf=dict(conf or {}), initial_status="active" if active else "inactive")
        return str(result["topology_id"])

    def submit(self, name: str, bundle_path: str | os.PathLike[str], spec: Mapping[str, Any],
               conf: Mapping[str, Any] | None = None, *, active: bool = True,
               progress: Progress | None = None) -> str:
        """Upload ``bundle_path`` and submit it; return the topology id."""
        key = self.upload_bundle(bundle_path, progress)
        return self.submit_topology(name, key, spec, conf, active=active)

    def kill(self, name: str, wait_secs: float | None = None) -> None:
        self.rpc.call("kill_topology", name=name, wait_secs=wait_secs)

    def activate(self, name: str) -> None:
        self.rpc.call("activate", name=name)

    def deactivate(self, name: str) -> None:
        self.rpc.call("deactivate", name=name)

    def rebalance(self, name: str, wait_secs: float | None = None, num_workers: int | None = None,
                  executors: Mapping[str, int] | None = None) -> None:
        self.rpc.call("rebalance", name=name, wait_secs=wait_secs, num_workers=num_workers,
                      executors=dict(executors) if executors else None)

    # -- information -----------------------------------------------------------------------------
    def cluster_info(self) -> dict[str, Any]:
        return dict(self.rpc.call("get_cluster_info"))

    def topology_info(self, name: str) -> dict[str, Any]:
        return dict(self.rpc.call("get_topology_info", name=name))

    def topology_files(self, topology_id: str) -> dict[str, Any]:
        return dict(self.rpc.call("get_topology_files", topology_id=topology_id))

    def ping(self, timeout_secs: float | None = None) -> bool:
        return self.rpc.ping(timeout_secs)
