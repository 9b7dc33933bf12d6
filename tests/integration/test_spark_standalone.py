"""Spark bolts on a real standalone Spark cluster (master + 1 worker started by the test session,
``spark_standalone``), driven from stormpy cluster worker processes.

The bundle of ``spark_topologies/`` runs a reliable spout of a known set of records into a Spark
bolt whose aggregation uses ``sparkagg.origin``, a UDF defined in the topology module: it runs on
the Spark executor only because the worker shipped the bundle's code there. The tests check the
exact aggregates (the same as the local-mode run of ``test_spark_cluster.py`` checks against
``sparkagg.expected``), and then:

* the executor JVM is killed with SIGKILL while a batch runs: Spark relaunches an executor and
  retries the tasks (or the batch fails and its tuples are replayed); every record still lands
  exactly once in the Parquet results;
* the Spark cluster goes away (worker and master stopped) while records flow: batches fail —
  the running one by ``spark.stormpy.batch.timeout.secs``, later ones at once because the master
  is unreachable — with the errors reported, and their tuples are replayed; when the master and
  worker are back a new SparkSession picks up and nothing is lost.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    HERE,
    attach_cluster_logs,
    record_timing,
    wait_for,
)

from stormpy.bundle import build_bundle
from stormpy.local.spark_cluster import SparkStandalone
from stormpy.testing.cluster import FAST_TIMEOUTS, ProcessCluster

SPARK_TOPOLOGIES = HERE / "spark_topologies"
if str(SPARK_TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(SPARK_TOPOLOGIES))

import sparkagg  # noqa: E402

pytestmark = [pytest.mark.timeout(600), pytest.mark.zookeeper, pytest.mark.cluster,
              pytest.mark.spark]

BATCH_SIZE = 400


@pytest.fixture(scope="module")
def cluster(spark_standalone: SparkStandalone, zookeeper: Any,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nimbus + one supervisor with one slot; workers get 15 s to stop (a Spark bolt's cleanup)."""
    c = ProcessCluster(zookeeper.connect_string, supervisors=1, slots_per_supervisor=1,
                       base_dir=tmp_path_factory.mktemp("cluster"),
                       zk_root=f"/stormpy-tests/spark-standalone-{uuid.uuid4().hex[:8]}",
                       conf={**FAST_TIMEOUTS, "supervisor.worker.shutdown.sleep.secs": 15})
    c.start(timeout_secs=90)
    try:
        yield c
    finally:
        c.stop()
        assert c.worker_processes() == []


@pytest.fixture(scope="module")
def spark_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(SPARK_TOPOLOGIES, tmp_path_factory.mktemp("bundle") / "sparkagg.zip").path


def read_results(results: Path) -> dict[str, tuple[int, int, int, int]]:
    """key → (rows, total, low, high) over every batch's Parquet output."""
    import pyarrow.dataset as ds

    table = ds.dataset(results, format="parquet", partitioning="hive").to_table()
    out: dict[str, tuple[int, int, int, int]] = {}
    for row in table.to_pylist():
        rows, total, low, high = out.get(row["key"], (0, 0, row["low"], row["high"]))
        out[row["key"]] = (rows + row["rows"], total + row["total"], min(low, row["low"]),
                           max(high, row["high"]))
    return out


def submit(cluster: ProcessCluster, bundle: Path, spark: SparkStandalone, out: Path,
           records: int, **kwargs: Any) -> tuple[str, str]:
    """Submit the sparkagg topology on ``spark``; return (name, topology id)."""
    conf = {
        "topology.workers": 1,
        "topology.message.timeout.secs": 60,
        "topology.max.spout.pending": 3 * BATCH_SIZE,
        "spark.master": spark.master_url,
        "spark.app.name": f"stormpy-standalone-{uuid.uuid4().hex[:8]}",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        **kwargs.pop("conf", {}),
    }
    spec = sparkagg.build(str(out), records, batch_size=BATCH_SIZE, aggregators=1, **kwargs)
    name = f"sparkagg-{uuid.uuid4().hex[:6]}"
    return name, cluster.client().submit(name, bundle, spec.to_doc(), conf)


def check_exact(out: Path, records: int, spark: SparkStandalone) -> None:
    ok = [b for b in sparkagg.batches(out) if b[2] == "ok"]
    assert sum(b[1] for b in ok) == records, "every record in exactly one successful batch"
    assert read_results(out / "results") == sparkagg.expected(records)
    # the UDF from the topology module ran on the executor, loaded from the shipped code zip
    for where in sparkagg.origins(out / "results"):
        module, _, cwd = where.partition("|")
        assert "stormpy-code-" in module and module.endswith("sparkagg.py"), where
        assert cwd.startswith(str(spark.worker_dir(0))) and module.startswith(cwd), where


def kill(cluster: ProcessCluster, name: str, tid: str) -> None:
    cluster.client().kill(name, 0)
    wait_for(lambda: not cluster.worker_processes(tid), 60, f"the workers of {tid} to exit", cluster)


def test_udf_from_the_topology_runs_on_executors_and_an_executor_killed_mid_batch(
        cluster: ProcessCluster, spark_standalone: SparkStandalone, spark_bundle: Path,
        tmp_path: Path) -> None:
    records = 4000
    out = tmp_path / "out"
    out.mkdir()
    submitted = time.time()
    name, tid = submit(cluster, spark_bundle, spark_standalone, out, records, rate=250.0)
    first = wait_for(lambda: [b for b in sparkagg.batches(out) if b[2] == "ok"], 300,
                     "the first batch written on the Spark cluster", cluster, interval=0.5)
    record_timing("spark standalone: submit -> first batch written", first[0][4] - submitted)

    def running_batch() -> int | None:
        done = {b[0] for b in sparkagg.batches(out)}
        pending = [b for b in sparkagg.started(out) if b not in done]
        return pending[0] if pending else None

    executors = spark_standalone.executor_processes(0)
    assert len(executors) == 1, executors
    batch = wait_for(running_batch, 120, "a batch to be running", cluster, interval=0.05)
    os.kill(executors[0][0], signal.SIGKILL)
    killed_at = time.time()

    wait_for(lambda: set(sparkagg.read_ids(out / "acked.txt")) == set(range(records)), 300,
             "every record to be acked", cluster, interval=0.5)
    # the batch that was running when the executor died finished after the kill (retried by
    # Spark on a new executor, or failed and replayed into later batches)
    assert any(b[0] == batch and b[4] > killed_at for b in sparkagg.batches(out))
    after = spark_standalone.executor_processes(0)
    assert after and after[0][0] != executors[0][0], "the worker launched a new executor"
    check_exact(out, records, spark_standalone)
    kill(cluster, name, tid)


def test_spark_cluster_outage_fails_batches_then_resumes_with_nothing_lost(
        cluster: ProcessCluster, spark_standalone: SparkStandalone, spark_bundle: Path,
        tmp_path: Path) -> None:
    records = 3000
    out = tmp_path / "out"
    out.mkdir()
    name, tid = submit(cluster, spark_bundle, spark_standalone, out, records, rate=100.0,
                 report_errors=True, conf={"spark.stormpy.batch.timeout.secs": 30})
    wait_for(lambda: [b for b in sparkagg.batches(out) if b[2] == "ok"], 300,
             "the first batch written on the Spark cluster", cluster, interval=0.5)

    spark_standalone.stop_worker(0)  # its executors go with it
    spark_standalone.stop_master()
    down_at = time.time()
    wait_for(lambda: [b for b in sparkagg.batches(out)
             if b[2] == "failed" and b[4] > down_at][1:], 120,
             "two batches to fail while the Spark cluster is down", cluster, interval=0.5)
    # the batch running when the cluster went: bounded by the batch timeout; the next ones fail
    # at once (the session was restarted and the master does not answer); errors are reported
    def reported() -> list[str]:
        errors = [e.message for e in cluster.state.errors(tid, "aggregate")]
        timeout = any("SparkBatchTimeout" in e for e in errors)
        return errors if timeout and any("SparkMasterUnreachable" in e for e in errors) else []

    wait_for(reported, 60, "the batch timeout and the unreachable master to be reported", cluster)

    spark_standalone.start_master()
    spark_standalone.start_worker(0)
    back_at = time.time()
    wait_for(lambda: set(sparkagg.read_ids(out / "acked.txt")) == set(range(records)), 300,
             "every record to be acked after the Spark cluster is back", cluster, interval=0.5)
    assert sparkagg.read_ids(out / "failed.txt"), "the failed batches' tuples were replayed"
    assert any(b[2] == "ok" and b[3] > back_at for b in sparkagg.batches(out))
    check_exact(out, records, spark_standalone)
    started = [line for _, line in cluster.iter_log_lines("started SparkSession")]
    assert len(started) >= 2, "a new SparkSession was started after the outage"
    kill(cluster, name, tid)
