"""Every grouping delivers to the right tasks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from stormpy import CustomStreamGrouping, Spout, TopologyBuilder, TopologyContext
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.worker.routing import stable_hash

KEYS = [f"key-{i % 17}" for i in range(200)]


class EvenOdd(CustomStreamGrouping):
    """Even numbers to the first task, odd ones to the last."""

    def prepare(self, context: TopologyContext, stream: str, target_tasks: Sequence[int]) -> None:
        self.targets = sorted(target_tasks)

    def choose_tasks(self, task_id: int, values: Sequence[Any]) -> list[int]:
        return [self.targets[0] if values[1] % 2 == 0 else self.targets[-1]]


class KeySpout(Spout):
    outputs = ["key", "n"]

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < len(KEYS):
            self.emit([KEYS[self.i], self.i], msg_id=self.i)
            self.i += 1


def run(grouping: str, parallelism: int = 4, **kw: Any) -> tuple[Capture, dict[str, list[int]]]:
    capture = Capture()
    b = TopologyBuilder()
    b.set_spout("keys", KeySpout)
    decl = b.set_bolt("sink", capture, parallelism)
    getattr(decl, f"{grouping}_grouping")("keys", **kw)
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("g", {}, b.create_topology())
        cluster.wait_for(lambda: worker.stats()["keys"]["acked"] == len(KEYS), 20, "all acked")
        return capture, worker.layout.component_tasks


def test_fields_grouping_sends_each_key_to_one_task() -> None:
    capture, _ = run("fields", fields=["key"])
    owner: dict[str, int] = {}
    for task, rows in capture.by_task.items():
        for key, _n in rows:
            assert owner.setdefault(key, task) == task
    assert len(capture.values) == len(KEYS)
    assert len(set(owner.values())) > 1


def test_partial_key_grouping_uses_at_most_two_tasks_per_key() -> None:
    capture, _ = run("partial_key", fields="key")
    tasks_per_key: dict[str, set[int]] = {}
    for task, rows in capture.by_task.items():
        for key, _n in rows:
            tasks_per_key.setdefault(key, set()).add(task)
    assert all(1 <= len(t) <= 2 for t in tasks_per_key.values())
    assert len(capture.values) == len(KEYS)


def test_all_grouping_reaches_every_task() -> None:
    capture, tasks = run("all")
    assert sorted(capture.by_task) == tasks["sink"]
    assert all(len(rows) == len(KEYS) for rows in capture.by_task.values())


def test_global_grouping_uses_the_lowest_task() -> None:
    capture, tasks = run("global")
    assert list(capture.by_task) == [min(tasks["sink"])]


def test_shuffle_grouping_spreads_evenly() -> None:
    capture, tasks = run("shuffle")
    counts = sorted(len(r) for r in capture.by_task.values())
    assert sorted(capture.by_task) == tasks["sink"] and counts == [50, 50, 50, 50]


def test_none_grouping_delivers_every_tuple_once() -> None:
    capture, tasks = run("none")
    assert len(capture.values) == len(KEYS) and set(capture.by_task) <= set(tasks["sink"])


def test_local_or_shuffle_in_one_worker_spreads_over_local_tasks() -> None:
    capture, tasks = run("local_or_shuffle")
    assert sorted(capture.by_task) == tasks["sink"]


def test_custom_grouping_follows_the_user_choice() -> None:
    capture, tasks = run("custom", grouping_class=EvenOdd)
    first, last = min(tasks["sink"]), max(tasks["sink"])
    assert sorted(capture.by_task) == [first, last]
    assert all(n % 2 == 0 for _k, n in capture.by_task[first])
    assert all(n % 2 == 1 for _k, n in capture.by_task[last])


def test_fields_hash_is_the_same_in_every_process() -> None:
    code = ("from stormpy.worker.routing import stable_hash;"
            "print([stable_hash(k) for k in ['a', 'word', 7, ['x', 1], b'b']])")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
            for seed in ("1", "2", "3")}
    assert len(outs) == 1
    assert outs.pop().strip() == str([stable_hash(k) for k in ["a", "word", 7, ["x", 1], b"b"]])


def test_feeder_on_named_stream_reaches_only_its_subscribers() -> None:
    feeder = FeederSpout(["v"], streams={"side": ["w"]})
    main, side = Capture(), Capture()
    b = TopologyBuilder()
    b.set_spout("f", feeder)
    b.set_bolt("main", main).shuffle_grouping("f")
    b.set_bolt("side", side).shuffle_grouping("f", "side")
    with LocalCluster() as cluster:
        cluster.submit_topology("s", {}, b.create_topology())
        feeder.feed([1], msg_id=1)
        feeder.feed([2], msg_id=2, stream="side")
        cluster.wait_for(lambda: len(feeder.acked) == 2, 10, "acked")
        assert main.values == [[1]] and side.values == [[2]]
        assert side.tuples[0]["w"] == 2 and side.tuples[0].stream == "side"
