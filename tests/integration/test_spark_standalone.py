"""Spark bolts on a real standalone Spark cluster (master + 1 worker started by the test session,
``spark_standalone``), driven from stormpy cluster worker processes.

* The flagship pipeline (``examples/flagship.py``: the log-file spout, the parser, the Spark
  traffic aggregator into Parquet, the reporter), its aggregator adding a column computed by a
  UDF defined in the topology module (``flagship_topologies/trafficudf.py``: it runs on the Spark
  executor only because the worker shipped the bundle's code there). The executor JVM is killed
  with SIGKILL while a batch runs: Spark relaunches an executor and retries the tasks (or the
  batch fails and its tuples are replayed). The Parquet output is the same as local mode's
  (``test_spark_flagship.py`` checks local mode against the same plain-Python recomputation of
  the log) and the flagship's accounting check passes: every request counted exactly once.
* A transactional topology whose committer is a SparkCommitterBolt writes each transaction to
  Parquet through the cluster exactly once, also when a commit fails after its write and is
  replayed (``sparktx``).
* The Spark cluster goes away (worker and master stopped) while records flow (``sparkagg``):
  batches fail — the running one by ``spark.stormpy.batch.timeout.secs``, later ones at once
  because the master is unreachable — with the errors reported, and their tuples are replayed;
  when the master and worker are back a new SparkSession picks up and nothing is lost.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sparkagg
import sparktx
import trafficudf
from cluster_kit import (  # noqa: F401 - fixtures
    HERE,
    attach_cluster_logs,
    record_timing,
    running_cluster,
    wait_for,
)

from accesslogs.generator import generate_lines
from accesslogs.report import accounting_ok, expected_aggregates
from stormpy.bundle import build_bundle
from stormpy.local._spark_cluster import SparkStandalone
from stormpy.testing import WaitTimeout
from stormpy.testing._cluster import ProcessCluster

SPARK_TOPOLOGIES = HERE / "spark_topologies"
FLAGSHIP_TOPOLOGIES = HERE / "flagship_topologies"
EXAMPLES = HERE.parents[1] / "examples"



pytestmark = [pytest.mark.timeout(900), pytest.mark.zookeeper, pytest.mark.cluster,
              pytest.mark.spark]

BATCH_SIZE = 400
#: the outage test's limits (config keys spark.stormpy.batch.timeout.secs, .timeout.max.secs,
#: .master.probe.secs): the timeout fails the first batch of the outage quickly; a restarted
#: cluster's cold executor may need longer for its first jobs (minutes on a loaded host: a
#: timed-out job is cancelled and its Python worker killed, so a fixed timeout below the cold start
#: would never let a batch through), which the timeout's growth after consecutive timeouts, up to
#: the cap, allows; the probe bounds each later failing batch
OUTAGE_BATCH_TIMEOUT = 20
OUTAGE_BATCH_TIMEOUT_MAX = 320
OUTAGE_PROBE = 2


@pytest.fixture(scope="module")
def cluster(spark_standalone: SparkStandalone, zookeeper: Any,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nimbus + one supervisor with one slot; workers get 15 s to stop (a Spark bolt's cleanup)
    and 60 s to start (importing PySpark on a busy machine takes a while)."""
    with running_cluster(zookeeper, tmp_path_factory.mktemp("cluster"), "spark-standalone",
                         supervisors=1, slots=1,
                         conf={"supervisor.worker.shutdown.sleep.secs": 15,
                               "supervisor.worker.start.timeout.secs": 60}) as c:
        yield c


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
    check_udf_ran_on_the_executor(sparkagg.origins(out / "results"), "sparkagg.py", spark)


def kill(cluster: ProcessCluster, name: str, tid: str) -> None:
    cluster.client().kill(name, 0)
    wait_for(lambda: not cluster.worker_processes(tid), 60, f"the workers of {tid} to exit", cluster)


def check_udf_ran_on_the_executor(origins: set[str], module: str,
                                  spark: SparkStandalone) -> None:
    """Every ``origin`` value says: ``module`` loaded from the shipped code zip, in a Python
    worker whose working directory is the Spark worker's executor directory."""
    assert origins
    for where in origins:
        path, _, cwd = where.partition("|")
        assert "stormpy-code-" in path and path.endswith(module), where
        assert cwd.startswith(str(spark.worker_dir(0))) and path.startswith(cwd), where


# -- the flagship -----------------------------------------------------------------------------
FLAGSHIP_LINES = 6000
FLAGSHIP_SEED = 5
FLAGSHIP_BATCH = 1000

Aggregates = dict[tuple[str, str, int], tuple[int, int]]


@pytest.fixture(scope="module")
def flagship_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The flagship's code (``examples/accesslogs``, ``examples/flagship.py``) and
    ``trafficudf.py``, as one bundle."""
    src = tmp_path_factory.mktemp("flagship-src")
    shutil.copytree(EXAMPLES / "accesslogs", src / "accesslogs",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(EXAMPLES / "flagship.py", src / "flagship.py")
    shutil.copy(FLAGSHIP_TOPOLOGIES / "trafficudf.py", src / "trafficudf.py")
    return build_bundle(src, tmp_path_factory.mktemp("bundle") / "flagship.zip").path



def parquet_aggregates(run_dir: Path) -> tuple[Aggregates, set[str]]:
    """The run's Parquet output summed over batches (read with PyArrow), and its origins."""
    import pyarrow.dataset as ds

    out: Counter[tuple[str, str, int]] = Counter()
    size: Counter[tuple[str, str, int]] = Counter()
    origins: set[str] = set()
    for row in ds.dataset(run_dir, format="parquet", partitioning="hive").to_table().to_pylist():
        key = (row["minute"].strftime("%H:%M"), row["path"], row["status"])
        out[key] += row["requests"]
        size[key] += row["bytes"]
        origins.add(row["origin"])
    return {k: (n, size[k]) for k, n in out.items()}, origins


def flagship_batches(probe: Path) -> list[tuple[int, int, str, float]]:
    """(batch id, size, ok|failed, unix time done) of every batch done, both tasks."""
    out = []
    for path in probe.glob("batches-*.txt"):
        for line in path.read_text().splitlines():
            p = line.split()
            if len(p) == 4:
                out.append((int(p[0]), int(p[1]), p[2], float(p[3])))
    return sorted(out, key=lambda b: b[3])


def accounting(probe: Path) -> dict[str, Any]:
    path = probe / "accounting.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_flagship_with_a_topology_udf_and_an_executor_killed_mid_batch_counts_every_request_once(
        cluster: ProcessCluster, spark_standalone: SparkStandalone, flagship_bundle: Path,
        tmp_path: Path) -> None:
    out, probe = tmp_path / "out", tmp_path / "probe"
    out.mkdir()
    probe.mkdir()
    log = tmp_path / "access.log"
    lines = list(generate_lines(FLAGSHIP_LINES, FLAGSHIP_SEED))
    log.write_text("\n".join(lines) + "\n")
    spec = trafficudf.build(str(out), str(probe), str(log), FLAGSHIP_BATCH)
    conf = {**trafficudf.flagship.config,  # batch 1 fails once on purpose (replayed)
            "topology.workers": 1,
            "topology.max.spout.pending": 2 * FLAGSHIP_BATCH,
            "spark.master": spark_standalone.master_url,
            "spark.app.name": f"stormpy-flagship-{uuid.uuid4().hex[:8]}",
            "spark.driver.memory": "512m", "spark.executor.memory": "512m"}
    name = f"flagship-{uuid.uuid4().hex[:6]}"
    submitted = time.time()
    tid = cluster.client().submit(name, flagship_bundle, spec.to_doc(), conf)
    first = wait_for(lambda: [b for b in flagship_batches(probe) if b[2] == "ok"], 480,
                     "the first batch written on the Spark cluster", cluster, interval=0.5)
    record_timing("spark standalone flagship: submit -> first batch written",
                  first[0][3] - submitted)

    def running_batch() -> int | None:
        done = {b[0] for b in flagship_batches(probe)}
        pending = [b for b in sparkagg.started(probe) if b not in done]
        return pending[0] if pending else None

    executors = spark_standalone.executor_processes(0)
    assert len(executors) == 1, executors
    batch = wait_for(running_batch, 120, "a batch to be running", cluster, interval=0.05)
    os.kill(executors[0][0], signal.SIGKILL)
    killed_at = time.time()

    def all_acked() -> dict[str, Any] | None:
        doc = accounting(probe)
        return doc if doc.get("acked") == FLAGSHIP_LINES else None

    done = wait_for(all_acked, 300, "every log line to be acked", cluster, interval=0.5)
    record_timing(f"spark standalone flagship: {FLAGSHIP_LINES} lines, submit -> all acked",
                  time.time() - submitted)
    after = spark_standalone.executor_processes(0)
    assert after and after[0][0] != executors[0][0], "the worker launched a new executor"
    kill(cluster, name, tid)

    # the batch running when the executor died finished after the kill (retried by Spark on a
    # new executor, or failed and replayed into later batches)
    batches = flagship_batches(probe)
    assert any(b[0] == batch and b[3] > killed_at for b in batches)
    # the injected failure of batch 1: its output removed, its lines replayed
    assert 1 in {b[0] for b in batches if b[2] == "failed"}
    run_dir = out / "traffic" / tid
    assert not (run_dir / "batch_id=1").exists()
    assert done["lines"] == FLAGSHIP_LINES and done["failed"] > 0
    # the same Parquet results as local mode, and the flagship's accounting check
    expected, malformed = expected_aggregates(lines)
    written, origins = parquet_aggregates(run_dir)
    assert written == expected
    requests = sum(n for n, _ in written.values())
    assert done["malformed"] == malformed
    assert accounting_ok(done["lines"], done["malformed"], requests, done["batch_records"]), done
    assert sorted(int(p.name.split("=")[1]) for p in run_dir.glob("batch_id=*")) == \
        sorted(b[0] for b in batches if b[2] == "ok")
    check_udf_ran_on_the_executor(origins, "trafficudf.py", spark_standalone)


# -- the transactional Spark committer ----------------------------------------------------------
def test_spark_committer_on_the_cluster_writes_each_transaction_exactly_once(
        cluster: ProcessCluster, spark_standalone: SparkStandalone, spark_bundle: Path,
        tmp_path: Path) -> None:
    import pyarrow.dataset as ds

    n, take, fail_txid = 600, 50, 2  # 3 partitions of 200: 4 transactions of 150 records
    table, marks = tmp_path / "table", tmp_path / "marks"
    marks.mkdir()
    spec = sparktx.build(str(table), str(marks), n, take, fail_txid)
    app = f"stormpy-sparktx-{uuid.uuid4().hex[:8]}"
    conf = {"topology.workers": 1, "topology.message.timeout.secs": 60,
            "topology.max.spout.pending": 2,
            "transactional.zookeeper.root": f"/stormpy-tests/sparktx-{uuid.uuid4().hex[:8]}",
            "spark.master": spark_standalone.master_url, "spark.app.name": app,
            "spark.driver.memory": "512m", "spark.executor.memory": "512m"}
    name = f"sparktx-{uuid.uuid4().hex[:6]}"
    submitted = time.time()
    tid = cluster.client().submit(name, spark_bundle, spec.to_doc(), conf)
    txids = range(1, n // (3 * take) + 1)

    def all_committed() -> bool:
        done = {(t, task) for t, task, _ in sparktx.commits(marks)}
        return all((t, task) in done and (table / f"txid={t}" / f"task={task}").exists()
                   for t in txids for task in (0, 1))

    wait_for(all_committed, 480, "every transaction committed by both tasks", cluster,
             interval=0.5)
    record_timing(f"spark standalone committer: {n} records, submit -> all committed",
                  time.time() - submitted)
    started = [line for _, line in cluster.iter_log_lines("started SparkSession")
               if f"app {app})" in line]
    assert started and all(f"(master {spark_standalone.master_url}," in line
                           for line in started), started
    kill(cluster, name, tid)

    rows = ds.dataset(table, format="parquet", partitioning="hive").to_table().to_pylist()
    assert sorted(r["n"] for r in rows) == list(range(n))  # every record, exactly once
    assert all(r["word"] == f"w{r['n'] % 7}" for r in rows)
    assert {r["txid"] for r in rows} == set(txids)
    outcomes = sparktx.commits(marks)
    # no txid was written twice by a task; the first write of fail_txid on each task broke after
    # writing (or, on a busy machine, its attempt timed out and was abandoned before it could
    # report: an abandoned attempt's outcome is never logged), so a replay found it written
    for t in txids:
        for task in (0, 1):
            written = [w for tx, k, w in outcomes if (tx, k) == (t, task)]
            assert written.count(True) <= 1, (t, task, written)
            if t == fail_txid:
                assert False in written, (t, task, written)
    assert not list(table.glob("txid=*/.tmp-*"))


# -- the Spark cluster going away ---------------------------------------------------------------
@pytest.mark.timeout(1500)  # a loaded host: the restarted cluster's cold executor takes minutes
def test_spark_cluster_outage_fails_batches_then_resumes_with_nothing_lost(
        cluster: ProcessCluster, spark_standalone: SparkStandalone, spark_bundle: Path,
        tmp_path: Path) -> None:
    """Short limits from the config keep it quick: a running batch gives up after
    ``OUTAGE_BATCH_TIMEOUT`` s, an unreachable master is detected (and each failing batch paced)
    in ``OUTAGE_PROBE`` s; after consecutive timeouts the limit doubles (up to
    ``OUTAGE_BATCH_TIMEOUT_MAX``), so the restarted cluster's cold executor gets batches through
    however slow its start. Half the records flow before the outage; the rest are held back (the
    spout's gate) until the cluster is down, so batches are certain to meet the outage."""
    records, gate = 1600, 800
    out = tmp_path / "out"
    out.mkdir()
    name, tid = submit(cluster, spark_bundle, spark_standalone, out, records, gate=gate,
                       report_errors=True,
                       conf={"spark.stormpy.batch.timeout.secs": OUTAGE_BATCH_TIMEOUT,
                             "spark.stormpy.batch.timeout.max.secs": OUTAGE_BATCH_TIMEOUT_MAX,
                             "spark.stormpy.master.probe.secs": OUTAGE_PROBE})
    wait_for(lambda: set(sparkagg.read_ids(out / "acked.txt")) == set(range(gate)), 480,
             "the records before the gate to be acked on the Spark cluster", cluster,
             interval=0.5)

    # its executors go with it (one that outlived the worker ran every gated batch once): the
    # outage begins when none is left
    spark_standalone.stop_worker(0)
    spark_standalone.stop_master()
    assert not spark_standalone.executor_processes(), "an executor outlived its stopped worker"
    down_at = time.time()
    (out / "gate-open").touch()
    wait_for(lambda: [b for b in sparkagg.batches(out)
             if b[2] == "failed" and b[4] > down_at][1:], 120,
             "two batches to fail while the Spark cluster is down", cluster, interval=0.5)
    # the first batch of the outage ends by the batch timeout at the latest (usually a
    # SparkBatchTimeout: the session has lost its executors, so it is restarted; Spark may also
    # fail the job itself first); the next ones fail at once, the master does not answer: the
    # unreachable master is reported (the timeout mechanism has its own test in tests/spark)
    def reported() -> list[str]:
        errors = [e.message for e in cluster.state.errors(tid, "aggregate")]
        return errors if any("SparkMasterUnreachable" in e for e in errors) else []

    try:
        wait_for(reported, 60, "the unreachable master to be reported", cluster)
    except WaitTimeout as exc:
        logged = [line[-300:] for _, line in cluster.iter_log_lines("Spark") if " ERROR " in line
                  or "WARNING" in line][-20:]
        seen = [e.message[:200] for e in cluster.state.errors(tid, "aggregate")]
        raise AssertionError(f"reported: {seen}; batches: {sparkagg.batches(out)[-8:]}; "
                             f"logged: {logged}\n{exc}") from None
    record_timing("spark standalone outage: cluster down -> the unreachable master reported",
                  time.time() - down_at)

    spark_standalone.start_master()
    spark_standalone.start_worker(0)
    back_at = time.time()
    # generous: on a loaded host the new executor JVM and its Python worker take minutes to start;
    # batches meeting that cold start time out, each with twice the time of the one before
    # (OUTAGE_BATCH_TIMEOUT, up to OUTAGE_BATCH_TIMEOUT_MAX), until one gets through
    wait_for(lambda: set(sparkagg.read_ids(out / "acked.txt")) == set(range(records)), 720,
             "every record to be acked after the Spark cluster is back", cluster, interval=0.5)
    record_timing("spark standalone outage: cluster back -> every record acked",
                  time.time() - back_at)
    assert sparkagg.read_ids(out / "failed.txt"), "the failed batches' tuples were replayed"
    assert any(b[2] == "ok" and b[3] > back_at for b in sparkagg.batches(out))
    check_exact(out, records, spark_standalone)
    started = [line for _, line in cluster.iter_log_lines("started SparkSession")]
    assert len(started) >= 2, "a new SparkSession was started after the outage"
    kill(cluster, name, tid)
