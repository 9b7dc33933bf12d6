"""``Worker.run`` end to end on the calling thread: how long an idle loop waits (backing off from
0.1 ms to ``MAX_IDLE_WAIT``, never past the next timer on real time), how a failure of the
runtime itself stops it, and how ``stop`` ends it from any thread, within its timeout.

The transport's ``wait`` is where an idle loop blocks: the one here records each timeout and
runs the test's next step instead of waiting, so the loop runs on the test's thread without any
real waiting. Time is a hand-moved clock that the loop takes for real time (not simulated)."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Mapping

import pytest

from stormpy import Bolt, Spout, Stream, TopologyBuilder, Tuple
from stormpy.messaging.transport import Transport
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import Clock
from stormpy.worker import Worker, WorkerConfig, WorkerError
from stormpy.worker.loop import MAX_IDLE_WAIT


class HandClock(Clock):
    """Real time as far as the loop knows (``simulated`` is False), moved only by the test."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t


class ScriptedWaits(Transport):
    """Records every idle wait and runs ``steps[i]`` at the i-th one (the loop is stopped after
    the last step); sends and receives nothing."""

    def __init__(self, steps: list[Callable[[], None]]) -> None:
        self.steps = steps
        self.waits: list[float] = []
        self.worker: Worker | None = None

    def set_peers(self, peers: Mapping[str, str]) -> None:
        pass

    def send(self, peer: str, frame: bytes) -> bool:
        return True

    def receive(self, max_frames: int) -> list[bytes]:
        return []

    def wait(self, timeout: float) -> None:
        self.waits.append(timeout)
        assert self.worker is not None
        if len(self.waits) <= len(self.steps):
            self.steps[len(self.waits) - 1]()
        if len(self.waits) >= len(self.steps):
            self.worker.stop()

    def wake(self) -> None:
        pass

    def close(self) -> None:
        pass


CLOCK_MOVES: list[float] = []


class MovesTheClock(Spout):
    """Emits nothing; each call moves the test's clock by the next of ``CLOCK_MOVES`` (after the
    round's timers were checked, so the loop's idle wait sees the moved time)."""

    outputs = [Stream(["v"])]
    clock: HandClock | None = None

    def next_tuple(self) -> None:
        if CLOCK_MOVES and MovesTheClock.clock is not None:
            MovesTheClock.clock.t += CLOCK_MOVES.pop(0)


class Ticked(Bolt):
    ticks = 0

    def execute(self, tup: Tuple) -> None:
        Ticked.ticks += 1


def ticked_worker(clock: Clock, transport: ScriptedWaits) -> Worker:
    """A spout that emits nothing and a bolt ticked every second (the only timer)."""
    b = TopologyBuilder()
    b.set_spout("idle", MovesTheClock)
    b.set_bolt("ticked", Ticked, config={"topology.tick.tuple.freq.secs": 1}) \
        .shuffle_grouping("idle")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 0}),
                    clock=clock, transport=transport)
    transport.worker = worker
    return worker


def test_idle_waits_double_up_to_the_maximum_and_restart_after_work() -> None:
    clock = HandClock()
    MovesTheClock.clock = clock
    CLOCK_MOVES.clear()
    Ticked.ticks = 0

    def tick_due() -> None:
        clock.t = 1001.0  # the tick is due: the next round has work

    transport = ScriptedWaits([lambda: None] * 6 + [tick_due] + [lambda: None] * 2)
    worker = ticked_worker(clock, transport)
    worker.run()
    assert Ticked.ticks == 1
    assert transport.waits == pytest.approx(
        [0.0001, 0.0002, 0.0004, 0.0008, MAX_IDLE_WAIT, MAX_IDLE_WAIT, MAX_IDLE_WAIT,
         0.0001, 0.0002], rel=1e-9, abs=0)
    assert MAX_IDLE_WAIT == 0.001


def test_on_real_time_an_idle_wait_ends_when_the_next_timer_is_due() -> None:
    clock = HandClock()
    MovesTheClock.clock = clock
    Ticked.ticks = 0
    # the spout moves the clock during the rounds: 0.5 ms, then 0.45 ms before the tick is due,
    # then 2 ms past it (the timer runs in the next round, after this wait)
    CLOCK_MOVES[:] = [0.0, 0.0, 0.0, 0.0, 1.0 - 0.0005, 0.00005, 0.0025]
    transport = ScriptedWaits([lambda: None] * 7)
    worker = ticked_worker(clock, transport)
    worker.run()
    assert transport.waits == pytest.approx(
        [0.0001, 0.0002, 0.0004, 0.0008, 0.0005, 0.00045, 0.0], rel=1e-6, abs=1e-12)
    assert Ticked.ticks == 0


def test_on_simulated_time_idle_waits_ignore_the_timers() -> None:
    from stormpy.topology.clock import SimulatedClock  # noqa: PLC0415

    clock = SimulatedClock(1000.0)
    CLOCK_MOVES.clear()
    transport = ScriptedWaits([lambda: None] * 4 + [lambda: clock.advance(0.9999)] +
                              [lambda: None] * 2)
    worker = ticked_worker(clock, transport)
    worker.run()
    assert transport.waits == pytest.approx(
        [0.0001, 0.0002, 0.0004, 0.0008, MAX_IDLE_WAIT, MAX_IDLE_WAIT, MAX_IDLE_WAIT],
        rel=1e-9, abs=0)


class Exploding(ScriptedWaits):
    """Its ``receive`` fails once ``explode`` is set."""

    explode = False

    def receive(self, max_frames: int) -> list[bytes]:
        if self.explode:
            raise OSError("transport exploded")
        return []


def test_a_runtime_failure_is_the_workers_own_error_even_when_its_errors_are_throttled() -> None:
    b = TopologyBuilder()
    b.set_spout("f", FeederSpout(["n"]))
    b.set_bolt("sink", Capture()).shuffle_grouping("f")
    heard: list[tuple[str, int, str]] = []
    transport = Exploding([])
    worker = Worker(WorkerConfig("topo", b.create_topology(),
                                 {"topology.max.error.report.per.interval": 1}),
                    clock=HandClock(), transport=transport,
                    on_error=lambda c, t, text: heard.append((c, t, text)))
    transport.worker = worker
    worker.record_error("__system", -1, "earlier")
    worker.record_error("__system", -1, "throttled")
    assert worker.errors_suppressed == 1
    transport.explode = True
    with pytest.raises(WorkerError) as info:
        worker.run()
    failure = info.value
    assert worker.failure is failure
    assert (failure.component, failure.task) == ("__system", -1)
    assert str(failure) == "worker of topo failed: OSError: transport exploded"
    assert isinstance(failure.__cause__, OSError)
    last = worker.errors["__system"][-1]
    assert last["task"] == -1
    assert last["error"] == "".join(traceback.format_exception(failure.__cause__)).rstrip()
    assert heard[-1][:2] == ("__system", -1) and heard[-1][2] == last["error"]
    assert worker.errors_suppressed == 1


class Blocking(Bolt):
    """Its cleanup blocks until ``RELEASE`` is set (at most 20 s)."""

    RELEASE = threading.Event()
    ENTERED = threading.Event()

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)

    def cleanup(self) -> None:
        Blocking.ENTERED.set()
        Blocking.RELEASE.wait(20)


class Quiet(Transport):
    """A transport whose idle waits return at once (the loop thread spins)."""

    def set_peers(self, peers: Mapping[str, str]) -> None:
        pass

    def send(self, peer: str, frame: bytes) -> bool:
        return True

    def receive(self, max_frames: int) -> list[bytes]:
        return []

    def wait(self, timeout: float) -> None:
        threading.Event().wait(timeout)

    def wake(self) -> None:
        pass

    def close(self) -> None:
        pass


def blocking_worker() -> Worker:
    b = TopologyBuilder()
    b.set_spout("f", FeederSpout(["n"]))
    b.set_bolt("blocking", Blocking).shuffle_grouping("f")
    return Worker(WorkerConfig("t", b.create_topology(), {}), transport=Quiet())


def test_stop_waits_for_the_loop_thread_at_most_its_timeout() -> None:
    Blocking.RELEASE.clear()
    Blocking.ENTERED.clear()
    worker = blocking_worker()
    thread = worker.start("loop-under-test")
    assert thread.name == "loop-under-test" and thread.daemon
    worker.stop(timeout=0)  # the cleanup blocks: stop returns without it
    try:
        assert Blocking.ENTERED.wait(20)
        assert worker.running and thread.is_alive()
    finally:
        Blocking.RELEASE.set()
    thread.join(20)
    assert not worker.running and worker.failure is None


def test_stop_called_on_the_loop_thread_ends_the_loop() -> None:
    Blocking.RELEASE.set()
    worker = blocking_worker()
    stopped = threading.Event()

    def stop_here() -> None:
        worker.stop()
        stopped.set()

    thread = worker.start()
    assert thread.name == "worker-t"
    worker.call_soon_threadsafe(stop_here)
    thread.join(20)
    assert stopped.is_set() and not thread.is_alive() and worker.failure is None


def test_the_default_stop_waits_for_the_cleanup() -> None:
    Blocking.RELEASE.clear()
    Blocking.ENTERED.clear()
    worker = blocking_worker()
    thread = worker.start()
    releaser = threading.Thread(target=lambda: Blocking.ENTERED.wait(20) and Blocking.RELEASE.set())
    releaser.start()
    worker.stop()
    assert not thread.is_alive() and not worker.running
    releaser.join(20)
