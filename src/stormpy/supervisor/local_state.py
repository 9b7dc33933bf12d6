"""A supervisor's persistent id and the worker files it reads (the layout of its files under
``storm.local.dir`` is :class:`~stormpy.cluster.local_layout.SupervisorDirs`, shared with the
worker process).

Id contract: :func:`claim_supervisor_id` reuses the id of a directory whose identity (host and
ports) matches and whose lock no running supervisor holds, so a restarted supervisor keeps its id
(and finds its workers); several supervisors may share one local dir (each gets its own id). The
lock is released by the operating system when the process dies, however it dies.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import msgpack

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from stormpy.cluster.local_layout import IDENTITY_FILE, LOCK_FILE

__all__ = ["LocalHeartbeat", "claim_supervisor_id", "read_local_heartbeat", "read_pid", "write_pid"]


def _identity(host: str, ports: Iterable[int]) -> dict[str, Any]:
    return {"host": host, "ports": sorted(int(p) for p in ports)}


def _try_lock(path: Path) -> IO[str] | None:
    handle = open(path, "a+")  # noqa: SIM115 - kept open while the id is in use
    if fcntl is None:
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def claim_supervisor_id(local_dir: str | os.PathLike[str], host: str,
                        ports: Iterable[int]) -> tuple[str, IO[str]]:
    """An id for a supervisor serving ``host``/``ports`` and the open lock file that holds it.

    Keep the returned handle open while the supervisor runs; close it to release the id.
    """
    base = Path(local_dir) / "supervisor"
    base.mkdir(parents=True, exist_ok=True)
    wanted = _identity(host, ports)
    for d in sorted(base.iterdir()):
        try:
            identity = json.loads((d / IDENTITY_FILE).read_text())
        except (OSError, ValueError):
            continue
        if identity != wanted:
            continue
        handle = _try_lock(d / LOCK_FILE)
        if handle is not None:
            return d.name, handle
    supervisor_id = str(uuid.uuid4())
    d = base / supervisor_id
    d.mkdir()
    handle = _try_lock(d / LOCK_FILE)
    assert handle is not None, "a fresh supervisor directory cannot be locked by anyone else"
    (d / IDENTITY_FILE).write_text(json.dumps(wanted))
    return supervisor_id, handle


@dataclass(frozen=True)
class LocalHeartbeat:
    """A worker's local heartbeat: wall-clock ``time`` and ``pid`` (and what it runs, when known)."""

    time: float
    pid: int
    topology_id: str | None = None
    port: int | None = None
    executors: tuple[tuple[int, int], ...] | None = None


def read_local_heartbeat(path: str | os.PathLike[str]) -> LocalHeartbeat | None:
    """The heartbeat at ``path``, or None when it is missing or unreadable."""
    try:
        doc = msgpack.unpackb(Path(path).read_bytes(), raw=False)
        executors = doc.get("executors")
        return LocalHeartbeat(time=float(doc["time"]), pid=int(doc["pid"]),
                              topology_id=doc.get("topology_id"), port=doc.get("port"),
                              executors=tuple((int(s), int(e)) for s, e in executors)
                              if executors is not None else None)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, msgpack.UnpackException):
        return None


def read_pid(path: str | os.PathLike[str]) -> int | None:
    """The pid stored at ``path``, or None."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def write_pid(path: str | os.PathLike[str], pid: int) -> None:
    """Store ``pid`` at ``path`` (atomically)."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(f"{pid}\n")
    os.replace(tmp, target)
