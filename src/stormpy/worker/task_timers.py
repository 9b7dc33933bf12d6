"""The timers of a worker's tasks: tick tuples, spout message-timeout rotation, acker bucket
rotation.

Periodic callbacks checked by the executor loop once per round against its clock (real or
simulated): ``next_due`` is the earliest due time, so a round with nothing due costs one
comparison. A timer late by several periods fires once per missed period, as Storm's do.
Runs on the loop thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stormpy.topology._layout import ACKER_COMPONENT
from stormpy.topology._tuple import SYSTEM_COMPONENT, TICK_STREAM, Tuple
from stormpy.worker.spout_task import TIMEOUT_BUCKETS, SpoutTask
from stormpy.worker.tasks import TaskRunner


class Timer:
    """One periodic callback."""

    __slots__ = ("due", "interval", "fn")

    def __init__(self, due: float, interval: float, fn: Callable[[], None]) -> None:
        self.due = due
        self.interval = interval
        self.fn = fn


class TaskTimers:
    """The periodic callbacks of one worker's tasks."""

    def __init__(self) -> None:
        self._timers: list[Timer] = []
        #: earliest due time of any timer (infinity when there is none)
        self.next_due = float("inf")

    def add(self, interval: float, fn: Callable[[], None], now: float) -> None:
        """Call ``fn`` every ``interval`` seconds from ``now``; ValueError unless positive."""
        if interval <= 0:
            raise ValueError(f"timer interval must be positive, got {interval}")
        self._timers.append(Timer(now + interval, interval, fn))
        self.next_due = min(t.due for t in self._timers)

    def run(self, now: float) -> None:
        """Fire every timer due at ``now`` (once per elapsed period)."""
        for timer in self._timers:
            while now >= timer.due:
                timer.due += timer.interval
                timer.fn()
        self.next_due = min((t.due for t in self._timers), default=float("inf"))

    def schedule_tasks(self, runners: Sequence[TaskRunner], timeout_secs: float | None,
                       now: float) -> None:
        """The timers of a worker's tasks (``runners`` in the worker's task order): with message
        timeouts (``timeout_secs``; None when off or there are no ackers) each spout rotates its
        pending map and each acker its ledger every ``timeout / (TIMEOUT_BUCKETS - 1)``; a bolt
        with ``topology.tick.tuple.freq.secs`` gets a tick tuple that often. Spouts' timers come
        first, so at the same due time spouts expire before ticks are queued."""
        interval = 0.0
        if timeout_secs is not None:
            interval = timeout_secs / (TIMEOUT_BUCKETS - 1)
            for runner in runners:
                if isinstance(runner, SpoutTask):
                    self.add(interval, runner.expire_pending, now)
        for runner in runners:
            if runner.is_spout:
                continue
            if runner.component_id == ACKER_COMPONENT:
                if timeout_secs is not None:
                    self.add(interval, tick_fn(runner, interval), now)
                continue
            freq = runner.conf.get("topology.tick.tuple.freq.secs")
            if freq:
                self.add(float(freq), tick_fn(runner, float(freq)), now)


def tick_fn(runner: TaskRunner, freq: float) -> Callable[[], None]:
    """A callback that queues a tick tuple carrying ``freq`` for ``runner``."""
    append = runner.queue.append

    def tick() -> None:
        append(Tuple([freq], TICK_STREAM, -1, SYSTEM_COMPONENT, None))
    return tick
