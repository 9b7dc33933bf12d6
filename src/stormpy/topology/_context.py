"""TopologyContext: what a running task may know about the topology and itself."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgpack

from stormpy.topology._fields import Fields
from stormpy.topology._layout import TaskLayout
from stormpy.topology._offloop import OffLoop
from stormpy.topology._spec import TopologySpec
from stormpy.topology._state import CHECKPOINTS, StateBackend, StateStore
from stormpy.topology._user_metrics import Counter, Gauge, Histogram, Meter, Timer, UserMetric
from stormpy.topology.clock import Clock, current_clock

log = logging.getLogger("stormpy.topology")

#: what a task hook must have (stormpy.topology.TaskHook)
_HOOK_METHODS = ("prepare", "cleanup", "emit", "spout_ack", "spout_fail", "bolt_execute",
                 "bolt_ack", "bolt_fail")


class TopologyContext:
    """Read-only view of the topology for one task (Storm's TopologyContext), and the task's
    handle on durable state (:meth:`state_store`)."""

    def __init__(self, topology_id: str, spec: TopologySpec, layout: TaskLayout, task_id: int,
                 worker_tasks: Sequence[int], conf: Mapping[str, Any],
                 worker_port: int | None = None, off_loop: OffLoop | None = None,
                 state: StateBackend | None = None) -> None:
        self.topology_id = topology_id
        self.spec = spec
        self.layout = layout
        self.task_id = task_id
        self.component_id = layout.task_component[task_id]
        self.worker_tasks = list(worker_tasks)
        self.worker_port = worker_port
        self.conf = conf
        self._state = state
        self._off_loop = off_loop
        self._metrics: dict[str, Callable[[], Any]] = {}
        self._user_metrics: dict[str, UserMetric] = {}
        self._failed_metrics: set[str] = set()
        self._hooks: list[Any] = []

    @property
    def code_dir(self) -> Path:
        """The directory of the topology's code: on a cluster, where the supervisor unpacked the
        bundle (``worker.code.dir``, also the worker's working directory); under ``stormpy local
        PATH``, PATH (the working directory stays the one the command was run in); in a
        ``LocalCluster`` of your own, ``worker.code.dir`` when its conf sets it, else the current
        directory. A file shipped in the bundle is ``context.code_dir / "its/path"`` everywhere."""
        return Path(self.conf.get("worker.code.dir") or os.getcwd())

    @property
    def off_loop(self) -> OffLoop:
        """This task's seam for blocking work (see ``stormpy.topology._offloop``); RuntimeError
        when the context does not belong to a running task."""
        if self._off_loop is None:
            raise RuntimeError(f"{self!r} belongs to no running task: it has no off_loop")
        return self._off_loop

    @property
    def component_tasks(self) -> list[int]:
        """Task ids of this task's component."""
        return self.layout.component_tasks[self.component_id]

    @property
    def task_index(self) -> int:
        """Position of this task among its component's tasks (0-based)."""
        return self.component_tasks.index(self.task_id)

    def tasks_of(self, component: str) -> list[int]:
        """Task ids of any component; KeyError naming it when unknown."""
        try:
            return self.layout.component_tasks[component]
        except KeyError:
            raise KeyError(f"unknown component {component!r}") from None

    def component_of(self, task_id: int) -> str:
        return self.layout.task_component[task_id]

    def output_fields(self, stream: str = "default", component: str | None = None) -> Fields:
        return self.spec.stream_fields(component or self.component_id, stream)

    @property
    def clock(self) -> Clock:
        """The clock to read and sleep on (``context.clock.now()``, ``context.clock.sleep(s)``):
        the simulated clock while a test simulates time (``simulated_time()``, a
        ``LocalCluster(simulated_time=True)``), real monotonic time otherwise."""
        return current_clock()

    def state_store(self, area: str = CHECKPOINTS) -> StateStore:
        """This topology's store for ``area`` (``"checkpoints"`` or ``"transactional"``), shared by
        every task of the topology: small msgpack values under key paths, bounded in time (see
        :mod:`stormpy.topology._state`). ZooKeeper on a cluster and in a LocalCluster configured
        with ``storm.zookeeper.servers``, memory otherwise. ValueError for an unknown area;
        RuntimeError when the runtime gave this context no state (a context built by hand)."""
        return self.state_backend.store(area, self.topology_id)

    @property
    def state_backend(self) -> StateBackend:
        """Where this topology's components keep state (the worker's, or the LocalCluster's):
        its ``named_store`` holds state kept across topologies by a name (a transactional id, a
        connector's config name), its ``memory`` what users asked to keep in memory only.
        RuntimeError when the runtime gave this context no state (a context built by hand)."""
        if self._state is None:
            raise RuntimeError(f"{self!r} has no state backend (contexts made by the runtime have "
                               "one)")
        return self._state

    def register_metric(self, name: str, fn: Callable[[], Any]) -> None:
        """Publish ``fn()`` as this task's metric ``name`` (Storm's ``registerMetric``).

        The runtime samples every registered metric once per worker heartbeat, on the executor
        loop (never on the tuple path), and carries the values in the heartbeat to topology info
        (``stormpy info``; ``LocalCluster.get_metrics`` in local mode), the UI and the metrics
        consumers. ``fn`` must be cheap, must not block, and must return plain data msgpack can
        carry (numbers, strings, lists, maps with string keys). A metric whose ``fn`` raises or
        returns something msgpack cannot carry is logged once, by name, and left out of that
        sample; it never stops the task. Registering a name again replaces it."""
        self._check_name(name)
        if not callable(fn):
            raise TypeError(f"metric {name!r}: expected a function returning the value, got {fn!r}")
        self._user_metrics.pop(name, None)
        self._metrics[name] = fn

    # -- metrics v2 (Storm's registerCounter ... registerTimer), see stormpy.topology._user_metrics
    def register_counter(self, name: str) -> Counter:
        """This task's counter ``name`` (Storm's ``registerCounter``): ``inc(n)``, ``dec(n)``."""
        return self._register(name, Counter)

    def register_gauge(self, name: str, gauge: Callable[[], Any]) -> Gauge:
        """Publish ``gauge()`` as this task's gauge ``name`` (Storm's ``registerGauge``)."""
        self._check_name(name)
        metric = Gauge(gauge)
        self._metrics.pop(name, None)
        return self._adopt(name, metric)

    def register_histogram(self, name: str) -> Histogram:
        """This task's histogram ``name`` (Storm's ``registerHistogram``): ``update(value)``."""
        return self._register(name, Histogram)

    def register_meter(self, name: str) -> Meter:
        """This task's meter ``name`` (Storm's ``registerMeter``): ``mark(n)``."""
        return self._register(name, Meter)

    def register_timer(self, name: str) -> Timer:
        """This task's timer ``name`` (Storm's ``registerTimer``): ``update(seconds)`` or
        ``with timer.time(): ...``."""
        return self._register(name, Timer)

    def _register(self, name: str, kind: type[Any]) -> Any:
        """The metric ``name`` of ``kind``: the one registered before (as Storm's registry does),
        else a new one. ValueError naming it when ``name`` is taken by another kind."""
        self._check_name(name)
        existing = self._user_metrics.get(name)
        if existing is not None:
            if isinstance(existing, kind):
                return existing
            raise ValueError(f"metric {name!r} of {self.component_id}:{self.task_id} is already "
                             f"a {existing.kind}, not a {kind.kind}")
        if name in self._metrics:
            raise ValueError(f"metric {name!r} of {self.component_id}:{self.task_id} is already "
                             "registered with register_metric")
        return self._adopt(name, kind())

    def _adopt(self, name: str, metric: Any) -> Any:
        self._user_metrics[name] = metric
        self._metrics[name] = metric.snapshot
        return metric

    @staticmethod
    def _check_name(name: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"metric name must be a non-empty string, got {name!r}")

    def add_task_hook(self, hook: Any) -> None:
        """Register a task hook (Storm's ``addTaskHook``): a ``stormpy.topology.TaskHook``
        whose callbacks then see this task's emits, acks, fails and executes. Calls
        ``hook.prepare(conf, context)`` at once. Call it in ``open``/``prepare``: hooks added
        later are not called. TypeError when ``hook`` has not the TaskHook methods."""
        missing = [m for m in _HOOK_METHODS if not callable(getattr(hook, m, None))]
        if missing:
            raise TypeError(f"task hook {hook!r} lacks {missing}: subclass "
                            "stormpy.topology.TaskHook")
        hook.prepare(self.conf, self)
        self._hooks.append(hook)

    @property
    def hooks(self) -> list[Any]:
        """The task hooks registered on this task, in order (Storm's ``getHooks``)."""
        return list(self._hooks)

    @property
    def has_metrics(self) -> bool:
        return bool(self._metrics)

    def metric_values(self) -> dict[str, Any]:
        """Each registered metric's current value (called by the runtime at heartbeats)."""
        out: dict[str, Any] = {}
        for name, fn in list(self._metrics.items()):
            try:  # the round trip proves the value travels (string map keys, plain data)
                out[name] = msgpack.unpackb(msgpack.packb(fn(), use_bin_type=True), raw=False)
            except Exception as exc:
                if name not in self._failed_metrics:  # reported once, by name; then skipped
                    self._failed_metrics.add(name)
                    log.warning("metric %r of %s:%s is left out: it raised or returned a value "
                                "msgpack cannot carry: %r", name, self.component_id, self.task_id, exc)
        return out

    @property
    def failed_metrics(self) -> list[str]:
        """The names of the metrics that raised or returned an unserialisable value (reported
        once each, and left out of the samples where they failed)."""
        return sorted(self._failed_metrics)

    def __repr__(self) -> str:
        return f"TopologyContext({self.topology_id!r}, {self.component_id!r}, task={self.task_id})"
