"""A Spark job stuck past ``spark.stormpy.batch.timeout.secs``: the batch fails on the executor loop
with SparkBatchTimeout reported while ``process_batch`` is still busy, and its Spark job — submitted
only after the timeout — is cancelled (seen FAILED by Spark's status tracker; the blocked call
returns long before the job would end, ``abort_batch`` runs), the local session is kept
(``needs_restart``: a local master does not lose executors), and the next batch runs normally. Real
time, the test session's local SparkSession (``reset_spark`` is recorded, never run)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import stormpy.connectors.spark._in_spark as in_spark
from stormpy.connectors.spark import SparkBatchBolt
from stormpy.connectors.spark._arrow import batch_dataframe
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import TopologyBuilder

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark")]

STUCK_SECS = 120.0


def stuck(v: int) -> int:
    """A UDF that blocks the first batch's Spark task (cancelled with the job). It reaches the
    Python workers through ``spark.stormpy.code.dir`` (this directory, shipped as a zip)."""
    time.sleep(STUCK_SECS)
    return v


class StuckOnce(SparkBatchBolt):
    """The first batch after the test says ``stick`` waits (off the loop) until the test says
    ``go`` — by then the executor loop has failed it on the timeout — and only then submits its
    Spark job, blocked by ``stuck``: a job submitted after the batch was given up, which a single
    cancel would miss. Other batches count their rows."""

    outputs = ["batch_id", "n"]

    def __init__(self, key: str, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key
        self.stuck_done = False

    def process_batch(self, df: Any, batch_id: int) -> Any:
        from pyspark.sql import functions as F

        shared = registry.lookup(self.key)
        if "stick" in shared and not self.stuck_done:
            self.stuck_done = True
            shared.append(("stuck", batch_id, sorted(self.spark.sparkContext.getJobTags())))
            deadline = time.monotonic() + 120
            while "go" not in shared and time.monotonic() < deadline:
                time.sleep(0.05)
            shared.append(("submitting", time.monotonic()))
            # count the UDF's non-null results: a plain count() would let Spark prune the UDF
            # column, and the job would end at once instead of blocking
            blocked = df.select(F.udf(stuck, "long")("v").alias("v")).agg(F.count("v"))
            return [[batch_id, blocked.collect()[0][0]]]
        return [[batch_id, df.count()]]

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        registry.lookup(self.key).append(("aborted", batch_id, type(error).__name__,
                                          time.monotonic()))


def entries(shared: list[Any], kind: str) -> list[tuple[Any, ...]]:
    return [e for e in shared if isinstance(e, tuple) and e[0] == kind]


def test_a_stuck_batch_times_out_its_jobs_are_cancelled_and_the_next_batch_runs(
        registry_list: Any, monkeypatch: pytest.MonkeyPatch, spark: Any) -> None:
    resets: list[Any] = []
    monkeypatch.setattr(in_spark, "reset_spark", resets.append)
    feeder = FeederSpout(["k", "v"])
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    builder.set_bolt("spark", StuckOnce, kwargs={
        "key": registry_list.key, "batch_size": 2, "batch_seconds": 0.5}).shuffle_grouping("feed")
    conf = {"spark.stormpy.batch.timeout.secs": 10, "topology.message.timeout.secs": 300,
            "spark.stormpy.code.dir": str(Path(__file__).parent)}
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    for _ in range(2):  # the batches' path warm (a cold first job may take longer than 10 s)
        batch_dataframe(spark, ["k", "v"], [["a", 1], ["b", 2]]).count()

    def run_batch(first_id: int) -> bool:
        """Feed a batch of two; True when it was acked, False when it failed."""
        ids = [first_id, first_id + 1]
        feeder.feed(["a", 1], msg_id=ids[0])
        feeder.feed(["b", 2], msg_id=ids[1])
        cluster.wait_for(lambda: set(ids) <= set(feeder.acked) | set(feeder.failed), 120,
                         f"the batch of {ids}")
        return set(ids) <= set(feeder.acked)

    with LocalCluster() as cluster:
        worker = cluster.submit_topology("stuck", conf, builder.create_topology())
        # a batch through first (on a busy machine one may still pass the timeout: try again)
        assert any(run_batch(10 * i) for i in range(1, 6)), "no batch got through Spark"
        registry_list.append("stick")
        # The executor loop fails the batch on the timeout while process_batch is still blocked
        # (it waits for "go", sent only after this): the loop is never held by the batch.
        assert not run_batch(100), "the stuck batch failed"
        assert not entries(registry_list, "submitting")
        registry_list.append("go")
        [(_, stuck_id, [tag])] = entries(registry_list, "stuck")
        assert tag.startswith(f"stormpy-batch-{stuck_id}-")
        # The job submitted now, after the batch was given up, is cancelled too.
        cluster.wait_for(lambda: [e for e in entries(registry_list, "aborted") if e[1] == stuck_id],
                         90, "the cancelled job to return")
        jobs = list(tracker.getJobIdsForTag(tag))
        statuses = [str(tracker.getJobInfo(j).get().status()) for j in jobs]
        assert run_batch(200), "the next batch runs"
        errors = [e["error"] for e in worker.errors.get("spark", [])]
    [(_, submitted_at)] = entries(registry_list, "submitting")
    [(_, _, error, aborted_at)] = [e for e in entries(registry_list, "aborted") if e[1] == stuck_id]
    assert error == "SparkBatchTimeout"
    assert jobs and statuses == ["FAILED"] * len(jobs), (jobs, statuses)
    assert aborted_at - submitted_at < STUCK_SECS / 2, "the Spark job was cancelled, not waited for"
    assert any("SparkBatchTimeout" in e and "spark.stormpy.batch.timeout.secs" in e
               for e in errors), errors
    assert resets == [], "a local session is kept"
