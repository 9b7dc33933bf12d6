"""Bundle uploads: begin / chunk / finish sessions with a size limit, sha256 check and expiry.

Contract (what :class:`UploadManager` guarantees to its callers, the Nimbus RPC handler):

* :meth:`~UploadManager.begin` opens a session for a declared size in ``1..max_bundle_bytes`` bytes
  and returns its id and the preferred chunk size. At most ``max_sessions`` sessions may be open at
  once overall and ``max_sessions_per_client`` per client (the caller names the client: Nimbus uses
  the peer's IP address); beyond either cap ``begin`` first expires idle sessions, then refuses with
  an UploadError naming the cap and its config key. Sessions are thread-safe.
* :meth:`~UploadManager.chunk` appends bytes at ``offset``, which must equal the bytes received so
  far; a chunk that would exceed the declared size aborts the session. A chunk repeated at an
  offset already received with identical length is acknowledged without writing (client retry).
* :meth:`~UploadManager.finish` checks the received size and the sha256 (hex) the client claims,
  then fully verifies the bundle (zip structure, manifest hashes, no entry escaping its directory,
  unpacked size at most :data:`UNPACKED_LIMIT_FACTOR` × ``max_bundle_bytes``). On success the
  bundle is *staged* under a bundle key until :meth:`~UploadManager.take` claims it (submit); on
  any failure the session and its file are removed and :class:`~stormpy.rpc.errors.UploadError`
  names the problem.
* Sessions idle (no chunk) for ``idle_secs`` and staged bundles not claimed within
  ``expiration_secs`` are removed by :meth:`~UploadManager.expire` (Nimbus calls it from its
  monitor); every removal closes the session's file and deletes it.
* Every refusal is an :class:`~stormpy.rpc.errors.UploadError` (unknown bundle keys:
  :class:`~stormpy.rpc.errors.NotFoundError`); nothing half-written is ever staged.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from stormpy.bundle import BundleError, verify_bundle
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.rpc.errors import NotFoundError, UploadError

__all__ = ["UNPACKED_LIMIT_FACTOR", "StagedBundle", "UploadManager"]

log = logging.getLogger(__name__)

#: A bundle may unpack to at most this many times ``nimbus.max.bundle.size.bytes`` (zip bombs).
UNPACKED_LIMIT_FACTOR = 8


@dataclass
class _Session:
    upload_id: str
    size: int
    path: Path
    stream: BinaryIO
    last_active: float
    client: str = ""
    received: int = 0
    digest: Any = field(default_factory=hashlib.sha256)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False


@dataclass(frozen=True)
class StagedBundle:
    """A verified upload waiting to be claimed by a submit."""

    bundle_key: str
    path: Path
    sha256: str
    size: int
    staged_at: float


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class UploadManager:
    """Upload sessions and staged bundles under ``dirs.uploads``; thread-safe."""

    def __init__(self, dirs: NimbusDirs, *, max_bundle_bytes: int, expiration_secs: float,
                 chunk_size: int = 307200, clock: Callable[[], float] = time.time,
                 max_sessions: int = 64, max_sessions_per_client: int = 8,
                 idle_secs: float | None = None) -> None:
        self.dirs = dirs
        self.max_bundle_bytes = int(max_bundle_bytes)
        self.expiration_secs = float(expiration_secs)
        self.idle_secs = float(idle_secs) if idle_secs is not None else self.expiration_secs
        self.max_sessions = int(max_sessions)
        self.max_sessions_per_client = int(max_sessions_per_client)
        self.chunk_size = int(chunk_size)
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._staged: dict[str, StagedBundle] = {}
        #: since start: ``finished`` uploads and their ``bytes``, ``failed`` ones (aborted:
        #: refused chunk or checksum, invalid bundle, or expired), read by ``get_daemon_stats``
        self.counters: dict[str, int] = {"finished": 0, "bytes": 0, "failed": 0}

    # -- lifecycle -----------------------------------------------------------------------------
    def clear_leftovers(self) -> int:
        """Remove files left in the uploads directory by an earlier process; return how many."""
        self.dirs.uploads.mkdir(parents=True, exist_ok=True)
        removed = 0
        with self._lock:
            known = {s.path for s in self._sessions.values()} | {b.path for b in self._staged.values()}
        for path in self.dirs.uploads.iterdir():
            if path not in known and path.is_file():
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def close(self) -> None:
        """Abort every session and drop every staged bundle (files removed)."""
        with self._lock:
            sessions = list(self._sessions.values())
            staged = list(self._staged.values())
            self._sessions.clear()
            self._staged.clear()
        for session in sessions:
            self._discard(session)
        for bundle in staged:
            bundle.path.unlink(missing_ok=True)

    @property
    def open_sessions(self) -> int:
        with self._lock:
            return len(self._sessions)

    @property
    def staged_count(self) -> int:
        with self._lock:
            return len(self._staged)

    # -- the three upload steps ----------------------------------------------------------------
    def begin(self, size: Any, client: str = "") -> dict[str, Any]:
        """Open a session for ``size`` bytes for ``client``; ``{"upload_id", "chunk_size"}``."""
        if not _is_int(size) or size < 1:
            raise UploadError(f"begin_upload: size must be a positive integer, got {size!r}")
        if size > self.max_bundle_bytes:
            raise UploadError(f"bundle of {size} bytes exceeds the limit of {self.max_bundle_bytes} bytes "
                              "(nimbus.max.bundle.size.bytes)")
        if self._over_cap(client):
            self.expire()
            problem = self._over_cap(client)
            if problem:
                raise UploadError(f"begin_upload refused: {problem}; finish or abandon other uploads "
                                  f"(idle ones expire after {self.idle_secs:g} s)")
        upload_id = f"u{uuid.uuid4().hex}"
        path = self.dirs.upload_part(upload_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        stream = open(path, "xb")  # noqa: SIM115 - closed by finish/abort/expire
        session = _Session(upload_id, size, path, stream, self._clock(), client)
        with self._lock:
            problem = self._over_cap(client, locked=True)
            if not problem:
                self._sessions[upload_id] = session
        if problem:
            self._discard(session)
            raise UploadError(f"begin_upload refused: {problem}")
        log.info("upload %s begun (%d bytes)", upload_id, size)
        return {"upload_id": upload_id, "chunk_size": self.chunk_size}

    def chunk(self, upload_id: Any, data: Any, offset: Any) -> dict[str, Any]:
        """Append ``data`` at ``offset``; ``{"received": total bytes so far}``."""
        session = self._session(upload_id)
        if not isinstance(data, bytes | bytearray):
            raise UploadError(f"upload_chunk: data must be bytes, got {type(data).__name__}")
        if not _is_int(offset) or offset < 0:
            raise UploadError(f"upload_chunk: offset must be a non-negative integer, got {offset!r}")
        with session.lock:
            if session.closed:
                raise UploadError(f"upload {upload_id} is no longer open")
            session.last_active = self._clock()
            if offset < session.received and offset + len(data) <= session.received:
                return {"received": session.received}  # a retried chunk we already hold
            if offset != session.received:
                raise UploadError(f"upload {upload_id}: chunk at offset {offset}, expected offset "
                                  f"{session.received}")
            if session.received + len(data) > session.size:
                self._abort_locked(session)
                raise UploadError(f"upload {upload_id}: received more than the declared {session.size} "
                                  "bytes; upload aborted")
            session.stream.write(data)
            session.digest.update(data)
            session.received += len(data)
            return {"received": session.received}

    def finish(self, upload_id: Any, sha256: Any) -> str:
        """Check size, checksum and bundle contents; stage it and return its bundle key."""
        session = self._session(upload_id)
        with session.lock:
            if session.closed:
                raise UploadError(f"upload {upload_id} is no longer open")
            try:
                if not isinstance(sha256, str):
                    raise UploadError(f"finish_upload: sha256 must be a hex string, got {sha256!r}")
                if session.received != session.size:
                    raise UploadError(f"upload {upload_id}: received {session.received} of the declared "
                                      f"{session.size} bytes")
                actual = session.digest.hexdigest()
                if actual != sha256.lower():
                    raise UploadError(f"upload {upload_id}: sha256 mismatch (client sent {sha256}, "
                                      f"received bytes hash to {actual})")
                session.stream.close()
                try:
                    verify_bundle(session.path,
                                  max_unpacked_bytes=self.max_bundle_bytes * UNPACKED_LIMIT_FACTOR)
                except BundleError as exc:
                    raise UploadError(f"upload {upload_id} is not a valid bundle: {exc}") from None
            except UploadError:
                self._abort_locked(session)
                raise
            except Exception as exc:  # never leave a .part behind, whatever failed
                self._abort_locked(session)
                log.exception("upload %s: verification failed unexpectedly", upload_id)
                raise UploadError(f"upload {upload_id} could not be verified: {type(exc).__name__}: "
                                  f"{exc}") from None
            bundle_key = f"b{uuid.uuid4().hex}"
            staged_path = self.dirs.staged_bundle(bundle_key)
            os.replace(session.path, staged_path)
            session.closed = True
            staged = StagedBundle(bundle_key, staged_path, actual, session.size, self._clock())
        with self._lock:
            self._sessions.pop(session.upload_id, None)
            self._staged[bundle_key] = staged
            self.counters["finished"] += 1
            self.counters["bytes"] += staged.size
        log.info("upload %s finished: bundle %s (%d bytes, sha256 %s)", upload_id, bundle_key,
                 staged.size, actual)
        return bundle_key

    def stats(self) -> dict[str, int]:
        """A copy of :attr:`counters`."""
        with self._lock:
            return dict(self.counters)

    def take(self, bundle_key: Any) -> StagedBundle:
        """Claim a staged bundle (the caller moves or deletes its file); NotFoundError if unknown."""
        with self._lock:
            staged = self._staged.pop(bundle_key, None) if isinstance(bundle_key, str) else None
        if staged is None:
            raise NotFoundError(f"no uploaded bundle with key {bundle_key!r} (never uploaded, already "
                                "submitted, or expired after nimbus.file.copy.expiration.secs)")
        return staged

    def restage(self, staged: StagedBundle) -> None:
        """Put back a bundle taken by a submit that then failed validation."""
        with self._lock:
            self._staged[staged.bundle_key] = staged

    # -- expiry --------------------------------------------------------------------------------
    def expire(self, now: float | None = None) -> list[str]:
        """Remove sessions idle and staged bundles unclaimed for ``expiration_secs``; their ids."""
        now = self._clock() if now is None else now
        cutoff = now - self.expiration_secs
        idle_cutoff = now - self.idle_secs
        with self._lock:
            stale_sessions = [s for s in self._sessions.values() if s.last_active <= idle_cutoff]
            stale_bundles = [b for b in self._staged.values() if b.staged_at <= cutoff]
            for b in stale_bundles:
                del self._staged[b.bundle_key]
        removed = []
        for session in stale_sessions:
            with session.lock:
                if not session.closed and session.last_active <= idle_cutoff:
                    self._abort_locked(session)
                    removed.append(session.upload_id)
        for bundle in stale_bundles:
            bundle.path.unlink(missing_ok=True)
            removed.append(bundle.bundle_key)
        if removed:
            log.info("expired abandoned uploads: %s", ", ".join(removed))
        return removed

    # -- internals -----------------------------------------------------------------------------
    def _over_cap(self, client: str, *, locked: bool = False) -> str:
        """Why one more session for ``client`` is refused ('' when it is not)."""
        if not locked:
            with self._lock:
                return self._over_cap(client, locked=True)
        if len(self._sessions) >= self.max_sessions:
            return (f"{len(self._sessions)} uploads are open, the limit is {self.max_sessions} "
                    "(nimbus.upload.max.sessions)")
        mine = sum(1 for s in self._sessions.values() if s.client == client)
        if mine >= self.max_sessions_per_client:
            return (f"client {client or '(unknown)'} has {mine} uploads open, the limit is "
                    f"{self.max_sessions_per_client} (nimbus.upload.max.sessions.per.client)")
        return ""

    def _session(self, upload_id: Any) -> _Session:
        with self._lock:
            session = self._sessions.get(upload_id) if isinstance(upload_id, str) else None
        if session is None:
            raise UploadError(f"unknown upload id {upload_id!r} (never begun, finished, aborted, or "
                              "expired after nimbus.file.copy.expiration.secs)")
        return session

    def _abort_locked(self, session: _Session) -> None:
        session.closed = True
        with self._lock:
            self._sessions.pop(session.upload_id, None)
            self.counters["failed"] += 1
        self._discard(session)

    @staticmethod
    def _discard(session: _Session) -> None:
        session.closed = True
        try:
            session.stream.close()
        finally:
            session.path.unlink(missing_ok=True)
