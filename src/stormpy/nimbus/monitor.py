"""The Nimbus monitor: heartbeat timeouts → reassignment, delayed actions, cleanup.

Every ``nimbus.monitor.freq.secs`` :meth:`Monitor.tick` does, in this order:

1. fires due kill/rebalance waits (:class:`~stormpy.nimbus.pending_actions.ActionTimers`);
2. for each topology that is ``active`` or ``inactive``: finds its dead executors and reschedules
   them (alive ones stay put). An executor is **alive** when its supervisor is live and offers the
   port (a vanished supervisor counts as live for ``nimbus.supervisor.timeout.secs`` after Nimbus
   first misses it, to ride out ZooKeeper session blips), and either it was (re)assigned less than
   ``nimbus.task.launch.secs`` ago or its worker's heartbeat last *changed* less than
   ``nimbus.task.timeout.secs`` ago and a changed heartbeat listed the executor less than
   ``nimbus.task.timeout.secs`` ago (an executor the worker stopped listing dies after the task
   timeout even while the worker keeps heartbeating). Changes
   are timed with Nimbus's own clock (like Storm's heartbeat cache), so worker clock skew does not
   matter; a heartbeat first seen after a Nimbus restart counts as fresh. The heartbeats are the
   ones supervisors sent this Nimbus over RPC (:class:`~stormpy.nimbus.worker_beats.WorkerBeats`,
   in memory; none are in ZooKeeper), so a monitor that just started (a Nimbus that just became
   leader) judges no executor by its heartbeats for ``nimbus.task.timeout.secs`` after its first
   round: until then every supervisor has sent its workers' heartbeats at least once, and only a
   vanished supervisor or a port it no longer offers makes a worker dead. A worker with a dead
   executor is rescheduled as a whole, away from its slot (its process would not run the executor
   again on the same assignment). Topologies without an assignment, or with unassigned executors,
   are scheduled as soon as slots are free. A topology running on fewer workers than it asked for
   (its executors were packed onto surviving slots) is rescheduled when free slots appear, so it
   spreads back to ``min(topology.workers, executors)`` workers; workers whose executors fit the
   even spread keep running (see :mod:`stormpy.scheduler.even`). A topology whose bundle this
   Nimbus lacks is not scheduled; ``on_missing_bundle(topology_id)`` asks for it back
   (:mod:`stormpy.nimbus.recovery`);
3. drops the heartbeats of slots no running topology's assignment holds, and removes ZooKeeper
   state (assignments, errors, ...) of topologies without a StormBase;
4. expires abandoned uploads and download sessions.

What a round reads from ZooKeeper is what others write: the supervisors' records (one batch) and
the lists of topology directories (the clean-up); both are read before Nimbus's lock is taken, so
a submit waits only for the round's decisions and writes. StormBases and assignments come from
the leader's memory (:class:`~stormpy.nimbus.leader_records.TopologyRecords`). A supervisor
that vanishes is noticed at once: the daemon watches the supervisors' directory and calls
:meth:`Monitor.supervisors_changed`, which runs a round when a known supervisor is gone; and the
round after it runs when its ``nimbus.supervisor.timeout.secs`` ends (not up to a period later),
so its executors move within the timeout plus about one round.

``now`` comes from the clock given to the monitor, so tests drive it with simulated time. Failures
of one topology are logged and do not stop the others; a tick never raises except for programming
errors in tests (``raise_errors=True``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from stormpy.cluster import Assignment, ClusterStateError, StormBase, SupervisorInfo, WorkerHeartbeat
from stormpy.config import DEFAULTS
from stormpy.host.service import Service
from stormpy.nimbus.downloads import DownloadManager
from stormpy.nimbus.pending_actions import KILL, REBALANCE
from stormpy.nimbus.store import StoreError
from stormpy.nimbus.topologies import TopologyManager
from stormpy.nimbus.uploads import UploadManager
from stormpy.nimbus.worker_beats import WorkerBeats
from stormpy.scheduler.even import ExecutorKey, Slot, available_slots

__all__ = ["ROUND_SUMMARY_SECS", "HeartbeatCache", "Liveness", "Monitor", "executor_liveness"]

#: how often (seconds) the monitor logs the duration of its rounds
ROUND_SUMMARY_SECS = 60.0

log = logging.getLogger(__name__)

T = TypeVar("T")


class HeartbeatCache:
    """When (on Nimbus's clock) each worker's heartbeat last changed, and when each executor was
    last listed in a changed heartbeat of its worker (kept per topology, so a round's work on one
    topology does not grow with the others)."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[Slot, tuple[float, float]]] = {}
        self._listed: dict[str, dict[ExecutorKey, float]] = {}

    def observe(self, topology_id: str, slot: Slot, beat_time: float, now: float,
                executors: Iterable[ExecutorKey] = ()) -> float:
        """Record the heartbeat's ``time`` field (and the ``executors`` it lists); return when it
        last changed (Nimbus time)."""
        seen = self._seen.setdefault(topology_id, {})
        previous = seen.get(slot)
        if previous is None or previous[0] != beat_time:
            seen[slot] = (beat_time, now)
            listed = self._listed.setdefault(topology_id, {})
            for executor in executors:
                listed[executor] = now
            return now
        return previous[1]

    def listed_at(self, topology_id: str, executors: Iterable[ExecutorKey],
                  now: float) -> dict[ExecutorKey, float]:
        """executor → when a changed heartbeat last listed it; an executor never listed counts from
        ``now``, the first time it is asked about (so it gets the task timeout too)."""
        listed = self._listed.setdefault(topology_id, {})
        return {e: listed.setdefault(e, now) for e in executors}

    def forget(self, topology_id: str, keep: set[Slot] | None = None) -> None:
        """Drop the topology's entries (except slots in ``keep``; executor entries go only with
        the whole topology)."""
        if keep is None:
            self._seen.pop(topology_id, None)
            self._listed.pop(topology_id, None)
            return
        seen = self._seen.get(topology_id, {})
        for slot in [s for s in seen if s not in keep]:
            del seen[slot]

    def topologies(self) -> set[str]:
        return {tid for tid, seen in self._seen.items() if seen}


class Liveness:
    """The outcome of one liveness check: alive executors and slots of dead workers."""

    def __init__(self, alive: dict[ExecutorKey, Slot], dead_slots: set[Slot]) -> None:
        self.alive = alive
        self.dead_slots = dead_slots


def executor_liveness(assignment: Assignment, heartbeats: Mapping[Slot, WorkerHeartbeat],
                      supervisors: Mapping[str, SupervisorInfo], *, now: float,
                      changed_at: Mapping[Slot, float], missing_since: Mapping[str, float],
                      task_timeout: float, launch_secs: float, supervisor_timeout: float,
                      listed_at: Mapping[ExecutorKey, float] | None = None,
                      judge_heartbeats: bool = True) -> Liveness:
    """Which executors of ``assignment`` are alive (rules in the module docstring).

    ``changed_at``: slot → Nimbus time its heartbeat last changed; ``missing_since``: node → Nimbus
    time it was first missed (only for nodes that are not live); ``listed_at``: executor → Nimbus
    time a changed heartbeat last listed it (without it, an executor the current heartbeat does not
    list is dead at once); ``judge_heartbeats`` False (a new leader's grace period): heartbeats
    are not judged, only the supervisor rules apply.
    """
    alive: dict[ExecutorKey, Slot] = {}
    dead: set[Slot] = set()
    for executor, slot in assignment.executors.items():
        node, port = slot
        info = supervisors.get(node)
        if info is None:
            since = missing_since.get(node, now)
            if now - since >= supervisor_timeout:
                dead.add(slot)
                continue
        elif port not in info.ports:
            dead.add(slot)
            continue
        started = assignment.executor_start_times.get(executor, 0.0)
        if now - started < launch_secs or not judge_heartbeats:
            alive[executor] = slot
            continue
        beat = heartbeats.get(slot)
        if beat is None:
            fresh = False
        elif not beat.executors:  # a heartbeat without an executor list speaks for all of them
            fresh = now - changed_at.get(slot, float("-inf")) < task_timeout
        elif listed_at is not None:
            fresh = (now - changed_at.get(slot, float("-inf")) < task_timeout
                     and now - listed_at.get(executor, float("-inf")) < task_timeout)
        else:
            fresh = executor in beat.executors and now - changed_at.get(slot, float("-inf")) < task_timeout
        if fresh:
            alive[executor] = slot
        else:
            dead.add(slot)
    return Liveness(alive, dead)


class Monitor:
    """Periodic checks over a :class:`TopologyManager` (see the module docstring)."""

    def __init__(self, manager: TopologyManager, conf: Mapping[str, Any], *,
                 uploads: UploadManager | None = None, downloads: DownloadManager | None = None,
                 clock: Callable[[], float] | None = None,
                 on_missing_bundle: Callable[[str], None] | None = None,
                 beats: WorkerBeats | None = None) -> None:
        self.manager = manager
        #: the heartbeats supervisors send this Nimbus (see :mod:`stormpy.nimbus.worker_beats`)
        self.beats = beats if beats is not None else WorkerBeats()
        #: when heartbeats start to be judged (``nimbus.task.timeout.secs`` after the first round)
        self.judge_from: float | None = None
        self._on_missing_bundle = on_missing_bundle
        self.uploads = uploads
        self.downloads = downloads
        self.clock = clock or manager.clock

        def num(key: str) -> float:
            return float(conf.get(key, DEFAULTS[key]))

        self.freq_secs = num("nimbus.monitor.freq.secs")
        self.task_timeout = num("nimbus.task.timeout.secs")
        self.launch_secs = num("nimbus.task.launch.secs")
        self.supervisor_timeout = num("nimbus.supervisor.timeout.secs")
        self.heartbeats = HeartbeatCache()
        self._missing_since: dict[str, float] = {}
        self._known_supervisors: frozenset[str] = frozenset()  # replaced, never changed in place
        self._round_secs: list[float] = []  # durations since the last summary line
        self._summary_at = time.perf_counter()
        self._last_counts = (0, 0)  # (topologies, worker heartbeats) of the last round
        self._counting = [0, 0]
        self._service = Service("nimbus-monitor", self._round, interval=self.freq_secs, log=log,
                                on_stop=lambda: log.info("monitor stopped"))

    # -- one round -------------------------------------------------------------------------------
    def tick(self, now: float | None = None, *, raise_errors: bool = False) -> None:
        """Run one monitoring round at ``now`` (default: the clock)."""
        now = self.clock() if now is None else now
        if self.judge_from is None:
            self.judge_from = now + self.task_timeout
            log.info("monitor: workers are judged by their heartbeats in %g s "
                     "(nimbus.task.timeout.secs), once every supervisor has sent them to this Nimbus",
                     self.task_timeout)
        state = self.manager.state
        # what others write is read before the lock is taken (submits do not wait for it)
        supervisors = self._read(raise_errors, "reading the supervisors", self.manager.supervisors)
        leftovers = self._read(raise_errors, "listing topology state", state.topologies)
        with self.manager.lock:
            for action in self.manager.timers.due(now):
                self._guard(raise_errors, f"{action.kind} of {action.topology_id}", self._fire, action.kind,
                            action.topology_id)
            if supervisors is not None:
                self._guard(raise_errors, "reassignment", self._check_topologies, now, raise_errors,
                            supervisors)
            if leftovers is not None:
                self._guard(raise_errors, "cleanup", self._cleanup_orphans, leftovers)
        if self.uploads is not None:
            self.uploads.expire(now)
        if self.downloads is not None:
            self.downloads.expire(now)

    def _fire(self, kind: str, topology_id: str) -> None:
        if kind == KILL:
            self.manager.finish_kill(topology_id)
            self.heartbeats.forget(topology_id)
        elif kind == REBALANCE:
            self.manager.finish_rebalance(topology_id)

    def _read(self, raise_errors: bool, what: str, fn: Callable[[], T]) -> T | None:
        """``fn()``, or None when it failed (logged, as :meth:`_guard` does)."""
        result: list[T] = []
        self._guard(raise_errors, what, lambda: result.append(fn()))
        return result[0] if result else None

    def _guard(self, raise_errors: bool, what: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except (ClusterStateError, StoreError) as exc:
            if raise_errors:
                raise
            log.warning("monitor: %s failed: %s", what, exc)
        except Exception:
            if raise_errors:
                raise
            log.exception("monitor: %s failed", what)

    def _check_topologies(self, now: float, raise_errors: bool,
                          supervisors: dict[str, SupervisorInfo]) -> None:
        records = self.manager.records
        for node in supervisors:
            self._missing_since.pop(node, None)
        for node in self._known_supervisors - set(supervisors):
            self._missing_since.setdefault(node, now)
        self._known_supervisors = self._known_supervisors | frozenset(supervisors)
        assignments = records.assignments()
        for node in {n for a in assignments.values() for n, _ in a.executors.values()} - set(supervisors):
            self._missing_since.setdefault(node, now)
        self._counting = [0, 0]
        running = {tid: base for tid, base in records.storm_bases().items()
                   if base.status in ("active", "inactive")}
        self.beats.retain({tid: set(a.executors.values()) for tid, a in assignments.items()
                           if tid in running})
        beats = self.beats.of(sorted(tid for tid in running if tid in assignments))
        for topology_id, base in sorted(running.items()):
            self._counting[0] += 1
            if not self.manager.store.exists(topology_id):
                if self._on_missing_bundle is not None:  # no code to schedule: ask for it back
                    self._guard(raise_errors, f"asking for the code of {topology_id}",
                                self._on_missing_bundle, topology_id)
                continue
            self._guard(raise_errors, f"scheduling {topology_id}", self._check_topology, base,
                        assignments, beats.get(topology_id, {}), supervisors, now)
        self._last_counts = (self._counting[0], self._counting[1])

    def _check_topology(self, base: StormBase, assignments: dict[str, Assignment],
                        beats: Mapping[Slot, WorkerHeartbeat], supervisors: Mapping[str, SupervisorInfo],
                        now: float) -> None:
        """One topology of a round; ``assignments`` (the round's, read once) is kept current
        with what the round writes, so each reschedule reads no supervisor or assignment."""
        topology_id = base.topology_id
        expected = {e.key for e in self.manager.layout(base).executors}
        assignment = assignments.get(topology_id)
        if assignment is None:
            self.manager.reschedule(topology_id, {}, supervisors=supervisors, assignments=assignments)
            return
        self._counting[1] += len(beats)
        changed = {slot: self.heartbeats.observe(topology_id, slot, beat.time, now, beat.executors)
                   for slot, beat in beats.items()}
        self.heartbeats.forget(topology_id, keep=set(beats))
        liveness = executor_liveness(
            assignment, beats, supervisors, now=now, changed_at=changed, missing_since=self._missing_since,
            task_timeout=self.task_timeout, launch_secs=self.launch_secs,
            supervisor_timeout=self.supervisor_timeout,
            listed_at=self.heartbeats.listed_at(topology_id, assignment.executors, now),
            judge_heartbeats=self.judge_from is not None and now >= self.judge_from)
        alive = {e: s for e, s in liveness.alive.items() if e in expected and s not in liveness.dead_slots}
        if set(alive) == expected and set(assignment.executors) == expected:
            if self._can_spread(topology_id, base.num_workers, len(expected), assignments, supervisors):
                log.info("topology %s runs on %d of its %d workers and free slots exist; spreading it",
                         topology_id, len(set(assignment.executors.values())), base.num_workers)
                self.manager.reschedule(topology_id, alive, supervisors=supervisors, assignments=assignments)
            return
        if liveness.dead_slots:
            log.warning("topology %s: workers %s are dead (no heartbeat within nimbus.task.timeout.secs, "
                        "supervisor gone, or executors their heartbeat stopped listing); reassigning their "
                        "dead executors", topology_id,
                        ", ".join(f"{n}:{p}" for n, p in sorted(liveness.dead_slots)))
        self.manager.reschedule(topology_id, alive, avoid=liveness.dead_slots, supervisors=supervisors,
                                assignments=assignments)

    def _can_spread(self, topology_id: str, num_workers: int, n_execs: int,
                    assignments: Mapping[str, Assignment], supervisors: Mapping[str, SupervisorInfo]) -> bool:
        """True when the topology uses fewer slots than it could and a live slot is free."""
        used = set(assignments[topology_id].executors.values())
        if len(used) >= min(num_workers, n_execs):
            return False
        others = [a.executors for tid, a in assignments.items() if tid != topology_id]
        free = available_slots({sid: info.ports for sid, info in supervisors.items()}, others)
        return any((node, port) not in used for node, ports in free.items() for port in ports)

    def _cleanup_orphans(self, topologies: list[str]) -> None:
        """Remove the state of ``topologies`` (ids with any state, read before the lock) that
        have no StormBase."""
        records = self.manager.records
        live = set(records.topology_ids())
        for topology_id in topologies:
            if topology_id not in live:
                log.info("removing leftover ZooKeeper state of topology %s", topology_id)
                records.remove_topology(topology_id)
                self.heartbeats.forget(topology_id)

    # -- supervisors vanishing -------------------------------------------------------------------
    def supervisors_changed(self, supervisor_ids: Iterable[str]) -> None:
        """The supervisors' directory changed (a watch, on a ZooKeeper thread): run a round now
        when a supervisor this monitor knew is gone, so its ``nimbus.supervisor.timeout.secs``
        starts counting at once rather than at the next round (one already missed needs none)."""
        gone = self._known_supervisors - set(supervisor_ids)
        if any(node not in self._missing_since for node in gone):
            self.wake()

    def _supervisor_deadline(self, now: float) -> float | None:
        """When the next vanished supervisor's timeout ends (None when none is pending)."""
        ends = [since + self.supervisor_timeout for since in list(self._missing_since.values())
                if since + self.supervisor_timeout > now]
        return min(ends) if ends else None

    # -- background thread -----------------------------------------------------------------------
    def _round(self) -> float:
        """One :meth:`tick`; the delay until the next: ``freq_secs``, sooner when a wait is due
        or a vanished supervisor's timeout ends.

        Each round is timed: one longer than ``freq_secs`` is a warning, and every
        :data:`ROUND_SUMMARY_SECS` an INFO line gives the rounds' median and longest duration with
        the topologies and worker heartbeats of the last round (what a round's work grows with)."""
        started = time.perf_counter()
        self.tick()
        took = time.perf_counter() - started
        self._round_secs.append(took)
        if took > self.freq_secs:
            log.warning("monitor round took %.2f s, longer than nimbus.monitor.freq.secs (%g s): "
                        "%d topologies, %d worker heartbeats read", took, self.freq_secs,
                        self._last_counts[0], self._last_counts[1])
        if started - self._summary_at >= ROUND_SUMMARY_SECS:
            rounds = sorted(self._round_secs)
            log.info("monitor round took %.3f s (median of %d rounds in %.0f s; longest %.3f s): "
                     "%d topologies, %d worker heartbeats read", rounds[len(rounds) // 2], len(rounds),
                     started - self._summary_at, rounds[-1], *self._last_counts)
            self._round_secs.clear()
            self._summary_at = started
        delay = self.freq_secs
        now = self.clock()
        for deadline in (self.manager.timers.next_deadline(), self._supervisor_deadline(now)):
            if deadline is not None:
                delay = max(0.01, min(delay, deadline - now))
        return delay

    def start(self) -> None:
        """Run :meth:`tick` every ``freq_secs`` (sooner when a wait is due) on a daemon thread (a
        :class:`~stormpy.host.service.Service`)."""
        if self._service.running or self._service.stopping:
            raise RuntimeError("monitor already started")
        self._service.start()

    def wake(self) -> None:
        """Run the next round now (after a state change that needs attention)."""
        self._service.wake()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread after its current round; idempotent."""
        self._service.stop(timeout)

    @property
    def running(self) -> bool:
        return self._service.running


def wall_clock() -> float:
    """The default clock (wall time, seconds)."""
    return time.time()
