"""Anchoring and failing from bolts: a BasicBolt's emits (plain and direct, on any stream) are
anchored to the input it is processing, fails and timeouts are counted one by one, a bolt in a
worker without the acker still fails and resets the timeout of its spout tuples, and emit errors
say exactly what was wrong."""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import (
    BasicBolt,
    Bolt,
    EmitError,
    Stream,
    TopologyBuilder,
    TopologyContext,
    Tuple,
)
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError

TIMEOUT = {"topology.message.timeout.secs": 10}


def opened(spec: Any, conf: Mapping[str, Any] | None = None) -> Worker:
    worker = Worker(WorkerConfig("t", spec, conf or {}), clock=SimulatedClock())
    worker.open()
    return worker


def rounds(worker: Worker, n: int = 8) -> None:
    for _ in range(n):
        worker.run_once()


class Spread(BasicBolt):
    """Emits each input on the named stream "out" and directly to the last "direct-sink" task."""

    outputs = [Stream(["v"], name="out"), Stream(["v"], name="direct-out", direct=True)]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.direct_to = context.tasks_of("direct-sink")[-1]

    def process(self, tup: Tuple) -> None:
        self.emit([tup.values[0]], stream="out")
        self.emit_direct(self.direct_to, [tup.values[0]], stream="direct-out")


def spread_topology(named_ack: bool, direct_ack: bool) -> tuple[FeederSpout, Capture, Capture,
                                                               Any]:
    feeder = FeederSpout(["v"])
    named, direct = Capture(ack=named_ack), Capture(ack=direct_ack)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("spread", Spread).shuffle_grouping("feeder")
    b.set_bolt("named-sink", named).shuffle_grouping("spread", "out")
    b.set_bolt("direct-sink", direct, 2).direct_grouping("spread", "direct-out")
    return feeder, named, direct, b.create_topology()


@pytest.mark.parametrize("named_ack, direct_ack", [(True, True), (False, True), (True, False)])
def test_a_basic_bolts_emits_are_anchored_to_the_input_it_processes(named_ack: bool,
                                                                    direct_ack: bool) -> None:
    feeder, named, direct, spec = spread_topology(named_ack, direct_ack)
    worker = opened(spec, {**TIMEOUT, "topology.acker.executors": 1})
    feeder.feed([1], msg_id="m")
    rounds(worker)
    assert named.values == [[1]] and named.tuples[0].stream == "out"
    last = worker.layout.component_tasks["direct-sink"][-1]
    assert direct.by_task == {last: [[1]]} and direct.tuples[0].stream == "direct-out"
    # the spout tuple completes only when both children are acked
    assert feeder.acked == (["m"] if named_ack and direct_ack else [])
    assert feeder.failed == []


class Refuser(Bolt):
    """Fails every input."""

    def execute(self, tup: Tuple) -> None:
        self.fail(tup)


def test_every_fail_and_every_timeout_is_counted() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("refuser", Refuser).shuffle_grouping("feeder")
    worker = opened(b.create_topology(), {**TIMEOUT, "topology.acker.executors": 1})
    for i in range(3):
        feeder.feed([i], msg_id=i)
    rounds(worker)
    stats = worker.stats()
    assert stats["refuser"]["failed"] == 3 and stats["feeder"]["failed"] == 3
    assert sorted(feeder.failed) == [0, 1, 2]

    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("holder", Capture(ack=False)).shuffle_grouping("feeder")
    clock = SimulatedClock()
    worker = Worker(WorkerConfig("t", b.create_topology(), {**TIMEOUT,
                                                            "topology.acker.executors": 1}),
                    clock=clock)
    worker.open()
    for i in range(3):
        feeder.feed([i], msg_id=i)
    rounds(worker, 3)
    for _ in range(4):
        clock.advance(5)
        worker.run_once()
    assert sorted(feeder.failed) == [0, 1, 2]
    assert worker.stats()["feeder"]["failed"] == 3


class FailOrHold(Bolt):
    """Fails inputs whose value starts with "fail"; holds the others, resetting their timeout on
    every tick."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            for held in self.held:
                self.reset_timeout(held)
        elif str(tup.values[0]).startswith("fail"):
            self.fail(tup)
        else:
            self.held.append(tup)


def test_a_bolt_away_from_the_acker_still_fails_and_resets_timeouts() -> None:
    """Layout: tasks in sorted component order (__acker 1, a-feeder 2, b-bolt 3 and 4) spread
    round robin over two workers: bolt task 4 shares the spout's worker, not the acker's."""
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("a-feeder", feeder)
    b.set_bolt("b-bolt", FailOrHold, 2, config={"topology.tick.tuple.freq.secs": 3}) \
        .shuffle_grouping("a-feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 1},
                                b.create_topology(), workers=2)
        workers = cluster.workers_of("t")
        home = {t: i for i, w in enumerate(workers) for t in w.local_tasks}
        tasks = workers[0].layout.component_tasks
        (acker,) = tasks["__acker"]
        assert any(home[t] != home[acker] for t in tasks["b-bolt"]), "layout precondition"
        # shuffle alternates between the two tasks: this order gives each both kinds
        for kind, i in [("f", 0), ("f", 1), ("k", 0), ("k", 1), ("f", 2), ("k", 2), ("f", 3),
                        ("k", 3)]:
            feeder.feed([f"{'fail' if kind == 'f' else 'keep'}-{i}"], msg_id=f"{kind}{i}")
        cluster.wait_for(lambda: len(feeder.failed) == 4, 10, "4 fails")
        assert sorted(feeder.failed) == [f"f{i}" for i in range(4)]
        for _ in range(10):  # 30 s, three timeouts: the held tuples are kept alive by resets
            cluster.advance_time(3)
        assert len(feeder.failed) == 4 and feeder.acked == []


class Reporter(Bolt):
    """Reports the error it catches, as is."""

    caught: list[BaseException] = []

    def execute(self, tup: Tuple) -> None:
        try:
            {}["missing"]
        except KeyError as exc:
            Reporter.caught.append(exc)
            self.report_error(exc)
        self.ack(tup)


def test_a_reported_exception_is_recorded_as_its_whole_traceback() -> None:
    Reporter.caught.clear()
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("reporter", Reporter).shuffle_grouping("feeder")
    worker = opened(b.create_topology())
    feeder.feed([1])
    rounds(worker, 3)
    (exc,) = Reporter.caught
    (error,) = worker.errors["reporter"]
    assert error["error"] == "".join(traceback.format_exception(exc)).rstrip()


class WrongEmits(Bolt):
    """Emits the way its input says."""

    outputs = [Stream(["v"]), Stream(["v"], name="only-direct", direct=True)]

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == "plain on direct":
            self.emit(["x"], stream="only-direct")
        else:
            self.emit_direct(1, ["x"])


@pytest.mark.parametrize("how, message", [
    ("plain on direct", "component 'wrong': stream 'only-direct' is direct; use "
                        "emit_direct(task, values)"),
    ("direct on plain", "component 'wrong': emit_direct on stream 'default', which is not "
                        "declared direct"),
])
def test_emitting_against_a_streams_directness_says_which_way(how: str, message: str) -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("wrong", WrongEmits).shuffle_grouping("feeder")
    b.set_bolt("sink", Capture()).shuffle_grouping("wrong")
    b.set_bolt("direct-sink", Capture()).direct_grouping("wrong", "only-direct")
    worker = opened(b.create_topology())
    feeder.feed([how])
    with pytest.raises(WorkerError) as info:
        rounds(worker, 3)
    assert isinstance(info.value.__cause__, EmitError)
    assert str(info.value.__cause__) == message
