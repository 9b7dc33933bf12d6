"""Off-loop work: the one seam for components that must block.

Every task runs on its worker's single executor loop, so ``execute``/``next_tuple`` must never
block. A component that has to wait — a Kinesis ``GetRecords`` call, a Kafka commit, a Spark job —
hands the blocking part to its task's ``OffLoop`` and gets the result back on the executor loop,
where it may emit, ack and fail as usual::

    def prepare(self, conf, context):
        self.off_loop = context.off_loop

    def execute(self, tup):
        def done(result, error):
            self.ack(tup) if error is None else self.fail(tup)
        self.off_loop.submit(lambda: client.commit(tup.values[0]), done)

A running component reaches its ``OffLoop`` as ``context.off_loop`` (the ``TopologyContext``
given to ``open``/``prepare``); ``Component.run_in_background`` and
``Component.call_soon_threadsafe`` are the same seam's ``submit`` and ``call_soon``.

Contract (the worker implements it; connectors depend only on this module):

* ``submit(fn, on_done)`` — call on the executor loop. ``fn()`` runs on the worker's background
  pool (``topology.worker.background.threads`` threads shared by the worker's tasks); then
  ``on_done(result, error)`` runs on the executor loop (``error`` is the exception ``fn`` raised,
  with ``result`` None). While a job's ``on_done`` has not run, the job is *pending*: the topology
  does not count as quiet (``LocalCluster.wait_until_quiet``, simulated time). An exception from
  ``on_done`` is an error of the component and stops the worker, like one from ``execute``.
* ``call_soon(fn)`` — any thread: ``fn()`` runs on the executor loop at the start of its next
  round; an exception from it is an error of the component.
* ``BackgroundJob.cancel()`` — a job that has not started never runs; its ``on_done`` is not
  called and it stops being pending once the loop has taken note (in its next round). A started
  job cannot be cancelled.
* ``shutdown(timeout)`` — for ``close``/``cleanup``: refuse new jobs, cancel the ones not started,
  wait up to ``timeout`` seconds for the running ones. ``on_done`` of jobs that finish after the
  loop stopped is never called (shutdown happens after the last round).

``fn`` must not touch the collector (``emit``, ``ack``, ...), which belongs to the loop thread:
return what to emit and do it in ``on_done``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

#: ``on_done(result, error)``: a background job's outcome, delivered on the executor loop
OnDone = Callable[[Any, BaseException | None], None]


class BackgroundJob(Protocol):
    """A handle on one submitted job."""

    @property
    def started(self) -> bool:
        """``fn`` began running (it may have finished since); a started job is not cancelled."""

    @property
    def done(self) -> bool:
        """``fn`` finished or the job was cancelled (``on_done`` may still be on its way)."""

    def cancel(self) -> bool:
        """Prevent a job that has not started from ever running; True when it will not run."""


class OffLoop(Protocol):
    """One task's way off the executor loop and back (see the module docstring)."""

    def submit(self, fn: Callable[[], Any], on_done: OnDone) -> BackgroundJob:
        """Run ``fn`` on the background pool, then ``on_done(result, error)`` on the loop.
        Call on the executor loop; RuntimeError after ``shutdown``."""

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the executor loop soon (thread-safe)."""

    @property
    def pending(self) -> int:
        """Jobs of this task whose ``on_done`` has not run yet (nor been cancelled)."""

    def shutdown(self, timeout: float) -> int:
        """Refuse new jobs, cancel those not started and wait up to ``timeout`` seconds for the
        running ones; returns how many were cancelled."""
