"""A persistent stateful windowed bolt under the checkpointing executor, driven tuple by tuple (a
RecordingCollector for the runtime): inputs are acked at the commit after they entered the
window, a ROLLBACK (and the INITSTATE of a recovery) brings the window and the user's state back
to the last commit and fails the inputs since, and a task restarted on the same store resumes the
committed window."""

from __future__ import annotations

from typing import Any

from stormpy.state import CHECKPOINT_STREAM, KeyValueState, MemoryBackend
from stormpy.state._bolt import WRAPPED, StatefulBoltExecutor
from stormpy.state._checkpoint import COMMIT, INITSTATE, PREPARE, ROLLBACK
from stormpy.testing import RecordingCollector, test_tuple
from stormpy.topology._context import TopologyContext
from stormpy.topology._grouping import ALL, SHUFFLE, Grouping
from stormpy.topology._imports import class_path
from stormpy.topology._layout import Executor, TaskLayout
from stormpy.topology._spec import BOLT, ComponentSpec, InputSpec, TopologySpec
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import Tuple
from stormpy.windowing import Count, Duration, StatefulWindowedBolt, Window

TOPOLOGY = "swin-topology"
BACKEND = MemoryBackend()


class Tumbling(StatefulWindowedBolt):
    outputs = ["values", "windows"]

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: Window) -> None:
        n = self.state.get("windows", 0) + 1
        self.state.put("windows", n)
        self.emit([[t["w"] for t in window], n])


def build(restart: bool = False, spec: Any = None) -> tuple[Any, RecordingCollector]:
    if spec is None:
        spec = Tumbling.with_tumbling_window(Count(3)).with_persistence() \
            .with_max_events_in_memory(2)
    kwargs = {WRAPPED: class_path(spec.component_class), **spec.component_kwargs}
    ex = StatefulBoltExecutor(**kwargs)
    col = RecordingCollector()
    col.bind(ex, kwargs=kwargs, component_id="me")
    me = ComponentSpec("me", BOLT, class_path(StatefulBoltExecutor), kwargs=kwargs,
                       streams=StatefulBoltExecutor.declare_outputs(kwargs),
                       inputs=[InputSpec("up", "default", Grouping(SHUFFLE)),
                               InputSpec("up", CHECKPOINT_STREAM, Grouping(ALL))])
    up = ComponentSpec("up", BOLT, class_path(StatefulBoltExecutor), tasks=1,
                       streams={"default": Stream(["w"])})
    layout = TaskLayout({"up": [1], "me": [10]}, {1: "up", 10: "me"},
                        [Executor("up", 1, 1), Executor("me", 10, 10)])
    if not restart:
        BACKEND.drop(TOPOLOGY)
    context = TopologyContext(TOPOLOGY, TopologySpec({"up": up, "me": me}), layout, 10, [10], {},
                              state=BACKEND)
    ex.prepare({"topology.name": "swin", "topology.message.timeout.secs": 30}, context)
    return ex, col


def word(w: str) -> Tuple:
    return test_tuple([w], "up", fields=["w"])


def barrier(txid: int, action: str) -> Tuple:
    return test_tuple([txid, action], "up", CHECKPOINT_STREAM, task=1, fields=["txid", "action"])


def windows(col: RecordingCollector) -> list[list[str]]:
    return [v[0] for v in col.emitted_values()]


def acked(col: RecordingCollector) -> list[str]:
    return [t.values[0] for t in col.acked if t.stream == "default"]


def failed(col: RecordingCollector) -> list[str]:
    return [t.values[0] for t in col.failed if t.stream == "default"]


def test_rollback_and_restart_bring_the_window_back_to_the_last_commit() -> None:
    ex, col = build()
    ex.execute(barrier(0, INITSTATE))
    for w in "abcd":
        ex.execute(word(w))
    assert windows(col) == [["a", "b", "c"]]
    assert acked(col) == []  # held until the commit
    ex.execute(barrier(1, PREPARE))
    ex.execute(barrier(1, COMMIT))
    assert acked(col) == ["a", "b", "c", "d"]  # d too: it is in the committed window
    for w in "ef":
        ex.execute(word(w))
    assert windows(col)[-1] == ["d", "e", "f"]
    ex.execute(barrier(2, PREPARE))
    ex.execute(barrier(2, ROLLBACK))  # the checkpoint failed elsewhere
    assert failed(col) == ["e", "f"]
    for w in "ef":  # the replays
        ex.execute(word(w))
    assert windows(col)[-1] == ["d", "e", "f"]
    assert col.emitted_values()[-1][1] == 2  # the user's state was rolled back with the window
    ex.execute(word("g"))
    ex.execute(barrier(1, INITSTATE))  # a recovery: back to commit 1 again
    assert failed(col) == ["e", "f", "e", "f", "g"]
    for w in "efg":
        ex.execute(word(w))
    ex.execute(barrier(2, PREPARE))
    ex.execute(barrier(2, COMMIT))
    ex.execute(word("h"))  # uncommitted: lost with the task
    ex.cleanup()

    again, col2 = build(restart=True)
    again.execute(barrier(2, INITSTATE))
    for w in "hi":
        again.execute(word(w))
    assert windows(col2) == [["g", "h", "i"]]  # g came back from the committed window
    assert col2.emitted_values()[-1][1] == 3
    assert again.bolt.held_events() <= 2 + 3
    again.cleanup()


def tick() -> Tuple:
    return test_tuple([1.0], "__system", "__tick", task=-1, fields=["rate_secs"])


def test_a_restarted_duration_window_goes_on_from_the_wall_clock() -> None:
    """Processing time is epoch milliseconds: a task restarted on its committed window neither
    goes back in time nor walks from time 0."""
    spec = Tumbling.with_tumbling_window(Duration(seconds=1)).with_persistence()
    ex, col = build(spec=spec)
    ex.execute(barrier(0, INITSTATE))
    before = ex.bolt.now
    assert before > 1_000_000_000_000  # wall-clock epoch ms
    for w in "ab":
        ex.execute(word(w))
    ex.execute(barrier(1, PREPARE))
    ex.execute(barrier(1, COMMIT))
    ex.cleanup()
    again, col2 = build(restart=True, spec=spec)
    again.execute(barrier(1, INITSTATE))
    assert again.bolt.now >= before and len(again.bolt.manager) == 2
    again.execute(tick())
    assert windows(col2) == [["a", "b"]]  # the restored tuples, at the next window end
    assert col2.emitted_values()[0][1] == 1
    again.cleanup()
