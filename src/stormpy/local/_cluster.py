"""LocalCluster: run topologies inside this process (Storm's LocalCluster; ``stormpy local``).

Each submitted topology runs as one Worker holding all its tasks on its own loop thread — the
same executor, routing and acking code as a cluster worker, with same-worker delivery. With
``simulated_time=True`` (or inside ``with stormpy.topology.clock.simulated_time():``) timers
(ticks, message timeouts) and components' ``clock.sleep``/``context.clock`` only move when the
test calls ``advance_time``; simulated time is process-wide, as in Storm.

State lives with the LocalCluster instance, as in Storm's LocalCluster, and needs nothing started
by hand: components' state (``context.state_store``, ``context.state_backend``: stateful bolts'
memory provider, transactional coordinators and emitters, connectors' named state) is kept in a
memory backend of this instance (:class:`~stormpy.state._memory.MemoryBackend`), fresh for each new
LocalCluster and never shared with another one in the process; the log announces it when a
component first asks for it. When the cluster's own ``conf`` names ``storm.zookeeper.servers`` it
goes to that ZooKeeper instead (same layout as a cluster, under ``storm.zookeeper.root``; the
connection is opened at the first submit and closed by :meth:`LocalCluster.shutdown`), with a
memory backend of this instance for what is asked to stay in memory. Settings that name their own
ZooKeeper (``transactional.zookeeper.servers``, a provider's ``servers``) use it. Killing a
topology (and shutting down) removes its per-topology state, as Nimbus's kill does; state of this
instance's memory ends with it.

Metrics consumers (``topology.metrics.consumer.register``) run one per in-process worker on a
side thread that takes the worker's statistics on its loop thread each
``topology.builtin.metrics.bucket.size.secs``; killing the topology calls their ``cleanup``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.cluster.storage import ZkStorage
from stormpy.config import merged
from stormpy.config.validate import SUBMIT_WARNINGS_KEY, WARNING_LOG_EXTRA, check_topology_config
from stormpy.host.waiting import wait_for
from stormpy.messaging.inproc import InprocHub
from stormpy.scheduler.even import schedule_topology
from stormpy.state._memory import MemoryBackend
from stormpy.state._zookeeper import ZkBackend
from stormpy.topology._layout import compute_layout
from stormpy.topology._metrics_consumer import ConsumerContext
from stormpy.topology._spec import TopologySpec
from stormpy.topology._state import StateBackend, StateStoreError
from stormpy.topology.clock import Clock, SimulatedClock, enter_simulation, leave_simulation, simulating
from stormpy.worker.factory import WorkerConfig
from stormpy.worker.loop import Worker
from stormpy.worker.metrics_consumers import MetricsFeed
from stormpy.worker.stats import summarize

log = logging.getLogger("stormpy.local")


class TopologyNotFound(KeyError):
    """No running topology by that name."""


class LocalCluster:
    """In-process cluster. Use as a context manager so every topology is stopped.

    ``conf`` is the base of every topology's config; with ``storm.zookeeper.servers`` in it,
    component state lives in that ZooKeeper, else in this instance's memory (see the module doc).
    ``state`` overrides where state lives.

    ``simulated_time``: True joins (or starts) the process-wide simulated time until
    :meth:`shutdown`; None (the default) simulates exactly when a ``simulated_time()`` block is
    active; False inside such a block is a ValueError (time is process-wide).
    """

    def __init__(self, simulated_time: bool | None = None, conf: Mapping[str, Any] | None = None,
                 *, state: StateBackend | None = None) -> None:
        if simulated_time is False and simulating():
            raise ValueError("LocalCluster(simulated_time=False) inside simulated_time(): "
                             "simulated time is process-wide; drop the argument or leave the block")
        self._simulating = bool(simulated_time) or simulating()
        self.clock: Clock = enter_simulation() if self._simulating else Clock()
        self._threads: dict[str, list[threading.Thread]] = {}
        self.conf = dict(conf or {})
        self._workers: dict[str, Worker] = {}
        self._groups: dict[str, list[Worker]] = {}
        self._state = state
        self._zk: ZkStorage | None = None
        self._feeds: dict[str, list[MetricsFeed]] = {}
        self._warnings: dict[str, list[str]] = {}

    @property
    def state(self) -> StateBackend:
        """Where components keep state: ZooKeeper when ``conf`` configures it (connecting now,
        ZkConnectionError naming the hosts if it cannot), else this instance's memory."""
        if self._state is None:
            if "storm.zookeeper.servers" in self.conf:
                self._zk = ZkStorage.from_config(merged(self.conf)).start()
                self._state = ZkBackend(self._zk)
            else:
                self._state = MemoryBackend()
        return self._state

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def submit_topology(self, name: str, conf: Mapping[str, Any] | None, topology: TopologySpec, *,
                        active: bool = True, workers: int = 1,
                        observer: Callable[[str, str, list[Any], list[int]], None] | None = None
                        ) -> Worker:
        """Start ``topology`` under ``name``; it begins active unless ``active=False``.
        Its config is checked first (:func:`stormpy.config.validate.check_topology_config`):
        SettingError naming the key, the value and what was expected; the warnings are logged
        and kept (:meth:`warnings_of`).

        ``workers`` > 1 runs it as that many in-process workers whose executors are spread round
        robin and whose tuples cross between them serialised (Storm's local mode with real
        messaging); its config then says ``topology.workers`` = ``workers`` unless the cluster's
        or the topology's conf sets it (so one acker executor per worker by default, as in
        Storm). Returns the first worker; ``workers_of(name)`` returns all.
        """
        warnings = self.check_topology(name, conf, topology)
        for warning in warnings:
            log.warning("topology %s: %s", name, warning, extra=WARNING_LOG_EXTRA)
        full = merged(self.conf, conf, {"topology.name": name})
        if warnings:
            full[SUBMIT_WARNINGS_KEY] = warnings
        topology_id = f"{name}-{uuid.uuid4().hex[:8]}"
        state = self.state
        if workers <= 1:
            group = [Worker(WorkerConfig(topology_id, topology, full, active=active),
                            clock=self.clock, observer=observer, state=state)]
        else:
            # the number of workers it runs in, unless its conf says otherwise (one acker
            # executor per worker by default, as in Storm)
            if "topology.workers" not in {**self.conf, **(conf or {})}:
                full["topology.workers"] = workers
            group = self._worker_group(topology_id, topology, full, workers, active, observer)
        self._workers[name] = group[0]
        self._groups[name] = group
        self._warnings[name] = warnings
        self._threads[name] = [worker.start(name=f"local-{name}-{i}")
                               for i, worker in enumerate(group)]
        if MetricsFeed.wanted(full):
            self._feeds[name] = [self._metrics_feed(topology_id, full, w) for w in group]
        return group[0]

    def check_topology(self, name: str, conf: Mapping[str, Any] | None,
                       topology: TopologySpec) -> list[str]:
        """The submit check of :meth:`submit_topology` without starting anything: raises as it
        would (ValueError for a name already running, InvalidTopologyError, SettingError) and
        returns its warnings. A caller that prints before the components start (and print
        themselves) checks first, prints, then submits."""
        if name in self._workers:
            raise ValueError(f"topology {name!r} is already running")
        topology.validate()
        return check_topology_config({**self.conf, **(conf or {})}, topology.components, {})

    def _metrics_feed(self, topology_id: str, conf: dict[str, Any], worker: Worker) -> MetricsFeed:
        """The metrics consumers of one in-process worker: they get its tasks' statistics,
        taken on its loop thread, every ``topology.builtin.metrics.bucket.size.secs``."""
        tasks = tuple(worker.local_tasks)
        context = ConsumerContext(topology_id, worker.hostname, 0, tasks)
        return MetricsFeed(conf, context, lambda: self._on_loop(worker, worker.task_stats)).start()

    def _worker_group(self, topology_id: str, topology: TopologySpec, conf: dict[str, Any],
                      n: int, active: bool,
                      observer: Callable[[str, str, list[Any], list[int]], None] | None
                      ) -> list[Worker]:
        layout = compute_layout(topology, conf)
        keys = [f"local-{i}" for i in range(n)]
        # Nimbus's even scheduler deals the executors over n slots of one node (port i: worker i)
        dealt = schedule_topology([e.key for e in layout.executors], {"local": list(range(n))}, n)
        by_key = {executor.key: executor for executor in layout.executors}
        owner = {task: keys[port] for executor, (_, port) in dealt.items()
                 for task in by_key[executor].tasks}
        hub = InprocHub()
        group = []
        for key in keys:
            mine = [t for t, k in owner.items() if k == key]
            config = WorkerConfig(topology_id, topology, conf, layout=layout, local_tasks=mine,
                                  task_peers={t: k for t, k in owner.items() if k != key},
                                  active=active)
            group.append(Worker(config, transport=hub.transport(key), clock=self.clock,
                                observer=observer, state=self.state))
        return group

    def warnings_of(self, name: str) -> list[str]:
        """The warnings the submit check gave for the running topology (also logged, and in its
        config as ``topology.submit.warnings``)."""
        self.worker(name)
        return list(self._warnings[name])

    def workers_of(self, name: str) -> list[Worker]:
        """Every in-process worker of the topology."""
        self.worker(name)
        return list(self._groups[name])

    def worker(self, name: str) -> Worker:
        try:
            return self._workers[name]
        except KeyError:
            raise TopologyNotFound(f"no topology named {name!r} (running: "
                                   f"{sorted(self._workers)})") from None

    def kill_topology(self, name: str, wait_secs: float = 0.0) -> None:
        """Deactivate, wait ``wait_secs`` (simulated or real), stop and forget the topology."""
        self.worker(name)
        group = self._groups[name]
        if wait_secs:
            for w in group:
                w.set_active(False)
            self.sleep(wait_secs)
        self._stop_group(name, group)
        del self._workers[name]
        del self._groups[name]
        self._warnings.pop(name, None)
        self._drop_state(group[0].topology_id)

    def _stop_group(self, name: str, group: list[Worker]) -> None:
        """Stop the workers; simulated sleeps of their loop threads return at once meanwhile."""
        for feed in self._feeds.pop(name, []):
            feed.stop()
        threads = self._threads.pop(name, [])
        clock = self.clock
        if isinstance(clock, SimulatedClock):
            clock.release(threads)
        for w in group:
            w.stop()
        if isinstance(clock, SimulatedClock):
            clock.release(threads, released=False)

    def _drop_state(self, topology_id: str) -> None:
        if self._state is None:
            return
        try:
            self._state.drop(topology_id)
        except StateStoreError as exc:
            log.warning("could not remove the state of %s: %s", topology_id, exc)

    def activate(self, name: str) -> None:
        self.worker(name)
        for w in self._groups[name]:
            w.set_active(True)

    def deactivate(self, name: str) -> None:
        self.worker(name)
        for w in self._groups[name]:
            w.set_active(False)

    def get_stats(self, name: str) -> dict[str, dict[str, Any]]:
        """Per-component emitted/transferred/executed/acked/failed and complete latency, summed
        over the topology's workers."""
        self.worker(name)
        docs = [d for w in self._groups[name] for d in w.task_stats()]
        return {c: s for c, s in summarize(docs).items() if not c.startswith("__")}

    def errors(self, name: str, component: str | None = None) -> list[dict[str, Any]]:
        """The errors the topology's tasks reported (``report_error``) or raised, oldest first,
        each ``{"component", "task", "time" (epoch seconds), "host", "port", "error"}`` (the
        text, with the traceback of an exception). Only ``component``'s when given. Like Storm,
        a task keeps at most ``topology.max.error.report.per.interval`` errors per
        ``topology.error.throttle.interval.secs`` and each component its last 10 per worker."""
        self.worker(name)
        found = [dict(e) for w in self._groups[name] for c, errs in list(w.errors.items())
                 if component is None or c == component for e in list(errs)]
        return sorted(found, key=lambda e: e["time"])

    def get_metrics(self, name: str) -> dict[str, dict[str, dict[str, Any]]]:
        """The metrics the topology's tasks registered (``context.register_metric``), sampled
        now: component → task id (a string) → metric name → value, as in topology info."""
        self.worker(name)
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for w in self._groups[name]:
            for doc in self._on_loop(w, w.task_stats):
                if doc.get("metrics"):
                    out.setdefault(doc["component"], {})[str(doc["task"])] = doc["metrics"]
        return out

    @staticmethod
    def _on_loop(worker: Worker, fn: Callable[[], Any], timeout: float = 10.0) -> Any:
        """``fn()`` run on ``worker``'s loop thread (components' state is only safe there)."""
        if not worker.running:
            return fn()
        result: list[Any] = []
        done = threading.Event()

        def run() -> None:
            result.append(fn())
            done.set()
        worker.call_soon_threadsafe(run)
        if not done.wait(timeout):
            raise TimeoutError(f"the executor loop did not answer within {timeout} s")
        return result[0]

    def topologies(self) -> list[str]:
        return sorted(self._workers)

    def sleep(self, seconds: float) -> None:
        """Advance simulated time, or really sleep."""
        if isinstance(self.clock, SimulatedClock):
            self.advance_time(seconds)
        else:
            time.sleep(seconds)

    def wait_until_quiet(self, name: str | None = None, timeout: float = 30.0,
                         rounds: int = 3) -> None:
        """Wait until the named topology (default: all) has done nothing for ``rounds`` loop
        rounds, with no background job pending; a worker whose loop thread is blocked in a
        simulated ``sleep`` counts as quiet. With several workers, once all look quiet each
        must run ``rounds`` more rounds and still be quiet: a worker whose thread had not run
        since a peer's last frame reached it would look quiet, and its next round reads the
        frame. Raises the topology's WorkerError if it failed, TimeoutError if it never goes
        quiet."""
        names = [name] if name else list(self._groups)
        if name:
            self.worker(name)
        workers = [w for n in names for w in self._groups[n]]
        threads = [t for n in names for t in self._threads.get(n, [])]
        clock = self.clock
        sleeping = clock.is_sleeping if isinstance(clock, SimulatedClock) else None
        starts = [w.rounds for w in workers]
        #: the rounds of each worker when all were first seen quiet (None: not yet)
        confirm: list[int] | None = None
        deadline = time.monotonic() + timeout
        while True:
            for w in workers:
                if w.failure is not None:
                    raise w.failure
            if all((sleeping is not None and sleeping(t)) or
                   (w.rounds >= s + rounds and w.is_quiet(rounds))
                   for w, s, t in zip(workers, starts, threads)):
                if len(workers) == 1:
                    return
                if confirm is None:
                    confirm = [w.rounds for w in workers]
                elif all((sleeping is not None and sleeping(t)) or w.rounds >= c + rounds
                         for w, c, t in zip(workers, confirm, threads)):
                    return
            else:
                confirm = None
            if time.monotonic() > deadline:
                raise TimeoutError(f"topologies {[w.topology_id for w in workers]} still busy after "
                                   f"{timeout}s")
            time.sleep(0.0005)

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0,
                 what: str = "condition") -> None:
        """Poll ``condition`` until true; the failure of any running topology's worker is raised
        as soon as it happens, :class:`~stormpy.host.waiting.WaitTimeout` (a TimeoutError)
        naming ``what`` after ``timeout`` seconds."""
        def no_failure() -> None:
            for group in self._groups.values():
                for w in group:
                    if w.failure is not None:
                        raise w.failure
        wait_for(condition, timeout, what, interval=0.001, check=no_failure)

    def advance_time(self, seconds: float, step: float = 1.0) -> None:
        """Move simulated time forward in ``step``-second increments, letting every topology go
        quiet after each one (Storm's advance-cluster-time)."""
        if not isinstance(self.clock, SimulatedClock):
            raise RuntimeError("advance_time needs LocalCluster(simulated_time=True)")
        remaining = seconds
        while remaining > 1e-9:
            inc = min(step, remaining)
            self.wait_until_quiet()
            self.clock.advance(inc)
            remaining -= inc
        self.wait_until_quiet()

    def shutdown(self) -> None:
        """Stop every topology (removing its state) and close the ZooKeeper connection."""
        for name in list(self._workers):
            del self._workers[name]
            group = self._groups.pop(name)
            self._stop_group(name, group)
            self._drop_state(group[0].topology_id)
        if self._simulating:
            self._simulating = False
            leave_simulation()
        if self._zk is not None:
            self._zk.close()
            self._zk = None
