"""Keeping a running cluster worker in step with ZooKeeper and Nimbus, from side threads.

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
* Liveness and ZooKeeper are two threads. The *local heartbeat* thread asks the loop for
  ``task_stats()`` every ``worker.heartbeat.frequency.secs`` and, when the loop answers, writes the
  local heartbeat file (the supervisor's only liveness signal) and hands the statistics to the
  link thread. It never touches ZooKeeper or Nimbus, so a stalled or unreachable ZooKeeper cannot
  make a supervisor restart a worker whose loop runs. A loop that does not answer (stuck in a
  component) writes no local heartbeat, so its supervisor restarts it after
  ``supervisor.worker.timeout.secs``.
* The *link* thread syncs (above) and publishes the newest statistics as the worker's
  WorkerHeartbeat (per-component sums, per-task counters and the process's CPU/RSS/GC figures,
  which Nimbus's monitor, ``stormpy info``, the UI and its Prometheus exporter read) through the
  ``heartbeats`` channel, at most once per ``task.heartbeat.frequency.secs``. In a cluster worker
  the channel is :class:`~stormpy.worker.heartbeat_channel.SupervisorRelay`: the heartbeat goes to
  a file the supervisor sends to the leading Nimbus over RPC, never to ZooKeeper. While the
  channel blocks, only the link thread waits; statistics taken meanwhile are superseded by newer
  ones, never queued. The executor loop never waits for either thread.
* Statistics survive restarts: before its first heartbeat the link reads the topology's
  worker heartbeats (from the channel: the leader's) and, for each of its tasks, takes the
  counters of the newest heartbeat that holds the task (a previous incarnation of this worker,
  or the worker the task moved from) as a base added to every heartbeat it writes
  (:func:`~stormpy.worker.heartbeats.add_base`). Such
  heartbeats say so (``process["counters_carried"] = 1``) so that readers of deltas (the UI's
  windows) do not count the carried totals twice. Without a readable heartbeat the counters
  start from zero.
* ``latest_stats`` holds the newest statistics with the carried counters added (what the
  metrics consumers receive, :mod:`stormpy.worker.metrics_consumers`).
* Sampled tuples: when the StormBase's ``component_debug`` changes, the worker's
  :class:`~stormpy.worker.event_logger.EventLogger` (if it has one) applies it on the loop
  thread; each published heartbeat carries the logger's newest sampled tuples (``events``).
* ZooKeeper and channel failures are logged and retried on the next round; they never stop the
  worker.
  Both threads are :class:`~stormpy.host.service.Service` loops: an unexpected error in a round
  is logged with the worker's name and the round is run again at its interval.
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
from typing import Any, Protocol

from stormpy.cluster.errors import ClusterStateError
from stormpy.cluster.records import WorkerHeartbeat
from stormpy.cluster.state import ClusterState
from stormpy.config import setting
from stormpy.host.service import Service
from stormpy.messaging.transport import Transport
from stormpy.topology._layout import ExecutorKey
from stormpy.worker.event_logger import EventLogger
from stormpy.worker.heartbeats import (
    add_base,
    carried_counters,
    component_stats,
    process_stats,
    task_entries,
    task_metrics,
    write_local_heartbeat,
)
from stormpy.worker.loop import Worker
from stormpy.worker.peers import WorkerPeers, local_executors, tasks_of, worker_peers

__all__ = ["ClusterLink", "HeartbeatChannel"]

log = logging.getLogger(__name__)


class HeartbeatChannel(Protocol):
    """Where a worker publishes its heartbeat and reads earlier ones of its topology (both may
    raise OSError or ClusterStateError, retried on the next round)."""

    def set_worker_heartbeat(self, beat: WorkerHeartbeat) -> None: ...

    def worker_heartbeats(self, topology_id: str) -> Mapping[tuple[str, int], WorkerHeartbeat]: ...


class ClusterLink:
    """Watches ``topology_id``'s assignment and status for the worker ``(node, port)``."""

    def __init__(self, state: ClusterState, worker: Worker, transport: Transport, *,
                 topology_id: str, node: str, port: int, executors: tuple[ExecutorKey, ...],
                 peers: WorkerPeers, active: bool, conf: Mapping[str, Any],
                 heartbeat_path: Path, on_exit: Callable[[str], None],
                 heartbeats: HeartbeatChannel, event_logger: EventLogger | None = None) -> None:
        self.state = state
        #: where the WorkerHeartbeat goes and earlier ones come from
        self.channel = heartbeats
        self.event_logger = event_logger
        self._debug_applied: dict[str, Any] = {}
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
        # their lower bounds (0.05 s, 0.1 s) are the table's, checked when the supervisor loaded them
        self.heartbeat_secs = float(setting(conf, "worker.heartbeat.frequency.secs"))
        self.resync_secs = float(setting(conf, "supervisor.monitor.frequency.secs"))
        #: the published heartbeat's period (never shorter than the local heartbeat's)
        self.task_heartbeat_secs = max(self.heartbeat_secs,
                                       float(setting(conf, "task.heartbeat.frequency.secs")))
        self._next_beat = 0.0  # time.monotonic() when the next published heartbeat is due
        self.started = time.monotonic()
        self.heartbeats = 0
        self.local_heartbeats = 0
        self._changed = threading.Event()  # ZooKeeper reported a change: sync
        self._next_sync = 0.0  # time.monotonic() of the next periodic sync (0: at once)
        self._exiting = False
        self._stats_request: Future[list[dict[str, Any]]] | None = None
        self._who = f"worker {node}:{port}"
        #: the link thread: sync when due or changed, then the published heartbeat
        self.link = Service("stormpy-cluster-link", self._link_round, interval=self.resync_secs,
                            log=log)
        #: the local heartbeat thread
        self.beat = Service("stormpy-local-heartbeat", self._beat_round,
                            interval=self.heartbeat_secs, log=log)
        self._missed_beats = 0
        #: the newest (time, task stats) taken by the local heartbeat thread, not yet published
        #: (replaced, never queued, while the channel is slow)
        self._pending_beat: tuple[float, list[dict[str, Any]]] | None = None
        self._pending_lock = threading.Lock()
        #: per-task counters of previous incarnations (None until read from the channel)
        self._base: dict[int, dict[str, Any]] | None = None
        #: the statistics of the newest heartbeat, carried counters included (replaced, never
        #: changed; read by the metrics consumers' thread)
        self.latest_stats: list[dict[str, Any]] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> ClusterLink:
        """Start the two side threads (the link syncs at once; the local heartbeat starts as
        soon as the loop runs)."""
        self.link.start()
        self.beat.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the side threads; idempotent."""
        self.link.request_stop()
        self.beat.request_stop()
        self.link.stop(timeout)
        self.beat.stop(timeout)

    def trigger(self) -> None:
        """Something changed in ZooKeeper: sync soon (any thread)."""
        self._changed.set()
        self.link.wake()

    def _link_round(self) -> float:
        """One round of the link thread: sync when ZooKeeper reported a change or the periodic
        sync is due, then publish the pending heartbeat; the seconds until the next sync."""
        if self._changed.is_set() or time.monotonic() >= self._next_sync:
            self._changed.clear()
            self._next_sync = time.monotonic() + self.resync_secs
            try:
                self.sync()
            except Exception:  # noqa: BLE001 - a failed sync must not hold the heartbeat back
                log.exception("%s: sync failed", self._who)
        if not self._exiting:
            self.publish_heartbeat()
        return max(0.0, self._next_sync - time.monotonic())

    def _beat_round(self) -> None:
        if not self._exiting:
            self.local_heartbeat()

    # -- assignment and status -----------------------------------------------------------------
    def _exit(self, reason: str) -> None:
        if not self._exiting:
            self._exiting = True
            self.link.request_stop()
            self.beat.request_stop()
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
        debug = dict(base.component_debug) if base is not None else {}
        if self.event_logger is not None and debug != self._debug_applied:
            self._debug_applied = debug
            self.worker.call_soon_threadsafe(partial(self.event_logger.apply,
                                                     list(self.worker.tasks.values()), debug))
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

    def local_heartbeat(self) -> None:
        """One local heartbeat (no ZooKeeper or Nimbus involved): take the loop's statistics,
        write the local heartbeat file, and leave the statistics for the link thread's published
        heartbeat. A loop that does not answer gets no heartbeat."""
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
            self.local_heartbeats += 1
        except OSError as exc:
            log.warning("cannot write the local heartbeat %s: %s", self.heartbeat_path, exc)
        with self._pending_lock:
            self._pending_beat = (now, docs)
        self.link.wake()

    def _load_base(self) -> dict[int, dict[str, Any]]:
        """The counters previous incarnations published for this worker's tasks (read once)."""
        if self._base is None:
            tasks = tasks_of(self.executors)
            beats = self.channel.worker_heartbeats(self.topology_id)  # OSError: retried
            self._base = carried_counters(beats.values(), tasks)
            if self._base:
                log.info("worker %s:%s continues the counters of tasks %s from earlier heartbeats",
                         self.node, self.port, sorted(self._base))
        return self._base

    def publish_heartbeat(self) -> None:
        """Publish the newest statistics the local heartbeat left (if any) through the channel,
        on top of the counters carried from previous incarnations; at most once per
        ``task.heartbeat.frequency.secs`` (until then the newest statistics wait, replaced by
        each local heartbeat)."""
        if time.monotonic() < self._next_beat:
            return
        with self._pending_lock:
            pending, self._pending_beat = self._pending_beat, None
        if pending is None:
            return
        now, docs = pending
        try:
            base = self._load_base()
        except (ClusterStateError, OSError) as exc:
            log.warning("cannot read earlier heartbeats of %s (will retry): %s", self.topology_id, exc)
            self._requeue(pending)
            return
        docs = add_base(docs, base)
        self.latest_stats = docs
        process = process_stats()
        process.update(self.worker.transfer_stats())
        if base:
            process["counters_carried"] = 1.0
        beat = WorkerHeartbeat(topology_id=self.topology_id, node=self.node, port=self.port, time=now,
                               uptime=time.monotonic() - self.started, executors=self.executors,
                               stats=component_stats(docs), tasks=tuple(task_entries(docs)),
                               process=process, metrics=task_metrics(docs),
                               events=tuple(self.event_logger.recent()) if self.event_logger else ())
        try:
            self.channel.set_worker_heartbeat(beat)
        except (ClusterStateError, OSError) as exc:
            log.warning("cannot publish the heartbeat of %s:%s: %s", self.node, self.port, exc)
            self._requeue(pending)
            return
        self.heartbeats += 1
        self._next_beat = time.monotonic() + self.task_heartbeat_secs

    def _requeue(self, pending: tuple[float, list[dict[str, Any]]]) -> None:
        """Keep ``pending`` for the next try unless the local heartbeat left newer statistics."""
        with self._pending_lock:
            if self._pending_beat is None:
                self._pending_beat = pending
