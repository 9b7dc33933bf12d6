"""Chaining (``BoltTask.take``): a tuple emitted on the worker's loop to a bolt task of the same
worker runs that task's ``execute`` inside the emit when nothing is queued before it, the task is
not running and the chain is not too deep; otherwise it is queued. These tests drive
``Worker.run_once`` on simulated time and check that Storm's guarantees hold under chaining:
per-task order, no re-entrant execute, a bounded depth, acking and anchoring, failures, message
timeouts, max spout pending, errors attributed to the failing task, stats and hooks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from chain_kit import SEEN, Relay, depth, line, runner_of, worker_of

from stormpy import BasicBolt, Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._hooks import TaskHook
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerError
from stormpy.worker.bolt_task import MAX_CHAIN_DEPTH, BoltTask


def _rounds(worker: Worker, n: int = 4) -> None:
    for _ in range(n):
        worker.run_once()


def test_a_spout_tuple_runs_through_the_chain_inside_the_spouts_round() -> None:
    """``z`` feeds ``m`` feeds ``a``, which the spout also feeds directly: every bolt runs inside
    the spout's emit, in emit order, in the round the spout emits; the tree completes."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("a", Relay, kwargs={"name": "a"}).shuffle_grouping("s").shuffle_grouping("m")
    b.set_bolt("z", Relay, kwargs={"name": "z"}).shuffle_grouping("s")
    b.set_bolt("m", Relay, kwargs={"name": "m"}).shuffle_grouping("z")
    worker = worker_of(b)
    takers = runner_of(worker, "z").takers  # one table, shared, naming the chained bolt tasks
    assert all(r.takers is takers for r in worker.tasks.values() if isinstance(r, BoltTask))
    assert {t: r for t, r in enumerate(takers) if r is not None} == \
        {runner_of(worker, c).task_id: runner_of(worker, c) for c in "amz"}
    feeder.feed([0], msg_id="x")
    work = worker.run_once()
    assert [(c, n) for c, n, _ in SEEN] == [("a", 0), ("z", 0), ("m", 1), ("a", 2)]
    assert [d for _, _, d in SEEN] == [1, 1, 2, 3]
    assert work == 1 + 4  # the emit and the four chained executes
    assert all(not r.queue for r in worker.tasks.values())
    worker.run_once()  # the round's acks go out; the acker's reply reaches the spout
    worker.run_once()
    assert feeder.acked == ["x"] and feeder.failed == []
    stats = worker.stats()
    assert stats["a"]["executed"] == 2 and stats["z"]["executed"] == 1
    assert stats["m"]["executed"] == 1 and stats["a"]["acked"] == 2


def test_chaining_off_queues_every_tuple() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("z", Relay, kwargs={"name": "z"}).shuffle_grouping("s")
    worker = worker_of(b, {"topology.worker.chaining": False})
    feeder.feed([3], msg_id="x")
    worker.run_once()
    assert SEEN == [] and len(runner_of(worker, "z").queue) == 1
    _rounds(worker)
    assert SEEN == [("z", 3, 0)] and feeder.acked == ["x"]
    assert runner_of(worker, "z").take != worker.dispatch.deliver[runner_of(worker, "z").task_id]
    assert runner_of(worker, "z").takers == [None] * len(worker.dispatch.deliver)


def test_a_task_with_queued_tuples_gets_later_ones_queued_behind_them() -> None:
    """Per-task order: a tuple that reaches a task with tuples queued is queued behind them,
    never run ahead of them."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("z", Relay, kwargs={"name": "z", "limit": 0}).shuffle_grouping("s")
    worker = worker_of(b)
    z = runner_of(worker, "z")
    z.queue.append(Tuple([10], "default", -1, "s", None))  # as a tuple from a peer waits
    runner_of(worker, "s").emit([11])  # reaches z while 10 is queued: queued behind it
    assert SEEN == [] and [t.values for t in z.queue] == [[10], [11]]
    worker.run_once()
    assert SEEN == [("z", 10, 0), ("z", 11, 0)]
    feeder.feed([12])
    worker.run_once()  # nothing queued now: the spout's tuple runs inside its emit
    assert SEEN[-1] == ("z", 12, 1)


def test_a_task_never_runs_inside_its_own_execute() -> None:
    """A bolt that emits to itself: the tuple is queued (the task is running) and runs in a
    later round, not nested inside the execute that emitted it."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("loop", Relay, kwargs={"name": "loop"}).shuffle_grouping("s") \
        .shuffle_grouping("loop")
    worker = worker_of(b)
    feeder.feed([0], msg_id="x")
    worker.run_once()
    assert SEEN == [("loop", 0, 1)]
    assert len(runner_of(worker, "loop").queue) == 1
    _rounds(worker, 8)
    assert [n for _, n, _ in SEEN] == [0, 1, 2, 3]
    assert all(d <= 1 for _, _, d in SEEN)  # each ran alone: from the emit or from the loop
    assert feeder.acked == ["x"]


def test_a_long_line_of_bolts_nests_at_most_max_chaindepth() -> None:
    n = MAX_CHAIN_DEPTH + 6
    b, feeder = line(n)
    worker = worker_of(b)
    feeder.feed([0], msg_id="x")
    _rounds(worker, 8)
    assert [c for c, _, _ in SEEN] == [f"b{i}" for i in range(n)]
    assert max(d for _, _, d in SEEN) == MAX_CHAIN_DEPTH
    assert worker.dispatch.chain_depth == 0
    assert feeder.acked == ["x"]


class Fails(Bolt):
    """Fails every tuple (``fail``), emitting nothing."""

    def execute(self, tup: Tuple) -> None:
        SEEN.append(("fails", tup.values[0], depth()))
        self.fail(tup)


def test_a_chained_fail_fails_the_spout_tuple_once_and_it_is_replayed() -> None:
    """The fail reaches the acker before the spout's init (the bolt ran inside the emit): the
    acker still fails the root once the init arrives, and the spout replays it."""
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("fails", Fails).shuffle_grouping("s")
    worker = worker_of(b)
    feeder.feed([1], msg_id="x")
    _rounds(worker)
    assert feeder.failed == ["x"] and feeder.acked == []
    assert worker.stats()["fails"]["failed"] == 1


class Holds(Bolt):
    """Keeps its input tuples without acking them."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        self.held.append(tup)


def test_chained_tuples_time_out_and_max_spout_pending_holds() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("holds", Holds).shuffle_grouping("s")
    worker = worker_of(b, {"topology.max.spout.pending": 3, "topology.message.timeout.secs": 10})
    for i in range(5):
        feeder.feed([i], msg_id=i)
    _rounds(worker)
    holds = runner_of(worker, "holds").instance
    assert len(holds.held) == 3  # the spout stopped at 3 pending
    clock = worker.clock
    assert isinstance(clock, SimulatedClock)
    for _ in range(4):
        clock.advance(6)
        _rounds(worker, 2)
    assert set(feeder.failed) >= {0, 1, 2}  # timed out although the bolt ran them at once
    assert len(holds.held) >= 5  # the last two (and the replays) went through once freed


class Raises(Bolt):
    def execute(self, tup: Tuple) -> None:
        raise ValueError(f"bad {tup.values[0]}")


class Swallows(BasicBolt):
    """Emits and catches whatever its emit raises (a chained bolt's error must still stop the
    worker, and be that bolt's error)."""

    outputs = ["n"]

    def process(self, tup: Tuple) -> None:
        try:
            self.emit([tup.values[0]])
        except Exception:  # noqa: BLE001 - what the test is about
            SEEN.append(("swallowed", tup.values[0], depth()))


@pytest.mark.parametrize("upstream", ["spout", "swallowing bolt"])
def test_a_chained_execute_that_raises_is_the_error_of_its_own_task(upstream: str) -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    if upstream == "spout":
        b.set_bolt("raises", Raises).shuffle_grouping("s")
    else:
        b.set_bolt("swallows", Swallows).shuffle_grouping("s")
        b.set_bolt("raises", Raises).shuffle_grouping("swallows")
    worker = worker_of(b)
    feeder.feed([7], msg_id="x")
    with pytest.raises(WorkerError) as info:
        _rounds(worker)
    (task,) = worker.layout.component_tasks["raises"]
    assert (info.value.component, info.value.task) == ("raises", task)
    assert "ValueError: bad 7" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    errors = worker.errors["raises"]
    assert len(errors) == 1 and "bad 7" in errors[0]["error"]
    assert "swallows" not in worker.errors and "s" not in worker.errors
    if upstream != "spout":
        assert [(c, n) for c, n, _ in SEEN] == [("swallowed", 7)]  # caught, yet the worker stopped


class Batches(Bolt):
    outputs = ["n"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        SEEN.extend(("batches", t.values[0], depth()) for t in tuples)
        self.ack_many(tuples)


def test_batch_bolts_and_system_tasks_are_never_chained() -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("batches", Batches).shuffle_grouping("s")
    worker = worker_of(b)
    feeder.feed([1], msg_id="x")
    worker.run_once()
    assert SEEN == [] and len(runner_of(worker, "batches").queue) == 1
    _rounds(worker)
    assert SEEN == [("batches", 1, 0)] and feeder.acked == ["x"]
    deliver = worker.dispatch.deliver
    for task, runner in worker.tasks.items():
        assert not (isinstance(runner, BoltTask) and deliver[task] == runner.take)
        assert not (isinstance(runner, BoltTask) and runner.chainable())
        assert not (isinstance(runner, BoltTask) and runner.takers[task] is not None)


#: what the hook below saw executed
HOOKED: list[Any] = []


class Counts(TaskHook):
    def bolt_execute(self, info: Any) -> None:
        HOOKED.append(info.tuple.values[0])


def test_hooks_and_sampling_see_chained_executes() -> None:
    HOOKED.clear()
    feeder = FeederSpout(["n"])
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("sink", capture).shuffle_grouping("s")
    worker = worker_of(b, {"topology.auto.task.hooks": [f"{__name__}.Counts"],
                         "topology.stats.sample.rate": 1.0})
    for i in range(5):
        feeder.feed([i], msg_id=i)
    _rounds(worker)
    assert capture.values == [[i] for i in range(5)]
    assert HOOKED == [0, 1, 2, 3, 4]
    stats = runner_of(worker, "sink").stats
    assert stats.executed == 5 and stats.execute_latency_count == 5
    assert sorted(feeder.acked) == list(range(5))
