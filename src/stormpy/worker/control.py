"""The worker's control thread: run-time log levels and requests (dumps, profiles) from ZooKeeper.

Contract of :class:`WorkerControl` (docs/performance.md, "Worker control channel"):

* One :class:`~stormpy.host.service.Service` thread, never the executor loop: a worker whose
  components are busy in user code still answers (the thread needs only the GIL, which a busy
  Python loop releases every few milliseconds).
* It watches the topology's LogConfig and this worker's request directory
  (:mod:`stormpy.cluster.worker_ops`); a change wakes it at once, and it polls every
  ``worker.control.poll.secs`` anyway (lost watches, log-level timeouts). Each round rotates the
  worker's log when stdout output filled it (:func:`~stormpy.host.log_files.rotate_full_logs`),
  applies the log levels (:class:`~stormpy.worker.log_levels.LogLevels`) and answers every pending request.
* Actions: ``jstack`` (:func:`~stormpy.worker.profiling.stack_dump`), ``heap``
  (:func:`~stormpy.worker.profiling.heap_summary`), ``cpu`` (``args["seconds"]``, 1 to 600,
  default 10; :func:`~stormpy.worker.profiling.cpu_profile` on a thread of its own, so the
  channel stays responsive meanwhile). Each writes its report to
  ``<log dir>/workers-artifacts/<topology-id>/<port>/<action>-<time>.txt`` (served by the log
  server) and answers ``{"file": <that path relative to the log dir>}``. Further actions are
  registered with :meth:`WorkerControl.register` (a callable taking the request's args and
  returning the result map); an unknown action or a raising one is answered ``failed`` with why.
* ZooKeeper errors are logged by the Service and retried on the next round; they never stop the
  worker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.state import ClusterState
from stormpy.cluster.worker_ops import (
    ControlRequest,
    answer_request,
    pending_requests,
    read_log_config,
)
from stormpy.config import setting
from stormpy.host.log_files import rotate_full_logs
from stormpy.host.service import Service
from stormpy.worker.log_levels import LogLevels
from stormpy.worker.profiling import cpu_profile, heap_summary, stack_dump

__all__ = ["WorkerControl", "artifacts_dir"]

log = logging.getLogger(__name__)

Action = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def artifacts_dir(log_dir: Path, topology_id: str, port: int) -> Path:
    """Where one worker's dumps and profiles go (Storm's ``workers-artifacts`` layout)."""
    return log_dir / "workers-artifacts" / topology_id / str(int(port))


class WorkerControl:
    """The control thread of worker ``(node, port)`` of ``topology_id``."""

    def __init__(self, state: ClusterState, *, topology_id: str, node: str, port: int,
                 log_dir: Path, conf: Mapping[str, Any]) -> None:
        self.state = state
        self.topology_id = topology_id
        self.node = node
        self.port = port
        self.log_dir = Path(log_dir)
        self.tracemalloc_frames = max(1, int(setting(conf, "worker.profiler.tracemalloc.frames")))
        self.levels = LogLevels()
        self._actions: dict[str, Action] = {"jstack": self._jstack, "heap": self._heap}
        self._running: set[str] = set()
        self._watches: list[Any] = []
        self.service = Service(f"worker-control {topology_id}:{port}", self.round,
                               interval=float(setting(conf, "worker.control.poll.secs")),
                               expected_errors=(ClusterStateError,))

    def register(self, action: str, handler: Action) -> None:
        """Answer requests of ``action`` with ``handler(args)`` (run on the control thread)."""
        self._actions[action] = handler

    def start(self) -> WorkerControl:
        paths = self.state.paths
        try:
            self._watches = [
                self.state.storage.watch_data(paths.logconfig(self.topology_id),
                                              lambda _data: self.service.wake()),
                self.state.storage.watch_children(
                    paths.worker_requests(self.topology_id, self.node, self.port),
                    lambda _children: self.service.wake())]
        except ClusterStateError as exc:
            log.warning("worker control: cannot watch ZooKeeper (polling only): %s", exc)
        self.service.start()
        return self

    def stop(self) -> None:
        self.service.stop(5.0)
        for watch in self._watches:
            cancel = getattr(watch, "cancel", None)
            if cancel is not None:
                cancel()

    # -- one round -----------------------------------------------------------------------------
    def round(self) -> None:
        rotate_full_logs()
        now = time.time()
        changed = self.levels.apply(read_log_config(self.state, self.topology_id), now)
        if changed:
            log.info("log levels changed: %s", ", ".join(changed))
        for path, request in pending_requests(self.state, self.topology_id, self.node, self.port, now=now):
            if path in self._running:
                continue
            if request.action == "cpu":
                self._start_cpu(path, request)
                continue
            handler = self._actions.get(request.action)
            if handler is None:
                self._answer(path, request, error=f"unknown action {request.action!r} (known: "
                                                  f"{', '.join(sorted([*self._actions, 'cpu']))})")
                continue
            try:
                result = dict(handler(request.args))
            except Exception as exc:  # noqa: BLE001 - the requester gets the reason
                log.exception("control action %s failed", request.action)
                self._answer(path, request, error=f"{type(exc).__name__}: {exc}")
            else:
                self._answer(path, request, result=result)

    def _answer(self, path: str, request: ControlRequest, *, result: Mapping[str, Any] | None = None,
                error: str | None = None) -> None:
        answer_request(self.state, path, request.answered(result=result, error=error))
        log.info("control request %s (%s): %s", request.action, path.rsplit("/", 1)[-1],
                 error or result)

    # -- artefacts -----------------------------------------------------------------------------
    def _write(self, action: str, text: str) -> dict[str, Any]:
        folder = artifacts_dir(self.log_dir, self.topology_id, self.port)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
        path = folder / f"{action}-{stamp}.txt"
        path.write_text(text)
        return {"file": str(path.relative_to(self.log_dir))}

    def _jstack(self, _args: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._write("jstack", stack_dump())

    def _heap(self, _args: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._write("heap", heap_summary(self.tracemalloc_frames))

    def _start_cpu(self, path: str, request: ControlRequest) -> None:
        try:
            seconds = float(request.args.get("seconds", 10))
        except (TypeError, ValueError):
            seconds = -1.0
        if not 1 <= seconds <= 600:
            self._answer(path, request, error=f"cpu: seconds must be 1 to 600, got "
                                              f"{request.args.get('seconds')!r}")
            return
        self._running.add(path)

        def run() -> None:
            try:
                result = self._write("cpu", cpu_profile(seconds))
                self._answer(path, request, result=result)
            except Exception as exc:  # noqa: BLE001
                log.exception("cpu profile failed")
                try:
                    self._answer(path, request, error=f"{type(exc).__name__}: {exc}")
                except ClusterStateError:
                    pass
            finally:
                self._running.discard(path)

        threading.Thread(target=run, name=f"cpu-profile {self.port}", daemon=True).start()
