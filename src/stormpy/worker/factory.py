"""What a worker runs (``WorkerConfig``) and how its task runners are built from the layout.

``TaskFactory`` turns each task id of the layout into a task runner: its config (topology config
plus the component's own), its ``TopologyContext`` (with the task's off-loop seam), the component
instance (constructed from its class path and keyword arguments), one ``StreamRouter`` per
declared stream, and, for an acker task, the ``AckerBolt`` whose core the worker calls directly
(registered in the ``Dispatch``). ``execution_order`` is the order the loop runs task queues in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormpy.acker.bolt import AckerBolt
from stormpy.topology._context import TopologyContext
from stormpy.topology._hooks import AUTO_TASK_HOOKS
from stormpy.topology._imports import import_object
from stormpy.topology._layout import ACKER_COMPONENT, TaskLayout
from stormpy.topology._spec import SPOUT, SYSTEM_STREAM_SPEC, TopologySpec
from stormpy.topology._state import StateBackend
from stormpy.topology._tuple import SYSTEM_STREAM
from stormpy.worker.bolt_task import BoltTask
from stormpy.worker.column_path import attach as attach_columns
from stormpy.worker.column_path import takes_columns
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.errors import WorkerError, caused_by
from stormpy.worker.hooks import auto_hooks
from stormpy.worker.offloop import BackgroundPool, Post, TaskOffLoop
from stormpy.worker.routing import StreamRouter, make_router
from stormpy.worker.spout_batch import attach as attach_spout_batches
from stormpy.worker.spout_task import SpoutTask
from stormpy.worker.tasks import TaskRunner
from stormpy.worker.worker_view import WorkerView

#: observer(component, stream, values, targets): sees every user emit (the test kit captures)
Observer = Callable[[str, str, list[Any], list[int]], None]
#: on_error(component, task, text): a component error, once recorded (cluster: to ZooKeeper)
OnError = Callable[[str, int, str], None]


@dataclass(frozen=True)
class WorkerConfig:
    """What one worker runs (plain data; the services it runs with are ``Worker`` arguments).

    ``conf``: the topology config (defaults are filled in by the worker); ``layout``: computed
    from ``spec`` and ``conf`` when None (every process derives the same one); ``local_tasks``:
    the tasks run here (None: every task of the layout, as in local mode); ``task_peers``: the
    peer key of the worker running each other task; ``active``: whether spouts start active;
    ``worker_port``: shown to components in their context; ``hostname``: recorded with the
    worker's errors (None: this machine's host name, ``socket.gethostname()``)."""

    topology_id: str
    spec: TopologySpec
    conf: Mapping[str, Any]
    layout: TaskLayout | None = None
    local_tasks: Sequence[int] | None = None
    task_peers: Mapping[int, str] = field(default_factory=dict)
    active: bool = True
    worker_port: int | None = None
    hostname: str | None = None


class TaskFactory:
    """Builds the task runners of one worker (see the module docstring)."""

    def __init__(self, config: WorkerConfig, conf: Mapping[str, Any], layout: TaskLayout,
                 local_tasks: Sequence[int], worker: WorkerView, pool: BackgroundPool,
                 post: Post, state: StateBackend, debug: bool = False) -> None:
        """``state``: where the tasks' contexts find durable state. ``debug``: every runner
        reports its emits to ``worker.log_emit`` (an observer is set); otherwise only those of
        components with ``topology.debug``."""
        self._config = config
        self._debug = debug
        self._spec = config.spec
        self._conf = conf
        self._layout = layout
        self._local_tasks = list(local_tasks)
        self._local = frozenset(local_tasks)
        self._worker = worker
        self._pool = pool
        self._post = post
        self._state = state
        self._columnar_bolts: dict[str, bool] = {}

    def build(self) -> dict[int, TaskRunner]:
        """A runner for every local task (WorkerError naming a component that cannot be
        constructed)."""
        return {t: self._make(t) for t in self._local_tasks}

    def _task_conf(self, component: str) -> dict[str, Any]:
        if component == ACKER_COMPONENT:
            return dict(self._conf)
        return {**self._conf, **self._spec.components[component].config}

    def _make(self, task_id: int) -> TaskRunner:
        component = self._layout.task_component[task_id]
        conf = self._task_conf(component)
        off_loop = TaskOffLoop(self._pool, self._post, component, task_id)
        context = TopologyContext(self._config.topology_id, self._spec, self._layout, task_id,
                                  self._local_tasks, conf, self._config.worker_port, off_loop,
                                  self._state)
        if component != ACKER_COMPONENT and conf.get(AUTO_TASK_HOOKS):
            try:  # Storm adds (and prepares) them as it creates the task
                for hook in auto_hooks(conf):
                    context.add_task_hook(hook)
            except Exception as exc:
                raise caused_by(WorkerError(component, task_id, f"component {component!r}: "  # noqa: B904
                                            f"task hooks: {exc}"), exc)
        if component == ACKER_COMPONENT:
            acker = AckerBolt()
            runner: TaskRunner = BoltTask(self._worker, context, acker, {}, conf)
            # replies go straight to the spout task; the worker calls the core directly
            core = acker.attach(runner.send_system)
            core.spout_tasks = frozenset(t for c in self._spec.spouts
                                         for t in self._layout.component_tasks.get(c, []))
            self._worker.dispatch.attach_acker(task_id, core)
            return runner
        cspec = self._spec.components[component]
        try:
            cls = import_object(cspec.class_path)
            instance = cls(**cspec.kwargs)
        except Exception as exc:
            err = WorkerError(component, task_id, f"component {component!r}: cannot construct "
                              f"{cspec.class_path}: {exc}")
            raise caused_by(err, exc)  # noqa: B904 - the cause is set by caused_by
        routers = self._routers_for(component, task_id, context)
        if cspec.kind == SPOUT:
            runner = SpoutTask(self._worker, context, instance, routers, conf)
            attach_spout_batches(runner)  # its emit_batch
        else:
            runner = BoltTask(self._worker, context, instance, routers, conf)
            attach_columns(runner)  # a columnar bolt, or one emitting towards them
        if self._debug or conf.get("topology.debug"):
            runner.debug = True
        return runner

    def _routers_for(self, component: str, task_id: int,
                     context: TopologyContext) -> dict[str, StreamRouter]:
        routers: dict[str, StreamRouter] = {}
        cspec = self._spec.components[component]
        streams = dict(cspec.streams)
        if self._spec.subscribers(component, SYSTEM_STREAM):  # Storm's startup events
            streams[SYSTEM_STREAM] = SYSTEM_STREAM_SPEC
        for name, stream in streams.items():
            subs = []
            direct_tasks: set[int] = set()
            for bolt, grouping in self._spec.subscribers(component, name):
                tasks = self._layout.component_tasks[bolt]
                if grouping.type == "direct":
                    direct_tasks.update(tasks)
                    continue
                subs.append(make_router(grouping, tasks, stream.fields, local_tasks=self._local,
                                        context=context, stream=name, emitter_task=task_id,
                                        target_component=bolt))
            router = StreamRouter(name, stream.fields, stream.direct, subs,
                                  frozenset(direct_tasks))
            bolts = [bolt for bolt, grouping in self._spec.subscribers(component, name)
                     if grouping.type != "direct"]
            router.columns = bool(bolts) and not stream.direct and \
                all(self._columnar(bolt) for bolt in bolts)
            routers[name] = router
        return routers

    def _columnar(self, component: str) -> bool:
        """Whether ``component`` is a columnar bolt (its class defines ``execute_columns``;
        decided from the class, so every worker decides alike)."""
        known = self._columnar_bolts.get(component)
        if known is None:
            cspec = self._spec.components.get(component)
            try:
                known = cspec is not None and cspec.kind != SPOUT and \
                    takes_columns(import_object(cspec.class_path))
            except Exception:  # noqa: BLE001 - its own task reports it; tuples are always safe
                known = False
            self._columnar_bolts[component] = known
        return known


def execution_order(spec: TopologySpec, runners: Sequence[TaskRunner]) -> list[TaskRunner]:
    """The order tasks run their queues in each round: upstream first (spouts, which take acker
    replies, then bolts by depth, ackers last), so a tuple tree emitted in a round is processed,
    and its acks aggregated, within that round."""
    depths = _depths(spec)
    unknown = len(spec.components) + 1  # ackers
    return sorted(runners, key=lambda r: (depths.get(r.component_id, unknown), r.task_id))


def _depths(spec: TopologySpec) -> dict[str, int]:
    """Component → longest distance from a spout (spouts 0; cycles are cut)."""
    depth = {cid: 0 for cid in spec.spouts}
    for _ in range(len(spec.components)):
        changed = False
        for cid, comp in spec.components.items():
            for inp in comp.inputs:
                d = depth.get(inp.component)
                if d is not None and d + 1 > depth.get(cid, -1) and \
                        d + 1 <= len(spec.components):
                    depth[cid] = d + 1
                    changed = True
        if not changed:
            break
    return depth


def install_local_delivery(dispatch: Dispatch, tasks: Mapping[int, TaskRunner],
                           chaining: bool) -> None:
    """Point ``dispatch``'s delivery tables at ``tasks`` (this worker's): each task's queue
    (``append``; ``extend`` for ``emit_many``'s lists), or, with ``chaining``, a user bolt's
    ``BoltTask.take`` when it runs one tuple at a time (chaining, ``bolt_task.py``). Every
    bolt task's ``takers`` gets the same choice (the chained tasks), which its emit calls
    natively instead of through ``deliver``."""
    takers: list[BoltTask | None] = [None] * len(dispatch.deliver)
    for t, runner in tasks.items():
        if chaining and isinstance(runner, BoltTask) and runner.chainable():
            dispatch.deliver[t] = runner.take
            takers[t] = runner
        else:
            dispatch.deliver[t] = runner.queue.append
        dispatch.deliver_many[t] = runner.queue.extend
    for runner in tasks.values():
        if isinstance(runner, BoltTask):
            runner.takers = takers
