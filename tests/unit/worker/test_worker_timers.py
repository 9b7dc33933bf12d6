"""Task timers: periodic callbacks fired once per elapsed period, and the timers a worker gives its
tasks (message-timeout rotation for spouts and ackers, tick tuples for bolts)."""

from __future__ import annotations

import pytest

from stormpy import TopologyBuilder
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.spout_task import TIMEOUT_BUCKETS
from stormpy.worker.task_timers import TaskTimers


def test_a_timer_fires_at_its_due_time_and_once_per_missed_period() -> None:
    timers = TaskTimers()
    fired: list[str] = []
    timers.add(2.0, lambda: fired.append("a"), now=10.0)
    timers.add(3.0, lambda: fired.append("b"), now=10.0)
    assert timers.next_due == 12.0
    timers.run(11.999)
    assert fired == [] and timers.next_due == 12.0
    timers.run(12.0)  # exactly due
    assert fired == ["a"] and timers.next_due == 13.0
    timers.run(19.0)  # a: 14, 16, 18; b: 13, 16, 19
    assert fired.count("a") == 4 and fired.count("b") == 3
    assert timers.next_due == 20.0


def test_next_due_is_the_earliest_timer_and_infinite_without_timers() -> None:
    timers = TaskTimers()
    assert timers.next_due == float("inf")
    timers.run(100.0)
    assert timers.next_due == float("inf")
    timers.add(5.0, lambda: None, now=0.0)
    timers.add(1.0, lambda: None, now=0.0)
    timers.add(3.0, lambda: None, now=0.0)
    assert timers.next_due == 1.0


@pytest.mark.parametrize("interval", [0, 0.0, -1.0])
def test_a_timer_needs_a_positive_interval(interval: float) -> None:
    with pytest.raises(ValueError, match=f"timer interval must be positive, got {interval}"):
        TaskTimers().add(interval, lambda: None, now=0.0)


def topology(tick_secs: float | None = None, ack: bool = True):
    feeder = FeederSpout(["v"])
    sink = Capture(ack=ack)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    conf = {"topology.tick.tuple.freq.secs": tick_secs} if tick_secs else None
    b.set_bolt("sink", sink, config=conf).shuffle_grouping("feeder")
    return feeder, sink, b.create_topology()


def test_unacked_spout_tuples_fail_after_the_timeout_rotations() -> None:
    """The spout's pending map rotates every timeout / (buckets - 1), from when the worker opens:
    a tuple emitted at once fails at the TIMEOUT_BUCKETS'th rotation (never before the timeout
    has passed)."""
    feeder, sink, spec = topology(ack=False)  # holds every tuple: only the timeout ends it
    clock = SimulatedClock()
    conf = {"topology.message.timeout.secs": 10, "topology.acker.executors": 1}
    worker = Worker(WorkerConfig("t", spec, conf), clock=clock)
    worker.open()
    feeder.feed(["x"], msg_id="m")
    worker.run_once()
    worker.run_once()
    assert len(sink.values) == 1
    rotation = 10 / (TIMEOUT_BUCKETS - 1)
    clock.advance(rotation * TIMEOUT_BUCKETS - 0.001)
    worker.run_once()
    assert feeder.failed == []
    clock.advance(0.001)
    worker.run_once()
    assert feeder.failed == ["m"]


def test_no_message_timeouts_without_ackers_or_when_disabled() -> None:
    for conf in ({"topology.acker.executors": 0},
                 {"topology.enable.message.timeouts": False, "topology.acker.executors": 1}):
        feeder, sink, spec = topology(ack=False)
        clock = SimulatedClock()
        worker = Worker(WorkerConfig("t", spec, {"topology.message.timeout.secs": 1, **conf}),
                        clock=clock)
        worker.open()
        feeder.feed(["x"], msg_id="m")
        for _ in range(5):
            clock.advance(10)
            worker.run_once()
        assert feeder.failed == [], conf


def test_ticks_carry_their_frequency_and_come_once_per_period() -> None:
    feeder, sink, spec = topology(tick_secs=2)
    clock = SimulatedClock()
    worker = Worker(WorkerConfig("t", spec, {}), clock=clock)
    worker.open()
    clock.advance(1.999)
    worker.run_once()
    assert sink.tuples == []
    clock.advance(0.001)
    worker.run_once()
    clock.advance(4)
    worker.run_once()
    ticks = [t for t in sink.tuples if t.is_tick()]
    assert [t.values for t in ticks] == [[2.0]] * 3
    assert all(t.task == -1 and t.component == "__system" for t in ticks)


def test_acker_entries_expire_with_the_message_timeout() -> None:
    """An acker rotates its ledger as often as the spouts rotate their pending maps: the entry
    of a tree nobody completes is gone once the timeout has passed."""
    feeder, sink, spec = topology(ack=False)
    clock = SimulatedClock()
    conf = {"topology.message.timeout.secs": 10, "topology.acker.executors": 1}
    worker = Worker(WorkerConfig("t", spec, conf), clock=clock)
    worker.open()
    feeder.feed(["x"], msg_id="m")
    worker.run_once()
    (acker,) = worker.dispatch.acker_cores
    assert acker is not None and len(acker.ledger) == 1
    rotation = 10 / (TIMEOUT_BUCKETS - 1)
    for _ in range(TIMEOUT_BUCKETS - 1):
        clock.advance(rotation)
        worker.run_once()
        worker.run_once()  # the acker's tick is queued by the timer, run in the next round
    assert len(acker.ledger) == 1  # a tree lives through the whole timeout
    clock.advance(rotation)
    worker.run_once()
    worker.run_once()
    assert len(acker.ledger) == 0 and feeder.failed == ["m"]
