"""Keeping a running cluster worker in step with ZooKeeper, from one side thread.

:class:`ClusterLink` contract:

* It re-reads the topology's assignment and StormBase when ZooKeeper reports a change (one-shot
  ClusterState callbacks, re-armed on every read) and at least every ``resync_secs``, so lost
  watches (session expiry) only delay it.
* Peers moved or added by a reassignment: the transport and the worker's routing are updated on
  the loop thread (``Worker.call_soon_threadsafe``). Status changes: ``Worker.set_active``
  (spouts emit only while the status is ``active``; a missing StormBase counts as inactive).
* The assignment removed, or this worker's own executors changed: ``on_exit(reason)`` is called
  once and nothing else is applied (the worker should stop; the supervisor starts a fresh one
  for a changed assignment, as Storm does).
* Every ``worker.heartbeat.frequency.secs`` it asks the loop for ``task_stats()``; when the loop
  answers it writes the local heartbeat file and then the ZooKeeper WorkerHeartbeat. A loop that
  does not answer (stuck in a component) writes no heartbeat, so its supervisor restarts it
  after ``supervisor.worker.timeout.secs``.
* ZooKeeper failures are logged and retried on the next round; they never stop the worker.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import Any

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import WorkerHeartbeat
from stormpy.cluster.state import ClusterState
from stormpy.messaging.transport import Transport
from stormpy.topology.layout import ExecutorKey
from stormpy.worker.heartbeats import component_stats, write_local_heartbeat
from stormpy.worker.loop import Worker
from stormpy.worker.peers import WorkerPeers, local_executors, worker_peers

__all__ = ["ClusterLink"]

log = logging.getLogger(__name__)


class ClusterLink:
    """Watches ``topology_id``'s assignment and status for the worker ``(node, port)``."""

    def __init__(self, state: ClusterState, worker: Worker, transport: Transport, *,
                 topology_id: str, node: str, port: int, executors: tuple[ExecutorKey, ...],
                 peers: WorkerPeers, active: bool, conf: Mapping[str, Any],
                 heartbeat_path: Path, on_exit: Callable[[str], None]) -> None:
        self.state = state
        self.worker = worker
        self.transport = transport
        self.topology_id = topology_id
        self.node = node
        self.port = port
        self.executors = executors
        self.peers = peers
        self.active = active
        self.heartbeat_path = heartbeat_path
        self.on_exit = on_exit
        self.heartbeat_secs = max(0.05, float(conf.get("worker.heartbeat.frequency.secs") or 1))
        self.resync_secs = max(0.1, float(conf.get("supervisor.monitor.frequency.secs") or 3))
        self.started = time.monotonic()
        self.heartbeats = 0
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._exiting = False
        self._stats_request: Future[list[dict[str, Any]]] | None = None
        self._thread: threading.Thread | None = None
        self._missed_beats = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ClusterLink:
        """Start the side thread (it syncs at once, then heartbeats as soon as the loop runs)."""
        self._thread = threading.Thread(target=self._run, name="stormpy-cluster-link", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the side thread; idempotent."""
        self._stop.set()
        self._changed.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def trigger(self) -> None:
        """Something changed in ZooKeeper: sync soon (any thread)."""
        self._changed.set()

    def _run(self) -> None:
        now = time.monotonic()
        next_sync, next_beat = now, now
        while not self._stop.is_set():
            now = time.monotonic()
            if self._changed.is_set() or now >= next_sync:
                self._changed.clear()
                self._guarded(self.sync)
                next_sync = time.monotonic() + self.resync_secs
            if self._stop.is_set() or self._exiting:
                return
            if time.monotonic() >= next_beat:
                self._guarded(self.heartbeat)
                next_beat = time.monotonic() + self.heartbeat_secs
            self._changed.wait(max(0.0, min(next_sync, next_beat) - time.monotonic()))

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - the side thread must outlive any single failure
            log.exception("worker %s:%s: %s failed", self.node, self.port, fn.__name__)

    # -- assignment and status -----------------------------------------------------------------
    def _exit(self, reason: str) -> None:
        if not self._exiting:
            self._exiting = True
            log.info("worker %s:%s of %s stops: %s", self.node, self.port, self.topology_id, reason)
            self.on_exit(reason)

    def sync(self) -> None:
        """Read the assignment and StormBase (re-arming their watches) and apply changes."""
        try:
            assignment = self.state.assignment(self.topology_id, callback=self.trigger)
            base = self.state.storm_base(self.topology_id, callback=self.trigger)
        except ClusterStateError as exc:
            log.warning("cannot read the state of %s from ZooKeeper (will retry): %s",
                        self.topology_id, exc)
            return
        if assignment is None:
            self._exit("its topology's assignment was removed")
            return
        executors = local_executors(assignment, self.node, self.port)
        if executors != self.executors:
            self._exit(f"its executors changed from {list(self.executors)} to {list(executors)}")
            return
        peers = worker_peers(assignment, self.node, self.port)
        if peers != self.peers:
            log.info("peers of %s:%s changed: %s", self.node, self.port, sorted(peers.addresses.items()))
            self.peers = peers
            self.worker.call_soon_threadsafe(partial(self._apply_peers, peers))
        active = base is not None and base.status == "active"
        if active != self.active:
            log.info("topology %s is now %s", self.topology_id,
                     "active" if active else f"inactive ({base.status if base else 'no status'})")
            self.active = active
            self.worker.set_active(active)

    def _apply_peers(self, peers: WorkerPeers) -> None:
        """On the loop thread: connect/disconnect peers, then re-route remote tasks."""
        self.transport.set_peers(peers.addresses)
        self.worker.update_peers(peers.task_peers)

    # -- heartbeats ----------------------------------------------------------------------------
    def _loop_stats(self, timeout: float) -> list[dict[str, Any]] | None:
        """``worker.task_stats()`` taken on the loop thread, or None when it does not answer."""
        request = self._stats_request
        if request is None or request.done():
            request = Future()
            self._stats_request = request

            def fill(fut: Future[list[dict[str, Any]]] = request) -> None:
                if not fut.done():
                    fut.set_result(self.worker.task_stats())
            self.worker.call_soon_threadsafe(fill)
        try:
            return request.result(timeout)
        except TimeoutError:
            return None

    def heartbeat(self) -> None:
        """One heartbeat: local file first (liveness for the supervisor), then ZooKeeper."""
        docs = self._loop_stats(max(1.0, 2 * self.heartbeat_secs))
        if docs is None:
            self._missed_beats += 1
            if self._missed_beats == 1 or self._missed_beats % 10 == 0:
                log.warning("worker %s:%s: the executor loop did not answer; no heartbeat (%d missed)",
                            self.node, self.port, self._missed_beats)
            return
        self._missed_beats = 0
        now = time.time()
        try:
            write_local_heartbeat(self.heartbeat_path, time=now, pid=os.getpid(),
                                  topology_id=self.topology_id, port=self.port,
                                  executors=self.executors)
        except OSError as exc:
            log.warning("cannot write the local heartbeat %s: %s", self.heartbeat_path, exc)
        beat = WorkerHeartbeat(topology_id=self.topology_id, node=self.node, port=self.port, time=now,
                               uptime=time.monotonic() - self.started, executors=self.executors,
                               stats=component_stats(docs))
        try:
            self.state.set_worker_heartbeat(beat)
        except ClusterStateError as exc:
            log.warning("cannot write the heartbeat of %s:%s to ZooKeeper: %s", self.node, self.port, exc)
            return
        self.heartbeats += 1
