"""Chaining's bounds and bookkeeping (``BoltTask.take``, the loop's busy flags, the dispatch's
``chain_depth`` and ``chained``), on simulated time: the depth bound exactly at
``MAX_CHAIN_DEPTH``, the work a round counts for chained executes, no chaining before the
tasks are open, and no execute re-entered from its own emit when the loop runs it."""

from __future__ import annotations

from typing import Any

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.bolt_task import MAX_CHAIN_DEPTH

#: (component, value, the dispatch's chain depth when its execute ran)
RAN: list[tuple[str, Any, int]] = []
#: the worker under test
WORKER: list[Worker] = []
#: components whose execute is running now (to catch an execute re-entered from its own emit)
INSIDE: set[str] = set()


class Passes(Bolt):
    """Records each tuple with the chain depth, passes ``n + 1`` on while ``n < limit``, acks."""

    outputs = ["n"]

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit

    def execute(self, tup: Tuple) -> None:
        assert self.name not in INSIDE, "execute re-entered from its own emit"
        INSIDE.add(self.name)
        try:
            RAN.append((self.name, tup.values[0], WORKER[0].dispatch.chain_depth))
            if tup.values[0] < self.limit:
                self.emit([tup.values[0] + 1], tup)
            self.ack(tup)
        finally:
            INSIDE.discard(self.name)


def _worker(builder: TopologyBuilder, opened: bool = True) -> Worker:
    RAN.clear()
    WORKER.clear()
    INSIDE.clear()
    worker = Worker(WorkerConfig("t", builder.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    WORKER.append(worker)
    if opened:
        worker.open()
    return worker


def _runner(worker: Worker, component: str) -> Any:
    return next(r for r in worker.tasks.values() if r.component_id == component)


def _line(n: int) -> tuple[TopologyBuilder, FeederSpout]:
    """A spout feeding bolts b0 → b1 → ... → b{n-1}, each passing its value on."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    previous = "s"
    for i in range(n):
        b.set_bolt(f"b{i}", Passes, kwargs={"name": f"b{i}", "limit": n}).shuffle_grouping(previous)
        previous = f"b{i}"
    return b, feeder


def test_a_line_exactly_max_chain_depth_long_runs_whole_inside_the_spouts_emit() -> None:
    b, feeder = _line(MAX_CHAIN_DEPTH)
    worker = _worker(b)
    feeder.feed([0], msg_id="x")
    work = worker.run_once()
    assert [d for _, _, d in RAN] == list(range(1, MAX_CHAIN_DEPTH + 1))
    assert work == 1 + MAX_CHAIN_DEPTH  # the spout's emit and every chained execute
    assert worker.dispatch.chained == 0 and worker.dispatch.chain_depth == 0
    assert all(not r.queue for r in worker.tasks.values() if r.component_id != "__acker")
    assert worker.stats()[f"b{MAX_CHAIN_DEPTH - 1}"]["executed"] == 1


def test_the_bolt_past_max_chain_depth_gets_its_tuple_queued_and_runs_it_next_round() -> None:
    b, feeder = _line(MAX_CHAIN_DEPTH + 2)
    worker = _worker(b)
    feeder.feed([0], msg_id="x")
    work = worker.run_once()
    assert len(RAN) == MAX_CHAIN_DEPTH and work == 1 + MAX_CHAIN_DEPTH
    last = _runner(worker, f"b{MAX_CHAIN_DEPTH}")
    assert [t.values for t in last.queue] == [[MAX_CHAIN_DEPTH]]
    assert not last.busy  # queued for the depth, not because it runs
    assert worker.dispatch.chain_depth == 0 and worker.dispatch.chained == 0
    work = worker.run_once()
    # the loop runs it at depth 0; what it emits is chained again, from depth 1
    assert RAN[MAX_CHAIN_DEPTH:] == [(f"b{MAX_CHAIN_DEPTH}", MAX_CHAIN_DEPTH, 0),
                                     (f"b{MAX_CHAIN_DEPTH + 1}", MAX_CHAIN_DEPTH + 1, 1)]
    assert work >= 2 and worker.dispatch.chained == 0
    for _ in range(3):
        worker.run_once()
    assert feeder.acked == ["x"]
    assert worker.run_once() == 0  # nothing chained or queued is counted again


def test_tuples_delivered_before_the_tasks_open_are_queued_not_run() -> None:
    b, _ = _line(2)
    worker = _worker(b, opened=False)
    first = _runner(worker, "b0")
    assert first.busy  # not prepared yet
    worker.dispatch.deliver[first.task_id](Tuple([0], "default", -1, "s", None))
    assert RAN == [] and [t.values for t in first.queue] == [[0]]
    worker.open()
    assert not first.busy and not _runner(worker, "b1").busy
    worker.run_once()
    assert RAN == [("b0", 0, 0), ("b1", 1, 1)]  # queued, then chained once open


def test_a_bolt_run_by_the_loop_gets_what_it_emits_to_itself_queued() -> None:
    """The loop marks the task busy while it runs its queue: a tuple the bolt emits to itself
    then is queued behind, not run inside the execute that emitted it."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("self", Passes, kwargs={"name": "self", "limit": 3}).shuffle_grouping("s") \
        .shuffle_grouping("self")
    worker = _worker(b)
    me = _runner(worker, "self")
    me.queue.append(Tuple([0], "default", -1, "s", None))  # as a peer's tuple waits
    worker.run_once()
    assert RAN == [("self", 0, 0)]  # run by the loop; its emit of 1 was queued
    assert [t.values for t in me.queue] == [[1]] and not me.busy
    worker.run_once()
    assert RAN[1:] == [("self", 1, 0)]


def test_a_chained_tuple_is_timed_exactly_when_the_sample_countdown_reaches_zero() -> None:
    b, feeder = _line(1)
    worker = _worker(b)
    stats = _runner(worker, "b0").stats
    stats.sample_countdown = 2
    feeder.feed([1])
    worker.run_once()  # chained; the countdown goes to 1: not timed
    assert RAN == [("b0", 1, 1)]
    assert stats.sample_countdown == 1 and stats.execute_latency_count == 0
    feeder.feed([1])
    worker.run_once()  # the countdown reaches 0: this one is timed
    assert [d for _, _, d in RAN] == [1, 1] and stats.execute_latency_count == 1
    assert stats.executed == 2
