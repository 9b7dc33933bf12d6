"""Bundle downloads for supervisors: ``begin_download`` / ``download_chunk`` sessions.

A session remembers which file it serves, its size and sha256; chunks are read at any offset (so
a supervisor may retry a chunk) and an empty chunk marks the end. Sessions idle for
``expiration_secs`` are forgotten by :meth:`DownloadManager.expire`. Files are opened per chunk,
so no descriptor is held between calls; a bundle removed mid-download (its topology was killed)
gives :class:`~stormpy.rpc.errors.NotFoundError`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormpy.rpc.errors import NotFoundError, UploadError

__all__ = ["DownloadManager"]


@dataclass
class _Download:
    path: Path
    size: int
    sha256: str
    last_active: float


class DownloadManager:
    """Open download sessions; thread-safe."""

    def __init__(self, *, chunk_size: int, expiration_secs: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.chunk_size = int(chunk_size)
        self.expiration_secs = float(expiration_secs)
        self._clock = clock
        self._lock = threading.Lock()
        self._downloads: dict[str, _Download] = {}

    def begin(self, path: Path, size: int, sha256: str) -> dict[str, Any]:
        """Open a session for the file ``path``; ``{"download_id", "size", "sha256", "chunk_size"}``."""
        download_id = f"d{uuid.uuid4().hex}"
        with self._lock:
            self._downloads[download_id] = _Download(path, size, sha256, self._clock())
        return {"download_id": download_id, "size": size, "sha256": sha256, "chunk_size": self.chunk_size}

    def chunk(self, download_id: Any, offset: Any) -> dict[str, Any]:
        """``{"data": bytes}`` read at ``offset`` (empty at or past the end; the session then ends)."""
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise UploadError(f"download_chunk: offset must be a non-negative integer, got {offset!r}")
        with self._lock:
            download = self._downloads.get(download_id) if isinstance(download_id, str) else None
            if download is not None:
                download.last_active = self._clock()
        if download is None:
            raise UploadError(f"unknown download id {download_id!r} (never begun, finished or expired)")
        if offset >= download.size:
            with self._lock:
                self._downloads.pop(download_id, None)
            return {"data": b""}
        try:
            with open(download.path, "rb") as stream:
                stream.seek(offset)
                data = stream.read(self.chunk_size)
        except FileNotFoundError:
            with self._lock:
                self._downloads.pop(download_id, None)
            raise NotFoundError(f"the bundle of download {download_id} is gone (topology killed?)") from None
        return {"data": data}

    def expire(self, now: float | None = None) -> list[str]:
        """Forget sessions idle for ``expiration_secs``; their ids."""
        now = self._clock() if now is None else now
        with self._lock:
            stale = [k for k, d in self._downloads.items() if d.last_active <= now - self.expiration_secs]
            for k in stale:
                del self._downloads[k]
        return stale

    @property
    def open_sessions(self) -> int:
        with self._lock:
            return len(self._downloads)
