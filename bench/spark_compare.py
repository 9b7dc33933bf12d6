"""The Spark bolt against a plain PySpark loop doing the same work, in local mode and on a
standalone Spark cluster, in one run (``python -m bench.spark_bolt --compare``).

Per mode and batch size, each path runs once untimed (warm-up: the JVM's JIT, Spark's code
cache), then ``rounds`` times (rotating which goes first), the best run of each compared:

* **bolt**: a LocalCluster topology — ``CountingSpout`` (reliable, message ids) into
  ``TimedAggregate`` (1 task): each batch becomes a DataFrame through Arrow, is grouped by key
  (count, sum, max) and collected; tuples acked after their batch. Timed from the spout's first
  emit to the bolt's ack of the last batch (see ``run_bolt`` for the breakdown: first-batch
  fill, Arrow + ``createDataFrame``, the job, handoff between jobs, tail).
* **bolt, batch spout**: the same with ``BatchCountingSpout``: the same tuples, 1,000 per
  ``emit_batch`` with a message id each (one tuple tree per 1,000, as the Kafka spout's
  ``batch_acking``), reaching the bolt as ``ColumnBatch``es that join its micro-batch whole;
  every tuple still acked after its batch, a failed batch's tuples replayed.
* **plain**: the same rows built in Python, cut into the same batches, each through
  ``rows_to_arrow`` → ``createDataFrame`` → the same aggregation → ``collect``, one after the
  other; each step timed.

Why the sides do the same work: the same rows (both spouts emit exactly ``row(i)``), the same
batches (20,000 tuples closed by count: with the batch spout 20 column batches of 1,000, never
split), the same ``rows_to_arrow`` → ``createDataFrame`` → aggregation → ``collect`` on the same
SparkSession. The bolt additionally moves every tuple through the topology with at-least-once
tracking (message ids, the acker, acks after the batch): the cost being measured.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from bench.spark_bolt import AGENTS, RESULTS, AggregateBolt, BatchCountingSpout, CountingSpout
from stormpy.connectors.spark import (
    BatchInfo,
    get_spark,
    release_spark,
    retain_spark,
    rows_to_arrow,
    stop_spark,
)
from stormpy.connectors.spark.arrow import arrow_to_dataframe
from stormpy.testing import LocalCluster, registry
from stormpy.topology import TopologyBuilder, TopologyContext

FIELDS = ["key", "value", "ts", "agent"]


def row(i: int) -> list[Any]:
    """The spout's tuple ``i`` (same as ``CountingSpout``)."""
    return [f"/path/{i % 97}", i, 1_700_000_000 + i // 100, AGENTS[i % 3]]


def aggregate(df: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return df.groupBy("key").agg(F.count("*"), F.sum("value"), F.max("ts")).collect()


class TimedAggregate(AggregateBolt):
    """``AggregateBolt`` that also records, per batch, when ``process_batch`` began and ended
    (``(batch_id, begin, end)``, perf_counter) into the list registered under ``jobs_key``: the
    job alone (aggregation + collect) is ``end - begin``; before ``begin`` the bolt built the
    DataFrame (Arrow + ``createDataFrame``)."""

    def __init__(self, key: str, jobs_key: str, **batching: Any) -> None:
        super().__init__(key, **batching)
        self.jobs_key = jobs_key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.jobs: list[tuple[int, float, float]] = registry.lookup(self.jobs_key)

    def process_batch(self, df: Any, batch_id: int) -> None:
        t = time.perf_counter()
        aggregate(df)
        self.jobs.append((batch_id, t, time.perf_counter()))


def run_bolt(conf: Mapping[str, Any], tuples: int, batch_size: int,
             batch_spout: bool = False) -> dict[str, Any]:
    """The bolt's run, timed from the spout's first emit to the bolt's ack of the last batch
    (``seconds``; the topology's deployment before it is reported as ``deploy_secs``), and where
    that time went:

    * ``fill_secs``: first emit → the first batch handed to Spark (spout, routing, batching of the
      first batch; nothing overlaps it);
    * ``arrow_and_create_secs``: Σ batch handed to Spark → ``process_batch`` begins (rows →
      Arrow → ``createDataFrame``, plus the bolt's per-batch session check and job tag);
    * ``job_secs``: Σ ``process_batch`` (aggregation + collect);
    * ``handoff_secs``: Σ one job's end → the next batch handed to Spark (the result back on the
      executor loop, the next batch's submission; Spark idle meanwhile);
    * ``tail_secs``: the last job's end → its tuples acked by the bolt.
    """
    infos: list[BatchInfo] = []
    jobs: list[tuple[int, float, float]] = []
    first: list[float] = []
    keys = [registry.register(x) for x in (infos, jobs, first)]
    builder = TopologyBuilder()
    builder.set_spout("source", BatchCountingSpout if batch_spout else CountingSpout,
                      kwargs={"count": tuples, "first_key": keys[2]})
    builder.set_bolt("spark", TimedAggregate, 1, kwargs={
        "key": keys[0], "jobs_key": keys[1], "batch_size": batch_size, "batch_seconds": 2.0,
    }).shuffle_grouping("source")
    topo_conf = {**conf, "topology.max.spout.pending": 2 * batch_size,
                 "topology.message.timeout.secs": 300}
    try:
        with LocalCluster() as cluster:
            t0 = time.perf_counter()
            worker = cluster.submit_topology("bench-compare", topo_conf, builder.create_topology())
            cluster.wait_for(lambda: worker.stats().get("source", {}).get("acked", 0) >= tuples,
                             1800, "every tuple to be acked")
    finally:
        for key in keys:
            registry.unregister(key)
    ok = sorted((i for i in infos if i.ok), key=lambda i: i.started_at)
    spans = {batch_id: (begin, done) for batch_id, begin, done in jobs}
    job_end = [spans[i.batch_id][1] for i in ok]
    end = max(i.finished_at for i in ok)
    return {"seconds": end - first[0], "deploy_secs": first[0] - t0,
            "batches": len(ok), "failed_batches": len(infos) - len(ok),
            "fill_secs": ok[0].started_at - first[0],
            "arrow_and_create_secs": sum(spans[i.batch_id][0] - i.started_at for i in ok),
            "job_secs": sum(spans[i.batch_id][1] - spans[i.batch_id][0] for i in ok),
            "handoff_secs": sum(nxt.started_at - done for nxt, done in zip(ok[1:], job_end)),
            "tail_secs": end - job_end[-1]}


def run_plain(conf: Mapping[str, Any], tuples: int, batch_size: int) -> dict[str, Any]:
    spark = get_spark(conf)
    rows_secs = arrow_secs = create_secs = job_secs = 0.0
    batches = 0
    t0 = time.perf_counter()
    for start in range(0, tuples, batch_size):
        t = time.perf_counter()
        rows = [row(i) for i in range(start, min(tuples, start + batch_size))]
        t1 = time.perf_counter()
        table = rows_to_arrow(FIELDS, rows)
        t2 = time.perf_counter()
        df = arrow_to_dataframe(spark, table)
        t3 = time.perf_counter()
        aggregate(df)
        t4 = time.perf_counter()
        rows_secs += t1 - t
        arrow_secs += t2 - t1
        create_secs += t3 - t2
        job_secs += t4 - t3
        batches += 1
    return {"seconds": time.perf_counter() - t0, "batches": batches, "rows_secs": rows_secs,
            "arrow_secs": arrow_secs, "create_secs": create_secs, "job_secs": job_secs}


def compare(tuples: int, sizes: list[int], cluster: bool = True,
            rounds: int = 2) -> list[dict[str, Any]]:
    """Run every mode and size, each path ``rounds`` times (rotating which goes first: the
    machine's load and warm-up then favour neither); print and save the best run of each."""
    modes: list[tuple[str, Any]] = [("local[*]", None)]
    if cluster:
        modes.append(("standalone", "start"))
    results: list[dict[str, Any]] = []
    for mode, standalone in modes:
        spark_cluster = None
        if standalone:
            from stormpy.local.spark_cluster import SparkStandalone

            spark_cluster = SparkStandalone(1, worker_cores=2, worker_memory="1g").start()
            conf = {"spark.master": spark_cluster.master_url, "spark.executor.memory": "768m",
                    "spark.app.name": "bench-spark-compare"}
        else:
            conf = {"spark.master": "local[*]", "spark.app.name": "bench-spark-compare"}
        retain_spark()
        try:
            t = time.perf_counter()
            get_spark(conf).range(10).count()  # session and executors up before timing
            print(f"{mode}: SparkSession ready in {time.perf_counter() - t:.1f}s (not timed)")
            for size in sizes:
                plains: list[dict[str, Any]] = []
                bolts: list[dict[str, Any]] = []
                batched: list[dict[str, Any]] = []
                paths = [(plains, run_plain), (bolts, run_bolt),
                         (batched, partial(run_bolt, batch_spout=True))]
                for _, fn in paths:  # warm every path (the JVM's JIT, Spark's code cache)
                    fn(conf, 2 * size, size)
                for round_ in range(rounds):  # rotate which path goes first; keep the best
                    shift = round_ % len(paths)
                    for runs, fn in paths[shift:] + paths[:shift]:
                        runs.append(fn(conf, tuples, size))
                plain = min(plains, key=lambda r: r["seconds"])
                bolt = min(bolts, key=lambda r: r["seconds"])
                batch_bolt = min(batched, key=lambda r: r["seconds"])
                ratio = plain["seconds"] / bolt["seconds"]
                batch_ratio = plain["seconds"] / batch_bolt["seconds"]
                r = {"mode": mode, "tuples": tuples, "batch_size": size, "rounds": rounds,
                     "plain": plain, "bolt": bolt, "bolt_vs_plain": round(ratio, 3),
                     "bolt_batch_spout": batch_bolt,
                     "bolt_batch_spout_vs_plain": round(batch_ratio, 3),
                     "plain_secs_all": [round(x["seconds"], 3) for x in plains],
                     "bolt_secs_all": [round(x["seconds"], 3) for x in bolts],
                     "bolt_batch_spout_secs_all": [round(x["seconds"], 3) for x in batched]}
                results.append(r)
                print(f"{mode:>10} batch {size:>6}: plain {tuples / plain['seconds']:>8,.0f} "
                      f"tuples/s, bolt {tuples / bolt['seconds']:>8,.0f} tuples/s "
                      f"({ratio:.2f}x the plain loop), bolt with a batch spout "
                      f"{tuples / batch_bolt['seconds']:>8,.0f} tuples/s ({batch_ratio:.2f}x)",
                      flush=True)
                print(f"{'':>10} plain: rows {plain['rows_secs']:.2f}s, Arrow "
                      f"{plain['arrow_secs']:.2f}s, createDataFrame {plain['create_secs']:.2f}s, "
                      f"job+collect {plain['job_secs']:.2f}s of {plain['seconds']:.2f}s")
                for name, run in (("bolt", bolt), ("bolt, batch spout", batch_bolt)):
                    print(f"{'':>10} {name}: fill {run['fill_secs']:.2f}s, Arrow+createDataFrame "
                          f"{run['arrow_and_create_secs']:.2f}s, job+collect {run['job_secs']:.2f}s, "
                          f"handoff {run['handoff_secs']:.2f}s, tail {run['tail_secs']:.2f}s of "
                          f"{run['seconds']:.2f}s ({run['batches']} batches; deploy "
                          f"{run['deploy_secs']:.2f}s before the first emit, not timed)", flush=True)
        finally:
            release_spark()
            stop_spark()
            if spark_cluster is not None:
                spark_cluster.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark_compare.json").write_text(json.dumps(
        {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "runs": results}, indent=2))
    return results
