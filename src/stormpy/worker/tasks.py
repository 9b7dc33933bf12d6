"""Task runners: one per task, holding the component instance, its inbound queue and the
collector methods bound onto the instance (``emit``, ``ack``, ...).

``TaskRunner`` here is what bolt tasks (``bolt_task.py``) and spout tasks (``spout_task.py``)
share: identity, routers, the task's queue and stats, acker access and error reporting. A runner
sees its worker only as a ``WorkerView`` (``worker_view.py``): tuples and acks go through the
worker's ``Dispatch`` tables, errors and debug output through its methods. The component's
``run_in_background`` and ``call_soon_threadsafe`` are its task's off-loop seam
(``context.off_loop``, see ``stormpy.topology._offloop``). Everything here runs on the worker's
executor loop thread.
"""

from __future__ import annotations

import traceback
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from stormpy.config import message_timeout_secs
from stormpy.topology._context import TopologyContext
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.emit_checks import bad_stream, check_emit
from stormpy.worker.routing import StreamRouter
from stormpy.worker.sampling import LatencySampler
from stormpy.worker.stats import TaskStats
from stormpy.worker.worker_view import WorkerView

__all__ = ["TaskRunner"]


class TaskRunner:
    """State shared by spout and bolt tasks: identity, routers, delivery and acker access.

    ``execute(tup)`` consumes one queued tuple; ``open()`` prepares or opens the component (on
    the loop, before the first round); ``close()`` shuts it down."""

    is_spout = False
    #: runs one tuple of the queue (set by each kind of runner)
    execute: Callable[[Tuple], None]
    #: runs a list of queued tuples at once: the bolt's ``execute_batch``, or None
    execute_batch: Callable[[list[Tuple]], None] | None
    #: runs the next n queued items of a columnar bolt (``column_path.ColumnPath.run``, which
    #: returns the tuples run), or None: the loop's execute step then takes this instead
    run_columns: Callable[[int], int] | None

    def __init__(self, worker: WorkerView, context: TopologyContext, instance: Any,
                 routers: dict[str, StreamRouter], conf: Mapping[str, Any]) -> None:
        self.worker = worker
        self.context = context
        self.task_id = context.task_id
        self.component_id = context.component_id
        self.instance: Any = instance
        self.routers = routers
        #: the default stream's router (None: not declared), read without a dict lookup by
        #: the emits on the default stream
        self.default_router: StreamRouter | None = routers.get(DEFAULT_STREAM)
        self.conf = conf
        self.queue: deque[Tuple] = deque()
        self.stats = TaskStats(self.component_id, self.task_id)
        self.debug = bool(conf.get("topology.debug"))
        # the dispatch's tables keep their identity: referenced here, one attribute load less
        # per tuple
        dispatch = worker.dispatch
        self._deliver = dispatch.deliver
        self._ackers = dispatch.acker_tasks
        self._n_ackers = len(dispatch.acker_tasks)
        self._acker_direct = dispatch.acker_cores
        self._edges = dispatch.edges
        self._edges_for = dispatch.edges_for
        self.stats.routers = routers
        self.execute_batch = None
        self.run_columns = None
        #: the task is running (its execute step in the loop, or a chained execute), or not
        #: open yet: a tuple delivered to it now is queued, never run inside its own execute
        #: nor before its prepare (``BoltTask.take``; the worker clears it once it opened its
        #: tasks)
        self.busy = True
        #: the task's sampled latencies (``sampling.py``)
        self.sampler = LatencySampler(self.stats, message_timeout_secs(conf))
        off_loop = context.off_loop
        instance.report_error = self.report_error
        instance.run_in_background = off_loop.submit
        instance.call_soon_threadsafe = off_loop.call_soon

    def _bad_stream(self, stream: Any, direct: bool) -> NoReturn:
        """``emit_checks.bad_stream`` for this task. The inline emits call this and ``_check``
        (taking ``self``) rather than the checks themselves: compiled, an emit then loads no
        argument for its error paths, which keeps its hot path's code as small as it was."""
        bad_stream(self.routers, self.component_id, stream, direct)

    def _check(self, values: Any, stream: Any, router: StreamRouter) -> None:
        """``emit_checks.check_emit`` of one emit of this task (see ``_bad_stream``)."""
        check_emit(values, self.component_id, stream, router)

    def send_to_acker(self, stream: str, values: list[int]) -> None:
        """Deliver an acker message for ``values[0]`` (the root) to its acker task: a direct call
        when that acker runs in this worker, a tuple through the transport otherwise."""
        i = values[0] % self._n_ackers
        acker = self._acker_direct[i]
        if acker is not None:
            acker.handle(stream, values)
        else:
            self._deliver[self._ackers[i]](Tuple(values, stream, self.task_id, self.component_id,
                                                 None))

    def send_system(self, task: int, stream: str, values: list[Any]) -> None:
        """Deliver a system tuple (acker replies, reset forwards) straight to ``task``."""
        self._deliver[task](Tuple(values, stream, self.task_id, self.component_id, None))

    def report_error(self, error: Any) -> None:
        """Record an error for this task (shown by ``stormpy`` commands and the UI)."""
        if isinstance(error, BaseException):
            text = "".join(traceback.format_exception(error)).rstrip()
        else:
            text = str(error)
        self.worker.record_error(self.component_id, self.task_id, text)

    def run_sampled(self, n: int) -> None:
        """Run the next ``n`` queued tuples (the loop's execute step) when the sample countdown
        runs out among them (``LatencySampler.run``)."""
        self.sampler.run(self.queue, n, self.execute, self.execute_batch)

    def open(self) -> None:
        """Prepare (bolts) or open (spouts) the component."""
        raise NotImplementedError

    def close(self) -> None:
        """Shut the component down (cleanup/close), errors reported, never raised."""
