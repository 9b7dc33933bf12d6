"""What task hooks are told, field by field: every emit form of spouts and bolts (values, stream,
emitting task, the tasks it went to, and what the wrapped emit returns), spout acks and fails with
and without ackers (complete latency only when an acker replied), a spout's own ack_many and
fail_many, and a bolt's acks and fails inside and outside ``execute``."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, FailedException, Spout, Stream, TopologyBuilder
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._context import TopologyContext
from stormpy.topology._hooks import TaskHook
from stormpy.topology._tuple import Tuple

INFOS: list[tuple[str, str, dict[str, Any]]] = []
_LOCK = threading.Lock()
HOOKS = {"topology.auto.task.hooks": [f"{__name__}:InfoHook"]}


class InfoHook(TaskHook):
    """Keeps every info object's fields as (event, component, fields)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.component = context.component_id

    def _keep(self, event: str, info: Any) -> None:
        fields = dict(vars(info)) if hasattr(info, "__dict__") else \
            {name: getattr(info, name) for name in info.__dataclass_fields__}
        with _LOCK:
            INFOS.append((event, self.component, fields))

    def emit(self, info: Any) -> None:
        self._keep("emit", info)

    def spout_ack(self, info: Any) -> None:
        self._keep("spout_ack", info)

    def spout_fail(self, info: Any) -> None:
        self._keep("spout_fail", info)

    def bolt_execute(self, info: Any) -> None:
        self._keep("bolt_execute", info)

    def bolt_ack(self, info: Any) -> None:
        self._keep("bolt_ack", info)

    def bolt_fail(self, info: Any) -> None:
        self._keep("bolt_fail", info)


def infos(event: str, component: str) -> list[dict[str, Any]]:
    with _LOCK:
        return [f for e, c, f in INFOS if e == event and c == component]


class FormsSpout(Spout):
    """Once: emit on "main", emit_direct on "direct" to the sink's last task, emit_batch of a
    generator on "main"; keeps (in class lists: the topology builds its own instance) what each
    emit returned and the ids acked and failed."""

    outputs = [Stream(["v"], name="main"), Stream(["v"], name="direct", direct=True)]
    returned: list[Any] = []
    acked: list[Any] = []
    failed: list[Any] = []
    sink_last: list[int] = []

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.done = False
        FormsSpout.sink_last.append(context.tasks_of("sink")[-1])

    def next_tuple(self) -> None:
        if self.done:
            return
        self.done = True
        self.returned.append(self.emit(["one"], "m1", "main"))
        self.returned.append(self.emit_direct(self.sink_last[-1], ["two"], "m2", "direct"))
        self.returned.append(self.emit_batch(([v] for v in ("b1", "b2")), ["mb1", "mb2"], "main"))

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.append(msg_id)


class ManySpout(FormsSpout):
    """FormsSpout with its own ack_many / fail_many."""

    def ack_many(self, msg_ids: list[Any]) -> None:
        self.acked.append(("many", list(msg_ids)))

    def fail_many(self, msg_ids: list[Any]) -> None:
        self.failed.append(("many", list(msg_ids)))


class Relay(Bolt):
    """Emits the value on "out" anchored (and emit_direct on "direct-out" to the last sink task),
    then acks; fails "two" instead. Acks or fails the *previous* input outside execute's own
    tuple when told to (``late``)."""

    outputs = [Stream(["v"], name="out"), Stream(["v"], name="direct-out", direct=True)]
    returned: list[Any] = []

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.last = context.tasks_of("end")[-1]

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == "two":
            self.fail(tup)
            return
        Relay.returned.append(self.emit([tup.values[0] + "!"], tup, "out"))
        Relay.returned.append(self.emit_direct(self.last, [tup.values[0] + "?"], tup, "direct-out"))
        self.ack(tup)


class End(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


class FailStream(Bolt):
    """Fails what comes on the stream it is given, acks the rest."""

    def __init__(self, stream: str) -> None:
        self.stream = stream

    def execute(self, tup: Tuple) -> None:
        (self.fail if tup.stream == self.stream else self.ack)(tup)


def forms_topology(spout: type[Spout], end: type[Bolt] = End,
                   end_kwargs: dict[str, Any] | None = None) -> Any:
    b = TopologyBuilder()
    b.set_spout("src", spout)
    b.set_bolt("sink", Relay, 2).shuffle_grouping("src", "main").direct_grouping("src", "direct")
    b.set_bolt("end", end, 2, kwargs=end_kwargs or {}).shuffle_grouping("sink", "out").direct_grouping(
        "sink", "direct-out")
    return b.create_topology()


@pytest.mark.parametrize("stream", ["out", "direct-out"])
def test_a_hooked_bolt_still_anchors_each_emit_form(stream: str) -> None:
    """A downstream fail of what the hooked bolt emitted, on either emit form, fails the spout
    tuples it was anchored to."""
    cluster = LocalCluster(simulated_time=True)
    try:
        cluster.submit_topology("t", HOOKS, forms_topology(FormsSpout, FailStream, {"stream": stream}))
        cluster.wait_for(lambda: len(FormsSpout.failed) == 4, 10, "every spout tuple failed")
        assert sorted(FormsSpout.failed) == ["m1", "m2", "mb1", "mb2"] and FormsSpout.acked == []
    finally:
        cluster.shutdown()


def setup_function() -> None:
    INFOS.clear()
    for kept in (Relay.returned, FormsSpout.returned, FormsSpout.acked, FormsSpout.failed,
                 FormsSpout.sink_last):
        kept.clear()


def run_forms(spout: type[FormsSpout], conf: dict[str, Any]) -> Any:
    cluster = LocalCluster(simulated_time=True)
    worker = cluster.submit_topology("t", {**HOOKS, **conf}, forms_topology(spout))
    cluster.wait_for(lambda: len(infos("bolt_execute", "end")) == 6, 10, "the relayed tuples")
    cluster.wait_until_quiet("t")
    return cluster, worker


def test_every_spout_emit_form_tells_the_hooks_its_values_stream_task_and_targets() -> None:
    spout = FormsSpout
    cluster, worker = run_forms(spout, {})
    try:
        src = worker.layout.component_tasks["src"][0]
        emits = infos("emit", "src")
        assert [(e["values"], e["stream"], e["task_id"]) for e in emits] == [
            (["one"], "main", src), (["two"], "direct", src), (["b1"], "main", src), (["b2"], "main", src)]
        one, direct, batch = spout.returned
        assert emits[0]["out_tasks"] == one and len(one) == 1
        assert direct is None and emits[1]["out_tasks"] == spout.sink_last
        assert [e["out_tasks"] for e in emits[2:]] == batch and all(len(t) == 1 for t in batch)
    finally:
        cluster.shutdown()


def test_every_bolt_emit_form_tells_the_hooks_and_returns_the_targets() -> None:
    cluster, worker = run_forms(FormsSpout, {})
    try:
        sinks = set(worker.layout.component_tasks["sink"])
        last_end = worker.layout.component_tasks["end"][-1]
        emits = infos("emit", "sink")
        assert sorted((e["values"][0], e["stream"]) for e in emits) == [
            ("b1!", "out"), ("b1?", "direct-out"), ("b2!", "out"), ("b2?", "direct-out"),
            ("one!", "out"), ("one?", "direct-out")]
        assert {e["task_id"] for e in emits} <= sinks
        out_targets = [e["out_tasks"] for e in emits if e["stream"] == "out"]
        assert sorted(map(tuple, out_targets)) == sorted(tuple(r) for r in Relay.returned if r is not None)
        assert [e["out_tasks"] for e in emits if e["stream"] == "direct-out"] == [[last_end]] * 3
        assert Relay.returned.count(None) == 3  # emit_direct returns nothing
    finally:
        cluster.shutdown()


def test_acker_replies_carry_the_complete_latency_and_a_bolt_fail_reaches_spout_fail() -> None:
    spout = FormsSpout
    cluster, worker = run_forms(spout, {})
    try:
        cluster.wait_for(lambda: len(spout.acked) == 3 and spout.failed == ["m2"], 10, "the outcomes")
        src = worker.layout.component_tasks["src"][0]
        acks = infos("spout_ack", "src")
        assert sorted(a["message_id"] for a in acks) == ["m1", "mb1", "mb2"]
        assert all(a["spout_task_id"] == src and a["complete_latency_ms"] >= 0 for a in acks)
        # the two ids of the batch share their tree's latency
        batch = [a["complete_latency_ms"] for a in acks if a["message_id"] in ("mb1", "mb2")]
        assert batch[0] == batch[1]
        fails = infos("spout_fail", "src")
        assert [(f["message_id"], f["spout_task_id"]) for f in fails] == [("m2", src)]
        assert fails[0]["fail_latency_ms"] >= 0
        bolt_fails = infos("bolt_fail", "sink")
        assert [f["tuple"].values for f in bolt_fails] == [["two"]]
        assert bolt_fails[0]["failing_task_id"] in worker.layout.component_tasks["sink"]
        assert bolt_fails[0]["fail_latency_ms"] >= 0  # failed inside its execute
        bolt_acks = infos("bolt_ack", "sink")
        assert sorted(a["tuple"].values[0] for a in bolt_acks) == ["b1", "b2", "one"]
        sinks = worker.layout.component_tasks["sink"]
        assert all(a["process_latency_ms"] >= 0 and a["acking_task_id"] in sinks for a in bolt_acks)
        executes = infos("bolt_execute", "sink")
        assert sorted(e["tuple"].values[0] for e in executes) == ["b1", "b2", "one", "two"]
        assert all(e["execute_latency_ms"] >= 0 and e["executing_task_id"] in sinks for e in executes)
    finally:
        cluster.shutdown()


def test_without_ackers_spout_acks_have_no_latency_and_own_ack_many_is_seen_per_id() -> None:
    spout = ManySpout
    cluster, worker = run_forms(spout, {"topology.acker.executors": 0})
    try:
        cluster.wait_for(lambda: len(infos("spout_ack", "src")) == 4, 10, "the acks")
        src = worker.layout.component_tasks["src"][0]
        acks = infos("spout_ack", "src")
        assert sorted(a["message_id"] for a in acks) == ["m1", "m2", "mb1", "mb2"]
        assert all(a["complete_latency_ms"] is None and a["spout_task_id"] == src for a in acks)
        assert infos("spout_fail", "src") == []
        # the spout's own methods still get every id: singles to ack, the batch to its ack_many
        assert sorted(map(str, spout.acked)) == sorted(map(str, ["m1", "m2", ("many", ["mb1", "mb2"])]))
    finally:
        cluster.shutdown()


CLOCK = [1000.0]


class Timed(BasicBolt):
    """Each execute takes 0.25 s on the hooks' clock; fails "bad" (FailedException)."""

    def process(self, tup: Tuple) -> None:
        CLOCK[0] += 0.25
        if tup.values[0] == "bad":
            raise FailedException("bad")


class Holder(Bolt):
    """Each execute takes 0.25 s; acks "now" at once, holds "later-ack" and "later-fail" and
    settles them (outside their own execute) when "flush" comes."""

    held: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        CLOCK[0] += 0.25
        value = tup.values[0]
        if value.startswith("later"):
            Holder.held.append(tup)
            return
        if value == "flush":
            for held in Holder.held:
                (self.ack if held.values[0] == "later-ack" else self.fail)(held)
        self.ack(tup)


def test_latencies_are_milliseconds_of_the_execute_and_none_outside_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import stormpy.worker.hooks as worker_hooks

    monkeypatch.setattr(worker_hooks, "perf_counter", lambda: CLOCK[0])
    Holder.held.clear()
    feeder, basic_feeder = FeederSpout(["v"]), FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_spout("basic-feed", basic_feeder)
    b.set_bolt("holder", Holder).shuffle_grouping("feed")
    b.set_bolt("timed", Timed).shuffle_grouping("basic-feed")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", HOOKS, b.create_topology())
        for value in ("now", "later-ack", "later-fail"):
            feeder.feed([value])
            cluster.wait_for(lambda v=value: any(e["tuple"].values == [v]
                                                 for e in infos("bolt_execute", "holder")),
                             10, f"{value} executed")
        feeder.feed(["flush"])
        basic_feeder.feed(["good"])
        basic_feeder.feed(["bad"])
        cluster.wait_for(lambda: len(infos("bolt_execute", "holder")) == 4
                         and len(infos("bolt_execute", "timed")) == 2, 10, "every execute")
        cluster.wait_until_quiet("t")
    assert [e["execute_latency_ms"] for e in infos("bolt_execute", "holder")] == [250.0] * 4
    acks = {a["tuple"].values[0]: a["process_latency_ms"] for a in infos("bolt_ack", "holder")}
    assert acks == {"now": 250.0, "later-ack": None, "flush": 250.0}
    assert [(f["tuple"].values[0], f["fail_latency_ms"]) for f in infos("bolt_fail", "holder")] == [
        ("later-fail", None)]
    # a BasicBolt's automatic ack or fail: the latency of its process()
    timed_acks = [(a["tuple"].values[0], a["process_latency_ms"]) for a in infos("bolt_ack", "timed")]
    timed_fails = [(f["tuple"].values[0], f["fail_latency_ms"]) for f in infos("bolt_fail", "timed")]
    assert timed_acks == [("good", 250.0)] and timed_fails == [("bad", 250.0)]


class StuckBatchSpout(Spout):
    """Once: "ok" (message id m1), then a batch of two that the sink never acks; its own
    ack, fail and fail_many keep what they get."""

    outputs = ["v"]
    got: list[Any] = []

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.done = False

    def next_tuple(self) -> None:
        if not self.done:
            self.done = True
            self.emit(["ok"], "m1")
            self.emit(["stuck"], "m2")
            self.emit_batch([["stuck"], ["stuck"]], ["mb1", "mb2"])

    def ack(self, msg_id: Any) -> None:
        StuckBatchSpout.got.append(("ack", msg_id))

    def fail(self, msg_id: Any) -> None:
        StuckBatchSpout.got.append(("fail", msg_id))

    def fail_many(self, msg_ids: list[Any]) -> None:
        StuckBatchSpout.got.append(("fail_many", list(msg_ids)))


class AcksOk(Bolt):
    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == "ok":
            self.ack(tup)


def test_a_timed_out_batch_reaches_fail_many_and_its_ids_the_hooks_after_an_acker_reply() -> None:
    StuckBatchSpout.got.clear()
    b = TopologyBuilder()
    b.set_spout("src", StuckBatchSpout)
    b.set_bolt("sink", AcksOk).shuffle_grouping("src")
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", {**HOOKS, "topology.message.timeout.secs": 2},
                                         b.create_topology())
        cluster.wait_for(lambda: StuckBatchSpout.got == [("ack", "m1")], 10, "m1 acked by the acker")
        cluster.advance_time(4)
        cluster.wait_for(lambda: len(StuckBatchSpout.got) == 3, 10, "m2 and the batch timed out")
    src = worker.layout.component_tasks["src"][0]
    assert StuckBatchSpout.got[0] == ("ack", "m1")
    timed_out = [("fail", "m2"), ("fail_many", ["mb1", "mb2"])]
    assert sorted(map(str, StuckBatchSpout.got[1:])) == sorted(map(str, timed_out))
    assert [(a["message_id"], a["spout_task_id"]) for a in infos("spout_ack", "src")] == [("m1", src)]
    # timed out, not replied to: no latency; one event per id of the batch
    fails = [(f["message_id"], f["spout_task_id"], f["fail_latency_ms"]) for f in infos("spout_fail", "src")]
    assert sorted(fails) == [("m2", src, None), ("mb1", src, None), ("mb2", src, None)]


@pytest.mark.parametrize("bad", [5, {"a": "b"}])
def test_auto_task_hooks_must_be_a_list(bad: Any) -> None:
    from stormpy.worker.hooks import auto_hooks

    with pytest.raises(ValueError, match="topology.auto.task.hooks must be a list of TaskHook class"):
        auto_hooks({"topology.auto.task.hooks": bad})
