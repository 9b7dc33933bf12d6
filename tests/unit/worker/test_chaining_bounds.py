"""Chaining's bounds and bookkeeping (``BoltTask.take``, the loop's busy flags, the dispatch's
``chain_depth`` and ``chained``), on simulated time: the depth bound exactly at
``MAX_CHAIN_DEPTH``, the work a round counts for chained executes, no chaining before the
tasks are open, and no execute re-entered from its own emit when the loop runs it."""

from __future__ import annotations

from chain_kit import SEEN, Relay, line, runner_of, worker_of

from stormpy import TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.worker.bolt_task import MAX_CHAIN_DEPTH


def test_a_line_exactly_max_chain_depth_long_runs_whole_inside_the_spouts_emit() -> None:
    b, feeder = line(MAX_CHAIN_DEPTH)
    worker = worker_of(b)
    feeder.feed([0], msg_id="x")
    work = worker.run_once()
    assert [d for _, _, d in SEEN] == list(range(1, MAX_CHAIN_DEPTH + 1))
    assert work == 1 + MAX_CHAIN_DEPTH  # the spout's emit and every chained execute
    assert worker.dispatch.chained == 0 and worker.dispatch.chain_depth == 0
    assert all(not r.queue for r in worker.tasks.values() if r.component_id != "__acker")
    assert worker.stats()[f"b{MAX_CHAIN_DEPTH - 1}"]["executed"] == 1


def test_the_bolt_past_max_chain_depth_gets_its_tuple_queued_and_runs_it_next_round() -> None:
    b, feeder = line(MAX_CHAIN_DEPTH + 2)
    worker = worker_of(b)
    feeder.feed([0], msg_id="x")
    work = worker.run_once()
    assert len(SEEN) == MAX_CHAIN_DEPTH and work == 1 + MAX_CHAIN_DEPTH
    last = runner_of(worker, f"b{MAX_CHAIN_DEPTH}")
    assert [t.values for t in last.queue] == [[MAX_CHAIN_DEPTH]]
    assert not last.busy  # queued for the depth, not because it runs
    assert worker.dispatch.chain_depth == 0 and worker.dispatch.chained == 0
    work = worker.run_once()
    # the loop runs it at depth 0; what it emits is chained again, from depth 1
    assert SEEN[MAX_CHAIN_DEPTH:] == [(f"b{MAX_CHAIN_DEPTH}", MAX_CHAIN_DEPTH, 0),
                                     (f"b{MAX_CHAIN_DEPTH + 1}", MAX_CHAIN_DEPTH + 1, 1)]
    assert work >= 2 and worker.dispatch.chained == 0
    for _ in range(3):
        worker.run_once()
    assert feeder.acked == ["x"]
    assert worker.run_once() == 0  # nothing chained or queued is counted again


def test_tuples_delivered_before_the_tasks_open_are_queued_not_run() -> None:
    b, _ = line(2)
    worker = worker_of(b, opened=False)
    first = runner_of(worker, "b0")
    assert first.busy  # not prepared yet
    worker.dispatch.deliver[first.task_id](Tuple([0], "default", -1, "s", None))
    assert SEEN == [] and [t.values for t in first.queue] == [[0]]
    worker.open()
    assert not first.busy and not runner_of(worker, "b1").busy
    worker.run_once()
    assert SEEN == [("b0", 0, 0), ("b1", 1, 1)]  # queued, then chained once open


def test_a_bolt_run_by_the_loop_gets_what_it_emits_to_itself_queued() -> None:
    """The loop marks the task busy while it runs its queue: a tuple the bolt emits to itself
    then is queued behind, not run inside the execute that emitted it."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("self", Relay, kwargs={"name": "self", "limit": 3}).shuffle_grouping("s") \
        .shuffle_grouping("self")
    worker = worker_of(b)
    me = runner_of(worker, "self")
    me.queue.append(Tuple([0], "default", -1, "s", None))  # as a peer's tuple waits
    worker.run_once()
    assert SEEN == [("self", 0, 0)]  # run by the loop; its emit of 1 was queued
    assert [t.values for t in me.queue] == [[1]] and not me.busy
    worker.run_once()
    assert SEEN[1:] == [("self", 1, 0)]


def test_a_chained_tuple_is_timed_exactly_when_the_sample_countdown_reaches_zero() -> None:
    b, feeder = line(1)
    worker = worker_of(b)
    stats = runner_of(worker, "b0").stats
    stats.sample_countdown = 2
    feeder.feed([1])
    worker.run_once()  # chained; the countdown goes to 1: not timed
    assert SEEN == [("b0", 1, 1)]
    assert stats.sample_countdown == 1 and stats.execute_latency_count == 0
    feeder.feed([1])
    worker.run_once()  # the countdown reaches 0: this one is timed
    assert [d for _, _, d in SEEN] == [1, 1] and stats.execute_latency_count == 1
    assert stats.executed == 2
