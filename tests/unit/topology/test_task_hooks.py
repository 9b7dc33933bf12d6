"""Task hooks (Storm's ITaskHook): registered from ``topology.auto.task.hooks`` or
``context.add_task_hook``, they see a task's emits, acks, fails and executes."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, FailedException, TopologyBuilder
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._context import TopologyContext
from stormpy.topology._hooks import TaskHook
from stormpy.topology._tuple import Tuple
from stormpy.worker.errors import WorkerError

EVENTS: list[tuple[str, str, Any]] = []
_LOCK = threading.Lock()


class RecordingHook(TaskHook):
    """Notes every callback as (event, component, detail)."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.component = context.component_id
        self._note("prepare", context.task_id)

    def _note(self, event: str, detail: Any) -> None:
        with _LOCK:
            EVENTS.append((event, self.component, detail))

    def cleanup(self) -> None:
        self._note("cleanup", None)

    def emit(self, info: Any) -> None:
        self._note("emit", (info.stream, info.values, len(info.out_tasks)))

    def spout_ack(self, info: Any) -> None:
        assert info.complete_latency_ms is not None and info.complete_latency_ms >= 0
        self._note("spout_ack", info.message_id)

    def spout_fail(self, info: Any) -> None:
        self._note("spout_fail", info.message_id)

    def bolt_execute(self, info: Any) -> None:
        assert info.execute_latency_ms >= 0
        self._note("bolt_execute", info.tuple.values)

    def bolt_ack(self, info: Any) -> None:
        assert info.process_latency_ms is not None
        self._note("bolt_ack", info.tuple.values)

    def bolt_fail(self, info: Any) -> None:
        self._note("bolt_fail", info.tuple.values)


class Upper(BasicBolt):
    """Emits the word upper-cased; fails "bad"."""

    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        if tup.values[0] == "bad":
            raise FailedException("bad word")
        self.emit([tup.values[0].upper()])


class HookedSink(Bolt):
    """Registers a hook from prepare and acks everything."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        context.add_task_hook(RecordingHook())

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


@pytest.fixture(autouse=True)
def _clear() -> None:
    EVENTS.clear()


def _events(kind: str | None = None) -> list[tuple[str, str, Any]]:
    with _LOCK:
        return [e for e in EVENTS if kind is None or e[0] == kind]


def test_hooks_from_config_and_from_the_context_see_every_event() -> None:
    feeder = FeederSpout(["word"])
    b = TopologyBuilder()
    b.set_spout("feed", feeder).add_configuration(
        "topology.auto.task.hooks", [f"{__name__}:RecordingHook"])
    b.set_bolt("upper", Upper).shuffle_grouping("feed").add_configuration(
        "topology.auto.task.hooks", [f"{__name__}.RecordingHook"])
    b.set_bolt("sink", HookedSink).shuffle_grouping("upper")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        ok, bad = feeder.feed(["a"]), feeder.feed(["bad"])
        cluster.wait_for(lambda: len(feeder.acked) + len(feeder.failed) == 2, what="both feeds")
        cluster.wait_until_quiet("t")
        assert {(e[1]) for e in _events("prepare")} == {"feed", "upper", "sink"}
        assert ("spout_ack", "feed", ok) in _events() and ("spout_fail", "feed", bad) in _events()
        assert ("emit", "feed", ("default", ["a"], 1)) in _events()
        assert ("emit", "upper", ("default", ["A"], 1)) in _events()
        assert ("bolt_ack", "upper", ["a"]) in _events()
        assert ("bolt_fail", "upper", ["bad"]) in _events()
        assert sorted(e[2] for e in _events("bolt_execute") if e[1] == "upper") == [["a"], ["bad"]]
        assert [e[1:] for e in _events("bolt_ack") if e[1] == "sink"] == [("sink", ["A"])]
        assert _events("cleanup") == []
    assert sorted(e[1] for e in _events("cleanup")) == ["feed", "sink", "upper"]


class EmitOneAndAck(Bolt):
    """Emits each input's word once, anchored, and acks the input."""

    outputs = ["word"]

    def execute(self, tup: Tuple) -> None:
        self.emit([tup.values[0]], anchors=tup)
        self.ack(tup)


def test_hooks_see_the_components_emits_and_no_acking_messages() -> None:
    # documented difference: Storm's emit hook also sees the task's messages to the acker (two
    # emits per input for this bolt); stormpy folds acks per worker and round, no message per ack
    feeder = FeederSpout(["word"])
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("one", EmitOneAndAck).shuffle_grouping("feed")
    b.set_bolt("sink", HookedSink).shuffle_grouping("one")
    conf = {"topology.auto.task.hooks": [f"{__name__}:RecordingHook"], "topology.acker.executors": 1}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        words = ["a", "b", "c"]
        ids = [feeder.feed([w]) for w in words]
        cluster.wait_for(lambda: sorted(feeder.acked) == sorted(ids), what="three trees acked")
        cluster.wait_until_quiet("t")
        emits = [e[1:] for e in _events("emit")]
        assert sorted(emits) == sorted([("feed", ("default", [w], 1)) for w in words]
                                       + [("one", ("default", [w], 1)) for w in words])
        assert sorted(e[2] for e in _events("bolt_ack") if e[1] == "one") == [[w] for w in words]
        assert sorted(e[2] for e in _events("spout_ack")) == sorted(ids)


class NeverAcks(Bolt):
    def execute(self, tup: Tuple) -> None:
        """Holds every input un-acked, so its spout tuple times out."""


def test_a_timed_out_spout_tuple_reaches_spout_fail() -> None:
    feeder = FeederSpout(["word"])
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("sink", NeverAcks).shuffle_grouping("feed")
    conf = {"topology.auto.task.hooks": [f"{__name__}:RecordingHook"],
            "topology.message.timeout.secs": 2}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        msg = feeder.feed(["a"])
        cluster.wait_for(lambda: ("bolt_execute", "sink", ["a"]) in _events(), what="execute")
        cluster.advance_time(4)
        assert feeder.failed == [msg]
        assert ("spout_fail", "feed", msg) in _events()


def test_a_bad_hook_path_is_an_error_naming_it() -> None:
    feeder = FeederSpout(["word"])
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("sink", NeverAcks).shuffle_grouping("feed")
    with LocalCluster(simulated_time=True) as cluster, \
            pytest.raises(WorkerError, match="task hooks.*no_such_module:Hook"):
        cluster.submit_topology("t", {"topology.auto.task.hooks": ["no_such_module:Hook"]},
                                b.create_topology())


def test_add_task_hook_refuses_what_is_not_a_hook() -> None:
    with pytest.raises(TypeError, match="TaskHook"):
        _context().add_task_hook(object())


def _context() -> TopologyContext:
    from stormpy.topology._layout import compute_layout
    b = TopologyBuilder()
    b.set_spout("feed", FeederSpout(["word"]))
    spec = b.create_topology()
    layout = compute_layout(spec, {})
    return TopologyContext("t", spec, layout, layout.component_tasks["feed"][0], [], {})
