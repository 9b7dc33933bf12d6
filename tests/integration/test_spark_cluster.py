"""End to end on real processes: a SparkBatchBolt in cluster worker processes.

One Nimbus + two supervisors; the bundle of ``spark_topologies/`` runs a reliable spout of a known
set of records into a Spark bolt with two tasks in two workers (shuffle grouping, so tuples cross
workers over ZeroMQ). Each worker process starts its own SparkSession (a small
JVM: ``spark.driver.memory`` from the topology config); every batch is aggregated by Spark and
written as Parquet; one batch fails once on purpose and is replayed. The test waits until every
record is acked, checks the exact aggregates (read back with PyArrow), then kills the topology and
checks that no worker process and no Spark JVM is left, and that the JVMs shut down cleanly.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sparkagg
from cluster_kit import (  # noqa: F401 - fixtures
    HERE,
    attach_cluster_logs,
    kill_and_check_gone,
    record_timing,
    running_cluster,
    wait_for,
)

from stormpy.bundle import build_bundle
from stormpy.testing._cluster import ProcessCluster, find_processes

SPARK_TOPOLOGIES = HERE / "spark_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster,
              pytest.mark.spark]

RECORDS = 4000
BATCH_SIZE = 500
FAIL_BATCH = 1


@pytest.fixture(scope="module", autouse=True)
def _spark_available(spark_required: None) -> None:
    """Skip (before ZooKeeper and the cluster start) when PySpark or Java is missing; in CI
    (``CI=true``) that is a failure (tests/conftest.py)."""


@pytest.fixture(scope="module")
def cluster(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nimbus + two supervisors (two slots each), as ``cluster_kit``'s, but giving workers 15 s
    to stop (``supervisor.worker.shutdown.sleep.secs``, default 3) as Spark workers need: a Spark
    bolt's cleanup waits for running jobs and the JVM's shutdown, and a worker killed meanwhile
    leaves Spark's temporary files behind."""
    with running_cluster(zookeeper, tmp_path_factory.mktemp("cluster"), "spark-cluster",
                         conf={"supervisor.worker.shutdown.sleep.secs": 15}) as c:
        yield c


@pytest.fixture(scope="module")
def spark_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_bundle(SPARK_TOPOLOGIES, tmp_path_factory.mktemp("bundle") / "sparkagg.zip").path


def spark_jvms(app_name: str) -> list[tuple[int, list[str]]]:
    """Spark driver JVMs (and their launcher scripts) started for ``app_name``."""
    return find_processes(f"spark.app.name={app_name}")


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


@pytest.fixture
def app_name() -> Iterator[str]:
    """A unique ``spark.app.name``; afterwards no JVM of it may be left (killed if one is)."""
    name = f"stormpy-cluster-test-{uuid.uuid4().hex[:8]}"
    yield name
    left = spark_jvms(name)
    for pid, _ in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"Spark JVMs left after the test: {left}"


def test_spark_bolt_in_worker_processes_exact_results_replay_and_clean_kill(
        cluster: ProcessCluster, spark_bundle: Path, tmp_path: Path, app_name: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    spec = sparkagg.build(str(out), RECORDS, fail_batch=FAIL_BATCH, batch_size=BATCH_SIZE)
    conf = {
        "topology.workers": 2,
        "topology.message.timeout.secs": 30,
        "topology.max.spout.pending": 4 * BATCH_SIZE,
        "spark.app.name": app_name,
        "spark.master": "local[2]",
        "spark.driver.memory": "512m",
        "spark.local.dir": str(tmp_path / "spark-local"),
    }
    submitted = time.time()
    tid = cluster.client().submit("sparkagg", spark_bundle, spec.to_doc(), conf)

    # Both bolt tasks run in worker processes on different supervisors.
    assignment = wait_for(lambda: cluster.state.assignment(tid), 30, "the assignment", cluster)
    assert {node for node, _ in assignment.workers()} == set(cluster.supervisor_ids().values())

    first = wait_for(lambda: [b for b in sparkagg.batches(out) if b[2] == "ok"], 150,
                     "the first batch written by Spark", cluster)
    record_timing("spark cluster: submit -> first batch written", first[0][4] - submitted)

    every = set(range(RECORDS))
    wait_for(lambda: set(sparkagg.read_ids(out / "acked.txt")) == every, 120,
             "every record to be acked", cluster, interval=0.5)
    done_at = max(sparkagg.read_times(out / "acked.txt"))

    batches = sparkagg.batches(out)
    failed = [b for b in batches if b[2] == "failed"]
    ok = [b for b in batches if b[2] == "ok"]
    # The injected failure: exactly that batch failed, its records were failed and replayed.
    assert [b[0] for b in failed] == [FAIL_BATCH]
    replayed = sparkagg.read_ids(out / "failed.txt")
    assert len(replayed) == failed[0][1] and len(set(replayed)) == len(replayed)
    assert sorted(sparkagg.read_ids(out / "emitted.txt")) == sorted([*range(RECORDS), *replayed])
    # Every record went through exactly one successful batch.
    assert sum(b[1] for b in ok) == RECORDS
    # Spark ran in two different worker processes (one SparkSession each), not in this one.
    pids = {b[5] for b in ok}
    worker_pids = {pid for pid, _ in cluster.worker_processes(tid)}
    assert len(pids) == 2 and pids <= worker_pids and os.getpid() not in pids
    # The topology's spark.* settings reached the sessions: one small JVM per worker.
    started = [line for _, line in cluster.iter_log_lines("started SparkSession")]
    assert len(started) == 2 and all(f"(master local[2], app {app_name})" in line
                                     for line in started), started
    jvms = [argv for _, argv in spark_jvms(app_name) if Path(argv[0]).name == "java"]
    assert len(jvms) == 2 and all("-Xmx512m" in argv for argv in jvms), jvms

    # The exact aggregates; the failed batch's output was removed by abort_batch.
    results = out / "results"
    written = sorted(int(p.name.split("=")[1]) for p in results.glob("batch_id=*"))
    assert written == sorted(b[0] for b in ok)
    assert read_results(results) == sparkagg.expected(RECORDS)

    record_timing(f"spark cluster: {RECORDS} records, submit -> all acked", done_at - submitted)
    record_timing(f"spark cluster: {RECORDS - first[0][1]} records, first batch written -> all "
                  "acked", done_at - first[0][4])
    record_timing("spark cluster: mean Spark job per batch", sum(b[4] - b[3] for b in ok) / len(ok))

    kill_and_check_gone(cluster, "sparkagg", tid)
    wait_for(lambda: not spark_jvms(app_name), 30, "the Spark JVMs to exit", cluster)
    # Each JVM exited on its own before its worker did: its shutdown hooks removed Spark's
    # temporary directories (a JVM killed with its worker's process group leaves them behind).
    assert list((tmp_path / "spark-local").iterdir()) == []
    assert not list(cluster.iter_log_lines("could not stop the SparkSession"))
    assert not list(cluster.iter_log_lines("did not exit within"))
