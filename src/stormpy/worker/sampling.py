"""Latency sampling of one bolt task (Storm's ``topology.stats.sample.rate``).

``TaskStats.sample_countdown`` counts the tuples left until the next timed one (see
``stats.py``): the loop lowers it by the number of tuples it is about to run and calls
``LatencySampler.run`` only when it runs out among them, so an unsampled tuple costs nothing
here. Each timed tuple's execute time goes to ``execute_latency_*``; a timed batch call
(``execute_batch``, or a columnar bolt's ``execute_columns``) is timed whole and each timed
tuple of it is given ``elapsed / n``.

One timed item at a time (a tuple, or a columnar batch) is followed to its ack: the time from
the start of its execute to its ack is the task's process latency. A newer timed item takes the
place once the followed one is acked or failed, or older than the message timeout (a tuple
never acked must not stop the sampling). The task runner and its columnar path share the one
sampler of the task. This module is compiled with the rest of the tuple path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any

from stormpy.topology._tuple import Tuple
from stormpy.worker.stats import TaskStats

__all__ = ["LatencySampler"]


class LatencySampler:
    """The sampled latencies of one task (see the module docstring); ``clock`` (seconds) is
    replaceable in tests."""

    def __init__(self, stats: TaskStats, stale_secs: float) -> None:
        self.stats = stats
        self.clock: Callable[[], float] = perf_counter
        #: the timed tuple or batch followed to its ack (None: none), and when it started
        self.followed: Any = None
        self.followed_start = 0.0
        #: a followed item older than this (the message timeout, seconds) gives way
        self.stale_secs = stale_secs

    def run(self, queue: deque[Tuple], n: int, execute: Callable[[Tuple], None],
            execute_batch: Callable[[list[Tuple]], None] | None) -> None:
        """Run the next ``n`` tuples of ``queue`` (the loop's execute step) when the countdown
        runs out among them: the loop already lowered ``stats.sample_countdown`` by ``n``, so it
        is <= 0 and the ``countdown + n``-th tuple is timed, then every later one the fresh gaps
        reach. One tuple at a time: each timed tuple's ``execute``; ``execute_batch``: the whole
        call is timed."""
        stats = self.stats
        pop = queue.popleft
        clock = self.clock
        at = stats.sample_countdown + n - 1  # index of the next timed tuple in these n
        if execute_batch is not None:
            k = 0
            last = at
            while at < n:
                k += 1
                last = at
                at += stats.next_gap()
            stats.sample_countdown = at - n + 1
            if n == len(queue):
                batch = list(queue)
                queue.clear()
            else:
                batch = [pop() for _ in range(n)]
            start = clock()
            self.follow(batch[last], start)
            execute_batch(batch)
            stats.execute_latency_sum += (clock() - start) * k / n
            stats.execute_latency_count += k
            return
        done = 0
        total = 0.0
        k = 0
        while at < n:
            for _ in range(at - done):
                execute(pop())
            tup = pop()
            start = clock()
            if self.followed is None or start - self.followed_start > self.stale_secs:
                self.followed = tup  # ``follow``, inlined
                self.followed_start = start
            execute(tup)
            total += clock() - start
            k += 1
            done = at + 1
            at += stats.next_gap()
        for _ in range(n - done):
            execute(pop())
        stats.execute_latency_sum += total
        stats.execute_latency_count += k
        stats.sample_countdown = at - n + 1

    def timed_count(self, k: int) -> int:
        """How many of the next ``k`` tuples are timed (``sample_countdown`` already lowered by
        ``k``; 0 unless it is <= 0); moves the countdown past them."""
        stats = self.stats
        at = stats.sample_countdown + k - 1
        m = 0
        while at < k:
            m += 1
            at += stats.next_gap()
        stats.sample_countdown = at - k + 1
        return m

    def run_timed(self, call: Callable[[Any], None], item: Any, k: int, m: int,
                  followed: Any) -> None:
        """``call(item)`` timed, ``item`` holding ``k`` tuples of which ``m`` are timed (each is
        given ``elapsed / k``); ``followed`` (a tuple of it, or the batch) is followed to its ack
        unless another item is."""
        stats = self.stats
        clock = self.clock
        start = clock()
        self.follow(followed, start)
        call(item)
        stats.execute_latency_sum += (clock() - start) * m / k
        stats.execute_latency_count += m

    def follow(self, item: Any, start: float) -> None:
        """Follow the timed ``item`` (started at ``start``) to its ack unless another timed item
        is followed and not stale."""
        if self.followed is None or start - self.followed_start > self.stale_secs:
            self.followed = item
            self.followed_start = start

    def acked(self) -> None:
        """The followed item was acked: its process latency."""
        self.followed = None
        stats = self.stats
        stats.process_latency_sum += self.clock() - self.followed_start
        stats.process_latency_count += 1
