"""Inspecting and stopping OS processes, through psutil.

Contract:

* :func:`live_process` is the process of a pid when it runs (a zombie does not run), else None.
* :func:`command_line` is a running process's argv, or None when it is gone or the system does not
  show it (another user's process on macOS): callers decide what an unknown command line means.
* :func:`terminate` stops processes the way Storm's supervisor does: SIGTERM to all at once, up to
  ``grace`` seconds for them to exit (``psutil.wait_procs``), SIGKILL to the rest, then up to
  ``kill_wait`` seconds more. Children of this process are reaped by it; a ``gone`` process's exit
  code is in its ``returncode`` attribute (negative: the signal that ended it; None when another
  waiter reaped it first).
* :func:`processes_mentioning` lists the other processes whose command line contains a string
  (used to find what a directory's daemons and workers left behind).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable

import psutil

__all__ = ["command_line", "kill_process_group", "live_process", "processes_mentioning", "terminate"]


def live_process(pid: int) -> psutil.Process | None:
    """The running process ``pid`` (not a zombie), or None."""
    if pid <= 0:
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        return psutil.Process(pid) if psutil.pid_exists(pid) else None
    return process


def command_line(process: psutil.Process) -> list[str] | None:
    """``process``'s argv, or None when it is gone or its command line is not visible to us."""
    try:
        return list(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def terminate(processes: Iterable[psutil.Process], grace: float, *,
              on_kill: Callable[[psutil.Process], object] | None = None,
              kill_wait: float = 5.0) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """SIGTERM ``processes``, wait up to ``grace`` s, SIGKILL what is left (calling ``on_kill`` with
    each first), wait up to ``kill_wait`` s; return ``(gone, still_alive)``."""
    procs = list(processes)
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGTERM)
    gone, alive = psutil.wait_procs(procs, timeout=max(0.0, grace))
    if not alive:
        return gone, []
    for proc in alive:
        if on_kill is not None:
            on_kill(proc)
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    killed, alive = psutil.wait_procs(alive, timeout=kill_wait)
    return gone + killed, alive


def kill_process_group(pgid: int) -> None:
    """SIGKILL every process of the process group ``pgid`` (nothing when it is empty)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def processes_mentioning(text: str) -> list[int]:
    """Pids of running processes other than this one (zombies excluded) with an argument that
    contains ``text``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        info = proc.info
        if info.get("status") == psutil.STATUS_ZOMBIE or info["pid"] == os.getpid():
            continue
        if any(text in arg for arg in info.get("cmdline") or ()):
            found.append(int(info["pid"]))
    return sorted(found)


def parent_death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` making the child get SIGTERM when the starting thread dies (Linux only;
    ``None`` elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    sigterm = int(signal.SIGTERM)
    return lambda: prctl(pr_set_pdeathsig, sigterm)


def terminate_popen(proc: subprocess.Popen[bytes], grace_secs: float) -> None:
    """SIGTERM ``proc`` if it runs, SIGKILL it after ``grace_secs``; reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_secs)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
