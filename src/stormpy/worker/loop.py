"""Worker: the tasks of one worker driven by a single executor loop.

One loop per worker (DESIGN §2): drain inbound frames into task queues, run each task's queued
tuples, fire timers (ticks, message timeouts), let spouts emit when the topology is active and
nothing downstream is full, flush outbound batches, and wait briefly when there was no work.
Same-worker delivery appends the Tuple object to the target task's queue (no serialisation);
tuples for tasks in other workers are packed with msgpack into per-peer batches.
Local mode is a Worker that holds every task, so it runs exactly this code.
"""

from __future__ import annotations

import gc
import logging
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from stormpy.acker.bolt import AckerBolt
from stormpy.acker.core import AckerCore
from stormpy.acker.streams import ACK_ACK
from stormpy.config import merged
from stormpy.messaging.codec import FrameEncoder, WireTuple, decode_frame
from stormpy.messaging.transport import NoTransport, Transport
from stormpy.topology.context import TopologyContext
from stormpy.topology.errors import EmitError
from stormpy.topology.fields import Fields
from stormpy.topology.imports import import_object
from stormpy.topology.layout import ACKER_COMPONENT, TaskLayout, compute_layout
from stormpy.topology.spec import SPOUT, TopologySpec
from stormpy.topology.state import MemoryStateBackend, StateBackend
from stormpy.topology.tuple import SYSTEM_COMPONENT, TICK_STREAM, Tuple
from stormpy.worker.clock import Clock
from stormpy.worker.errors import WorkerError
from stormpy.worker.routing import StreamRouter, make_router
from stormpy.worker.stats import summarize
from stormpy.worker.tasks import TIMEOUT_BUCKETS, BoltTask, SpoutTask, TaskRunner

log = logging.getLogger("stormpy.worker")

#: Tuples a task may run per loop round before the loop moves on (fairness).
EXECUTE_BUDGET = 1024
#: Longest idle wait; bounds how late a timer or a polling spout is served.
MAX_IDLE_WAIT = 0.001
MAX_ERRORS_KEPT = 10


def _caused_by(error: BaseException, cause: BaseException | None) -> BaseException:
    """``raise error from cause`` spelled out (mypyc, which may compile this module, drops the
    ``from`` clause): sets ``__cause__`` and suppresses the implicit context."""
    error.__cause__ = cause
    error.__suppress_context__ = True
    return error


class _Timer:
    __slots__ = ("due", "interval", "fn")

    def __init__(self, due: float, interval: float, fn: Callable[[], None]) -> None:
        self.due = due
        self.interval = interval
        self.fn = fn


class Worker:
    """Runs ``local_tasks`` of a topology (all of them by default) on one loop thread.

    ``task_peers`` maps each task not run here to the peer key of the worker that runs it; the
    ``transport`` carries batches to those peers. ``observer(component, stream, values, targets)``
    sees every user emit (the testing kit captures with it). ``state`` is where the tasks'
    contexts find durable state (``context.state_store``); memory when not given.
    """

    def __init__(self, topology_id: str, spec: TopologySpec, conf: Mapping[str, Any], *,
                 layout: TaskLayout | None = None, local_tasks: Iterable[int] | None = None,
                 task_peers: Mapping[int, str] | None = None, transport: Transport | None = None,
                 clock: Clock | None = None, active: bool = True, worker_port: int | None = None,
                 observer: Callable[[str, str, list[Any], list[int]], None] | None = None,
                 on_error: Callable[[str, int, str], None] | None = None,
                 state: StateBackend | None = None) -> None:
        self.topology_id = topology_id
        self.spec = spec
        self.conf = merged(conf)
        self.layout = layout or compute_layout(spec, self.conf)
        self.clock = clock or Clock()
        self.transport = transport or NoTransport()
        self.worker_port = worker_port
        self.observer = observer
        self.on_error = on_error
        self.state: StateBackend = state if state is not None else MemoryStateBackend()
        all_tasks = sorted(self.layout.task_component)
        self.local_tasks = sorted(local_tasks) if local_tasks is not None else all_tasks
        self.acker_tasks = self.layout.acker_tasks
        #: per acker (by index): its AckerCore when the acker task runs in this worker, else None
        self.acker_direct: list[AckerCore | None] = [None] * len(self.acker_tasks)
        #: root → XOR of the acks bolts made this round; flushed to the ackers every round
        self.ack_buffer: dict[int, int] = {}
        max_task = max(all_tasks, default=0)
        self.deliver: list[Callable[[Tuple], None]] = [self._undeliverable] * (max_task + 1)
        self.dropped = 0
        self.errors: dict[str, deque[dict[str, Any]]] = {}
        self.failure: WorkerError | None = None
        self._batch_size = max(1, int(self.conf["topology.transfer.batch.size"]))
        self._queue_cap = max(1, int(self.conf["topology.executor.receive.buffer.size"]))
        self._outbox: dict[str, list[WireTuple]] = {}
        self._blocked: dict[str, deque[bytes]] = {}
        self._encoder = FrameEncoder()
        #: component → stream → declared fields (to rebuild Tuples that arrive from peers)
        self._stream_fields: dict[str, dict[str, Fields]] = {
            cid: {name: st.fields for name, st in c.streams.items()}
            for cid, c in spec.components.items()}
        self._callbacks: deque[tuple[TaskRunner | None, Callable[[], None]]] = deque()
        self._background: ThreadPoolExecutor | None = None
        self._background_pending = 0
        self._active = active
        self._stop = threading.Event()
        self._loop_thread: threading.Thread | None = None
        self._opened = False
        self.quiet_rounds = 0
        self.rounds = 0
        self.tasks: dict[int, TaskRunner] = {}
        for t in self.local_tasks:
            self.tasks[t] = self._make_task(t)
        for t, runner in self.tasks.items():
            self.deliver[t] = runner.queue.append
        self._queue_appenders = {t: r.queue.append for t, r in self.tasks.items()}
        for i, t in enumerate(self.acker_tasks):
            if t in self.tasks:
                self.acker_direct[i] = self.tasks[t].instance.core
        if task_peers:
            self._route_remote(task_peers)
        self._runners = [self.tasks[t] for t in self.local_tasks]
        #: the order tasks run their queues in each round: upstream first (spouts, which take
        #: acker replies, then bolts by depth, ackers last), so a tuple tree emitted in a round is
        #: processed, and its acks aggregated, within that round
        depths = self._depths()
        unknown = len(spec.components) + 1  # ackers
        self._execute_order = sorted(
            self._runners, key=lambda r: (depths.get(r.component_id, unknown), r.task_id))
        self._spouts = [r for r in self._runners if isinstance(r, SpoutTask)]
        self._timers: list[_Timer] = []
        self._next_due = float("inf")

    # -- construction ------------------------------------------------------------------------
    def _task_conf(self, component: str) -> dict[str, Any]:
        if component == ACKER_COMPONENT:
            return dict(self.conf)
        return {**self.conf, **self.spec.components[component].config}

    def _make_task(self, task_id: int) -> TaskRunner:
        component = self.layout.task_component[task_id]
        conf = self._task_conf(component)
        context = TopologyContext(self.topology_id, self.spec, self.layout, task_id,
                                  self.local_tasks, conf, self.worker_port, self.state)
        if component == ACKER_COMPONENT:
            acker = AckerBolt()
            runner: TaskRunner = BoltTask(self, context, acker, {}, conf)
            acker.core.reply = runner.send_system  # replies go straight to the spout task
            return runner
        cspec = self.spec.components[component]
        try:
            cls = import_object(cspec.class_path)
            instance = cls(**cspec.kwargs)
        except Exception as exc:
            err = WorkerError(component, task_id, f"component {component!r}: cannot construct "
                              f"{cspec.class_path}: {exc}")
            raise _caused_by(err, exc)  # noqa: B904 - the cause is set by _caused_by
        routers = self._routers_for(component, task_id, context)
        if cspec.kind == SPOUT:
            runner = SpoutTask(self, context, instance, routers, conf)
        else:
            runner = BoltTask(self, context, instance, routers, conf)
        if self.observer is not None or conf.get("topology.debug"):
            runner.debug = True
        return runner

    def _routers_for(self, component: str, task_id: int,
                     context: TopologyContext) -> dict[str, StreamRouter]:
        routers: dict[str, StreamRouter] = {}
        local = frozenset(self.local_tasks)
        for name, stream in self.spec.components[component].streams.items():
            subs = []
            direct_tasks: set[int] = set()
            for bolt, grouping in self.spec.subscribers(component, name):
                tasks = self.layout.component_tasks[bolt]
                if grouping.type == "direct":
                    direct_tasks.update(tasks)
                    continue
                subs.append(make_router(grouping, tasks, stream.fields, local_tasks=local,
                                        context=context, stream=name, emitter_task=task_id,
                                        target_component=bolt))
            routers[name] = StreamRouter(name, stream.fields, stream.direct, subs,
                                         frozenset(direct_tasks))
        return routers

    def _undeliverable(self, tup: Tuple) -> None:
        """Tuples for a task with no known place are dropped; tracked ones are replayed."""
        self.dropped += 1

    # -- remote routing ----------------------------------------------------------------------
    def _route_remote(self, task_peers: Mapping[int, str]) -> None:
        for task, peer in task_peers.items():
            if task in self.tasks:
                continue
            box = self._outbox.setdefault(peer, [])
            self.deliver[task] = self._remote_deliverer(peer, task, box)

    def _remote_deliverer(self, peer: str, dest: int,
                          box: list[WireTuple]) -> Callable[[Tuple], None]:
        """Append the wire form of a tuple to ``peer``'s outbox (packed as one frame when the box
        is full or at the end of the round). Values were checked at emit, so packing succeeds."""
        batch = self._batch_size
        flush = self._flush_peer

        def deliver(tup: Tuple) -> None:
            box.append([dest, tup.stream, tup.task, tup.root, tup.edge, tup.anchors, tup.values])
            if len(box) >= batch:
                flush(peer, box)
        return deliver

    def update_peers(self, task_peers: Mapping[int, str]) -> None:
        """Re-route remote tasks after a reassignment (call on the loop thread)."""
        for task in range(len(self.deliver)):
            if task not in self.tasks:
                self.deliver[task] = self._undeliverable
        self._route_remote(task_peers)

    def _flush_peer(self, peer: str, box: list[WireTuple]) -> None:
        try:
            frame = self._encoder.encode(box)
        except (TypeError, ValueError, OverflowError) as exc:
            raise _caused_by(self._unpackable(box, exc), None)  # noqa: B904
        box.clear()
        blocked = self._blocked.get(peer)
        if blocked or not self.transport.send(peer, frame):
            self._blocked.setdefault(peer, deque()).append(frame)

    def _unpackable(self, box: list[WireTuple], exc: Exception) -> EmitError:
        """Name the component and stream of the first tuple msgpack refused."""
        for dest, stream, src, _root, _edge, anchors, values in box:
            try:
                self._encoder.encode([values, anchors])
            except (TypeError, ValueError, OverflowError) as err:
                component = self.layout.task_component.get(src, SYSTEM_COMPONENT)
                return EmitError(f"component {component!r}, stream {stream!r}: cannot serialise "
                                 f"values for task {dest}: {err}")
        return EmitError(f"cannot serialise a batch of tuples: {exc}")

    def _flush(self) -> None:
        for peer, blocked in self._blocked.items():
            while blocked and self.transport.send(peer, blocked[0]):
                blocked.popleft()
        for peer, box in self._outbox.items():
            if box:
                self._flush_peer(peer, box)

    def _receive(self) -> int:
        frames = self.transport.receive(64)
        if not frames:
            return 0
        n = 0
        queues = self._queue_appenders
        component_of = self.layout.task_component
        stream_fields = self._stream_fields
        no_fields: dict[str, Fields] = {}
        for frame in frames:
            try:
                batch = decode_frame(frame)
                for dest, stream, src, root, edge, anchors, values in batch:
                    append = queues.get(dest)
                    if append is None:
                        self.dropped += 1
                        continue
                    comp = component_of.get(src, SYSTEM_COMPONENT)
                    append(Tuple(values, stream, src, comp,
                                 stream_fields.get(comp, no_fields).get(stream), root, edge,
                                 anchors))
                    n += 1
            except (ValueError, TypeError) as exc:  # not a frame of wire tuples (see codec)
                log.error("worker %s: dropped (the rest of) a malformed frame of %d bytes: %s",
                          self.worker_port, len(frame), exc)
        return n

    # -- timers ------------------------------------------------------------------------------
    def _add_timer(self, interval: float, fn: Callable[[], None], now: float) -> None:
        if interval <= 0:
            raise ValueError(f"timer interval must be positive, got {interval}")
        self._timers.append(_Timer(now + interval, interval, fn))
        self._next_due = min(t.due for t in self._timers)

    def _setup_timers(self) -> None:
        now = self.clock.now()
        timeouts = (self.conf.get("topology.enable.message.timeouts", True) and self.acker_tasks)
        if timeouts:
            interval = float(self.conf["topology.message.timeout.secs"]) / (TIMEOUT_BUCKETS - 1)
            for sp in self._spouts:
                self._add_timer(interval, sp.expire_pending, now)
        for runner in self._runners:
            if runner.is_spout:
                continue
            if runner.component_id == ACKER_COMPONENT:
                if timeouts:
                    self._add_timer(interval, self._tick_fn(runner, interval), now)
                continue
            freq = runner.conf.get("topology.tick.tuple.freq.secs")
            if freq:
                self._add_timer(float(freq), self._tick_fn(runner, float(freq)), now)

    @staticmethod
    def _tick_fn(runner: TaskRunner, freq: float) -> Callable[[], None]:
        append = runner.queue.append

        def tick() -> None:
            append(Tuple([freq], TICK_STREAM, -1, SYSTEM_COMPONENT, None))
        return tick

    def _run_timers(self, now: float) -> None:
        for timer in self._timers:
            while now >= timer.due:
                timer.due += timer.interval
                timer.fn()
        self._next_due = min((t.due for t in self._timers), default=float("inf"))

    # -- cross-thread entry points -------------------------------------------------------------
    def call_soon_threadsafe(self, fn: Callable[[], None], runner: TaskRunner | None = None) -> None:
        """Run ``fn`` on the loop thread at the start of its next round (any thread may call).
        An exception from ``fn`` is an error of ``runner``'s component (of the worker when None)
        and stops the worker like any component error."""
        self._callbacks.append((runner, fn))
        self.transport.wake()

    def submit_background(self, fn: Callable[[], Any],
                          on_done: Callable[[Any, BaseException | None], None],
                          runner: TaskRunner | None = None) -> None:
        """Run ``fn`` off the loop; ``on_done(result, error)`` runs on the loop afterwards (as a
        callback of ``runner``). Jobs cancelled by shutdown never call ``on_done``."""
        if self._background is None:
            threads = int(self.conf.get("topology.worker.background.threads") or 4)
            self._background = ThreadPoolExecutor(threads, thread_name_prefix="stormpy-bg")
        self._background_pending += 1

        def done(fut: Future[Any]) -> None:
            if fut.cancelled():
                return
            exc = fut.exception()
            result = None if exc is not None else fut.result()

            def finish() -> None:
                self._background_pending -= 1
                on_done(result, exc)
            self.call_soon_threadsafe(finish, runner)
        self._background.submit(fn).add_done_callback(done)

    def set_active(self, active: bool) -> None:
        """Activate or deactivate the spouts of this worker (thread-safe)."""
        def apply() -> None:
            self._active = active
            if self._opened:
                for sp in self._spouts:
                    sp.set_active(active)
        self.call_soon_threadsafe(apply)

    @property
    def active(self) -> bool:
        return self._active

    # -- errors and observation -------------------------------------------------------------
    def record_error(self, component: str, task: int, text: str) -> None:
        errs = self.errors.setdefault(component, deque(maxlen=MAX_ERRORS_KEPT))
        errs.append({"component": component, "task": task, "time": self.clock.now(),
                     "error": text})
        log.error("error in component %s task %d: %s", component, task, text)
        if self.on_error is not None:
            try:
                self.on_error(component, task, text)
            except Exception:  # noqa: BLE001 - reporting must never kill the loop
                log.exception("could not report error of %s", component)

    def log_emit(self, component: str, task: int, stream: str, values: list[Any],
                 targets: list[int]) -> None:
        if self.observer is not None:
            self.observer(component, stream, values, targets)
        if self.conf.get("topology.debug"):
            log.info("emitted %s:%d %s %r -> %s", component, task, stream, values, targets)

    def task_stats(self) -> list[dict[str, Any]]:
        return [r.stats.to_doc() for r in self._runners]

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-component totals (user components only)."""
        return {c: s for c, s in summarize(self.task_stats()).items() if not c.startswith("__")}

    # -- the loop ------------------------------------------------------------------------------
    def tune_gc(self) -> None:
        """Raise the process's generation-0 GC threshold to ``topology.worker.gc.threshold``
        (process-wide: in local mode, the process hosting the topology)."""
        wanted = int(self.conf.get("topology.worker.gc.threshold") or 0)
        gen0, gen1, gen2 = gc.get_threshold()
        if wanted > gen0:
            gc.set_threshold(wanted, gen1, gen2)

    def open(self) -> None:
        """Prepare bolts and open spouts (on the loop thread), then start the timers."""
        for runner in self._runners:
            try:
                runner.open()  # type: ignore[attr-defined]
            except Exception as exc:
                self._fail(runner, exc)
        self._opened = True
        if self._active:
            for sp in self._spouts:
                sp.set_active(True)
        self._setup_timers()

    def _fail(self, runner: TaskRunner | None, exc: BaseException) -> None:
        component, task = (runner.component_id, runner.task_id) if runner else (SYSTEM_COMPONENT, -1)
        text = "".join(traceback.format_exception(exc)).rstrip()
        self.record_error(component, task, text)
        raise _caused_by(WorkerError(component, task, f"component {component!r} task {task} "
                                     f"raised {type(exc).__name__}: {exc}"), exc)

    def run_once(self) -> int:
        """One loop round; returns how much work it did (0 = idle)."""
        work = 0
        callbacks = self._callbacks
        while callbacks:
            runner, callback = callbacks.popleft()
            try:
                callback()
            except Exception as exc:
                self._fail(runner, exc)
            work += 1
        work += self._receive()
        now = self.clock.now()
        if now >= self._next_due:
            self._run_timers(now)
        for runner in self._execute_order:
            q = runner.queue
            if q:
                n = len(q)
                if n > EXECUTE_BUDGET:
                    n = EXECUTE_BUDGET
                execute = runner.execute  # type: ignore[attr-defined]
                pop = q.popleft
                try:
                    for _ in range(n):
                        execute(pop())
                except Exception as exc:
                    self._fail(runner, exc)
                if not runner.is_spout:
                    runner.stats.executed += n
                work += n
        if self.ack_buffer:
            self._flush_acks()
        if self._active and not self._backpressured():
            for sp in self._spouts:
                try:
                    work += sp.run_round()
                except Exception as exc:
                    self._fail(sp, exc)
        self._flush()
        self.rounds += 1
        if work:
            self.quiet_rounds = 0
        else:
            self.quiet_rounds += 1
        return work

    def _flush_acks(self) -> None:
        """Send this round's aggregated acks, one (root, xor) pair per root: applied directly by
        an acker in this worker, and sent to a remote acker as ONE ``__ack_ack`` tuple per acker
        per round carrying all its pairs ``[root1, xor1, root2, xor2, ...]``."""
        items = list(self.ack_buffer.items())
        self.ack_buffer.clear()
        direct = self.acker_direct
        n = len(direct)
        remote: dict[int, list[int]] = {}
        for root, xor in items:
            i = root % n
            acker = direct[i]
            if acker is not None:
                acker.ack_edges(root, xor)
            else:
                pairs = remote.get(i)
                if pairs is None:
                    pairs = remote[i] = []
                pairs.append(root)
                pairs.append(xor)
        for i, pairs in remote.items():
            self.deliver[self.acker_tasks[i]](Tuple(pairs, ACK_ACK, -1, SYSTEM_COMPONENT, None))

    def _backpressured(self) -> bool:
        cap = self._queue_cap
        for runner in self._runners:
            if len(runner.queue) >= cap:
                return True
        return any(self._blocked.values())

    def is_quiet(self, rounds: int = 3) -> bool:
        """True when the last ``rounds`` loop rounds did nothing and no background job or
        callback is pending (the tracked-topology quiescence check)."""
        return (self.quiet_rounds >= rounds and not self._callbacks
                and self._background_pending == 0)

    def run(self) -> None:
        """Open the tasks and loop until ``stop``; closes the tasks on the way out. A component
        error stops the loop and is kept in ``failure`` (and re-raised)."""
        try:
            self.tune_gc()
            self.open()
            idle_wait = 0.0001
            while not self._stop.is_set():
                if self.run_once():
                    idle_wait = 0.0001
                    continue
                wait = min(idle_wait, max(0.0, self._next_due - self.clock.now())) \
                    if not self.clock.simulated else idle_wait
                self.transport.wait(wait)
                idle_wait = min(idle_wait * 2, MAX_IDLE_WAIT)
        except WorkerError as exc:
            self.failure = exc
            raise
        except Exception as exc:  # the runtime itself (flush, frames, timers): stop, say why
            text = "".join(traceback.format_exception(exc)).rstrip()
            self.record_error(SYSTEM_COMPONENT, -1, text)
            self.failure = WorkerError(SYSTEM_COMPONENT, -1,
                                       f"worker of {self.topology_id} failed: "
                                       f"{type(exc).__name__}: {exc}")
            raise _caused_by(self.failure, exc)  # noqa: B904
        finally:
            self._close()

    def _close(self) -> None:
        """Close spouts first, then bolts from upstream to downstream, so a bolt's cleanup can
        rely on its upstream bolts having finished theirs."""
        for runner in self._execute_order:
            runner.close()
        if self._background is not None:
            self._background.shutdown(wait=False, cancel_futures=True)

    def _depths(self) -> dict[str, int]:
        """Component → longest distance from a spout (spouts 0; cycles are cut)."""
        depth = {cid: 0 for cid in self.spec.spouts}
        for _ in range(len(self.spec.components)):
            changed = False
            for cid, comp in self.spec.components.items():
                for inp in comp.inputs:
                    d = depth.get(inp.component)
                    if d is not None and d + 1 > depth.get(cid, -1) and \
                            d + 1 <= len(self.spec.components):
                        depth[cid] = d + 1
                        changed = True
            if not changed:
                break
        return depth

    def start(self, name: str | None = None) -> threading.Thread:
        """Run the loop on a daemon thread (local mode)."""
        def target() -> None:
            try:
                self.run()
            except WorkerError:
                log.error("worker of %s stopped: %s", self.topology_id, self.failure)
        self._loop_thread = threading.Thread(target=target, name=name or f"worker-{self.topology_id}",
                                        daemon=True)
        self._loop_thread.start()
        return self._loop_thread

    def stop(self, timeout: float | None = 60.0) -> None:
        """Stop the loop (thread-safe) and wait up to ``timeout`` seconds for its thread (the
        components' cleanup included) when it has one."""
        self._stop.set()
        self.transport.wake()
        if self._loop_thread is not None and self._loop_thread is not threading.current_thread():
            self._loop_thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._loop_thread is not None and self._loop_thread.is_alive()

