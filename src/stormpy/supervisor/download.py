"""Downloading a topology's code from Nimbus into the supervisor's ``stormdist``.

Protocol (docs/cluster-contract.md, "Nimbus RPC"): ``get_topology_files(topology_id)`` →
``begin_download(bundle_key)`` → ``download_chunk(download_id, offset)`` until an empty chunk.

Contract of :meth:`BundleDownloader.download`: the bundle's size and sha256 must match what
Nimbus announced (both in ``get_topology_files`` and ``begin_download``), the bundle must pass
:func:`stormpy.bundle.verify_bundle`, and it is unpacked safely. Everything is prepared in a
hidden temporary directory that is renamed to ``stormdist/<topology-id>`` at the end, so the
directory appears complete or not at all (:meth:`SupervisorDirs.is_downloaded`). Any failure
raises :class:`DownloadError` naming the topology and leaves nothing behind.

:class:`DownloadQueue` runs the downloads of one supervisor on its own thread (a
:class:`~stormpy.host.service.Service`), one at a time, in the order asked: a topology is queued
at most once at a time, and after a failed download it is not queued again
before its back-off has passed (1 s, doubling up to 60 s; a success resets it).

Nimbus HA: the candidates are the config's seeds (:func:`stormpy.client.seed_addresses`); the
leader (:func:`stormpy.client.find_leader`) is tried first, then the others (a standby serves the
bundles it has replicated), so downloads keep working across a change of leader. A dead candidate
costs its connect timeout only. A download fails only when no candidate could serve it.

The transfer and its checks are :func:`stormpy.client.download_bundle`'s; the RPC clients are
:func:`stormpy.client.rpc_client`'s (``nimbus.rpc.auth.token``, ``nimbus.rpc.timeout.secs``,
``nimbus.rpc.retries``). A Nimbus refusing the token is a DownloadError that says so (it is not
mistaken for an unreachable Nimbus).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgpack

from stormpy.bundle import BundleError, unpack_bundle, verify_bundle
from stormpy.client import (
    BundleDigest,
    download_bundle,
    find_leader,
    leader_first,
    parse_address,
    rpc_client,
    rpc_settings,
    seed_addresses,
)
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.config import setting
from stormpy.host.backoff import Backoff
from stormpy.host.service import Service
from stormpy.rpc import AuthorizationError, RpcClient, RpcError, RpcTimeoutError, UnreachableError

__all__ = ["BundleDownloader", "DownloadError", "DownloadQueue"]

#: Longest wait for a Nimbus to say who leads before the next seed is asked.
LEADER_ASK_TIMEOUT_SECS = 5.0
#: Back-off after a failed download of a topology: the first retry waits this long ...
RETRY_MIN_SECS = 1.0
#: ... and each further failure doubles it, up to this.
RETRY_MAX_SECS = 60.0
#: How long the download service sleeps with nothing queued (a request wakes it at once).
_IDLE_SECS = 60.0


class DownloadError(RuntimeError):
    """A topology's code could not be downloaded; the message names the topology and the cause."""


ClientFactory = Callable[[str, int], RpcClient]


class BundleDownloader:
    """Fetches topologies for one supervisor (``dirs``) from the Nimbus named by ``conf``."""

    def __init__(self, conf: Mapping[str, Any], dirs: SupervisorDirs, *,
                 log: logging.Logger | None = None,
                 client_factory: ClientFactory | None = None) -> None:
        self.conf = conf
        self.dirs = dirs
        self.log = log or logging.getLogger(__name__)
        self.max_bundle_bytes = int(setting(conf, "nimbus.max.bundle.size.bytes"))
        self._client_factory = client_factory or self._default_client
        self._ask_factory = client_factory or self._asking_client

    def _default_client(self, host: str, port: int) -> RpcClient:
        return rpc_client(self.conf, f"{host}:{port}")

    def _asking_client(self, host: str, port: int) -> RpcClient:
        """For ``get_leader``: a hung Nimbus costs at most LEADER_ASK_TIMEOUT_SECS, no retry."""
        settings = rpc_settings(self.conf)
        return rpc_client(self.conf, f"{host}:{port}", retries=0,
                          timeout_secs=min(settings["timeout_secs"], LEADER_ASK_TIMEOUT_SECS))

    def _client(self, address: str) -> RpcClient:
        return self._client_factory(*parse_address(address))

    def _candidates(self) -> list[str]:
        """The seeds, the leader first (a refusal of this supervisor's token is a DownloadError)."""
        seeds = seed_addresses(self.conf)
        try:
            leader = find_leader(seeds, client_factory=lambda a: self._ask_factory(*parse_address(a)),
                                 raise_refusal=True)
        except AuthorizationError as exc:
            raise DownloadError(f"Nimbus refused this supervisor: {exc.message} "
                                "(nimbus.rpc.auth.token must match Nimbus's)") from exc
        return leader_first(seeds, leader)

    def download(self, topology_id: str) -> Path:
        """Download, verify and unpack ``topology_id``; return its stormdist directory."""
        final = self.dirs.stormdist(topology_id)
        self.dirs.stormdist_root.mkdir(parents=True, exist_ok=True)
        tmp = self.dirs.stormdist_root / f".tmp-{topology_id}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            self._fetch_from_any(topology_id, tmp)
            if final.exists():
                shutil.rmtree(final)
            tmp.rename(final)
        except DownloadError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        except (RpcError, BundleError, OSError, KeyError, TypeError, ValueError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            kind = "Nimbus unreachable" if isinstance(exc, UnreachableError) else type(exc).__name__
            raise DownloadError(f"cannot download topology {topology_id}: {kind}: {exc}") from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final

    def _fetch_from_any(self, topology_id: str, tmp: Path) -> None:
        """Fetch from the first candidate that can serve ``topology_id``; raise the last failure."""
        candidates = self._candidates()
        failures: list[str] = []
        unreachable = True
        for address in candidates:
            client = self._client(address)
            try:
                self._fetch(client, topology_id, tmp)
                return
            except AuthorizationError as exc:
                raise DownloadError(f"Nimbus at {address} refused this supervisor: {exc.message} "
                                    "(nimbus.rpc.auth.token must match Nimbus's)") from exc
            except (RpcError, DownloadError, BundleError) as exc:
                failures.append(f"{address}: {type(exc).__name__}: {exc}")
                unreachable = unreachable and isinstance(exc, RpcTimeoutError)
                self.log.info("Nimbus %s cannot serve topology %s (%s)", address, topology_id, exc)
                for child in tmp.iterdir():
                    if child.is_dir():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
            finally:
                client.close()
        if unreachable:
            raise DownloadError(f"cannot download topology {topology_id}: no Nimbus answered at "
                                f"{', '.join(candidates)}")
        raise DownloadError(f"cannot download topology {topology_id}: " + "; ".join(failures))

    def _fetch(self, client: RpcClient, topology_id: str, tmp: Path) -> None:
        files = client.call("get_topology_files", topology_id=topology_id)
        announced = BundleDigest(int(files["bundle_size"]), str(files["bundle_sha256"]))
        bundle = tmp / "bundle.zip"
        download_bundle(client.call, str(files["bundle_key"]), bundle, expected=announced,
                        max_bytes=self.max_bundle_bytes)
        verify_bundle(bundle)
        unpack_bundle(bundle, tmp / "code")
        doc = {"spec": files["spec"], "conf": files["conf"]}
        # the topology's secrets (CURVE keys, ZooKeeper identity) live here: this user only
        fd = os.open(tmp / "topology.msgpack", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out_file:
            out_file.write(msgpack.packb(doc, use_bin_type=True))
        self.log.info("downloaded topology %s: bundle %s (%d bytes, sha256 %s)", topology_id,
                      files["bundle_key"], announced.size, announced.sha256)


class DownloadQueue:
    """Downloads topologies with ``downloader`` on a thread of its own (see the module docstring):
    a :class:`~stormpy.host.service.Service` named ``supervisor-download`` whose round downloads
    the next queued topology; :meth:`request` wakes it.

    ``on_done()`` runs after every attempt, successful or not (the supervisor then syncs).
    """

    def __init__(self, downloader: BundleDownloader, on_done: Callable[[], object], *,
                 log: logging.Logger | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.downloader = downloader
        self.clock = clock
        self.on_done = on_done
        self.log = log or logging.getLogger(__name__)
        self._lock = threading.Lock()
        self._queued: deque[str] = deque()
        self._pending: set[str] = set()  # queued or being downloaded
        self._retry: dict[str, Backoff] = {}  # topology → its backoff after failed downloads
        # one round downloads one topology; an empty queue waits for request()'s wake
        self._service = Service("supervisor-download", self._download_next, interval=_IDLE_SECS,
                                log=self.log)

    def start(self) -> DownloadQueue:
        """Start the download thread; return self."""
        self._service.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop after the current download (waiting up to ``timeout`` s for it; queued ones are
        dropped); idempotent. True when the thread has ended."""
        return self._service.stop(timeout)

    def request(self, topology_id: str) -> bool:
        """Queue ``topology_id`` unless it is queued or running, or backing off; True when queued."""
        with self._lock:
            if topology_id in self._pending:
                return False
            retry = self._retry.get(topology_id)
            if retry is not None and not retry.ready(self.clock()):
                return False
            self._pending.add(topology_id)
            self._queued.append(topology_id)
        self.log.info("downloading topology %s", topology_id)
        self._service.wake()
        return True

    def pending(self) -> set[str]:
        """Topologies queued or being downloaded (a copy)."""
        with self._lock:
            return set(self._pending)

    def _download_next(self) -> float | None:
        """One round: download the next queued topology, if any; 0 (the next round at once) while
        more are queued, else None (idle until a request wakes the service)."""
        with self._lock:
            if not self._queued:
                return None
            topology_id = self._queued.popleft()
        failure: str | None = None
        try:
            self.downloader.download(topology_id)
        except DownloadError as exc:
            failure = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bug here must not end the downloads
            self.log.exception("download of %s failed", topology_id)
            failure = f"download of {topology_id} failed: {exc!r}"
        delay = 0.0
        with self._lock:
            self._pending.discard(topology_id)
            if failure is None:
                self._retry.pop(topology_id, None)
            else:
                retry = self._retry.setdefault(topology_id, Backoff(RETRY_MIN_SECS, RETRY_MAX_SECS))
                retry.failed_at(self.clock())
                delay = retry.last_delay
            more = bool(self._queued)
        if failure is not None:
            self.log.warning("%s (retrying in %.0f s)", failure, delay)
        try:
            self.on_done()
        except Exception:  # noqa: BLE001 - the queued downloads go on all the same
            self.log.exception("supervisor-download: on_done after the download of %s failed",
                               topology_id)
        return 0.0 if more else None
