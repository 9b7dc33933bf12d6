"""Runtime semantics that match Storm 2.x (docs/storm-semantics.md): inactive submission,
``topology.tasks``, ``topology.max.task.parallelism`` and the ``__system`` startup stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from stormpy import BasicBolt, Bolt, InvalidTopologyError, Spout, TopologyBuilder
from stormpy.testing import Capture, FeederSpout, LocalCluster, complete_topology
from stormpy.topology._context import TopologyContext
from stormpy.topology._layout import compute_layout
from stormpy.topology._tuple import Tuple

OPENED: list[str] = []
_LOCK = threading.Lock()


class RecordingSpout(Spout):
    """Notes its open() and emits nothing."""

    outputs = ["x"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        with _LOCK:
            OPENED.append(f"spout:{context.task_id}")

    def next_tuple(self) -> None:
        pass


class RecordingBolt(Bolt):
    """Notes its prepare() and acks."""

    outputs = ["x"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        with _LOCK:
            OPENED.append(f"bolt:{context.task_id}")

    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


class WordSpout(Spout):
    outputs = ["word"]


class Identity(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        self.emit(tup.values)


@pytest.fixture(autouse=True)
def _clear() -> None:
    OPENED.clear()


def _opened() -> list[str]:
    with _LOCK:
        return sorted(OPENED)


# -- 1. a topology submitted inactive opens nothing until activated ------------------------------
@pytest.mark.parametrize("workers", [1, 2])
def test_inactive_topology_calls_no_open_or_prepare_until_activated(workers: int) -> None:
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout)
    b.set_bolt("b", RecordingBolt).shuffle_grouping("s")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology(), active=False, workers=workers)
        cluster.advance_time(3)
        assert _opened() == []
        cluster.activate("t")
        cluster.wait_for(lambda: len(_opened()) == 2, what="open and prepare after activation")
        assert {o.split(":")[0] for o in _opened()} == {"spout", "bolt"}


def test_inactive_topology_queues_tuples_until_activated_and_then_runs_them() -> None:
    feeder = FeederSpout(["word"])
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("sink", capture).shuffle_grouping("feed")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology(), active=False)
        msg = feeder.feed(["a"])
        cluster.advance_time(2)
        assert capture.values == [] and feeder.acked == []
        cluster.activate("t")
        cluster.wait_for(lambda: feeder.acked == [msg], what="the feed acked after activation")
        assert capture.values == [["a"]]


# -- 2. topology.tasks ---------------------------------------------------------------------------
def _two_over_four() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout)
    b.set_bolt("b", RecordingBolt, 2).shuffle_grouping("s").add_configuration("topology.tasks", 4)
    return b


def test_component_config_topology_tasks_gives_that_many_tasks_over_the_executors() -> None:
    spec = _two_over_four().create_topology()
    layout = compute_layout(spec, {"topology.acker.executors": 0})
    assert len(layout.component_tasks["b"]) == 4
    assert [(e.start_task, e.end_task) for e in layout.executors if e.component == "b"] == \
        [(1, 2), (3, 4)]
    # a rebalance changes executors up to the task count (Nimbus refuses more, see
    # test_nimbus_monitor.py); a count beyond it that reached the layout is capped
    again = compute_layout(spec, {"topology.acker.executors": 0}, {"b": 4})
    assert sum(1 for e in again.executors if e.component == "b") == 4
    capped = compute_layout(spec, {"topology.acker.executors": 0}, {"b": 9})
    assert sum(1 for e in capped.executors if e.component == "b") == 4


def test_topology_tasks_runs_four_bolt_tasks_in_local_mode() -> None:
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, _two_over_four().create_topology())
        cluster.wait_for(lambda: len(_opened()) == 5, what="1 spout and 4 bolt tasks prepared")
        assert sum(1 for o in _opened() if o.startswith("bolt:")) == 4


def test_set_num_tasks_is_the_topology_tasks_config() -> None:
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout).set_num_tasks(3).add_configuration("topology.tasks", 5)
    spec = b.create_topology()
    assert spec.components["s"].num_tasks == 5
    with pytest.raises(InvalidTopologyError, match="tasks must be an integer >= 1"):
        b2 = TopologyBuilder()
        b2.set_spout("s", RecordingSpout).add_configuration("topology.tasks", 0)
        b2.create_topology()


# -- 3. topology.max.task.parallelism ------------------------------------------------------------
def test_max_task_parallelism_caps_tasks_and_executors() -> None:
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout, 4)
    b.set_bolt("b", RecordingBolt, 6).shuffle_grouping("s").set_max_task_parallelism(1)
    b.set_bolt("c", RecordingBolt, 2).shuffle_grouping("s").set_num_tasks(8)
    spec = b.create_topology()
    layout = compute_layout(spec, {"topology.acker.executors": 0,
                                   "topology.max.task.parallelism": 3})
    tasks = {c: len(t) for c, t in layout.component_tasks.items()}
    # topology cap 3 for s and c; b's own cap (1) replaces the topology's, as in Storm
    assert tasks == {"s": 3, "b": 1, "c": 3}
    executors = {c: sum(1 for e in layout.executors if e.component == c) for c in tasks}
    assert executors == {"s": 3, "b": 1, "c": 2}
    loose = TopologyBuilder()
    loose.set_spout("s", RecordingSpout, 4).set_max_task_parallelism(10)
    layout = compute_layout(loose.create_topology(), {"topology.acker.executors": 0,
                                                      "topology.max.task.parallelism": 2})
    assert len(layout.component_tasks["s"]) == 4  # the component's value overrides the topology's
    with pytest.raises(ValueError, match="topology.max.task.parallelism"):
        compute_layout(spec, {"topology.max.task.parallelism": 0})


def test_max_task_parallelism_in_local_mode() -> None:
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout, 4)
    b.set_bolt("b", RecordingBolt, 5).shuffle_grouping("s")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {"topology.max.task.parallelism": 2}, b.create_topology())
        cluster.wait_for(lambda: len(_opened()) == 4, what="2 spout and 2 bolt tasks opened")
        cluster.advance_time(1)
        assert len(_opened()) == 4


# -- 4. the __system stream's startup events -----------------------------------------------------
@pytest.mark.parametrize("workers", [1, 2])
def test_system_stream_startup_events_like_storms_test_system_stream(workers: int) -> None:
    """Storm's integration test ``test-system-stream``, ported."""
    b = TopologyBuilder()
    b.set_spout("1", WordSpout, 3)
    b.set_bolt("2", Identity, 2).fields_grouping("1", ["word"]) \
        .global_grouping("1", stream="__system")
    result = complete_topology(b.create_topology(), {"1": [["a"], ["b"], ["c"]]},
                               workers=workers)
    assert sorted(result.tuples("2")) == [["a"], ["b"], ["c"], ["startup"], ["startup"],
                                          ["startup"]]


def test_startup_events_carry_the_event_field_and_their_source() -> None:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout, 3)
    b.set_bolt("b", RecordingBolt, 2).shuffle_grouping("s")
    b.set_bolt("sys", capture, 2).all_grouping("s", stream="__system") \
        .global_grouping("b", stream="__system")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, b.create_topology())
        cluster.wait_for(lambda: len(capture.values) == 3 * 2 + 2, what="8 startup events")
        cluster.advance_time(1)
        tuples = capture.tuples
        assert len(tuples) == 8 and all(t.values == ["startup"] for t in tuples)
        assert {t.stream for t in tuples} == {"__system"}
        assert sorted(t.component for t in tuples) == ["b"] * 2 + ["s"] * 6
        assert tuples[0].fields is not None and tuples[0].fields.to_list() == ["event"]


def test_subscribing_to_the_system_component_is_refused_clearly() -> None:
    b = TopologyBuilder()
    b.set_spout("s", RecordingSpout)
    b.set_bolt("b", RecordingBolt).shuffle_grouping("__system", stream="__system")
    with pytest.raises(InvalidTopologyError, match="no such component.*'__system' stream of a "
                                                   "spout or bolt"):
        b.create_topology()


# -- 7. shuffle is round-robin (load-aware messaging is documented as not implemented) ------------
class SlowOnFirstTask(Bolt):
    """Task with the lowest id sleeps a little per tuple: a load-aware shuffle would avoid it."""

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.slow = context.task_id == min(context.component_tasks)

    def execute(self, tup: Tuple) -> None:
        if self.slow:
            time.sleep(0.002)
        self.ack(tup)


def test_shuffle_is_round_robin_whatever_the_load() -> None:
    from stormpy.config import KEYS

    assert "topology.disable.loadaware.messaging" in KEYS  # accepted, documented as a no-op
    feeder = FeederSpout(["word"])
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("slow", SlowOnFirstTask, 3).shuffle_grouping("feed")
    b.set_bolt("sink", capture).shuffle_grouping("feed")
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("t", {"topology.disable.loadaware.messaging": False},
                                         b.create_topology())
        feeder.feed_many([[str(i)] for i in range(60)])
        cluster.wait_for(lambda: len(feeder.acked) == 60, what="60 feeds acked")
        executed = {d["task"]: d["executed"] for d in worker.task_stats()
                    if d["component"] == "slow"}
        assert sorted(executed.values()) == [20, 20, 20]
