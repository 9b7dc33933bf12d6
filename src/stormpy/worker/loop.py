"""Worker: the tasks of one worker driven by a single executor loop (docs/performance.md, "The
executor loop in detail"): drain inbound frames into task queues, fire timers, run each
task's queued tuples, let spouts emit when the topology is active and nothing downstream is
full, flush outbound batches, wait briefly when there was no work. A tuple for a task of this
worker is handed over as the object (its queue, or its ``execute`` at once: chaining,
``bolt_task.py``); one for another worker goes through the transfer (``transfer.py``). Local mode
is a Worker holding every task. ``factory.py`` builds the task runners, ``bolt_task.py`` and
``spout_task.py`` run them (typed against ``WorkerView``, which ``Worker`` implements),
``dispatch.py`` holds the delivery table and the round's acks, ``task_timers.py`` the timers.
"""

from __future__ import annotations

import gc
import logging
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

from stormpy.config import merged, setting
from stormpy.messaging.transport import NoTransport, Transport
from stormpy.state._memory import MemoryBackend
from stormpy.topology._layout import compute_layout
from stormpy.topology._state import StateBackend
from stormpy.topology._tuple import SYSTEM_COMPONENT, SYSTEM_STREAM
from stormpy.topology.clock import Clock
from stormpy.worker import hooks as task_hooks
from stormpy.worker.bolt_task import BoltTask
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.errors import WorkerError
from stormpy.worker.factory import (
    Observer,
    OnError,
    TaskFactory,
    WorkerConfig,
    execution_order,
    install_local_delivery,
)
from stormpy.worker.inbound import Inbound, accepts
from stormpy.worker.offloop import BackgroundPool
from stormpy.worker.spout_task import SpoutTask
from stormpy.worker.stats import summarize
from stormpy.worker.task_errors import SUMMARIZED_LOG_EXTRA, TaskErrors
from stormpy.worker.task_timers import TaskTimers
from stormpy.worker.tasks import TaskRunner
from stormpy.worker.transfer import Transfer
from stormpy.worker.worker_stats import (
    checkpoint_tuples,
    held_tuples,
    spout_pending,
    task_docs,
    window_tuples,
)

log = logging.getLogger("stormpy.worker")

#: Queue items a task may run per loop round before the loop moves on (fairness; a columnar
#: batch is one item).
EXECUTE_BUDGET: Final = 1024
#: Longest idle wait; bounds how late a timer or a polling spout is served.
MAX_IDLE_WAIT: Final = 0.001


class Worker:
    """Runs the tasks ``config`` names (all of them by default) on one loop thread.

    ``transport`` carries batches to the peers of ``config.task_peers`` (``NoTransport`` by
    default); ``clock`` is real time by default; ``observer(component, stream, values, targets)``
    sees every user emit (the testing kit captures with it); ``on_error(component, task, text)``
    hears of every component error (the cluster reports them to ZooKeeper); ``state`` is where
    the tasks' contexts find durable state (``context.state_store``), memory when not given.
    """

    def __init__(self, config: WorkerConfig, *, transport: Transport | None = None,
                 clock: Clock | None = None, observer: Observer | None = None,
                 on_error: OnError | None = None, state: StateBackend | None = None) -> None:
        self.config = config
        self.topology_id = config.topology_id
        self.spec = config.spec
        self.conf = merged(config.conf)
        self.layout = config.layout or compute_layout(self.spec, self.conf)
        self.clock = clock or Clock()
        self.transport = transport or NoTransport()
        self.worker_port = config.worker_port
        self.observer = observer
        self.state: StateBackend = state if state is not None else MemoryBackend()
        all_tasks = sorted(self.layout.task_component)
        self.local_tasks = sorted(config.local_tasks) if config.local_tasks is not None \
            else all_tasks
        self.acker_tasks = self.layout.acker_tasks
        #: delivery table, the round's acks and the ackers, shared with the task runners
        self.dispatch = Dispatch(max(all_tasks, default=0), self.acker_tasks)
        #: the host name recorded with this worker's errors (``WorkerConfig.hostname``)
        self.hostname = config.hostname or socket.gethostname()
        self.task_errors = TaskErrors(self.conf, self.clock.now, self.hostname, self.worker_port,
                                      on_error)
        #: the last errors kept per component (``task_errors.py``)
        self.errors: dict[str, deque[dict[str, Any]]] = self.task_errors.kept
        self.failure: WorkerError | None = None
        self._callbacks: deque[tuple[str, int, Callable[[], None]]] = deque()
        self._background = BackgroundPool(
            setting(self.conf, "topology.worker.background.threads"),
            self.call_soon_threadsafe)
        self._active = config.active
        self._stop = threading.Event()
        self._loop_thread: threading.Thread | None = None
        self._opened = False
        #: the loop has begun (``open`` ran); an activation then opens the tasks
        self._started = False
        self.quiet_rounds = 0
        self.rounds = 0
        self.tasks: dict[int, TaskRunner] = TaskFactory(
            config, self.conf, self.layout, self.local_tasks, self, self._background,
            self.call_soon_threadsafe, self.state, debug=observer is not None).build()
        #: the first error of a chained execute (``chain_failed``), raised at the latest when
        #: the round ends
        self._chain_failure: WorkerError | None = None
        install_local_delivery(self.dispatch, self.tasks,
                               setting(self.conf, "topology.worker.chaining"))
        deliver_batch = self.dispatch.deliver_batch  # columnar bolts' tasks (column_path.py)
        self._inbound = Inbound(accepts(self.spec, self.layout, self.local_tasks),
                                {t: r.queue.append for t, r in self.tasks.items()},
                                self.transport.sender, f"{self.topology_id}:{self.worker_port}",
                                {t: deliver_batch[t] for t, r in self.tasks.items()
                                 if r.run_columns is not None})
        self._runners = [self.tasks[t] for t in self.local_tasks]
        self._transfer = Transfer(self.transport, self.dispatch,
                                  int(self.conf["topology.transfer.batch.size"]),
                                  self.layout.task_component, [r.queue for r in self._runners],
                                  int(self.conf["topology.executor.receive.buffer.size"]),
                                  queue_tasks=[r.task_id for r in self._runners],
                                  flush_interval=float(setting(
                                      self.conf, "topology.batch.flush.interval.millis")) / 1000.0)
        if config.task_peers:
            self._transfer.route(config.task_peers, self.tasks)
        self._execute_order = execution_order(self.spec, self._runners)
        self._spouts = [r for r in self._runners if isinstance(r, SpoutTask)]
        self._timers = TaskTimers()

    # -- inbound -----------------------------------------------------------------------------
    def update_peers(self, task_peers: Mapping[int, str]) -> None:
        """Re-route remote tasks after a reassignment (call on the loop thread)."""
        self._transfer.route(task_peers, self.tasks)

    def _receive(self) -> int:
        frames = self.transport.receive(64)
        if not frames:
            return 0
        return self._inbound.take(frames)

    # -- cross-thread entry points -------------------------------------------------------------
    def call_soon_threadsafe(self, fn: Callable[[], None], component: str = SYSTEM_COMPONENT,
                             task: int = -1) -> None:
        """Run ``fn`` on the loop thread at the start of its next round (any thread may call).
        An exception from ``fn`` is an error of ``component``'s ``task`` (of the worker by
        default) and stops the worker like any component error."""
        self._callbacks.append((component, task, fn))
        self.transport.wake()

    def set_active(self, active: bool) -> None:
        """Activate or deactivate the spouts of this worker (thread-safe)."""
        def apply() -> None:
            self._active = active
            if not self._opened:
                if active and self._started:
                    self._open_tasks()  # submitted inactive: open/prepare at the activation
                return
            for sp in self._spouts:
                sp.set_active(active)
        self.call_soon_threadsafe(apply)

    @property
    def active(self) -> bool:
        return self._active

    # -- errors and observation -------------------------------------------------------------
    def record_error(self, component: str, task: int, text: str, force: bool = False) -> None:
        """Record an error of ``component``'s ``task`` (``task_errors.py``: logged, throttled once
        per task, never with ``force``, the error that stops the worker; kept in ``errors`` with
        ``hostname`` and the worker's port, and handed to ``on_error``)."""
        self.task_errors.record(component, task, text, force)

    @property
    def errors_suppressed(self) -> int:
        """Errors not kept nor reported because their task was over its throttle."""
        return self.task_errors.suppressed

    def log_emit(self, component: str, task: int, stream: str, values: list[Any],
                 targets: list[int]) -> None:
        if self.observer is not None:
            self.observer(component, stream, values, targets)
        if self.conf.get("topology.debug"):
            log.info("emitted %s:%d %s %r -> %s", component, task, stream, values, targets)

    def task_stats(self) -> list[dict[str, Any]]:
        """Each task's counters, plus ``metrics`` (``context.register_metric``) where it has any."""
        return task_docs(self._runners, self._transfer.queue_full, self.dispatch.queued_rows)

    @property
    def rejected(self) -> dict[str, int]:
        """Inbound tuples (and undecodable frames) dropped at the transport boundary, per reason
        (``inbound.py``)."""
        return self._inbound.rejected

    def transfer_stats(self) -> dict[str, float]:
        """The worker's backpressure figures (``Transfer.stats``; plain reads, any thread)."""
        return self._transfer.stats()

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per-component totals (user components only)."""
        return {c: s for c, s in summarize(self.task_stats()).items() if not c.startswith("__")}

    def spout_pending(self) -> dict[str, int]:
        """Per spout component (system spouts included), the tuple trees its local tasks wait on
        (emitted with a message id, neither acked nor failed yet; a plain read, any thread)."""
        return spout_pending(self._spouts)

    def held_tuples(self) -> dict[str, int]:
        """Per bolt component, the input tuples it holds waiting for a timer (a windowed bolt's
        open windows; ``worker_stats.held_tuples``; a plain read, any thread)."""
        return held_tuples(self._runners)

    def window_tuples(self) -> dict[str, int]:
        """Per bolt component, the input tuples its windows hold un-acked, evaluated or not
        (``worker_stats.window_tuples``; a plain read, any thread)."""
        return window_tuples(self._runners)

    def checkpoint_tuples(self) -> dict[str, int]:
        """Per stateful bolt component, the input tuples it holds un-acked until its next
        checkpoint commits (``worker_stats.checkpoint_tuples``; a plain read, any thread)."""
        return checkpoint_tuples(self._runners)

    # -- the loop ------------------------------------------------------------------------------
    def tune_gc(self) -> None:
        """Raise the process's generation-0 GC threshold to ``topology.worker.gc.threshold``
        (process-wide: in local mode, the process hosting the topology); a collector switched
        off (threshold 0) stays off."""
        wanted = setting(self.conf, "topology.worker.gc.threshold")
        gen0, gen1, gen2 = gc.get_threshold()
        if gen0 and wanted > gen0:  # a threshold of 0 (collection off) is left alone
            gc.set_threshold(wanted, gen1, gen2)

    def open(self) -> None:
        """Prepare bolts and open spouts (on the loop thread), then start the timers — at once
        when the topology is active, else at its first activation: like Storm's executors, a
        topology submitted inactive calls no ``open``/``prepare`` until it is activated. Until
        then tuples from peers wait in their tasks' queues."""
        self._started = True
        for runner in self._runners:  # Storm's startup event, sent as the executor starts
            if SYSTEM_STREAM in runner.routers and isinstance(runner, (SpoutTask, BoltTask)):
                runner.emit(["startup"], None, SYSTEM_STREAM)
        if self._active:
            self._open_tasks()

    def _open_tasks(self) -> None:
        for runner in self._runners:
            try:
                runner.open()
                if runner.context.hooks:  # only a task with hooks gets the hooked methods
                    task_hooks.install(runner)
            except Exception as exc:
                self._fail(runner.component_id, runner.task_id, exc)
        self._opened = True
        for runner in self._runners:  # every task is prepared: tuples may now be chained
            runner.busy = False
        if self._active:
            for sp in self._spouts:
                sp.set_active(True)
        timeouts = setting(self.conf, "topology.enable.message.timeouts") and self.acker_tasks
        self._timers.schedule_tasks(
            self._runners, float(setting(self.conf, "topology.message.timeout.secs")) if timeouts else None,
            self.clock.now())

    def chain_failed(self, component: str, task: int, exc: BaseException) -> WorkerError:
        """A chained execute of ``component``'s ``task`` raised ``exc`` (``BoltTask.take``):
        record it (forced, as the error that stops the worker) and return the ``WorkerError``
        to raise. The first one is kept: the loop raises it when the round ends even if an
        emitter's code caught it."""
        if self._chain_failure is None:
            self._chain_failure = self.task_errors.fatal(component, task, exc)
        return self._chain_failure

    def _fail(self, component: str, task: int, exc: BaseException) -> None:
        if self._chain_failure is not None:  # a chained execute failed: that is the error
            raise self._chain_failure
        raise self.task_errors.fatal(component, task, exc)

    def run_once(self) -> int:
        """One loop round; returns how much work it did (0 = idle)."""
        work = 0
        callbacks = self._callbacks
        while callbacks:
            component, task, callback = callbacks.popleft()
            try:
                callback()
            except WorkerError:  # already recorded (a component failed in a deferred open)
                raise
            except Exception as exc:
                self._fail(component, task, exc)
            work += 1
        work += self._receive()
        if not self._opened:  # inactive since submission: nothing runs before open/prepare
            return self._count_round(work)
        now = self.clock.now()
        timers = self._timers
        if now >= timers.next_due:
            timers.run(now)
        for runner in self._execute_order:
            q = runner.queue
            if q:
                n = len(q)
                if n > EXECUTE_BUDGET:
                    n = EXECUTE_BUDGET
                run_columns = runner.run_columns
                if run_columns is not None:  # a columnar bolt: batches and tuples (column_path)
                    try:
                        work += run_columns(n)
                    except Exception as exc:
                        self._fail(runner.component_id, runner.task_id, exc)
                    continue
                execute_batch = runner.execute_batch
                pop = q.popleft
                stats = runner.stats
                stats.sample_countdown -= n
                runner.busy = True  # what it emits to itself is queued, never chained
                try:
                    if stats.sample_countdown <= 0:  # a timed tuple among these (sampling.py)
                        runner.run_sampled(n)
                    elif execute_batch is not None:
                        if n == len(q):
                            batch = list(q)
                            q.clear()
                        else:
                            batch = [pop() for _ in range(n)]
                        execute_batch(batch)
                    else:
                        execute = runner.execute
                        for _ in range(n):
                            execute(pop())
                except Exception as exc:
                    self._fail(runner.component_id, runner.task_id, exc)
                runner.busy = False
                if not runner.is_spout:
                    stats.executed += n
                work += n
        if self.dispatch.pending_acks():  # acks buffered or in the open run
            self.dispatch.flush_acks()
        if self._active and not self._transfer.backpressured():
            for sp in self._spouts:
                try:
                    work += sp.run_round()
                except Exception as exc:
                    self._fail(sp.component_id, sp.task_id, exc)
        if self._chain_failure is not None:  # caught by an emitter's code: the worker stops
            raise self._chain_failure
        dispatch = self.dispatch
        if dispatch.chained:  # tuples run by chained executes (bolt_task.py) are work too
            work += dispatch.chained
            dispatch.chained = 0
        self._transfer.flush()
        return self._count_round(work)

    def _count_round(self, work: int) -> int:
        self.rounds += 1
        if work:
            self.quiet_rounds = 0
        else:
            self.quiet_rounds += 1
        return work

    def is_quiet(self, rounds: int = 3) -> bool:
        """True when the last ``rounds`` loop rounds did nothing and no background job or
        callback is pending (the tracked-topology quiescence check)."""
        return (self.quiet_rounds >= rounds and not self._callbacks
                and self._background.pending == 0)

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
                wait = min(idle_wait, max(0.0, self._timers.next_due - self.clock.now())) \
                    if not self.clock.simulated else idle_wait
                self.transport.wait(wait)
                idle_wait = min(idle_wait * 2, MAX_IDLE_WAIT)
        except WorkerError as exc:
            self.failure = exc
            raise
        except Exception as exc:  # the runtime itself (flush, frames, timers): stop, say why
            self.failure = self.task_errors.fatal(SYSTEM_COMPONENT, -1, exc,
                                                  f"worker of {self.topology_id} failed")
            raise self.failure  # noqa: B904 - its cause is set
        finally:
            self._close()

    def _close(self) -> None:
        """Close spouts first, then bolts from upstream to downstream, so a bolt's cleanup can
        rely on its upstream bolts having finished theirs."""
        if self._opened:  # a topology never activated opened nothing, so closes nothing
            for runner in self._execute_order:
                if runner.context.hooks:
                    task_hooks.cleanup(runner)
                runner.close()
        self._background.shutdown()

    def start(self, name: str | None = None) -> threading.Thread:
        """Run the loop on a daemon thread (local mode)."""
        def target() -> None:
            try:
                self.run()
            except WorkerError:
                log.error("worker of %s stopped: %s", self.topology_id, self.failure,
                          extra=SUMMARIZED_LOG_EXTRA)
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

