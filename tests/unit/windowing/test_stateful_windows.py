"""Stateful windowed bolts (Storm's BaseStatefulWindowedBolt) in a LocalCluster: with persistence,
count and time windows, sliding and tumbling, evaluate the windows of a plain windowed bolt,
ack every input at the checkpoint after it entered the window (not at expiry), commit the user's
state with the window, hold no more than max_events_in_memory events, and a topology killed and
submitted again resumes its windows exactly from the store; without persistence the window is in
memory and inputs are acked at the checkpoint after they left every window. Bad declarations name
the part and the component."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stormpy import TopologyBuilder
from stormpy.state import KeyValueState
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._state import CHECKPOINTS
from stormpy.windowing import (
    Count,
    Duration,
    StatefulWindowedBolt,
    Window,
    WindowConfig,
    WindowManager,
)
from stormpy.windowing._persistent import UserState

CONF = {"topology.state.checkpoint.interval.ms": 50, "topology.message.timeout.secs": 30}


class Sums(StatefulWindowedBolt):
    """Emits each window's values; counts windows and values in its state."""

    outputs = ["end", "values"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: Window) -> None:
        values = [t["v"] for t in window]
        self.state.put("windows", self.state.get("windows", 0) + 1)
        self.state.put("values", self.state.get("values", 0) + len(values))
        self.emit([window.end_timestamp, values])


def topology(spec: Any) -> tuple[FeederSpout, Capture, Any]:
    feeder, capture = FeederSpout(["v"]), Capture()
    b = TopologyBuilder()
    b.set_spout("src", feeder)
    b.set_bolt("win", spec).shuffle_grouping("src")
    b.set_bolt("out", capture).shuffle_grouping("win")
    return feeder, capture, b.create_topology()


def reference(cfg: WindowConfig, values: list[int]) -> list[list[int]]:
    """The windows a plain (in-memory) window manager evaluates over ``values`` in one tick."""
    seen: list[list[int]] = []
    m = WindowManager(cfg.validate(), on_window=lambda w: seen.append(list(w.get())))
    for v in values:
        m.add(v, 1000)
    return seen


def committed_user_state(lc: LocalCluster, name: str) -> dict[Any, Any]:
    worker = lc.workers_of(name)[0]
    task = worker.layout.component_tasks["win"][0]
    store = lc.state.memory.store(CHECKPOINTS, worker.topology_id).sub(  # type: ignore[attr-defined]
        "$state", f"win-{task}")
    return dict(UserState(KeyValueState(store)).items())


@pytest.mark.parametrize("window", [(Count(5), Count(2)), (Count(3), Count(3))],
                         ids=["sliding", "tumbling"])
def test_persistent_count_windows_ack_at_checkpoints_and_commit_the_window(
        window: tuple[Any, Any]) -> None:
    length, slide = window
    spec = Sums.with_window(length, slide).with_persistence().with_max_events_in_memory(4)
    feeder, capture, topo = topology(spec)
    values = list(range(11))
    want = reference(WindowConfig.sliding(length, slide), values)
    with LocalCluster() as lc:
        lc.submit_topology("pw", CONF, topo)
        for v in values:
            feeder.feed([v], msg_id=v)
        # every input acked, also those still in the window: the window is in the state
        lc.wait_for(lambda: sorted(feeder.acked) == values, 30, "every input acked")
        lc.wait_for(lambda: len(capture.values) >= len(want), 30, "every window")
        assert [v[1] for v in capture.values] == want
        lc.wait_for(lambda: committed_user_state(lc, "pw").get("values") == sum(map(len, want)),
                    30, "the user state committed")
        state = committed_user_state(lc, "pw")
        assert state == {"windows": len(want), "values": sum(map(len, want))}
    assert feeder.failed == []


def test_persistent_duration_windows_in_simulated_processing_time() -> None:
    spec = Sums.with_window(Duration(seconds=3), Duration(seconds=1)).with_persistence()
    feeder, capture, topo = topology(spec)
    lc = LocalCluster(simulated_time=True)
    try:
        lc.submit_topology("pt", CONF, topo)
        for second in range(5):
            feeder.feed([second], msg_id=second)
            lc.wait_for(lambda: feeder.pending_feed == 0)
            # acked at the next checkpoint although it stays in windows for 3 s
            lc.wait_for(lambda s=second: s in feeder.acked, 30, f"input {second} acked")
            lc.advance_time(1.0)
        lc.advance_time(4.0)
        lc.wait_for(lambda: len(capture.values) >= 5, 30, "five windows")
        assert capture.values[:5] == [[1000, [0]], [2000, [0, 1]], [3000, [0, 1, 2]],
                                      [4000, [1, 2, 3]], [5000, [2, 3, 4]]]
    finally:
        lc.shutdown()


def test_persistent_tumbling_duration_window() -> None:
    spec = Sums.with_tumbling_window(Duration(seconds=2)).with_persistence()
    feeder, capture, topo = topology(spec)
    lc = LocalCluster(simulated_time=True)
    try:
        lc.submit_topology("tt", CONF, topo)
        for second in range(4):
            feeder.feed([second], msg_id=second)
            lc.wait_for(lambda: feeder.pending_feed == 0)
            lc.wait_for(lambda s=second: s in feeder.acked, 30, f"input {second} acked")
            lc.advance_time(1.0)
        lc.advance_time(2.0)
        lc.wait_for(lambda: len(capture.values) >= 2, 30, "two windows")
        assert capture.values[:2] == [[2000, [0, 1]], [4000, [2, 3]]]
    finally:
        lc.shutdown()


def test_a_resubmitted_topology_resumes_its_persisted_windows_exactly(tmp_path: Path) -> None:
    """The store is keyed by topology name: a new instance of the topology takes up the window
    where the killed one committed it (the inputs of the open window were acked already, so no
    spout would send them again)."""
    conf = {**CONF, "topology.state.provider": "sqlite",
            "topology.state.provider.config": {"path": str(tmp_path / "w.sqlite")}}
    spec = Sums.with_window(Count(6), Count(3)).with_persistence().with_max_events_in_memory(2)
    values = list(range(14))
    want = reference(WindowConfig.sliding(Count(6), Count(3)), values)
    seen: list[list[int]] = []
    for part in (values[:7], values[7:]):
        feeder, capture, topo = topology(spec)
        with LocalCluster() as lc:
            lc.submit_topology("resume", conf, topo)
            for v in part:
                feeder.feed([v], msg_id=v)
            lc.wait_for(lambda f=feeder, p=part: sorted(f.acked) == p, 30, "the part acked")
            lc.wait_until_quiet("resume")
            lc.kill_topology("resume")
        seen += [v[1] for v in capture.values]
    assert seen == want
    assert [6, 7, 8, 9, 10, 11] in seen  # a window across the restart


def test_without_persistence_inputs_are_acked_at_the_checkpoint_after_they_expired() -> None:
    spec = Sums.with_tumbling_window(Count(3))
    feeder, capture, topo = topology(spec)
    with LocalCluster() as lc:
        lc.submit_topology("mem", CONF, topo)
        for v in range(5):
            feeder.feed([v], msg_id=v)
        lc.wait_for(lambda: sorted(feeder.acked) == [0, 1, 2], 30, "the first window acked")
        lc.wait_until_quiet("mem")
        assert sorted(feeder.acked) == [0, 1, 2]  # 3 and 4 wait in the open window
        lc.wait_for(lambda: committed_user_state(lc, "mem") == {"windows": 1, "values": 3},
                    30, "the user state committed")
        assert [v[1] for v in capture.values] == [[0, 1, 2]]


def test_declarations_and_settings_are_checked_naming_the_component() -> None:
    b = TopologyBuilder()
    b.set_spout("src", FeederSpout(["v"]))
    with pytest.raises(InvalidTopologyError, match=r"'w1'.*max events in memory.*positive"):
        b.set_bolt("w1", Sums.with_window(Count(3)).with_persistence()
                   .with_max_events_in_memory(0))
    with pytest.raises(InvalidTopologyError, match=r"'w2'.*max events in memory.*with_persistence"):
        b.set_bolt("w2", Sums.with_window(Count(3)).with_max_events_in_memory(10))
    feeder, _capture, topo = topology(Sums.with_window(Count(3)).with_persistence())
    with LocalCluster() as lc:
        lc.submit_topology("slow", {"topology.state.checkpoint.interval.ms": 5000,
                                    "topology.message.timeout.secs": 3}, topo)
        lc.wait_for(lambda: any("checkpoint interval" in e.get("error", "")
                                for e in lc.errors("slow", "win")), 30,
                    "the refusal of a checkpoint interval above the message timeout")


class RunningSum(StatefulWindowedBolt):
    """A running sum kept from new and expired tuples (reads no whole window)."""

    outputs = ["end", "n", "sum"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: Window) -> None:
        n, total = self.state.get("run", [0, 0])
        for t in window.get_new():
            n, total = n + 1, total + t["v"]
        for t in window.get_expired():
            n, total = n - 1, total - t["v"]
        self.state.put("run", [n, total])
        self.emit([window.end_timestamp, n, total])


def test_held_events_stay_bounded_by_max_events_in_memory_over_a_large_sliding_window() -> None:
    length, slide, bound, total = 4000, 100, 500, 12_000
    spec = RunningSum.with_window(Count(length), Count(slide)).with_persistence() \
        .with_max_events_in_memory(bound)
    feeder, capture, topo = topology(spec)
    held: list[int] = []
    with LocalCluster() as lc:
        lc.submit_topology("big", {**CONF, "topology.max.spout.pending": 2000}, topo)

        def sample() -> dict[str, Any]:
            return next(iter(lc.get_metrics("big")["win"].values()))
        for start in range(0, total, 1000):
            for v in range(start, start + 1000):
                feeder.feed([v], msg_id=v)
            lc.wait_for(lambda s=start: len(feeder.acked) >= s + 1000, 60, "a thousand acked")
            metrics = sample()
            held.append(metrics["window-events-held"])
        lc.wait_for(lambda: len(capture.values) >= total // slide, 60, "every window")
        metrics = sample()
    assert length - slide <= metrics["window-events"] <= length
    assert metrics["window-events-cached-peak"] <= bound
    assert max(held) <= bound + slide  # the cache plus the last window's departed tuples
    assert metrics["window-partition-loads"] > 0  # partitions went out of memory and came back
    # the running sums are those of the last `length` values at each window end
    for i, (_end, n, s) in enumerate(capture.values):
        want = range(max(0, (i + 1) * slide - length), (i + 1) * slide)
        assert (n, s) == (len(want), sum(want)), i
