"""SparkBatchBolt guarantees with a real local Spark (the session's one SparkSession) and
simulated time: result rows are anchored to the batch's tuples, a Spark job slower than the
message timeout keeps its tuples alive, and a batch that comes due while Spark is busy keeps
collecting instead of queueing half-empty batches.

While a Spark job runs the topology is never quiet, so these tests move simulated time one tick
at a time and wait until the bolt has seen each tick (instead of ``advance_time``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from stormpy.connectors.spark import SparkBatchBolt
from stormpy.testing import Capture, FeederSpout, LocalCluster, SimulatedClock, wait_for
from stormpy.testing import _registry as registry
from stormpy.topology import Bolt, TopologyBuilder, TopologyContext, Tuple

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark")]

TICK = 1.0
CONF = {"topology.tick.tuple.freq.secs": TICK}


class GatedBolt(SparkBatchBolt):
    """Records each batch's values and the ticks it sees in the shared state ``key``; its Spark
    job waits for the state's ``gate`` before returning one (batch_id, size) row."""

    outputs = ["batch_id", "n"]

    def __init__(self, key: str, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.state: dict[str, Any] = registry.lookup(self.key)

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.state["ticks"] += 1
        else:
            self.state["seen"] += 1
        super().execute(tup)

    def process_batch(self, df: Any, batch_id: int) -> Any:
        values = sorted(r["v"] for r in df.collect())
        self.state["batches"].append((batch_id, values))
        if not self.state["gate"].wait(60):
            raise RuntimeError("the test never opened the gate")
        return [[batch_id, len(values)]]


@pytest.fixture
def state() -> Iterator[dict[str, Any]]:
    shared: dict[str, Any] = {"ticks": 0, "seen": 0, "batches": [], "gate": threading.Event()}
    shared["key"] = registry.register(shared)
    try:
        yield shared
    finally:
        shared["gate"].set()  # never leave a Spark job blocked
        registry.unregister(shared["key"])


def advance_while_spark_runs(cluster: LocalCluster, state: dict[str, Any], seconds: float) -> None:
    """Move simulated time ``seconds`` forward one tick at a time, each time waiting until the
    Spark bolt has executed that tick (timers, timeouts included, ran in that loop round)."""
    clock = cluster.clock
    assert isinstance(clock, SimulatedClock)
    for _ in range(round(seconds / TICK)):
        seen = state["ticks"]
        clock.advance(TICK)
        wait_for(lambda seen=seen: state["ticks"] > seen, 60, "the Spark bolt to execute the next tick",
                 interval=0.001)


def topology(feeder: FeederSpout, state: dict[str, Any], downstream: Any = None,
             **batching: Any) -> Any:
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("spark", GatedBolt, kwargs={"key": state["key"], **batching},
               config=CONF).shuffle_grouping("feed")
    if downstream is not None:
        b.set_bolt("out", downstream).shuffle_grouping("spark")
    return b.create_topology()


class FailAll(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.fail(tup)


def test_a_failed_result_row_fails_the_batchs_spout_tuples(state: dict[str, Any]) -> None:
    """Guarantee: rows returned by ``process_batch`` are emitted anchored to every tuple of the
    batch, so a downstream failure of a result row fails the batch's spout tuples (replay)."""
    state["gate"].set()
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("anchored", {}, topology(feeder, state, FailAll, batch_size=3,
                                                         batch_seconds=30))
        for i in range(3):
            feeder.feed(["a", i], msg_id=i)
        cluster.wait_for(lambda: len(feeder.failed) + len(feeder.acked) == 3, 60,
                         "the batch's tuples to be decided")
        assert sorted(feeder.failed) == [0, 1, 2] and feeder.acked == []


def test_a_spark_job_slower_than_the_message_timeout_keeps_its_tuples_alive(
        state: dict[str, Any]) -> None:
    """Guarantee: while a batch is in Spark longer than the message timeout, its tuples are kept
    alive (no fail, no replay); they are acked when the job returns."""
    feeder = FeederSpout(["k", "v"])
    out = Capture()
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("slow", {"topology.message.timeout.secs": 10},
                                topology(feeder, state, out, batch_size=4, batch_seconds=30))
        for i in range(4):
            feeder.feed(["a", i], msg_id=i)
        wait_for(lambda: state["batches"], 60, "the batch's Spark job to start")
        advance_while_spark_runs(cluster, state, 40)
        assert feeder.failed == [] and feeder.acked == []
        state["gate"].set()
        cluster.wait_for(lambda: len(feeder.acked) == 4, 60, "the batch's tuples acked")
        assert feeder.failed == [] and out.values == [[0, 4]]


def test_a_batch_due_while_spark_is_busy_keeps_collecting(state: dict[str, Any]) -> None:
    """Guarantee: with every in-flight slot busy, a batch that comes due by time stays open and
    keeps collecting; when Spark frees up it runs as one fuller batch, not a queue of small
    ones."""
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("busy", {}, topology(feeder, state, batch_size=10,
                                                     batch_seconds=2, max_in_flight=1))

        def feed(i: int) -> None:
            feeder.feed(["a", i], msg_id=i)
            cluster.wait_for(lambda: cluster.get_stats("busy")["feed"]["emitted"] == i + 1, 10,
                             f"tuple {i} emitted")

        feed(0)
        feed(1)
        advance_while_spark_runs(cluster, state, 2)  # batch 0 comes due and starts in Spark
        wait_for(lambda: state["batches"], 60, "the first batch's Spark job to start")
        for i in range(2, 5):  # each arrives, then its batch has been due for a while
            feed(i)
            advance_while_spark_runs(cluster, state, 2)
        assert [b for b, _v in state["batches"]] == [0]
        state["gate"].set()
        cluster.wait_for(lambda: len(feeder.acked) == 5, 60, "every tuple acked")
    assert state["batches"] == [(0, [0, 1]), (1, [2, 3, 4])]


def test_the_executor_loop_releases_the_gil_while_a_batch_is_in_spark(
        state: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """While a batch is in Spark the bolt gives the GIL up every 16 tuples it adds (so the
    batch's py4j calls need not wait out the switch interval); never while Spark is idle."""
    import stormpy.connectors.spark._bolt as bolt_module

    released: list[int] = []
    monkeypatch.setattr(bolt_module, "_release_gil", lambda: released.append(len(state["batches"])))
    feeder = FeederSpout(["k", "v"])
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("yields", {}, topology(feeder, state, batch_size=40,
                                                       batch_seconds=2, max_in_flight=1))
        for i in range(20):  # Spark idle: no release
            feeder.feed(["a", i], msg_id=i)
        cluster.wait_for(lambda: state["seen"] == 20, 60, "the first tuples executed")
        assert released == []
        advance_while_spark_runs(cluster, state, 2)  # the batch comes due and starts in Spark
        wait_for(lambda: state["batches"], 60, "the first batch's Spark job to start")
        for i in range(20, 53):  # 33 added while it runs: released after the 16th and the 32nd
            feeder.feed(["a", i], msg_id=i)
        cluster.wait_for(lambda: state["seen"] == 53, 60, "the tuples added while the batch runs executed")
        assert released == [1, 1]
        state["gate"].set()
        wait_for(lambda: len(state["batches"]) == 2 or advance_while_spark_runs(cluster, state, TICK),
                 60, "the second batch to come due and run")
        cluster.wait_for(lambda: len(feeder.acked) == 53, 60, "every tuple acked")
