"""A Spark job stuck past ``spark.stormpy.batch.timeout.secs``: the batch fails on the executor
loop with SparkBatchTimeout reported, its Spark job is cancelled (the blocked call returns long
before the job would end, ``abort_batch`` runs), the local session is kept (``needs_restart``:
a local master does not lose executors), and the next batch runs normally. Real time, the test
session's local SparkSession (``reset_spark`` is recorded, never run)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import stormpy.connectors.spark.bolt as bolt_module
from stormpy.connectors.spark import SparkBatchBolt
from stormpy.testing import FeederSpout, LocalCluster, registry
from stormpy.topology import TopologyBuilder

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark")]

STUCK_SECS = 120.0


def stuck(v: int) -> int:
    """A UDF that blocks the first batch's Spark task (cancelled with the job). It reaches the
    Python workers through ``spark.stormpy.code.dir`` (this directory, shipped as a zip)."""
    time.sleep(STUCK_SECS)
    return v


class FirstBatchStuck(SparkBatchBolt):
    outputs = ["batch_id", "n"]

    def __init__(self, key: str, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key

    def process_batch(self, df: Any, batch_id: int) -> Any:
        from pyspark.sql import functions as F

        if batch_id == 0:
            df = df.select(F.udf(stuck, "long")("v").alias("v"))
        return [[batch_id, df.count()]]

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        registry.lookup(self.key).append(("aborted", batch_id, type(error).__name__,
                                          time.monotonic()))


def test_a_stuck_batch_times_out_is_cancelled_and_the_next_batch_runs(
        registry_list: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    resets: list[Any] = []
    monkeypatch.setattr(bolt_module, "reset_spark", resets.append)
    feeder = FeederSpout(["k", "v"])
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    builder.set_bolt("spark", FirstBatchStuck, kwargs={
        "key": registry_list.key, "batch_size": 2, "batch_seconds": 0.5}).shuffle_grouping("feed")
    conf = {"spark.stormpy.batch.timeout.secs": 3, "topology.message.timeout.secs": 300,
            "spark.stormpy.code.dir": str(Path(__file__).parent)}
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("stuck", conf, builder.create_topology())
        started = time.monotonic()
        feeder.feed(["a", 1], msg_id=1)
        feeder.feed(["b", 2], msg_id=2)
        cluster.wait_for(lambda: sorted(feeder.failed) == [1, 2], 60, "the stuck batch to fail")
        failed_after = time.monotonic() - started
        cluster.wait_for(lambda: bool(registry_list), 60, "the cancelled job to return")
        [(kind, batch_id, error, aborted_at)] = registry_list
        feeder.feed(["c", 3], msg_id=3)
        feeder.feed(["d", 4], msg_id=4)
        cluster.wait_for(lambda: sorted(feeder.acked) == [3, 4], 60, "the next batch")
        errors = [e["error"] for e in worker.errors.get("spark", [])]
    assert failed_after < STUCK_SECS / 2, "failed by the timeout, not after the job"
    assert (kind, batch_id, error) == ("aborted", 0, "SparkBatchTimeout")
    assert aborted_at - started < STUCK_SECS / 2, "the Spark job was cancelled"
    assert any("SparkBatchTimeout" in e and "spark.stormpy.batch.timeout.secs" in e
               for e in errors), errors
    assert resets == [], "a local session is kept"
