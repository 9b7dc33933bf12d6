"""SparkBatchBolt on LocalCluster with a real local Spark: batches close by count, by age and by
idleness; failures fail (and replays re-process) exactly the batch's tuples; results are emitted
downstream; batch ids are per task and deterministic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from stormpy.connectors.spark import (
    CLOSED_BY_COUNT,
    CLOSED_BY_IDLE,
    CLOSED_BY_TIME,
    BatchInfo,
    BatchSource,
    SparkBatchBolt,
)
from stormpy.testing import Capture, FeederSpout, LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import Spout, TopologyBuilder, TopologyContext

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark")]

TICK = "topology.tick.tuple.freq.secs"


class RecordingBolt(SparkBatchBolt):
    """Records (batch_id, source stream, sorted rows as dicts) and each BatchInfo in the shared
    list ``key``; emits one (batch_id, n, total) row per batch. With ``fail_ids``, the first
    attempt of those batch ids raises (after recording an "aborted" entry via abort_batch)."""

    outputs = ["batch_id", "n", "total"]

    def __init__(self, key: str, fail_ids: list[int] | None = None, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key
        self.fail_ids = set(fail_ids or ())

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.log: list[Any] = registry.lookup(self.key)
        self.task = context.task_id

    def process_stream_batch(self, df: Any, batch_id: int, source: BatchSource) -> Any:
        rows = sorted((r.asDict() for r in df.collect()), key=repr)
        self.log.append(("batch", batch_id, source.stream, df.columns, rows, self.task))
        if batch_id in self.fail_ids:
            raise RuntimeError(f"boom in batch {batch_id}")
        total = sum(r["v"] for r in rows if "v" in r)
        return [[batch_id, len(rows), total]]

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        self.log.append(("aborted", batch_id, str(error)))

    def on_batch_done(self, info: BatchInfo) -> None:
        self.log.append(("done", info))


def infos(log: list[Any]) -> list[BatchInfo]:
    return [e[1] for e in log if e[0] == "done"]


def batches(log: list[Any]) -> list[tuple[Any, ...]]:
    return [e for e in log if e[0] == "batch"]


def topology(feeder: FeederSpout, key: str, capture: Capture | None = None, tasks: int = 1,
             config: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    builder.set_bolt("spark", RecordingBolt, tasks, kwargs={"key": key, **kwargs},
                     config=config).shuffle_grouping("feed")
    if capture is not None:
        builder.set_bolt("out", capture).shuffle_grouping("spark")
    return builder.create_topology()


def test_count_threshold_closes_batches_and_results_flow_downstream(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    out = Capture()
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("count", {}, topology(feeder, registry_list.key, out,
                                                      batch_size=4, batch_seconds=5))
        for i in range(10):
            feeder.feed([f"k{i % 3}", i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 8, 60, "two full batches to be acked")
        cluster.wait_until_quiet()
        done = infos(registry_list)
        assert [(i.batch_id, i.size, i.reason, i.ok) for i in done] == [
            (0, 4, CLOSED_BY_COUNT, True), (1, 4, CLOSED_BY_COUNT, True)]
        assert sorted(feeder.acked) == list(range(8))
        assert feeder.failed == []
        assert sorted(out.values) == [[0, 4, 0 + 1 + 2 + 3], [1, 4, 4 + 5 + 6 + 7]]
        # The remaining two tuples wait for the time limit.
        cluster.advance_time(5)
        assert sorted(feeder.acked) == list(range(10))
    first = batches(registry_list)[0]
    assert first[2] == "default" and first[3] == ["k", "v"]
    assert first[4] == [{"k": "k0", "v": 0}, {"k": "k0", "v": 3}, {"k": "k1", "v": 1},
                        {"k": "k2", "v": 2}]
    assert infos(registry_list)[-1].reason == CLOSED_BY_TIME
    assert infos(registry_list)[-1].size == 2


def test_time_threshold_closes_a_batch_while_tuples_keep_arriving(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("time", {}, topology(feeder, registry_list.key, batch_size=100,
                                                     batch_seconds=3, config={TICK: 1}))
        for i in range(3):
            feeder.feed(["a", i], msg_id=i)
            cluster.advance_time(1)
        assert [(i.size, i.reason) for i in infos(registry_list)] == [(3, CLOSED_BY_TIME)]
        assert sorted(feeder.acked) == [0, 1, 2]
        feeder.feed(["a", 3], msg_id=3)
        cluster.advance_time(2)
        assert len(infos(registry_list)) == 1  # the new batch is only 2 s old
        cluster.advance_time(1)
        assert [(i.size, i.reason) for i in infos(registry_list)] == [(3, CLOSED_BY_TIME),
                                                                     (1, CLOSED_BY_TIME)]


def test_idle_stream_flushes_its_partial_batch(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("idle", {}, topology(feeder, registry_list.key, batch_size=100,
                                                     batch_seconds=60, idle_seconds=2))
        for i in range(3):
            feeder.feed(["a", i], msg_id=i)
        cluster.wait_until_quiet()
        cluster.advance_time(1.5, step=0.5)
        assert infos(registry_list) == [] and feeder.acked == []
        cluster.advance_time(0.5, step=0.5)
        assert [(i.size, i.reason) for i in infos(registry_list)] == [(3, CLOSED_BY_IDLE)]
        assert sorted(feeder.acked) == [0, 1, 2]


def test_failed_batch_fails_its_tuples_and_replays_are_processed_exactly_once(
        registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("fail", {}, topology(feeder, registry_list.key, batch_size=3,
                                                     batch_seconds=5, fail_ids=[0]))
        for i in range(6):
            feeder.feed(["a", i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.failed) + len(feeder.acked) == 6, 60,
                         "both batches to finish")
        cluster.wait_until_quiet()
        assert sorted(feeder.failed) == [0, 1, 2]
        assert sorted(feeder.acked) == [3, 4, 5]
        assert ("aborted", 0, "boom in batch 0") in registry_list
        # Act as a reliable spout: replay what failed.
        for msg_id in sorted(feeder.failed):
            feeder.feed(["a", msg_id], msg_id=msg_id)
        cluster.wait_for(lambda: len(feeder.acked) == 6, 60, "the replayed batch to be acked")
    done = infos(registry_list)
    assert [(i.batch_id, i.ok) for i in done] == [(0, False), (1, True), (2, True)]
    assert isinstance(done[0].error, RuntimeError)
    committed = [r["v"] for b in batches(registry_list) if b[1] != 0 for r in b[4]]
    assert sorted(committed) == list(range(6))


def test_batch_ids_are_unique_per_component_and_increase_per_task(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("ids", {}, topology(feeder, registry_list.key, tasks=2,
                                                    batch_size=2, batch_seconds=5))
        for i in range(16):
            feeder.feed(["a", i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.acked) == 16, 60, "every tuple to be acked")
    by_task: dict[int, list[int]] = {}
    for b in batches(registry_list):
        by_task.setdefault(b[5], []).append(b[1])
    assert len(by_task) == 2
    for index, task in enumerate(sorted(by_task)):
        ids = by_task[task]
        assert ids == sorted(ids)
        assert {i % 2 for i in ids} == {index}
    assert sorted(i for ids in by_task.values() for i in ids) == list(range(8))


def test_each_input_stream_gets_its_own_batches_and_columns(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"], streams={"other": ["name", "score", "flag"]})
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    (builder.set_bolt("spark", RecordingBolt, kwargs={"key": registry_list.key, "batch_size": 2,
                                                      "batch_seconds": 5})
     .shuffle_grouping("feed").shuffle_grouping("feed", "other"))
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("streams", {}, builder.create_topology())
        feeder.feed(["a", 1], msg_id=1)
        feeder.feed(["x", 0.5, True], msg_id=2, stream="other")
        feeder.feed(["b", 2], msg_id=3)
        feeder.feed(["y", 1.5, False], msg_id=4, stream="other")
        cluster.wait_for(lambda: len(feeder.acked) == 4, 60, "both streams' batches")
    seen = {b[2]: (b[3], b[4]) for b in batches(registry_list)}
    assert seen == {
        "default": (["k", "v"], [{"k": "a", "v": 1}, {"k": "b", "v": 2}]),
        "other": (["name", "score", "flag"], [{"name": "x", "score": 0.5, "flag": True},
                                              {"name": "y", "score": 1.5, "flag": False}]),
    }


def test_waiting_tuples_do_not_time_out(registry_list: Any) -> None:
    """A batch held longer than the message timeout keeps its tuples alive (keep_alive)."""
    feeder = FeederSpout(["k", "v"])
    conf = {"topology.message.timeout.secs": 10}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("alive", conf, topology(feeder, registry_list.key, batch_size=100,
                                                        batch_seconds=40))
        feeder.feed(["a", 1], msg_id=1)
        cluster.advance_time(40)
        assert feeder.failed == []
        assert feeder.acked == [1]


def test_unconvertible_values_fail_the_batch_with_a_clear_error(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("mixed", {}, topology(feeder, registry_list.key,
                                                               batch_size=2, batch_seconds=5))
        feeder.feed(["a", 1], msg_id=1)
        feeder.feed(["b", "not a number"], msg_id=2)
        cluster.wait_for(lambda: len(feeder.failed) == 2, 60, "the batch to fail")
        errors = [e["error"] for e in worker.errors.get("spark", [])]
    assert any("field 'v'" in e for e in errors), errors


class BadResults(SparkBatchBolt):
    """Returns a result that cannot be emitted (a datetime); records aborts in ``key``."""

    outputs = ["when"]

    def __init__(self, key: str, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key

    def process_batch(self, df: Any, batch_id: int) -> Any:
        import datetime

        return [[datetime.datetime(2024, 1, 1)]]

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        registry.lookup(self.key).append(("aborted", batch_id, str(error)))


def test_unemittable_results_abort_and_fail_the_batch(registry_list: Any) -> None:
    feeder = FeederSpout(["k", "v"])
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    builder.set_bolt("spark", BadResults, kwargs={"key": registry_list.key, "batch_size": 2,
                                                  "batch_seconds": 5}).shuffle_grouping("feed")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("bad", {}, builder.create_topology())
        feeder.feed(["a", 1], msg_id=1)
        feeder.feed(["b", 2], msg_id=2)
        cluster.wait_for(lambda: len(feeder.failed) == 2, 60, "the batch to fail")
    [(kind, batch_id, error)] = registry_list
    assert (kind, batch_id) == ("aborted", 0)
    assert "not plain data" in error



class StuckFirstBatch(SparkBatchBolt):
    """Batch 0 blocks in the driver until the test opens the gate (a ``threading.Event`` in the
    registry under ``gate``); every batch returns its row count. Records aborts and outcomes in
    ``key``."""

    outputs = ["batch_id", "n"]

    def __init__(self, key: str, gate: str, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key
        self.gate = gate

    def process_batch(self, df: Any, batch_id: int) -> Any:
        if batch_id == 0:
            registry.lookup(self.gate).wait(300)
        return [[batch_id, df.count()]]

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        registry.lookup(self.key).append(("aborted", batch_id, type(error).__name__))

    def on_batch_done(self, info: BatchInfo) -> None:
        registry.lookup(self.key).append(("done", info))


def test_a_stuck_batch_times_out_on_the_loop_and_its_late_outcome_is_dropped(
        registry_list: Any) -> None:
    """spark.stormpy.batch.timeout.secs: the loop fails the stuck batch at once (SparkBatchTimeout
    reported) and frees its slot, so the next batch runs and is acked; when the stuck
    ``process_batch`` returns later, ``abort_batch`` runs and its result is dropped."""
    import threading

    gate = threading.Event()
    gate_key = registry.register(gate)
    feeder = FeederSpout(["k", "v"])
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    builder.set_bolt("spark", StuckFirstBatch, 1, kwargs={
        "key": registry_list.key, "gate": gate_key, "batch_size": 2, "batch_seconds": 1,
    }).shuffle_grouping("feed")
    conf = {"spark.stormpy.batch.timeout.secs": 15, "topology.message.timeout.secs": 600}
    try:
        with LocalCluster() as cluster:
            worker = cluster.submit_topology("stuck", conf, builder.create_topology())
            feeder.feed(["a", 1], msg_id=1)
            feeder.feed(["a", 2], msg_id=2)
            cluster.wait_for(lambda: sorted(feeder.failed) == [1, 2], 120, "the stuck batch to fail")
            feeder.feed(["b", 3], msg_id=3)
            feeder.feed(["b", 4], msg_id=4)
            cluster.wait_for(lambda: sorted(feeder.acked) == [3, 4], 120,
                             "the next batch to be acked while batch 0 is still stuck")
            assert not any(e[0] == "aborted" for e in registry_list), "batch 0 is still running"
            gate.set()
            cluster.wait_for(lambda: any(e[0] == "aborted" for e in registry_list), 120,
                             "the stuck batch's late return to abort it")
            cluster.wait_until_quiet()
            errors = [e["error"] for e in worker.errors.get("spark", [])]
    finally:
        gate.set()
        registry.unregister(gate_key)
    assert any("SparkBatchTimeout" in e and "batch 0" in e for e in errors), errors
    assert [e for e in registry_list if e[0] == "aborted"] == [("aborted", 0, "SparkBatchTimeout")]
    done = infos(registry_list)
    assert [(i.batch_id, i.ok) for i in done] == [(0, False), (1, True)], "batch 0 reported once"
    assert sorted(feeder.failed) == [1, 2] and sorted(feeder.acked) == [3, 4]


class BatchFeed(Spout):
    """Emits ``count`` tuples ``[k, v]`` as ``emit_batch`` calls of ``per_call`` (a message id
    per tuple; one tuple tree per call); records acks and fails in the registry dict ``key``
    and emits failed ids again."""

    outputs = ["k", "v"]

    def __init__(self, key: str, count: int, per_call: int) -> None:
        self.key, self.count, self.per_call = key, count, per_call

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.state: dict[str, list[int]] = registry.lookup(self.key)
        self.next = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        if self.replay:
            ids, self.replay = self.replay[:self.per_call], self.replay[self.per_call:]
        elif self.next < self.count:
            ids = list(range(self.next, min(self.count, self.next + self.per_call)))
            self.next += len(ids)
        else:
            return
        self.emit_batch([[f"k{i % 3}", i] for i in ids], ids)

    def ack(self, msg_id: Any) -> None:
        self.state["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.state["failed"].append(msg_id)
        self.replay.append(msg_id)


def test_a_batch_spout_s_column_batches_join_micro_batches_whole_and_replay_on_failure(
        registry_list: Any) -> None:
    state: dict[str, list[int]] = {"acked": [], "failed": []}
    key = registry.register(state)
    builder = TopologyBuilder()
    builder.set_spout("feed", BatchFeed, kwargs={"key": key, "count": 40, "per_call": 4})
    builder.set_bolt("spark", RecordingBolt, kwargs={
        "key": registry_list.key, "batch_size": 10, "batch_seconds": 5,
        "fail_ids": [0]}).shuffle_grouping("feed")
    try:
        with LocalCluster(simulated_time=True) as cluster:
            cluster.submit_topology("columns", {}, builder.create_topology())
            for _ in range(30):  # replays may leave a partial batch: it closes by age
                if len(state["acked"]) >= 40:
                    break
                cluster.wait_until_quiet()
                cluster.advance_time(5)
            cluster.wait_for(lambda: len(state["acked"]) >= 40, 60, "every record to be acked")
    finally:
        registry.unregister(key)
    assert sorted(state["acked"]) == list(range(40))
    assert sorted(state["failed"]) == list(range(12))  # batch 0: three column batches of 4
    done = infos(registry_list)
    assert not done[0].ok and done[0].size == 12  # 10 or more, never splitting a column batch
    assert all(i.size % 4 == 0 for i in done)
    counted = [r["v"] for b in batches(registry_list) if b[1] != 0 for r in b[4]]
    assert sorted(counted) == list(range(40))  # every record once in a successful batch
