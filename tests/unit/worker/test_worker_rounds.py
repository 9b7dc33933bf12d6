"""The executor loop round by round (``Worker.run_once`` on simulated time): fairness between
tasks, what counts as work and as a quiet loop, tuples arriving from peers, errors kept per
component, the emit observer and the per-component stats."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
import pytest
from transport_fakes import ScriptedTransport

from stormpy import Bolt, Spout, TopologyBuilder, TopologyContext, Tuple
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._fields import Fields
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig, WorkerError
from stormpy.worker.loop import EXECUTE_BUDGET
from stormpy.worker.spout_task import SPOUT_ROUND_TUPLES
from stormpy.worker.task_errors import MAX_ERRORS_KEPT


def feeder_to_sink(parallelism: int = 1, ack: bool = True) -> tuple[FeederSpout, Capture, Any]:
    feeder = FeederSpout(["word", "n"])
    sink = Capture(ack=ack)
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", sink, parallelism).shuffle_grouping("feeder")
    return feeder, sink, b.create_topology()


def opened(spec: Any, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> Worker:
    worker = Worker(WorkerConfig("t", spec, conf or {}), clock=SimulatedClock(), **kwargs)
    worker.open()
    return worker


class ManyAtOnce(Spout):
    """Emits ``per_call`` tuples per ``next_tuple`` (one ``emit_many``) until ``total``."""

    outputs = ["word", "n"]

    def __init__(self, total: int, per_call: int) -> None:
        self.total = total
        self.per_call = per_call

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.sent = 0
        self.calls = 0

    def next_tuple(self) -> None:
        k = min(self.per_call, self.total - self.sent)
        if k:
            self.calls += 1
            self.emit_many([["w", self.sent + i] for i in range(k)])
            self.sent += k


def many_to_sink(total: int, per_call: int,
                 conf: dict[str, Any] | None = None) -> tuple[Any, Capture, Worker]:
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("many", ManyAtOnce, kwargs={"total": total, "per_call": per_call})
    b.set_bolt("sink", sink).shuffle_grouping("many")
    # queued tuples only (no chaining): these tests count what each round queues and runs
    worker = opened(b.create_topology(), {"topology.acker.executors": 0,
                                          "topology.worker.chaining": False, **(conf or {})})
    spout = next(r.instance for r in worker.tasks.values() if r.component_id == "many")
    return spout, sink, worker


def test_a_task_runs_at_most_the_execute_budget_per_round() -> None:
    n = EXECUTE_BUDGET + 500
    _, sink, worker = many_to_sink(n, n)
    worker.run_once()  # the spout emits all of them into the sink's queue in one call
    assert sink.tuples == []
    worker.run_once()
    assert len(sink.tuples) == EXECUTE_BUDGET
    assert worker.stats()["sink"]["executed"] == EXECUTE_BUDGET
    worker.run_once()
    assert [v[1] for v in sink.values] == list(range(n))
    assert worker.stats()["sink"]["executed"] == n


def test_a_spout_round_ends_once_it_emitted_the_round_s_tuples() -> None:
    # 512 per call: the round ends with the call that reaches SPOUT_ROUND_TUPLES (the 2nd),
    # long before topology.spout.max.batch.size (64) calls
    spout, sink, worker = many_to_sink(10_000, 512)
    worker.run_once()
    assert spout.calls == 2 and spout.sent == 1024 and sink.tuples == []
    worker.run_once()  # the bolt gets them, then the spout its next round (counted from its start)
    assert len(sink.tuples) == 1024 and spout.calls == 4
    # 500 per call: the call that passes the mark ends the round (the 3rd)
    spout, sink, worker = many_to_sink(10_000, 500)
    worker.run_once()
    assert spout.calls == 3 and spout.sent == 1500
    # one tuple per call: the batch size is the limit (64 calls)
    spout, sink, worker = many_to_sink(10_000, 1)
    worker.run_once()
    assert spout.calls == 64 and spout.sent == 64
    assert SPOUT_ROUND_TUPLES == 1024


def test_topology_producer_batch_size_sets_the_tuples_a_spout_round_may_emit() -> None:
    spout, sink, worker = many_to_sink(10_000, 5, {"topology.producer.batch.size": 12})
    worker.run_once()  # 5, 10, 15: the call that reaches 12 ends the round
    assert spout.calls == 3 and spout.sent == 15
    spout, sink, worker = many_to_sink(10_000, 1, {"topology.producer.batch.size": 1})
    worker.run_once()  # Storm's default (1): one tuple per round
    assert spout.calls == 1 and spout.sent == 1


def test_executed_counts_bolt_tuples_not_the_acker_replies_a_spout_consumes() -> None:
    feeder, sink, spec = feeder_to_sink()
    worker = opened(spec, {"topology.acker.executors": 1})
    for i in range(3):
        feeder.feed(["w", i], msg_id=i)
    for _ in range(4):
        worker.run_once()
    assert sorted(feeder.acked) == [0, 1, 2]
    stats = worker.stats()
    assert stats["sink"]["executed"] == 3 and stats["sink"]["acked"] == 3
    assert stats["feeder"]["executed"] == 0 and stats["feeder"]["acked"] == 3
    assert set(stats) == {"feeder", "sink"}  # the acker is not a user component
    assert {d["component"] for d in worker.task_stats()} == {"feeder", "sink", "__acker"}


def test_rounds_count_and_the_loop_is_quiet_after_enough_idle_rounds() -> None:
    feeder, _sink, spec = feeder_to_sink()
    worker = opened(spec, {"topology.acker.executors": 0, "topology.worker.chaining": False})
    assert worker.run_once() == 0 and worker.rounds == 1 and worker.quiet_rounds == 1
    assert not worker.is_quiet(2)
    assert worker.run_once() == 0
    assert worker.is_quiet(2) and not worker.is_quiet(3) and not worker.is_quiet()
    worker.run_once()
    assert worker.is_quiet() and worker.quiet_rounds == 3
    feeder.feed(["w", 1])
    assert worker.run_once() == 1  # one tuple emitted
    assert worker.quiet_rounds == 0 and not worker.is_quiet(1)
    assert worker.run_once() == 1  # one tuple executed
    assert worker.rounds == 5


def test_callbacks_count_as_work() -> None:
    _feeder, _sink, spec = feeder_to_sink()
    worker = opened(spec, {"topology.acker.executors": 0})
    ran: list[int] = []
    worker.call_soon_threadsafe(lambda: ran.append(1))
    worker.call_soon_threadsafe(lambda: ran.append(2))
    assert not worker.is_quiet(0)  # a callback is pending
    assert worker.run_once() == 2 and ran == [1, 2]
    assert worker.is_quiet(0)


def test_tuples_from_peers_carry_their_source_and_its_stream_fields() -> None:
    feeder, sink, spec = feeder_to_sink(parallelism=2)
    transport = ScriptedTransport()
    probe = Worker(WorkerConfig("t", spec, {}, local_tasks=[]))
    tasks = probe.layout.component_tasks
    here = [tasks["sink"][0]]
    worker = Worker(WorkerConfig("t", spec, {}, local_tasks=here,
                                 task_peers={t: "b" for t in probe.layout.task_component
                                             if t not in here}),
                    transport=transport, clock=SimulatedClock())
    worker.open()
    src = tasks["feeder"][0]
    transport.inbox.append(msgpack.packb([
        [here[0], "default", src, 0, 0, None, ["a", 1]],
        [tasks["sink"][1], "default", src, 0, 0, None, ["not here", 2]],  # a task of the peer
        [here[0], "default", 999, 0, 0, None, ["from nowhere", 3]],
    ]))
    # the tuple for this worker is received and executed in the same round; the one for a task of
    # the peer and the one from an unknown source are refused at the inbound check and counted
    assert worker.run_once() == 2
    (first,) = sink.tuples
    assert first.values == ["a", 1] and first.component == "feeder" and first.task == src
    assert first.fields == Fields(["word", "n"]) and first["word"] == "a"
    assert sum(worker.rejected.values()) == 2


def test_frames_are_taken_a_bounded_number_per_round() -> None:
    feeder, sink, spec = feeder_to_sink(parallelism=2)
    transport = ScriptedTransport()
    probe = Worker(WorkerConfig("t", spec, {}, local_tasks=[]))
    tasks = probe.layout.component_tasks
    here = [tasks["sink"][0]]
    worker = Worker(WorkerConfig("t", spec, {}, local_tasks=here), transport=transport,
                    clock=SimulatedClock())
    worker.open()
    frame = msgpack.packb([[here[0], "default", tasks["feeder"][0], 0, 0, None, ["a", 1]]])
    transport.inbox.extend([frame] * 100)
    assert worker.run_once() == 2 * 64  # 64 received, and executed in the same round
    assert len(sink.tuples) == 64
    assert worker.run_once() == 2 * 36
    assert len(sink.tuples) == 100


class Failing(Bolt):
    outputs = ["v"]

    def execute(self, tup: Tuple) -> None:
        self.report_error(f"bad {tup.values[0]}")
        self.ack(tup)


def test_errors_are_kept_per_component_the_latest_ten_with_time_and_task() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("failing", Failing).shuffle_grouping("feeder")
    heard: list[tuple[str, int, str]] = []
    clock = SimulatedClock()
    conf = {"topology.acker.executors": 0, "topology.max.error.report.per.interval": 100}
    worker = Worker(WorkerConfig("t", b.create_topology(), conf),
                    clock=clock, on_error=lambda c, t, text: heard.append((c, t, text)))
    worker.open()
    (task,) = worker.layout.component_tasks["failing"]
    for i in range(MAX_ERRORS_KEPT + 2):
        feeder.feed([i])
    clock.advance(7)
    for _ in range(3):
        worker.run_once()
    kept = list(worker.errors["failing"])
    assert len(kept) == MAX_ERRORS_KEPT == 10
    assert [e["error"] for e in kept] == [f"bad {i}" for i in range(2, MAX_ERRORS_KEPT + 2)]
    assert {k: kept[0][k] for k in ("component", "task", "error")} == {
        "component": "failing", "task": task, "error": "bad 2"}
    assert isinstance(kept[0]["time"], float)  # wall-clock time of the error, as Storm reports
    assert heard[0] == ("failing", task, "bad 0") and len(heard) == MAX_ERRORS_KEPT + 2


def test_a_failing_error_listener_does_not_stop_the_worker() -> None:
    feeder = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("failing", Failing).shuffle_grouping("feeder")

    def deaf(component: str, task: int, text: str) -> None:
        raise RuntimeError("listener down")
    worker = opened(b.create_topology(), {"topology.acker.executors": 0}, on_error=deaf)
    feeder.feed([1])
    feeder.feed([2])
    for _ in range(3):
        worker.run_once()
    assert [e["error"] for e in worker.errors["failing"]] == ["bad 1", "bad 2"]
    assert worker.failure is None


def test_the_observer_sees_every_user_emit_with_its_targets() -> None:
    feeder, sink, spec = feeder_to_sink()
    seen: list[tuple[str, str, list[Any], list[int]]] = []
    worker = opened(spec, {}, observer=lambda c, s, v, t: seen.append((c, s, v, t)))
    feeder.feed(["w", 1], msg_id="m")
    for _ in range(3):
        worker.run_once()
    (sink_task,) = worker.layout.component_tasks["sink"]
    assert seen == [("feeder", "default", ["w", 1], [sink_task])]


class OpenFails(Spout):
    outputs = ["v"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        raise KeyError("no such setting")

    def next_tuple(self) -> None:
        pass


def test_a_component_failing_to_open_is_a_worker_error_naming_it() -> None:
    b = TopologyBuilder()
    b.set_spout("opener", OpenFails)
    b.set_bolt("sink", Capture()).shuffle_grouping("opener")
    worker = Worker(WorkerConfig("t", b.create_topology(), {}), clock=SimulatedClock())
    (task,) = worker.layout.component_tasks["opener"]
    with pytest.raises(WorkerError) as info:
        worker.open()
    assert str(info.value) == f"component 'opener' task {task} raised KeyError: 'no such setting'"
    assert info.value.component == "opener" and info.value.task == task
    assert isinstance(info.value.__cause__, KeyError)
    assert "KeyError: 'no such setting'" in worker.errors["opener"][-1]["error"]


class Switch(Spout):
    outputs = ["v"]
    events: list[str] = []

    def activate(self) -> None:
        Switch.events.append("on")

    def deactivate(self) -> None:
        Switch.events.append("off")

    def next_tuple(self) -> None:
        self.emit(["x"])


def test_activation_reaches_spouts_once_opened_and_only_on_change() -> None:
    Switch.events.clear()
    b = TopologyBuilder()
    b.set_spout("switch", Switch)
    b.set_bolt("sink", Capture()).shuffle_grouping("switch")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 0},
                                 active=False), clock=SimulatedClock())
    worker.set_active(True)  # before open: remembered, applied when the spouts open
    worker.run_once()
    assert worker.active and Switch.events == []
    worker.open()
    assert Switch.events == ["on"]
    worker.set_active(True)
    worker.run_once()
    assert Switch.events == ["on"]
    worker.set_active(False)
    worker.run_once()
    assert Switch.events == ["on", "off"] and not worker.active
    emitted = worker.stats()["switch"]["emitted"]
    worker.run_once()
    assert worker.stats()["switch"]["emitted"] == emitted  # inactive: no next_tuple
