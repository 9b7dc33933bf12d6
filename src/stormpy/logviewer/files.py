"""Safe access to one host's log directory: paging, searching and cleaning up worker logs.

Contract of :class:`LogDir`:

* :meth:`LogDir.resolve` turns a requested ``file`` (relative to the log directory, e.g.
  ``worker-wc-1-17-6700.log`` or ``workers-artifacts/wc-1-17/6700/jstack-....txt``) into a path
  inside it. An empty, absolute or ``..``-bearing name is :class:`BadRequest` (HTTP 400); a name
  that resolves outside the directory (through a symbolic link) is :class:`Forbidden` (403); a
  missing file :class:`NotFound` (404).
* :meth:`LogDir.read` returns ``length`` bytes from ``start`` (a negative start counts from the end,
  the default shows the last ``length`` bytes, as Storm's log page does) with the file's size.
* :meth:`LogDir.search` finds ``needle`` (bytes, case-sensitive) from ``offset``: up to
  ``num_matches`` matches with their byte offsets and the text before and after each (Storm's
  ``beforeString``/``afterString``, :data:`CONTEXT_BYTES` each), and the offset to continue from;
  ``needle`` is 1 to :data:`MAX_SEARCH_BYTES` UTF-8 bytes (Storm's limit), else BadRequest.
* :meth:`LogDir.topology_logs` lists the worker log files of a topology (rotated ones included),
  each worker's events log (``worker-<topology id>-<port>-events.log``, its sampled tuples) among
  them.
* :func:`clean_up` deletes the logs, events logs and artefacts of workers that no longer run and whose files
  were all untouched for ``age_secs``; it returns what it deleted.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["CONTEXT_BYTES", "BadRequest", "Forbidden", "LogDir", "NotFound", "clean_up"]

CONTEXT_BYTES = 128
MAX_SEARCH_BYTES = 1024
MAX_READ = 1 << 20

#: a worker's log or its events log (sampled tuples), current or rotated
_WORKER_LOG = re.compile(r"^worker-(?P<topo>.+)-(?P<port>\d+)(-events)?\.log(\.\d+)?$")


class BadRequest(ValueError):
    status = 400


class Forbidden(PermissionError):
    status = 403


class NotFound(FileNotFoundError):
    status = 404


class LogDir:
    """One host's log directory (``storm.log.dir``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def resolve(self, name: str | None) -> Path:
        if not name:
            raise BadRequest("the 'file' parameter is required")
        if "\x00" in name or os.path.isabs(name) or name.startswith(("/", "\\")):
            raise BadRequest(f"file {name!r} must be a path relative to the log directory")
        if any(part == ".." for part in re.split(r"[\\/]", name)):
            raise BadRequest(f"file {name!r} must not contain '..'")
        path = (self.root / name).resolve()
        if path != self.root and self.root not in path.parents:
            raise Forbidden(f"file {name!r} is outside the log directory")
        if not path.is_file():
            raise NotFound(f"no log file {name!r} on this host")
        return path

    def read(self, name: str, start: int | None, length: int) -> dict[str, Any]:
        path = self.resolve(name)
        length = max(0, min(int(length), MAX_READ))
        size = path.stat().st_size
        begin = size - length if start is None else (size + start if start < 0 else start)
        begin = max(0, min(begin, size))
        with path.open("rb") as f:
            f.seek(begin)
            data = f.read(length)
        return {"file": name, "start": begin, "length": len(data), "size": size,
                "content": data.decode("utf-8", "replace")}

    def search(self, name: str, needle: str, offset: int = 0, num_matches: int = 10) -> dict[str, Any]:
        if not needle or len(needle.encode()) > MAX_SEARCH_BYTES:
            raise BadRequest(f"the 'search-string' parameter must be 1 to {MAX_SEARCH_BYTES} UTF-8 bytes")
        path = self.resolve(name)
        data = path.read_bytes()
        key = needle.encode()
        matches: list[dict[str, Any]] = []
        pos = max(0, int(offset))
        while len(matches) < max(1, num_matches):
            at = data.find(key, pos)
            if at < 0:
                pos = len(data)
                break
            line_start = data.rfind(b"\n", 0, at) + 1
            line_end = data.find(b"\n", at)
            matches.append({
                "byteOffset": at, "matchString": needle,
                "beforeString": data[max(0, at - CONTEXT_BYTES):at].decode("utf-8", "replace"),
                "afterString": data[at + len(key):at + len(key) + CONTEXT_BYTES].decode("utf-8", "replace"),
                "line": data[line_start:line_end if line_end >= 0 else len(data)].decode("utf-8", "replace")})
            pos = at + len(key)
        return {"fileName": name, "isDaemon": "no", "searchString": needle, "startByteOffset": int(offset),
                "nextByteOffset": pos if pos < len(data) else None, "matches": matches}

    def worker_logs(self) -> list[tuple[str, int, Path]]:
        """``(topology_id, port, path)`` of every worker log and events log file (rotated ones
        included)."""
        found = []
        if self.root.is_dir():
            for entry in sorted(self.root.iterdir()):
                m = _WORKER_LOG.match(entry.name)
                if m and entry.is_file():
                    found.append((m["topo"], int(m["port"]), entry))
        return found

    def topology_logs(self, topology_id: str) -> list[Path]:
        return [p for topo, _port, p in self.worker_logs() if topo == topology_id]

    def artifacts(self, topology_id: str, port: int) -> list[Path]:
        folder = self.root / "workers-artifacts" / topology_id / str(int(port))
        return sorted(p for p in folder.glob("*") if p.is_file()) if folder.is_dir() else []


def clean_up(log_dir: LogDir, running: Iterable[tuple[str, int]], age_secs: float,
             now: Callable[[], float] = time.time) -> list[Path]:
    """Delete logs and artefacts of dead workers untouched for ``age_secs`` (see the contract)."""
    alive = set(running)
    groups: dict[tuple[str, int], list[Path]] = {}
    for topo, port, path in log_dir.worker_logs():
        groups.setdefault((topo, port), []).append(path)
    artifacts_root = log_dir.root / "workers-artifacts"
    if artifacts_root.is_dir():
        for topo_dir in artifacts_root.iterdir():
            for port_dir in topo_dir.iterdir() if topo_dir.is_dir() else ():
                if port_dir.name.isdigit():
                    groups.setdefault((topo_dir.name, int(port_dir.name)), []).extend(
                        p for p in port_dir.rglob("*") if p.is_file())
    removed: list[Path] = []
    limit = now() - age_secs
    for key, paths in groups.items():
        if key in alive:
            continue
        try:
            newest = max((p.stat().st_mtime for p in paths), default=0.0)
        except OSError:
            continue
        if newest > limit:
            continue
        for p in paths:
            try:
                p.unlink()
                removed.append(p)
            except OSError:
                pass
    if artifacts_root.is_dir():
        for folder in sorted(artifacts_root.rglob("*"), reverse=True):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    return removed
