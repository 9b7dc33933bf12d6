"""The worker's side of the off-loop seam (``stormpy.topology._offloop``).

``BackgroundPool`` is one per worker: a thread pool of ``topology.worker.background.threads``
threads (started on first use) and the count of pending jobs the loop's quiet check reads.
``TaskOffLoop`` is one per task: the ``OffLoop`` its component sees (``context.off_loop``,
``run_in_background``, ``call_soon_threadsafe``), which attributes callback errors to the task.

Results come back through ``post(fn, component, task)`` — the worker's ``call_soon_threadsafe``,
which queues ``fn`` for the loop thread and wakes the loop. Job counts are only changed on the
loop thread (at submit, and when a job's outcome is handed back).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from stormpy.topology._offloop import OnDone

#: post(fn, component, task): run ``fn`` on the loop thread; its errors are the task's
Post = Callable[[Callable[[], None], str, int], None]


class BackgroundJob:
    """A submitted job (implements ``stormpy.topology._offloop.BackgroundJob``)."""

    __slots__ = ("_future",)

    def __init__(self, future: Future[Any]) -> None:
        self._future = future

    @property
    def started(self) -> bool:
        future = self._future
        return future.running() or (future.done() and not future.cancelled())

    @property
    def done(self) -> bool:
        return self._future.done()

    def cancel(self) -> bool:
        return self._future.cancel()


class BackgroundPool:
    """A worker's background threads and its count of pending jobs."""

    def __init__(self, threads: int, post: Post) -> None:
        self._threads = threads
        self._post = post
        self._executor: ThreadPoolExecutor | None = None
        self._stopped = False
        #: jobs whose outcome has not been handed back to the loop yet (all tasks)
        self.pending = 0

    def submit(self, fn: Callable[[], Any], finish: Callable[[Future[Any]], None],
               component: str, task: int) -> Future[Any]:
        """Run ``fn`` on a pool thread; ``finish(future)`` then runs on the loop (also for a job
        cancelled before the worker stopped). Call on the loop thread."""
        if self._executor is None:
            if self._threads < 1:
                raise ValueError("topology.worker.background.threads must be at least 1, got "
                                 f"{self._threads}")
            self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="stormpy-bg")
        future = self._executor.submit(fn)
        self.pending += 1

        def settle() -> None:
            self.pending -= 1
            finish(future)

        def done(_future: Future[Any]) -> None:
            if not (self._stopped and future.cancelled()):
                self._post(settle, component, task)

        future.add_done_callback(done)
        return future

    def shutdown(self) -> None:
        """Stop the threads without waiting; jobs not started never run (worker shutdown)."""
        self._stopped = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


class TaskOffLoop:
    """One task's ``OffLoop`` (see ``stormpy.topology._offloop`` for the contract)."""

    def __init__(self, pool: BackgroundPool, post: Post, component: str, task: int) -> None:
        self._pool = pool
        self._post = post
        self._component = component
        self._task = task
        self._jobs: set[Future[Any]] = set()
        self._closed = False

    def submit(self, fn: Callable[[], Any], on_done: OnDone) -> BackgroundJob:
        if self._closed:
            raise RuntimeError(f"component {self._component!r} task {self._task}: submit after "
                               "its off-loop work was shut down")
        jobs = self._jobs

        def finish(future: Future[Any]) -> None:
            jobs.discard(future)
            if future.cancelled():
                return
            error = future.exception()
            on_done(None if error is not None else future.result(), error)

        future = self._pool.submit(fn, finish, self._component, self._task)
        jobs.add(future)  # finish, which discards it, runs later on this (the loop) thread
        return BackgroundJob(future)

    def call_soon(self, fn: Callable[[], None]) -> None:
        self._post(fn, self._component, self._task)

    @property
    def pending(self) -> int:
        return len(self._jobs)

    def shutdown(self, timeout: float) -> int:
        self._closed = True
        running = [f for f in self._jobs if not f.cancel()]
        cancelled = len(self._jobs) - len(running)
        if running:
            wait(running, timeout=max(0.0, timeout))
        return cancelled
