"""What task runners do on each emit, ack and round: the counts they keep, the values they let
through, how many tuples a spout round emits, and shutdown errors (reported, never raised)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, EmitError, Spout, TopologyBuilder, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError


def run_rounds(worker: Worker, rounds: int = 6) -> None:
    for _ in range(rounds):
        worker.run_once()


def opened(spec: Any, conf: Mapping[str, Any] | None = None) -> Worker:
    worker = Worker(WorkerConfig("t", spec, conf or {}), clock=SimulatedClock())
    worker.open()
    return worker


class Relay(Bolt):
    """Re-emits its input to an all-grouped pair of tasks, anchored as ``mode`` says."""

    outputs = ["word", "n"]

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        if self.mode == "anchored":
            self.emit(tup.values, anchors=tup)
        elif self.mode == "unanchored":
            self.emit(tup.values)
        elif self.mode == "pairs":  # two inputs anchor one output (a join)
            self.held.append(tup)
            if len(self.held) < 2:
                return
            self.emit(tup.values, anchors=list(self.held))
            for held in self.held:
                self.ack(held)
            self.held = []
            return
        self.ack(tup)


@pytest.mark.parametrize("mode, ackers", [("anchored", 1), ("unanchored", 1), ("pairs", 1),
                                          ("anchored", 0), ("pairs", 0)])
def test_every_delivery_counts_as_transferred_and_every_emit_as_emitted(mode: str,
                                                                       ackers: int) -> None:
    feeder = FeederSpout(["word", "n"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("relay", Relay, kwargs={"mode": mode}).shuffle_grouping("feeder")
    b.set_bolt("sink", sink, 2).all_grouping("relay")
    worker = opened(b.create_topology(), {"topology.acker.executors": ackers})
    for i in range(4):
        feeder.feed(["w", i], msg_id=i)
    run_rounds(worker, 8)
    stats = worker.stats()
    relayed = 2 if mode == "pairs" else 4
    assert stats["feeder"]["emitted"] == 4 and stats["feeder"]["transferred"] == 4
    assert stats["relay"]["emitted"] == relayed and stats["relay"]["transferred"] == 2 * relayed
    assert len(sink.tuples) == 2 * relayed
    assert stats["relay"]["executed"] == 4 and stats["relay"]["acked"] == 4
    assert sorted(feeder.acked) == [0, 1, 2, 3] and feeder.failed == []
    assert stats["feeder"]["acked"] == 4


class Numbers(Spout):
    """Emits the configured values once each, then nothing (given as strings, emitted as ints
    unless ``as_ints`` is false: the constructor arguments themselves must be msgpack data)."""

    outputs = ["v"]

    def __init__(self, values: list[Any], msg_ids: bool = True, as_ints: bool = True) -> None:
        self.values = list(values)
        self.msg_ids = msg_ids
        self.as_ints = as_ints

    def next_tuple(self) -> None:
        if self.values:
            v = self.values.pop(0)
            if self.as_ints:
                v = int(v)
            self.emit([v], msg_id=repr(v) if self.msg_ids else None)


class EchoBolt(Bolt):
    """Emits its input's value again, anchored."""

    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup.values[0]], anchors=tup)
        self.ack(tup)


@pytest.mark.parametrize("value", [2 ** 64 - 1, -2 ** 63, 0, 2 ** 63,
                                   2 ** 62 - 1, 2 ** 62, -2 ** 62, -2 ** 62 - 1])
def test_integers_within_64_bits_are_emitted(value: int) -> None:
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers, kwargs={"values": [str(value)]})
    b.set_bolt("echo", EchoBolt).shuffle_grouping("numbers")
    b.set_bolt("sink", sink).shuffle_grouping("echo")
    worker = opened(b.create_topology())
    run_rounds(worker)
    assert sink.values == [[value]] and worker.failure is None


@pytest.mark.parametrize("value", [2 ** 64, -2 ** 63 - 1])
@pytest.mark.parametrize("where", ["spout", "bolt"])
def test_integers_beyond_64_bits_are_an_emit_error(value: int, where: str) -> None:
    b = TopologyBuilder()
    if where == "spout":
        b.set_spout("numbers", Numbers, kwargs={"values": [str(value)]})
        b.set_bolt("sink", Capture()).shuffle_grouping("numbers")
    else:
        b.set_spout("numbers", Numbers, kwargs={"values": [str(value)], "as_ints": False})
        b.set_bolt("echo", IntBolt).shuffle_grouping("numbers")
        b.set_bolt("sink", Capture()).shuffle_grouping("echo")
    worker = opened(b.create_topology())
    with pytest.raises(WorkerError, match="does not fit in 64 bits") as info:
        run_rounds(worker)
    assert info.value.component == ("numbers" if where == "spout" else "echo")
    assert isinstance(info.value.__cause__, EmitError)


class IntBolt(Bolt):
    """Emits the integer spelt by its input."""

    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.emit([int(tup.values[0])], anchors=tup)
        self.ack(tup)


class Counting(Spout):
    """Emits a tuple on each call while it has some; counts the calls."""

    outputs = ["v"]
    calls = 0

    def __init__(self, n: int) -> None:
        self.left = n

    def next_tuple(self) -> None:
        Counting.calls += 1
        if self.left:
            self.left -= 1
            self.emit([self.left])


@pytest.mark.parametrize("batch, per_round", [(None, 10), (1, 1), (3, 3)])
def test_a_spout_round_emits_up_to_the_batch_size(batch: Any, per_round: int) -> None:
    """``topology.spout.max.batch.size`` next_tuple calls per round (the table's 64 when unset;
    values below one are refused at submit, tests/unit/config/test_config_types.py)."""
    b = TopologyBuilder()
    b.set_spout("counting", Counting, kwargs={"n": 10})
    b.set_bolt("sink", Capture()).shuffle_grouping("counting")
    conf: dict[str, Any] = {"topology.acker.executors": 0}
    if batch is not None:
        conf["topology.spout.max.batch.size"] = batch
    worker = opened(b.create_topology(), conf)
    worker.run_once()
    assert worker.stats()["counting"]["emitted"] == per_round
    worker.run_once()
    assert worker.stats()["counting"]["emitted"] == min(10, 2 * per_round)


def test_a_spout_round_stops_at_the_first_call_that_emits_nothing() -> None:
    Counting.calls = 0
    b = TopologyBuilder()
    b.set_spout("counting", Counting, kwargs={"n": 2})
    b.set_bolt("sink", Capture()).shuffle_grouping("counting")
    worker = opened(b.create_topology(), {"topology.acker.executors": 0,
                                          "topology.spout.max.batch.size": 10})
    assert worker.run_once() == 2 + 2  # two emits, and the two executes chained into them
    assert Counting.calls == 3  # two emits, then one call that emitted nothing
    worker.run_once()
    assert Counting.calls == 4


def test_without_ackers_message_ids_are_acked_in_the_same_round() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture(ack=False)).shuffle_grouping("feeder")
    worker = opened(b.create_topology(), {"topology.acker.executors": 0,
                                          "topology.spout.max.batch.size": 5})
    for i in range(3):
        feeder.feed([i], msg_id=i)
    feeder.feed([9])  # a random message id, acked as well
    worker.run_once()
    assert feeder.acked[:3] == [0, 1, 2] and len(feeder.acked) == 4
    assert worker.stats()["feeder"]["acked"] == 4


def test_complete_latency_is_measured_for_acked_tuples() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", Capture()).shuffle_grouping("feeder")
    worker = opened(b.create_topology(), {"topology.acker.executors": 1})
    assert worker.stats()["feeder"]["complete_latency_ms"] is None
    feeder.feed([1], msg_id=1)
    run_rounds(worker)
    assert feeder.acked == [1]
    (doc,) = [d for d in worker.task_stats() if d["component"] == "feeder"]
    assert doc["latency_count"] == 1 and doc["latency_sum"] > 0
    assert worker.stats()["feeder"]["complete_latency_ms"] >= 0


class Fussy(BasicBolt):
    outputs = ["v"]

    def process(self, tup: Tuple) -> None:
        self.emit([tup.values[0]])

    def cleanup(self) -> None:
        raise RuntimeError("cleanup broke")


class FussySpout(Spout):
    outputs = ["v"]

    def close(self) -> None:
        raise ValueError("close broke")


def test_errors_while_closing_are_reported_and_every_component_still_closes() -> None:
    b = TopologyBuilder()
    b.set_spout("spout", FussySpout)
    b.set_bolt("fussy", Fussy).shuffle_grouping("spout")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    worker.stop()
    worker.run()  # stop is already set: opens, closes everything, returns
    assert "ValueError: close broke" in worker.errors["spout"][-1]["error"]
    assert "RuntimeError: cleanup broke" in worker.errors["fussy"][-1]["error"]
    assert worker.failure is None


class Reporter(Bolt):
    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        try:
            raise LookupError("deep")
        except LookupError as exc:
            self.report_error(exc)
        self.report_error(42)
        self.ack(tup)


def test_reported_errors_keep_tracebacks_and_plain_values_as_text() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("reporter", Reporter).shuffle_grouping("feeder")
    worker = opened(b.create_topology())
    feeder.feed([1])
    run_rounds(worker, 3)
    first, second = worker.errors["reporter"]
    assert first["error"].startswith("Traceback (most recent call last):")
    assert first["error"].endswith("LookupError: deep")
    assert second["error"] == "42"
    (task,) = worker.layout.component_tasks["reporter"]
    assert first["task"] == second["task"] == task
