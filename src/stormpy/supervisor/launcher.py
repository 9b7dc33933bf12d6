"""Starting, watching and stopping worker processes.

Contract:

* :func:`launch_worker` starts ``sys.executable -m stormpy.worker.process ...`` in its own session
  (process group = its pid), cwd = its worker directory, stdin closed, stdout/stderr appended to
  the worker log; it writes the pid file and removes the previous heartbeat first, so a heartbeat
  present afterwards always belongs to this process.
* :class:`WorkerHandle` covers both workers this supervisor started (a Popen, reaped by it) and
  workers adopted after a restart (only a pid; identity checked through ``/proc`` where available
  so a recycled pid is never mistaken for a worker).
* :func:`stop_workers` sends SIGTERM to every worker at once, waits up to ``grace`` seconds, then
  SIGKILLs what is left; finally the whole process group of each worker is killed, so processes a
  component spawned do not outlive it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from stormpy.supervisor.local_state import SupervisorDirs, write_pid

__all__ = ["WORKER_MODULE", "WorkerHandle", "is_worker_process", "launch_worker", "stop_workers"]

WORKER_MODULE = "stormpy.worker.process"

log = logging.getLogger(__name__)


def _proc_cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def is_worker_process(pid: int, topology_id: str, port: int) -> bool:
    """True when ``pid`` is alive and (where ``/proc`` tells) is the worker of ``topology_id`` on
    ``port``."""
    if pid <= 0 or not _pid_exists(pid):
        return False
    if not Path("/proc/self/cmdline").exists():
        return True  # no /proc (macOS): trust the pid file
    argv = _proc_cmdline(pid)
    if argv is None:
        return False
    joined = "\0".join(argv)
    return (WORKER_MODULE in argv and f"--topology-id\0{topology_id}\0" in joined + "\0"
            and f"--port\0{int(port)}\0" in joined + "\0")


@dataclass
class WorkerHandle:
    """A worker process of ``topology_id`` on ``port`` running ``executors`` (None: unknown)."""

    topology_id: str
    port: int
    pid: int
    launched_at: float
    executors: tuple[tuple[int, int], ...] | None
    proc: subprocess.Popen[bytes] | None = None
    adopted: bool = False

    def exit_code(self) -> int | None:
        """None while it runs; its exit code (negative: killed by that signal; -1 for an adopted
        worker, whose code is unknown) once it is gone."""
        if self.proc is not None:
            return self.proc.poll()
        return None if is_worker_process(self.pid, self.topology_id, self.port) else -1

    @property
    def alive(self) -> bool:
        return self.exit_code() is None

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the worker (nothing when it is gone)."""
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill_group(self) -> None:
        """SIGKILL every process left in the worker's process group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def describe(self) -> str:
        return f"worker {self.topology_id}:{self.port} (pid {self.pid})"


def launch_worker(dirs: SupervisorDirs, topology_id: str, port: int,
                  executors: tuple[tuple[int, int], ...], *, python: str | None = None,
                  env: dict[str, str] | None = None) -> WorkerHandle:
    """Start the worker process of ``topology_id`` on ``port``; returns its handle."""
    worker_dir = dirs.worker_dir(topology_id, port)
    worker_dir.mkdir(parents=True, exist_ok=True)
    dirs.heartbeat_file(topology_id, port).unlink(missing_ok=True)
    log_path = dirs.worker_log(topology_id, port)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [python or sys.executable, "-m", WORKER_MODULE, "--topology-id", topology_id,
           "--supervisor-id", dirs.supervisor_id, "--port", str(int(port)),
           "--local-dir", str(dirs.local_dir), "--conf-file", str(dirs.conf_file)]
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=worker_dir, env=env, start_new_session=True, close_fds=True)
    write_pid(dirs.pid_file(topology_id, port), proc.pid)
    return WorkerHandle(topology_id, int(port), proc.pid, time.time(), tuple(executors), proc)


def stop_workers(handles: Iterable[WorkerHandle], grace: float,
                 logger: logging.Logger | None = None) -> None:
    """SIGTERM all, wait up to ``grace`` seconds, SIGKILL the rest, reap, kill leftover groups."""
    logger = logger or log
    handles = list(handles)
    for h in handles:
        h.signal(signal.SIGTERM)
    deadline = time.monotonic() + max(0.0, grace)
    while any(h.alive for h in handles) and time.monotonic() < deadline:
        time.sleep(0.05)
    for h in handles:
        if h.alive:
            logger.warning("%s did not stop within %.1f s; killing it", h.describe(), grace)
            h.signal(signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while any(h.alive for h in handles) and time.monotonic() < deadline:
        time.sleep(0.02)
    for h in handles:
        h.kill_group()
        if h.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                h.proc.wait(timeout=1.0)
