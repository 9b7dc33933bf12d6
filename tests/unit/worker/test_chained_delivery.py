"""How a bolt's emit reaches a task of its own worker (``install_local_delivery``,
``BoltTask.takers``): a chained bolt task gets the tuple from the emit calling its ``take``
directly, not through the dispatch's delivery table, on the tracked and the untracked path; a
task that is not chained (a batch bolt) gets it through its queue, run in a later round."""

from __future__ import annotations

from typing import Any

import pytest
from chain_kit import SEEN, Relay, depth, runner_of, worker_of

from stormpy import Bolt, Fields, TopologyBuilder, Tuple
from stormpy.testing import FeederSpout
from stormpy.worker import Worker


class Batches(Bolt):
    """A batch bolt (never chained): records what it gets and acks it."""

    outputs = ["n"]

    def execute_batch(self, tuples: list[Tuple]) -> None:
        SEEN.extend(("batches", t.values[0], depth()) for t in tuples)
        self.ack_many(tuples)


def _through_the_table(worker: Worker, component: str) -> list[Any]:
    """Point the delivery table's entry of ``component``'s task at a list: what reaches the task
    through the table lands there instead of in the task."""
    arrived: list[Any] = []
    worker.dispatch.deliver[runner_of(worker, component).task_id] = arrived.append
    return arrived


#: tracked (one acker: the spout tuple gets a root, its children edges) or not (no acker)
ACKERS = pytest.mark.parametrize("ackers", [1, 0], ids=["tracked", "untracked"])


@ACKERS
def test_a_bolts_emit_runs_a_chained_task_through_its_take_not_the_table(ackers: int) -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("z", Relay, kwargs={"name": "z"}).shuffle_grouping("s")
    b.set_bolt("m", Relay, kwargs={"name": "m"}).shuffle_grouping("z")
    worker = worker_of(b, {"topology.acker.executors": ackers})
    arrived = _through_the_table(worker, "m")
    feeder.feed([0], msg_id="x")
    worker.run_once()
    # m ran inside z's emit (one level deeper), which ran inside the spout's
    assert SEEN == [("z", 0, 1), ("m", 1, 2)]
    assert arrived == [] and len(runner_of(worker, "m").queue) == 0
    for _ in range(3):
        worker.run_once()
    assert feeder.acked == ["x"]
    assert feeder.failed == []


@ACKERS
def test_a_bolts_emit_queues_a_tuple_for_a_task_that_is_not_chained(ackers: int) -> None:
    feeder = FeederSpout(["n"])
    b = TopologyBuilder()
    b.set_spout("s", feeder)
    b.set_bolt("z", Relay, kwargs={"name": "z"}).shuffle_grouping("s")
    b.set_bolt("batches", Batches).shuffle_grouping("z")
    worker = worker_of(b, {"topology.acker.executors": ackers})
    assert runner_of(worker, "z").takers[runner_of(worker, "batches").task_id] is None
    feeder.feed([0], msg_id="x")
    worker.run_once()
    assert SEEN == [("z", 0, 1)]  # z chained; batches not: its tuple waits in its queue
    queued = list(runner_of(worker, "batches").queue)
    assert [(t.values, t.stream, t.component, t.task, t.fields) for t in queued] == \
        [([1], "default", "z", runner_of(worker, "z").task_id, Fields(["n"]))]
    assert queued[0]["n"] == 1 and queued[0].value("n") == 1
    # anchored to the spout tuple's tree (a root and an edge of its own) when tracked
    assert (queued[0].root != 0, queued[0].edge != 0) == (ackers > 0, ackers > 0)
    for _ in range(4):
        worker.run_once()
    assert SEEN == [("z", 0, 1), ("batches", 1, 0)]
    assert feeder.acked == ["x"]
    assert feeder.failed == []
