"""Grouping guarantees beyond "delivers somewhere": partial-key grouping splits a hot key evenly
between its two candidate tasks, and a grouping choice outside the subscribing component (a
custom grouping's, or an ``emit_direct`` to a task not subscribed directly) is a clear error,
never a silent misroute."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from stormpy import (
    Bolt,
    CustomStreamGrouping,
    EmitError,
    Spout,
    Stream,
    TopologyBuilder,
    TopologyContext,
    Tuple,
)
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.worker import WorkerError

HOT = 200  # tuples of the hot key per emitting task


class HotKeySpout(Spout):
    """Each task emits its own hot key ``hot-<task index>`` HOT times (tracked)."""

    outputs = ["key", "n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.key = f"hot-{context.task_index}"
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < HOT:
            self.emit([self.key, self.i], msg_id=self.i)
            self.i += 1


def test_partial_key_grouping_splits_a_hot_key_evenly_between_two_tasks() -> None:
    """Guarantee: partial-key grouping sends a key to at most two candidate tasks and balances a
    hot key between them (about half each, per emitter)."""
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("hot", HotKeySpout, 6)
    b.set_bolt("sink", sink, 5).partial_key_grouping("hot", ["key"])
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("pkg", {}, b.create_topology())
        cluster.wait_for(lambda: worker.stats()["hot"]["acked"] == 6 * HOT, 20, "every tuple acked")
    per_key: dict[str, Counter[int]] = {}
    for task, rows in sink.by_task.items():
        for key, _n in rows:
            per_key.setdefault(key, Counter())[task] += 1
    assert sorted(per_key) == [f"hot-{i}" for i in range(6)]
    split = {k: sorted(c.values()) for k, c in per_key.items() if len(c) == 2}
    assert all(len(c) <= 2 for c in per_key.values()), per_key
    # Keys whose two hashes pick the same task stay on it; this key set has at least 4 that do not.
    assert len(split) >= 4, per_key
    for key, counts in split.items():
        assert sum(counts) == HOT and counts[0] >= 0.4 * HOT, f"{key} unbalanced: {counts}"


class ToTheSpout(CustomStreamGrouping):
    """Broken on purpose: chooses the emitting task itself, which is not a task of the target."""

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [task_id]


def test_custom_grouping_choosing_a_task_outside_the_target_is_a_named_error() -> None:
    """Guarantee: a custom grouping that returns a task outside the subscribing component stops
    the topology with an error naming the grouping and the task (never a silent misroute)."""
    feeder = FeederSpout(["v"])
    sink = Capture()
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("sink", sink, 2).custom_grouping("feeder", ToTheSpout)
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("t", {}, b.create_topology())
        (spout_task,) = worker.layout.component_tasks["feeder"]
        feeder.feed(["x"], msg_id=1)
        with pytest.raises(WorkerError) as info:
            cluster.wait_for(lambda: False, 10, "the grouping error")
    message = str(info.value)
    assert "ToTheSpout" in message and f"chose task {spout_task}" in message, message
    assert "'sink'" in message
    assert sink.values == [] and feeder.acked == []


class Director(Bolt):
    """Emits each input on the direct stream to the task named in its second value."""

    outputs = [Stream(["v"], name="direct-out", direct=True), Stream(["v"])]

    def execute(self, tup: Tuple) -> None:
        self.emit_direct(tup.values[1], [tup.values[0]], anchors=tup, stream="direct-out")
        self.ack(tup)


def director_topology(feeder: FeederSpout, direct: Capture, shuffled: Capture | None = None) -> Any:
    """feeder -> director; ``direct`` subscribes to its direct stream, ``shuffled`` (when given)
    to its default stream."""
    b = TopologyBuilder()
    b.set_spout("feeder", feeder)
    b.set_bolt("director", Director).shuffle_grouping("feeder")
    b.set_bolt("direct", direct).direct_grouping("director", "direct-out")
    if shuffled is not None:
        b.set_bolt("shuffled", shuffled).shuffle_grouping("director")
    return b.create_topology()


def the_emit_direct_error(cluster: LocalCluster) -> pytest.ExceptionInfo[WorkerError]:
    """The WorkerError the director's failing emit_direct stops its worker with (an EmitError
    as its cause)."""
    with pytest.raises(WorkerError) as info:
        cluster.wait_for(lambda: False, 10, "the emit_direct error")
    assert isinstance(info.value.__cause__, EmitError)
    return info


def test_emit_direct_to_a_task_not_subscribed_directly_is_the_documented_error() -> None:
    """Guarantee: ``emit_direct`` to a task that does not subscribe to the stream with a direct
    grouping (here: a task subscribed to the emitter's other stream) raises EmitError naming
    the task."""
    feeder = FeederSpout(["v", "task"])
    direct, shuffled = Capture(), Capture()
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("t", {}, director_topology(feeder, direct, shuffled))
        (ok,) = worker.layout.component_tasks["direct"]
        (wrong,) = worker.layout.component_tasks["shuffled"]
        feeder.feed(["fine", ok], msg_id=1)
        cluster.wait_for(lambda: feeder.acked == [1], 10, "the direct emit to a direct subscriber")
        feeder.feed(["misrouted", wrong], msg_id=2)
        info = the_emit_direct_error(cluster)
    assert info.match(f"emit_direct to task {wrong} on stream 'direct-out', which is not a task "
                      "subscribed to it directly")
    assert direct.values == [["fine"]]
    assert [t.values for t in shuffled.tuples] == []


@pytest.mark.parametrize("bad", [[0], {"task": 1}, "3", None])
def test_emit_direct_to_what_is_not_a_task_id_is_the_same_error(bad: Any) -> None:
    """A list of tasks, a dict, a string or None as the task: the EmitError naming what was
    given, never a TypeError from inside the router."""
    feeder = FeederSpout(["v", "task"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {}, director_topology(feeder, Capture()))
        feeder.feed(["misrouted", bad], msg_id=1)
        info = the_emit_direct_error(cluster)
    assert info.match(f"component 'director': emit_direct to task {re.escape(str(bad))} on stream "
                      "'direct-out', which is not a task subscribed to it directly")

