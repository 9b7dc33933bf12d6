"""Starting, watching and stopping worker processes.

Contract:

* :func:`launch_worker` starts ``sys.executable -m stormpy.worker.process ...`` in its own session
  (process group = its pid), cwd = the topology's code dir (the unpacked bundle, so a component
  opens a file shipped in the bundle by its relative path, as shell components do), stdin closed,
  stdout/stderr appended to the worker log (``log_offset``: where this run's lines begin); it
  writes the pid file and removes the previous heartbeat first, so a heartbeat
  present afterwards always belongs to this process.
* :class:`WorkerHandle` covers both workers this supervisor started (a Popen, reaped by it) and
  workers adopted after a restart (only a pid; identity checked by the process's command line,
  through psutil, so a recycled pid is never mistaken for a worker).
* :class:`RelaunchBackoff` holds back the relaunch of a worker that keeps exiting within
  :data:`~stormpy.supervisor.sync.QUICK_EXIT_SECS` of its launch (a crash loop): one
  :func:`~stormpy.supervisor.sync.relaunch_backoff` per port, forgotten after a longer run or when
  the port is no longer assigned.
* :func:`terminate_workers` sends SIGTERM to every worker at once, waits up to ``grace`` seconds, then
  SIGKILLs what is left (:func:`stormpy.host.processes.terminate`); finally the whole process group
  of each worker is killed, so processes a component spawned do not outlive it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil

from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.host.backoff import Backoff
from stormpy.host.processes import command_line, kill_process_group, live_process, terminate
from stormpy.supervisor.local_state import write_pid
from stormpy.supervisor.sync import QUICK_EXIT_SECS, relaunch_backoff

__all__ = ["WORKER_MODULE", "RelaunchBackoff", "WorkerHandle", "is_worker_process", "launch_worker",
           "terminate_workers", "wait_for_exit"]

WORKER_MODULE = "stormpy.worker.process"

log = logging.getLogger(__name__)


def is_worker_process(pid: int, topology_id: str, port: int) -> bool:
    """True when ``pid`` runs and is the worker of ``topology_id`` on ``port`` (judged by its
    command line; when the system does not show it, the pid file is trusted)."""
    process = live_process(pid)
    if process is None:
        return False
    argv = command_line(process)
    if argv is None:
        return process.is_running()
    joined = "\0".join(argv) + "\0"
    return (WORKER_MODULE in argv and f"--topology-id\0{topology_id}\0" in joined
            and f"--port\0{int(port)}\0" in joined)


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
    #: size of the worker log when this worker was launched (its own lines follow)
    log_offset: int = 0

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
        kill_process_group(self.pid)

    def record_exit(self, code: int | None) -> None:
        """Keep ``code`` (reaped by someone else, e.g. psutil) as the exit code of a launched worker."""
        if self.proc is not None and self.proc.returncode is None and code is not None:
            self.proc.returncode = int(code)

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
        offset = out.seek(0, os.SEEK_END)
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=dirs.code_dir(topology_id), env=env, start_new_session=True,
                                close_fds=True)
    write_pid(dirs.pid_file(topology_id, port), proc.pid)
    return WorkerHandle(topology_id, int(port), proc.pid, time.time(), tuple(executors), proc,
                        log_offset=offset)


def wait_for_exit(handle: WorkerHandle) -> None:
    """Block until the launched worker of ``handle`` exits, without reaping it (so its exit code
    stays for whoever polls or stops it); returns at once for adopted workers."""
    if handle.proc is None:
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitid(os.P_PID, handle.pid, os.WEXITED | os.WNOWAIT)


class RelaunchBackoff:
    """Crash-loop back-off per port (see the module docstring); used by one thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._backoffs: dict[int, Backoff] = {}

    def note_exit(self, port: int, ran_secs: float) -> float:
        """Record a worker exit on ``port`` after ``ran_secs``; return the delay before its relaunch."""
        if ran_secs >= QUICK_EXIT_SECS:
            self.forget(port)
            return 0.0
        backoff = self._backoffs.setdefault(port, relaunch_backoff())
        backoff.failed_at(self.clock())
        return backoff.last_delay

    def may_launch(self, port: int) -> bool:
        """False while ``port``'s relaunch is held back."""
        backoff = self._backoffs.get(port)
        return backoff is None or backoff.ready(self.clock())

    def forget(self, port: int) -> None:
        """Drop what is known about ``port``."""
        self._backoffs.pop(port, None)

    def retain(self, ports: Iterable[int]) -> None:
        """Forget every port not in ``ports`` (no longer assigned here)."""
        keep = set(ports)
        for port in [p for p in self._backoffs if p not in keep]:
            self.forget(port)


def terminate_workers(handles: Iterable[WorkerHandle], grace: float,
                      logger: logging.Logger | None = None) -> None:
    """Stop ``handles`` and log it: SIGTERM all, wait up to ``grace`` seconds, SIGKILL the rest,
    reap, kill what is left of their process groups."""
    logger = logger or log
    handles = list(handles)
    if not handles:
        return
    for h in handles:
        logger.info("stopping %s", h.describe())
    by_process: dict[psutil.Process, WorkerHandle] = {}
    for h in handles:
        process = live_process(h.pid) if h.alive else None
        if process is not None:
            by_process[process] = h

    def on_kill(process: psutil.Process) -> None:
        logger.warning("%s did not stop within %.1f s; killing it", by_process[process].describe(), grace)

    gone, _ = terminate(by_process, grace, on_kill=on_kill)
    for process in gone:
        by_process[process].record_exit(getattr(process, "returncode", None))
    for h in handles:
        h.kill_group()
        if h.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                h.proc.wait(timeout=1.0)
        logger.info("%s stopped (exit code %s)", h.describe(), h.exit_code())
