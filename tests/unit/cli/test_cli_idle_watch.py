"""``stormpy local --idle-stop``'s idleness rule (``cli/idle_watch.py``) on fake worker stats: a
quiet loop, or no user activity with no user spout tuple pending, for the whole period stops the
run; system components and streams (a stateful topology's checkpoints) are not user activity; a
tuple tree still pending (a micro-batch waiting for its tick) keeps it running."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.cli.idle_watch import IdleWatch, is_user_name, user_activity, user_pending
from stormpy.local import LocalCluster
from stormpy.testing import wait_for
from stormpy.topology import Bolt, Spout, TopologyBuilder, Tuple


def doc(component: str, emitted: dict[str, int], acked: int = 0, failed: int = 0) -> dict[str, Any]:
    return {"component": component, "task": 1, "emitted": emitted, "transferred": 0,
            "executed": 0, "acked": acked, "failed": failed}


def test_system_names_are_not_user_names() -> None:
    assert is_user_name("sentences") and is_user_name("default")
    assert not is_user_name("$checkpointspout") and not is_user_name("$checkpoint")
    assert not is_user_name("__acker") and not is_user_name("__system")


def test_user_activity_counts_user_emits_and_user_spout_acks_and_fails_only() -> None:
    pending = {"sentences": 3, "$checkpointspout": 1}
    docs = [doc("sentences", {"default": 10, "__ack_init": 10}, acked=7, failed=1),
            doc("count", {"default": 5, "$checkpoint": 4}, acked=9),  # a bolt's acks: not counted
            doc("$checkpointspout", {"$checkpoint": 8}, acked=8),
            doc("__acker", {"__ack_ack": 10})]
    assert user_activity(docs, pending) == 10 + 7 + 1 + 5
    assert user_pending(pending) == 3


def test_checkpoints_alone_do_not_keep_a_finished_topology_running() -> None:
    pending = {"sentences": 0, "$checkpointspout": 1}
    watch = IdleWatch(2.0)
    stops = []
    for step in range(60):  # 0.1 s apart; the user's work ends at 1.0 s, checkpoints go on
        now = step * 0.1
        checkpoints = step + 1
        docs = [doc("sentences", {"default": min(step, 10)}, acked=min(step, 10)),
                doc("$checkpointspout", {"$checkpoint": checkpoints}, acked=checkpoints)]
        if watch.observe(now, loop_quiet=False, activity=user_activity(docs, pending),
                         pending=user_pending(pending)):
            stops.append(now)
    assert stops and stops[0] == pytest.approx(3.0)  # 2 s after the last user activity


def test_pending_tuples_keep_a_topology_running_without_user_activity() -> None:
    watch = IdleWatch(1.0)
    # a micro-batch waiting for its tick: no emit, no ack, but its spout tuples are pending
    assert not any(watch.observe(t / 10, loop_quiet=False, activity=50, pending=50)
                   for t in range(100))
    assert not watch.observe(10.1, loop_quiet=False, activity=100, pending=0)  # batch acked
    assert watch.observe(11.1, loop_quiet=False, activity=100, pending=0)


def test_user_activity_restarts_the_period() -> None:
    watch = IdleWatch(1.0)
    assert not watch.observe(0.0, loop_quiet=False, activity=1, pending=0)
    assert not watch.observe(0.9, loop_quiet=False, activity=1, pending=0)
    assert not watch.observe(1.5, loop_quiet=False, activity=2, pending=0)
    assert not watch.observe(2.4, loop_quiet=False, activity=2, pending=0)
    assert watch.observe(2.5, loop_quiet=False, activity=2, pending=0)


def test_before_any_user_work_only_the_quiet_loop_stops_it() -> None:
    watch = IdleWatch(1.0)
    assert not any(watch.observe(t / 10, loop_quiet=False, activity=0, pending=0)
                   for t in range(50))
    assert not watch.observe(5.0, loop_quiet=True, activity=0, pending=0)
    assert not watch.observe(5.5, loop_quiet=False, activity=0, pending=0)  # a busy round
    assert not watch.observe(6.0, loop_quiet=True, activity=0, pending=0)
    assert watch.observe(7.0, loop_quiet=True, activity=0, pending=0)


def test_a_negative_idle_period_is_refused() -> None:
    with pytest.raises(ValueError, match="--idle-stop"):
        IdleWatch(-1.0)


class ThreeSpout(Spout):
    """Emits three reliable tuples."""

    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.left = 3

    def next_tuple(self) -> None:
        if self.left:
            self.left -= 1
            self.emit([self.left], msg_id=self.left)


class HoldingBolt(Bolt):
    """Never acks: its inputs' tuple trees stay pending."""

    def execute(self, tup: Tuple) -> None:
        pass


def test_worker_spout_pending_counts_the_trees_a_spout_waits_on() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", ThreeSpout)
    builder.set_bolt("hold", HoldingBolt).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("pending", {"topology.message.timeout.secs": 600},
                                         builder.create_topology())
        wait_for(lambda: worker.stats().get("hold", {}).get("executed") == 3, 60,
                 "the bolt to hold the spout's three tuples")
        assert worker.spout_pending() == {"numbers": 3}


def test_spout_pending_sums_the_trees_of_every_task_of_a_spout_component() -> None:
    """Two tasks of one spout, three held trees each: the component waits on six."""
    from stormpy.topology.clock import SimulatedClock
    from stormpy.worker import Worker, WorkerConfig

    builder = TopologyBuilder()
    builder.set_spout("numbers", ThreeSpout, 2)
    builder.set_bolt("hold", HoldingBolt).shuffle_grouping("numbers")
    worker = Worker(WorkerConfig("pending", builder.create_topology(),
                                 {"topology.message.timeout.secs": 600}), clock=SimulatedClock())
    worker.open()
    for _ in range(10):
        worker.run_once()
    assert worker.stats()["hold"]["executed"] == 6
    assert worker.spout_pending() == {"numbers": 6}



def test_waiting_for_a_window_or_pending_tuples_is_not_idle_even_with_a_quiet_loop() -> None:
    """Between two ticks of a tumbling window the loop is quiet; its held tuples (or the spout
    tuples they anchor) keep the run going until the window closed and they completed."""
    watch = IdleWatch(1.0)
    assert not any(watch.observe(t / 10, loop_quiet=True, activity=5, pending=0, held=5)
                   for t in range(100))
    assert not any(watch.observe(10 + t / 10, loop_quiet=True, activity=5, pending=5)
                   for t in range(100))
    assert not watch.observe(20.0, loop_quiet=True, activity=10, pending=0)  # window closed
    assert watch.observe(21.0, loop_quiet=True, activity=10, pending=0)
