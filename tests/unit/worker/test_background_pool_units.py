"""The worker's side of the off-loop seam without a worker: ``BackgroundPool`` and
``TaskOffLoop`` with the hand-back (``post``) going to a queue the test drains as its "loop".
Every wait here is on a condition (a job's event, the next posted callback), never on time."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import pytest

from stormpy.worker.offloop import BackgroundPool, TaskOffLoop


class Loop:
    """Collects what is posted back; ``run_next`` runs the next posted callback."""

    def __init__(self) -> None:
        self.posted: queue.Queue[tuple[Callable[[], None], str, int]] = queue.Queue()

    def post(self, fn: Callable[[], None], component: str, task: int) -> None:
        self.posted.put((fn, component, task))

    def run_next(self) -> tuple[str, int]:
        fn, component, task = self.posted.get(timeout=20)
        fn()
        return component, task


def test_the_pool_runs_jobs_on_named_threads_and_hands_each_outcome_back_to_the_loop() -> None:
    loop = Loop()
    pool = BackgroundPool(2, loop.post)
    outcomes: list[Any] = []
    futures = [pool.submit(lambda: threading.current_thread().name, outcomes.append, "c", 7),
               pool.submit(lambda: threading.current_thread().name, outcomes.append, "d", 8)]
    assert pool.pending == 2
    assert sorted(loop.run_next() for _ in futures) == [("c", 7), ("d", 8)]
    assert pool.pending == 0
    assert sorted(id(f) for f in outcomes) == sorted(id(f) for f in futures)
    assert all(f.result().startswith("stormpy-bg") for f in futures)
    pool.shutdown()


@pytest.mark.parametrize("threads", [0, -1])
def test_a_pool_without_threads_is_refused_at_the_first_job(threads: int) -> None:
    pool = BackgroundPool(threads, Loop().post)
    with pytest.raises(ValueError) as info:
        pool.submit(lambda: None, lambda _f: None, "c", 1)
    assert str(info.value) == ("topology.worker.background.threads must be at least 1, got "
                               f"{threads}")


def test_one_thread_runs_one_job_at_a_time_and_shutdown_cancels_the_queued_ones() -> None:
    loop = Loop()
    pool = BackgroundPool(1, loop.post)
    release, started = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocking() -> str:
        started.set()
        release.wait(20)
        ran.append("first")
        return "first"

    first = pool.submit(blocking, lambda _f: None, "c", 1)
    second = pool.submit(lambda: ran.append("second"), lambda _f: None, "c", 1)
    assert started.wait(20)
    assert not second.running() and not second.done()  # the only thread is busy
    pool.shutdown()  # does not wait for the running job
    assert second.cancelled() and not first.done()
    release.set()
    assert first.result(timeout=20) == "first"
    # the running job's outcome is still handed back; the cancelled one's is not
    assert loop.run_next() == ("c", 1)
    assert loop.posted.empty() and ran == ["first"]


def test_a_job_cancelled_while_the_pool_runs_is_still_handed_back() -> None:
    loop = Loop()
    pool = BackgroundPool(1, loop.post)
    release, started = threading.Event(), threading.Event()
    pool.submit(lambda: started.set() or release.wait(20), lambda _f: None, "c", 1)
    finished: list[Any] = []
    queued = pool.submit(lambda: None, finished.append, "c", 2)
    assert started.wait(20)
    assert queued.cancel()
    assert loop.run_next() == ("c", 2)  # the loop takes note: no longer pending
    assert finished == [queued] and pool.pending == 1
    release.set()
    assert loop.run_next() == ("c", 1)
    assert pool.pending == 0
    pool.shutdown()


def test_a_tasks_off_loop_delivers_results_and_errors_and_counts_its_pending_jobs() -> None:
    loop = Loop()
    pool = BackgroundPool(2, loop.post)
    off_loop = TaskOffLoop(pool, loop.post, "comp", 4)
    outcomes: list[tuple[Any, BaseException | None]] = []

    def fails() -> None:
        raise KeyError("lost")

    ok = off_loop.submit(lambda: 42, lambda r, e: outcomes.append((r, e)))
    bad = off_loop.submit(fails, lambda r, e: outcomes.append((r, e)))
    assert off_loop.pending == 2
    assert loop.run_next() == ("comp", 4) and loop.run_next() == ("comp", 4)
    assert off_loop.pending == 0 and ok.done and bad.done and ok.started
    results = sorted(outcomes, key=lambda o: o[1] is not None)
    assert results[0] == (42, None)
    assert results[1][0] is None and isinstance(results[1][1], KeyError)
    off_loop.call_soon(lambda: outcomes.append(("soon", None)))
    assert loop.run_next() == ("comp", 4) and outcomes[-1] == ("soon", None)
    pool.shutdown()


def test_shutdown_cancels_queued_jobs_waits_for_running_ones_and_refuses_new_ones() -> None:
    loop = Loop()
    pool = BackgroundPool(1, loop.post)
    off_loop = TaskOffLoop(pool, loop.post, "comp", 4)
    release, started = threading.Event(), threading.Event()
    done: list[Any] = []
    running = off_loop.submit(lambda: started.set() or release.wait(20) and "r",
                              lambda r, e: done.append(r))
    queued = [off_loop.submit(lambda: "never", lambda r, e: done.append(r)) for _ in range(2)]
    assert started.wait(20)
    assert off_loop.shutdown(0) == 2  # two cancelled; the running one is waited for 0 s
    assert running.started and not running.done
    assert all(not q.started and q.done for q in queued)
    with pytest.raises(RuntimeError) as info:
        off_loop.submit(lambda: None, lambda r, e: None)
    assert str(info.value) == ("component 'comp' task 4: submit after its off-loop work was "
                               "shut down")
    # the loop takes note of the cancelled jobs: no on_done, no longer pending
    assert [loop.run_next() for _ in queued] == [("comp", 4)] * 2
    assert done == [] and off_loop.pending == 1
    release.set()
    assert off_loop.shutdown(20) == 0  # waits for the running job
    assert running.done
    assert loop.run_next() == ("comp", 4)
    assert done == ["r"] and off_loop.pending == 0
    pool.shutdown()


def test_a_negative_shutdown_timeout_does_not_wait() -> None:
    loop = Loop()
    pool = BackgroundPool(1, loop.post)
    off_loop = TaskOffLoop(pool, loop.post, "comp", 4)
    release, started = threading.Event(), threading.Event()
    job = off_loop.submit(lambda: started.set() or release.wait(20), lambda r, e: None)
    assert started.wait(20)
    assert off_loop.shutdown(-5) == 0 and not job.done
    release.set()
    loop.run_next()
    pool.shutdown()
