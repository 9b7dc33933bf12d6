"""Keeping a supervisor's worker processes equal to what is assigned to it.

:class:`WorkerReconciler` contract (Storm's sync-processes), given ``desired`` (port →
:class:`~stormpy.supervisor.sync.LocalAssignment`, from
:func:`~stormpy.supervisor.sync.assigned_slots`):

* :meth:`~WorkerReconciler.replace` stops workers no longer assigned here (their worker directory
  removed) or whose executors changed, and restarts workers that exited, have a local heartbeat
  older than ``worker_timeout``, or gave none within ``start_timeout`` of launch
  (:func:`~stormpy.supervisor.sync.worker_health`). A worker that keeps exiting within seconds of
  its launch is relaunched with a growing delay (:class:`~stormpy.supervisor.launcher.RelaunchBackoff`).
  Stopping: SIGTERM, ``shutdown_grace`` seconds, SIGKILL, then its process group.
* :meth:`~WorkerReconciler.launch` starts every missing worker whose code is downloaded and whose
  relaunch is not held back; ``on_exit()`` is called (from a watcher thread) when a launched
  worker exits, unless ``stopping()`` is true by then.
* ``counters`` counts ``worker_launches`` and ``worker_restarts``; ``exits``
  (:class:`~stormpy.supervisor.exits.WorkerExits`) keeps per slot the restarts of failed workers
  (exited, or stopped for a stale or missing heartbeat) and the last exit's reason, for the
  supervisor's ZooKeeper record; ``workers`` (port → handle) is guarded by ``lock`` (held across
  a launch, so a snapshot never sees a half-started slot).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable

from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.supervisor.exits import WorkerExits, last_logged_error
from stormpy.supervisor.launcher import (
    RelaunchBackoff,
    WorkerHandle,
    launch_worker,
    terminate_workers,
    wait_for_exit,
)
from stormpy.supervisor.local_state import read_local_heartbeat
from stormpy.supervisor.sync import LocalAssignment, worker_health

__all__ = ["WorkerReconciler"]


class WorkerReconciler:
    """The worker processes of one supervisor (see the module docstring)."""

    def __init__(self, dirs: SupervisorDirs, *, worker_timeout: float, start_timeout: float,
                 shutdown_grace: float, log: logging.Logger, on_exit: Callable[[], None],
                 stopping: Callable[[], bool], env: Callable[[], dict[str, str]],
                 counters: dict[str, float] | None = None) -> None:
        self.dirs = dirs
        self.worker_timeout = worker_timeout
        self.start_timeout = start_timeout
        self.shutdown_grace = shutdown_grace
        self.log = log
        self.on_exit = on_exit
        self.stopping = stopping
        self.env = env
        self.counters = counters if counters is not None else {}
        self.counters.setdefault("worker_launches", 0.0)
        self.counters.setdefault("worker_restarts", 0.0)
        self.workers: dict[int, WorkerHandle] = {}
        self.lock = threading.RLock()
        self._relaunch = RelaunchBackoff()
        self.exits = WorkerExits()

    def snapshot(self) -> dict[int, WorkerHandle]:
        """port → handle of every worker run now (a copy)."""
        with self.lock:
            return dict(self.workers)

    def take_all(self) -> list[WorkerHandle]:
        """Forget every worker and return their handles (the caller stops them or leaves them)."""
        with self.lock:
            handles = list(self.workers.values())
            self.workers.clear()
        return handles

    def replace(self, desired: dict[int, LocalAssignment]) -> None:
        """Stop workers that are unassigned, reassigned, dead or silent."""
        to_stop: list[tuple[WorkerHandle, bool]] = []
        now = time.time()
        self.exits.retain({port: want.topology_id for port, want in desired.items()})
        with self.lock:
            for port, handle in list(self.workers.items()):
                verdict = self._verdict(port, handle, desired.get(port), now)
                if verdict is not None:
                    to_stop.append((handle, verdict))
        if not to_stop:
            return
        terminate_workers([h for h, _ in to_stop], self.shutdown_grace, self.log)
        with self.lock:
            for handle, unassigned in to_stop:
                if self.workers.get(handle.port) is handle:
                    del self.workers[handle.port]
                if unassigned:
                    shutil.rmtree(self.dirs.worker_dir(handle.topology_id, handle.port),
                                  ignore_errors=True)

    def _verdict(self, port: int, handle: WorkerHandle, want: LocalAssignment | None,
                 now: float) -> bool | None:
        """None to keep ``handle``; else stop it (True: it is no longer assigned here). A worker
        that exited is forgotten here (relaunched later, maybe after a backoff): also None."""
        if want is None or want.topology_id != handle.topology_id:
            self.log.info("stopping %s: no longer assigned here", handle.describe())
            return True
        if handle.executors is not None and handle.executors != want.executors:
            self.log.info("restarting %s: its executors changed to %s", handle.describe(),
                          list(want.executors))
            self.counters["worker_restarts"] += 1
            return False
        code = handle.exit_code()
        if code is not None:
            self.counters["worker_restarts"] += 1
            del self.workers[port]
            handle.kill_group()
            delay = self._relaunch.note_exit(port, now - handle.launched_at)
            error = last_logged_error(self.dirs.worker_log(handle.topology_id, port), handle.log_offset)
            self.exits.exited(handle.topology_id, port, f"exit code {code}" + (f": {error}" if error else ""),
                              now - handle.launched_at, now)
            self.log.warning("%s exited with code %s; restarting it%s", handle.describe(), code,
                             f" in {delay:g} s" if delay else "")
            return None
        beat = read_local_heartbeat(self.dirs.heartbeat_file(handle.topology_id, port))
        reason = worker_health(pid=handle.pid, launched_at=handle.launched_at,
                               heartbeat_time=beat.time if beat else None,
                               heartbeat_pid=beat.pid if beat else None, now=now,
                               worker_timeout=self.worker_timeout, start_timeout=self.start_timeout)
        if reason is not None:
            self.log.warning("restarting %s: %s", handle.describe(), reason)
            self.counters["worker_restarts"] += 1
            self.exits.exited(handle.topology_id, port, reason, now - handle.launched_at, now)
            return False
        return None

    def launch(self, desired: dict[int, LocalAssignment]) -> None:
        """Start every missing worker whose code is present and whose relaunch is not held back."""
        self._relaunch.retain(desired)
        for port, want in sorted(desired.items()):
            with self.lock:
                if port in self.workers or not self.dirs.is_downloaded(want.topology_id):
                    continue
                if not self._relaunch.may_launch(port):
                    continue
                try:
                    handle = launch_worker(self.dirs, want.topology_id, port, want.executors,
                                           env=self.env())
                except OSError as exc:
                    self.log.error("cannot launch the worker of %s on port %d: %s", want.topology_id,
                                   port, exc)
                    continue
                self.workers[port] = handle
                self.counters["worker_launches"] += 1
            self.log.info("launched %s with executors %s", handle.describe(), list(want.executors))
            threading.Thread(target=self._watch_exit, args=(handle,), name=f"watch-{port}",
                             daemon=True).start()

    def _watch_exit(self, handle: WorkerHandle) -> None:
        """Call ``on_exit`` as soon as a launched worker exits (faster restarts than the timer)."""
        wait_for_exit(handle)
        if not self.stopping():
            self.on_exit()
