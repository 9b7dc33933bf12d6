"""Taking over the worker processes a previous run of this supervisor id left running.

:func:`adopt_workers` contract: for every worker directory under the supervisor's local dir whose
pid file names a live process that is that worker (same topology and port, judged by its command
line), a :class:`~stormpy.supervisor.launcher.WorkerHandle` is made (``adopted=True``; its
executors taken from its own local heartbeat, else unknown; launched at the pid file's time). Such
a worker on a port this supervisor no longer offers, or on a port already taken by another
adopted worker, is stopped instead. From then on adopted workers are judged like launched ones.
"""

from __future__ import annotations

import logging
import time

from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.supervisor.launcher import WorkerHandle, is_worker_process, terminate_workers
from stormpy.supervisor.local_state import read_local_heartbeat, read_pid

__all__ = ["adopt_workers"]


def adopt_workers(dirs: SupervisorDirs, ports: tuple[int, ...], shutdown_grace: float,
                  log: logging.Logger) -> dict[int, WorkerHandle]:
    """port → handle of every running worker adopted (see the module docstring)."""
    adopted: dict[int, WorkerHandle] = {}
    for topology_id, port, wdir in dirs.worker_dirs():
        pid = read_pid(wdir / "pid")
        if pid is None or not is_worker_process(pid, topology_id, port):
            continue
        beat = read_local_heartbeat(wdir / "heartbeat")
        executors = beat.executors if beat is not None and beat.pid == pid else None
        try:
            launched_at = (wdir / "pid").stat().st_mtime
        except OSError:
            launched_at = time.time()
        handle = WorkerHandle(topology_id, port, pid, launched_at, executors, adopted=True)
        if port not in ports or port in adopted:
            log.warning("stopping leftover %s: port %d is not free for it", handle.describe(), port)
            terminate_workers([handle], shutdown_grace, log)
            continue
        adopted[port] = handle
        log.info("adopted running %s", handle.describe())
    return adopted
