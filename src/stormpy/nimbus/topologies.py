"""TopologyManager: the state transitions of topologies, written to ZooKeeper and the bundle store.

Contract:

* Every public method runs under one re-entrant lock, so RPC handler threads and the monitor never
  interleave their read-modify-write cycles on the cluster state.
* ``submit`` checks the name is unique among the topologies Nimbus knows (a topology being
  killed still holds its name), then writes the topology all or nothing
  (:mod:`stormpy.nimbus.submission`: checks before any write, a ``submitting/<id>`` marker until
  the commit, roll-back on any failure; a Nimbus that resumes as leader rolls back every marked
  topology). Checks of names, configs and sizes live in :mod:`stormpy.nimbus.validation`.
* ``kill`` marks the topology ``killed`` (workers stop spouts) and removes it — ZooKeeper state
  (assignment first) and the stored bundle — after ``wait_secs``; ``rebalance`` marks it
  ``rebalancing`` with the new worker/executor counts and reschedules it from scratch after
  ``wait_secs``, then restores the previous status. Waits run on :class:`ActionTimers`, fired by the
  monitor; a wait of 0 acts at once.
* The bundle key of a submitted topology is its topology id (``get_topology_files``,
  ``begin_download`` and ``Assignment.bundle_key`` all use it).
* :meth:`resume` rebuilds the pending waits of a restarted Nimbus from ZooKeeper (the waits start
  again from the restart) and removes stored bundles whose topology no longer exists.
* StormBases and assignments are read and written through :attr:`TopologyManager.records`
  (:class:`~stormpy.nimbus.leader_records.TopologyRecords`): :meth:`resume` (the leader's start)
  loads them once and the leader then answers from memory; :meth:`stand_by` drops the copy.
  Task layouts are computed once per topology and executor counts.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from stormpy.cluster import Assignment, ClusterState, StormBase, SupervisorInfo
from stormpy.config import setting
from stormpy.nimbus.credentials import add_topology_credentials
from stormpy.nimbus.leader_records import TopologyRecords
from stormpy.nimbus.pending_actions import KILL, REBALANCE, ActionTimers
from stormpy.nimbus.store import BundleStore, StoredTopology, StoreError
from stormpy.nimbus.submission import check_znode, prepare_submission, roll_back_submission, write_submission
from stormpy.nimbus.uploads import StagedBundle
from stormpy.nimbus.validation import limit
from stormpy.rpc.errors import AlreadyExistsError, InvalidRequestError, NotFoundError, TopologyRefusedError
from stormpy.scheduler.even import ExecutorKey, Slot, available_slots, schedule_topology
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._event_log import EVENTLOGGER_EXECUTORS
from stormpy.topology._layout import ACKER_COMPONENT, TaskLayout, compute_layout
from stormpy.topology._spec import TopologySpec

__all__ = ["TopologyManager"]

log = logging.getLogger(__name__)

STATUSES_LIVE = ("active", "inactive")


class TopologyManager:
    """Topology lifecycle over a :class:`ClusterState` and a :class:`BundleStore`."""

    def __init__(self, state: ClusterState, store: BundleStore, conf: Mapping[str, Any], *,
                 clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.store = store
        self.conf = dict(conf)
        self.clock = clock
        self.timers = ActionTimers()
        self.lock = threading.RLock()
        #: StormBases and assignments (in memory while this Nimbus leads)
        self.records = TopologyRecords(state)
        self._described: dict[str, tuple[TopologySpec, dict[str, Any]]] = {}
        self._layouts: dict[str, tuple[tuple[tuple[str, int], ...], TaskLayout]] = {}
        self._supervisors_seen: tuple[float, dict[str, SupervisorInfo]] | None = None

    # -- lookups ---------------------------------------------------------------------------------
    def base_by_name(self, name: Any) -> StormBase:
        """The StormBase of the topology called ``name`` (or with that id); NotFoundError otherwise."""
        if not isinstance(name, str):
            raise NotFoundError(f"topology name must be a string, got {name!r}")
        bases = self.records.storm_bases()
        for base in bases.values():
            if base.name == name:
                return base
        if name in bases:
            return bases[name]
        known = sorted(b.name for b in bases.values())
        raise NotFoundError(f"no topology named {name!r} (running: {', '.join(known) or 'none'})")

    def supervisors(self, *, fresh: bool = True) -> dict[str, SupervisorInfo]:
        """The live supervisors' records: read from ZooKeeper now, or (``fresh`` False, for
        advice such as the state warning) the last ones read, by a monitor round or a schedule,
        when they are at most ``nimbus.monitor.freq.secs`` old."""
        seen = self._supervisors_seen
        now = self.clock()
        max_age = float(setting(self.conf, "nimbus.monitor.freq.secs"))
        if fresh or seen is None or not 0 <= now - seen[0] <= max_age:
            seen = self._supervisors_seen = (now, self.state.supervisors())
        return seen[1]

    def describe(self, topology_id: str) -> tuple[TopologySpec, dict[str, Any]]:
        """The stored spec and conf (cached); StoreError when the store lacks them."""
        cached = self._described.get(topology_id)
        if cached is None:
            stored = self.store.load(topology_id)
            cached = (TopologySpec.from_doc(stored.spec), stored.conf)
            self._described[topology_id] = cached
        return cached

    def layout(self, base: StormBase) -> TaskLayout:
        """The task layout of the topology with the executor counts in its StormBase (computed
        once per topology and counts: a monitor round asks for every topology's)."""
        counts = tuple(sorted(base.component_executors.items()))
        cached = self._layouts.get(base.topology_id)
        if cached is not None and cached[0] == counts:
            return cached[1]
        spec, conf = self.describe(base.topology_id)
        layout = compute_layout(spec, conf, base.component_executors or None)
        self._layouts[base.topology_id] = (counts, layout)
        return layout

    def stored(self, topology_id: str) -> StoredTopology:
        """The store entry; NotFoundError when the topology has none."""
        try:
            return self.store.load(topology_id)
        except StoreError as exc:
            raise NotFoundError(str(exc)) from None
        except ValueError:
            raise NotFoundError(f"no topology with id {topology_id!r}") from None

    # -- submit ----------------------------------------------------------------------------------
    def submit(self, name: str, staged: StagedBundle, spec: TopologySpec, conf: Mapping[str, Any],
               initial_status: str = "active", *,
               before_activate: Callable[[str], None] | None = None) -> str:
        """Store, schedule and start the topology; return its id (see the module contract and
        :mod:`stormpy.nimbus.submission`).

        ``before_activate(topology_id)`` runs once the topology is stored and scheduled (still
        inactive); if it raises, the submission is rolled back like any other failure.
        """
        if initial_status not in STATUSES_LIVE:
            raise InvalidRequestError("initial_status must be 'active' or 'inactive', "
                                      f"got {initial_status!r}")
        with self.lock:
            if any(b.name == name for b in self.records.storm_bases().values()):
                raise AlreadyExistsError(f"a topology named {name!r} is already running; kill it first or "
                                         "choose another --name")
            topo_conf, layout = prepare_submission(name, spec, conf, self.conf)
            now = self.clock()
            topology_id = f"{name}-{int(now)}-{secrets.token_hex(3)}"
            add_topology_credentials(topo_conf, self.conf, topology_id)

            def remember(described: tuple[TopologySpec, dict[str, Any]]) -> None:
                self._described[topology_id] = described

            try:
                write_submission(self.state, self.records, self.store, self.conf, topology_id, name,
                                 staged, spec, topo_conf, layout, now, initial_status, remember=remember,
                                 schedule=lambda: self.reschedule(topology_id, {}),
                                 before_activate=before_activate)
            except BaseException:
                self._roll_back(topology_id)
                raise
            log.info("submitted topology %s (%s, %d workers, %d executors, %s)", topology_id, name,
                     topo_conf["topology.workers"], len(layout.executors), initial_status)
            return topology_id

    def _roll_back(self, topology_id: str) -> None:
        """Forget the topology's caches and waits, then :func:`roll_back_submission`."""
        self._described.pop(topology_id, None)
        self._layouts.pop(topology_id, None)
        self.timers.cancel(topology_id)
        roll_back_submission(self.records, self.store, topology_id)

    # -- status transitions ----------------------------------------------------------------------
    def kill(self, name: str, wait_secs: float | None) -> str:
        """Deactivate and remove the topology after ``wait_secs`` (default: its message timeout)."""
        with self.lock:
            base = self.base_by_name(name)
            if wait_secs is None:
                wait_secs = self._message_timeout(base.topology_id)
            prev = base.prev_status if base.status in ("killed", "rebalancing") else base.status
            self.records.set_storm_base(replace(base, status="killed", kill_wait_secs=float(wait_secs),
                                              prev_status=prev))
            log.info("killing topology %s (wait %.3g s)", base.topology_id, wait_secs)
            if wait_secs <= 0:
                self.finish_kill(base.topology_id)
            else:
                self.timers.schedule(base.topology_id, KILL, self.clock() + wait_secs)
            return base.topology_id

    def finish_kill(self, topology_id: str) -> None:
        """Remove every trace of the topology (ZooKeeper state, stored bundle, caches, timers)."""
        with self.lock:
            self.timers.cancel(topology_id)
            self.records.remove_topology(topology_id)
            self.store.remove(topology_id)
            self._described.pop(topology_id, None)
            self._layouts.pop(topology_id, None)
            log.info("removed topology %s", topology_id)

    def set_active(self, name: str, active: bool) -> str:
        """Activate or deactivate; during a rebalance the status to restore afterwards changes."""
        status = "active" if active else "inactive"
        change = "activated" if active else "deactivated"
        with self.lock:
            base = self.base_by_name(name)
            if base.status == "killed":
                raise InvalidRequestError(f"topology {base.name!r} is being killed; it cannot be {change}")
            if base.status == "rebalancing":
                self.records.set_storm_base(replace(base, prev_status=status))
            elif base.status != status:
                self.records.set_storm_base(replace(base, status=status))
            log.info("topology %s %s", base.topology_id, change)
            return base.topology_id

    def set_debug(self, name: str, component: str | None, enable: bool, sampling_pct: float) -> str:
        """Turn sampled tuples (the event logger) on or off for the topology (``component``
        None: every component; turning it off so also turns off each component's own setting) or
        one component, in its StormBase's ``component_debug`` (Storm's ``debug``), which its
        workers watch. NotFoundError for an unknown component; InvalidRequestError when the
        topology has no event logger (``topology.eventlogger.executors`` 0)."""
        with self.lock:
            base = self.base_by_name(name)
            if base.status == "killed":
                raise InvalidRequestError(f"topology {base.name!r} is being killed")
            spec, conf = self._describe_or_fail(base.topology_id)
            if component is not None and component not in spec.components:
                raise NotFoundError(f"topology {base.name!r} has no component {component!r} "
                                    f"(components: {', '.join(sorted(spec.components))})")
            loggers = setting(conf, EVENTLOGGER_EXECUTORS)
            if enable and loggers == 0:
                raise InvalidRequestError(f"topology {base.name!r} has no event logger "
                                          f"({EVENTLOGGER_EXECUTORS} is 0): nothing can be sampled")
            debug = dict(base.component_debug)
            if component is None and not enable:
                debug = {key: {**value, "enable": False} for key, value in debug.items()}
            debug[component or base.topology_id] = {"enable": enable, "samplingpct": float(sampling_pct)}
            self.records.set_storm_base(replace(base, component_debug=debug))
            log.info("topology %s: sampled tuples %s for %s (%s%%)", base.topology_id,
                     "on" if enable else "off", component or "every component", sampling_pct)
            return base.topology_id

    def rebalance(self, name: str, wait_secs: float | None, num_workers: int | None,
                  executors: Mapping[str, int] | None) -> str:
        """Mark the topology rebalancing with new counts; reschedule it after ``wait_secs``.
        InvalidRequestError when a component is given more executors than it has tasks (Storm
        refuses that too), NotFoundError for an unknown component."""
        with self.lock:
            base = self.base_by_name(name)
            if base.status == "killed":
                raise InvalidRequestError(f"topology {base.name!r} is being killed; it cannot be rebalanced")
            spec, _ = self._describe_or_fail(base.topology_id)
            known = set(spec.components) | {ACKER_COMPONENT}
            for component in executors or {}:
                if component not in known:
                    raise NotFoundError(f"topology {base.name!r} has no component {component!r} "
                                        f"(components: {', '.join(sorted(known))})")
            if executors:
                tasks = self.layout(base).component_tasks
                for component, n in sorted(executors.items()):
                    have = len(tasks.get(component, ()))
                    if n > have:
                        raise InvalidRequestError(
                            f"rebalance of {base.name!r}: component {component!r} has {have} "
                            f"task{'s' if have != 1 else ''}, so it cannot run {n} executors (an "
                            "executor runs at least one task; the task count is fixed at submit, "
                            "set it with set_num_tasks / topology.tasks)")
            max_workers = limit(self.conf, "nimbus.slots.perTopology")
            if num_workers is not None and num_workers > max_workers:
                raise TopologyRefusedError(f"rebalance of {base.name!r}: {num_workers} workers exceed "
                                           f"nimbus.slots.perTopology ({max_workers})")
            if wait_secs is None:
                wait_secs = self._message_timeout(base.topology_id)
            prev = base.prev_status if base.status == "rebalancing" else base.status
            counts = dict(base.component_executors)
            counts.update({c: int(n) for c, n in (executors or {}).items()})
            self.records.set_storm_base(replace(
                base, status="rebalancing", prev_status=prev, kill_wait_secs=float(wait_secs),
                num_workers=int(num_workers) if num_workers is not None else base.num_workers,
                component_executors=counts))
            log.info("rebalancing topology %s (wait %.3g s, workers %s, executors %s)", base.topology_id,
                     wait_secs, num_workers, executors)
            if wait_secs <= 0:
                self.finish_rebalance(base.topology_id)
            else:
                self.timers.schedule(base.topology_id, REBALANCE, self.clock() + wait_secs)
            return base.topology_id

    def finish_rebalance(self, topology_id: str) -> None:
        """Reschedule from scratch with the new counts and restore the status from before (a
        wait still pending for the topology's rebalance is dropped)."""
        with self.lock:
            base = self.records.storm_base(topology_id)
            if base is None or base.status != "rebalancing":
                return
            self.timers.cancel(topology_id)  # a rebalance finished at once ends the earlier one's wait
            self.reschedule(topology_id, {})
            self.records.set_storm_base(replace(base, status=base.prev_status or "active", prev_status=None,
                                              kill_wait_secs=None))
            log.info("rebalanced topology %s", topology_id)

    # -- scheduling ------------------------------------------------------------------------------
    def reschedule(self, topology_id: str, alive: Mapping[ExecutorKey, Slot],
                   avoid: Collection[Slot] = (), *,
                   supervisors: Mapping[str, SupervisorInfo] | None = None,
                   assignments: dict[str, Assignment] | None = None) -> Assignment | None:
        """Schedule the topology keeping ``alive`` executors in place; write and return the
        assignment (None when no slot is free or the topology is gone).

        ``supervisors`` and ``assignments``: what the caller read this round (the monitor
        reschedules many topologies per round, and reading every supervisor per topology made a
        round of a large cluster take minutes); ``assignments`` is updated with the assignment
        written, so the next topology of the round sees the slots taken. Read from ZooKeeper when
        not given."""
        with self.lock:
            base = self.records.storm_base(topology_id)
            if base is None:
                return None
            layout = self.layout(base)
            supervisors = self.supervisors() if supervisors is None else supervisors
            known = assignments
            assignments = self.records.assignments() if known is None else known
            free = available_slots({sid: info.ports for sid, info in supervisors.items()},
                                   [a.executors for tid, a in assignments.items() if tid != topology_id])
            new = schedule_topology([e.key for e in layout.executors], free, base.num_workers, alive,
                                    avoid=avoid)
            if not new:
                return None
            old = assignments.get(topology_id)
            now = self.clock()
            old_times = old.executor_start_times if old is not None else {}
            start_times = {e: (old_times.get(e, now) if e in alive and alive[e] == slot else now)
                           for e, slot in new.items()}
            node_host = {node: supervisors[node].host for node, _ in new.values()}
            assignment = Assignment(topology_id=topology_id, bundle_key=topology_id, executors=new,
                                    node_host=node_host, executor_start_times=start_times)
            if old is not None and old.executors == new and old.node_host == node_host:
                return old
            check_znode(self.conf, assignment, f"the assignment of topology {base.name!r}")
            self.records.set_assignment(assignment)
            if known is not None:
                known[topology_id] = assignment
            kept_slots = set(new.values())  # heartbeats of the slots left go with the next round
            log.info("assigned topology %s to %d workers: %s", topology_id, len(kept_slots),
                     ", ".join(f"{n}:{p}" for n, p in sorted(kept_slots)))
            return assignment

    # -- restart ---------------------------------------------------------------------------------
    def resume(self) -> list[str]:
        """Re-arm pending kill/rebalance waits from ZooKeeper and drop stored bundles of topologies
        that no longer exist; return the ids of the topologies found. Loads :attr:`records` (the
        leader answers from memory from now on)."""
        with self.lock:
            for tid in self.state.submitting():
                log.warning("topology %s was being submitted when the previous leader stopped; rolling "
                            "it back", tid)
                self._roll_back(tid)
            self.records.load()
            self._layouts.clear()
            bases = self.records.storm_bases()
            now = self.clock()
            for tid, base in bases.items():
                if base.status == "killed":
                    self.timers.schedule(tid, KILL, now + (base.kill_wait_secs or 0.0))
                elif base.status == "rebalancing":
                    self.timers.schedule(tid, REBALANCE, now + (base.kill_wait_secs or 0.0))
            for tid in self.store.topology_ids():
                if tid not in bases:
                    log.info("removing stored bundle of vanished topology %s", tid)
                    self.store.remove(tid)
            return sorted(bases)

    def stand_by(self) -> None:
        """The leadership is lost: forget the in-memory records (reads go to ZooKeeper)."""
        with self.lock:
            self.records.drop()

    # -- helpers ---------------------------------------------------------------------------------
    def _describe_or_fail(self, topology_id: str) -> tuple[TopologySpec, dict[str, Any]]:
        try:
            return self.describe(topology_id)
        except StoreError as exc:
            raise NotFoundError(f"topology {topology_id}: its code is missing on this Nimbus ({exc}); it "
                                "cannot be rescheduled until the code is back (stormpy list shows it "
                                "degraded, with the reason)") from None

    def _message_timeout(self, topology_id: str) -> float:
        try:
            _, conf = self.describe(topology_id)
        except (StoreError, InvalidTopologyError):
            conf = {}
        value = setting({**self.conf, **conf}, "topology.message.timeout.secs")
        return float(value)
