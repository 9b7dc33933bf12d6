"""The Spark bolt against a plain PySpark loop doing the same work, in local mode and on a
standalone Spark cluster, in one run (``python -m bench.spark_bolt --compare``).

Per mode and batch size, each path runs once untimed (warm-up: the JVM's JIT, Spark's code
cache), then ``rounds`` times (rotating which goes first):

* **bolt**: a LocalCluster topology — ``CountingSpout`` (reliable, message ids) into
  ``TimedAggregate`` (1 task): each batch becomes a DataFrame through Arrow, is grouped by key
  (count, sum, max) and collected; tuples acked after their batch. Timed from the spout's first
  emit to the bolt's ack of the last batch (see ``run_bolt`` for the breakdown: first-batch
  fill, Arrow + ``createDataFrame``, the job, handoff between jobs, tail).
* **bolt, batch spout**: the same with ``BatchCountingSpout``: the same tuples, 1,000 per
  ``emit_batch`` with a message id each (one tuple tree per 1,000, as the Kafka spout's
  ``batch_acking``), reaching the bolt as ``ColumnBatch``es that join its micro-batch whole;
  every tuple still acked after its batch, a failed batch's tuples replayed.
* **bolt, 2 in flight** and **bolt, batch spout, 2 in flight**: the same two with
  ``max_in_flight=2``: the bolt hands a closed batch to Spark while the previous one's job still
  runs (two jobs at once in Spark's scheduler; results and acks per batch, possibly out of order).
* **plain**: the same rows built in Python, cut into the same batches, each through
  ``rows_to_arrow`` → ``createDataFrame`` → the same aggregation → ``collect``, one after the
  other; each step timed.

Why the sides do the same work: the same rows (both spouts emit exactly ``row(i)``), the same
batches (20,000 tuples closed by count: with the batch spout 20 column batches of 1,000, never
split), the same ``rows_to_arrow`` → ``createDataFrame`` → aggregation → ``collect`` on the same
SparkSession. The bolt additionally moves every tuple through the topology with at-least-once
tracking (message ids, the acker, acks after the batch): the cost being measured. Running two
batches' jobs at once changes when the work runs, not what it is: each batch is still its own
DataFrame, aggregation and ``collect``.

Each path's best and median run are compared with the plain loop's best and median: on a
shared 2-CPU machine single runs move by ±20% (see docs/spark.md).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from bench.spark_bolt import (
    FIELDS,
    RESULTS,
    AggregateBolt,
    BatchCountingSpout,
    CountingSpout,
    row,
)
from stormpy.connectors.spark import (
    BatchInfo,
    get_spark,
    release_spark,
    retain_spark,
    rows_to_arrow,
    stop_spark,
)
from stormpy.connectors.spark._arrow import arrow_to_dataframe
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import TopologyBuilder, TopologyContext


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
             batch_spout: bool = False, max_in_flight: int = 1) -> dict[str, Any]:
    """The bolt's run, timed from the spout's first emit to the bolt's ack of the last batch
    (``seconds``; the topology's deployment before it is reported as ``deploy_secs``), and where
    that time went:

    * ``fill_secs``: first emit → the first batch handed to Spark (spout, routing, batching of the
      first batch; nothing overlaps it);
    * ``arrow_and_create_secs``: Σ batch handed to Spark → ``process_batch`` begins (rows →
      Arrow → ``createDataFrame``, plus the bolt's per-batch session check and job tag);
    * ``job_secs``: Σ ``process_batch`` (aggregation + collect);
    * ``handoff_secs``: Σ the gaps with no batch in Spark (one job's end → the next batch handed
      over: the result back on the executor loop, the next batch's submission);
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
        "max_in_flight": max_in_flight,
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
            "handoff_secs": _idle_between(ok, job_end),
            "tail_secs": end - job_end[-1]}


def _idle_between(ok: list[BatchInfo], job_end: list[float]) -> float:
    """Σ the gaps in which no batch was in Spark, from the first batch handed over to the last
    job's end (``ok`` in the order they were handed over; with several in flight they overlap)."""
    idle, latest = 0.0, job_end[0]
    for info, end in zip(ok[1:], job_end[1:]):
        idle += max(0.0, info.started_at - latest)
        latest = max(latest, end)
    return idle


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


#: the bolt's paths: name → (batch spout?, batches in Spark at once)
BOLT_PATHS: dict[str, tuple[bool, int]] = {
    "bolt": (False, 1),
    "bolt, batch spout": (True, 1),
    "bolt, 2 in flight": (False, 2),
    "bolt, batch spout, 2 in flight": (True, 2),
}


def compare(tuples: int, sizes: list[int], cluster: bool = True,
            rounds: int = 2) -> list[dict[str, Any]]:
    """Run every mode and size, each path ``rounds`` times (rotating which goes first: the
    machine's load and warm-up then favour neither); print and save the best and median run of
    each, and their ratio to the plain loop's."""
    modes: list[tuple[str, Any]] = [("local[*]", None)]
    if cluster:
        modes.append(("standalone", "start"))
    results: list[dict[str, Any]] = []
    for mode, standalone in modes:
        spark_cluster = None
        if standalone:
            from stormpy.local._spark_cluster import SparkStandalone

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
                paths: list[tuple[str, Callable[..., dict[str, Any]]]] = [("plain", run_plain)]
                paths += [(name, partial(run_bolt, batch_spout=batch, max_in_flight=in_flight))
                          for name, (batch, in_flight) in BOLT_PATHS.items()]
                runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in paths}
                for _, fn in paths:  # warm every path (the JVM's JIT, Spark's code cache)
                    fn(conf, 2 * size, size)
                for round_ in range(rounds):  # rotate which path goes first
                    shift = round_ % len(paths)
                    for name, fn in paths[shift:] + paths[:shift]:
                        runs[name].append(fn(conf, tuples, size))
                r = _summarize(mode, tuples, size, rounds, runs)
                results.append(r)
                _print(r)
        finally:
            release_spark()
            stop_spark()
            if spark_cluster is not None:
                spark_cluster.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark_compare.json").write_text(json.dumps(
        {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "runs": results}, indent=2))
    return results


def _summarize(mode: str, tuples: int, size: int, rounds: int,
               runs: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per path: its best run, the ratio of the plain loop's best to its best, and of the plain
    loop's median to its median, and every run's seconds."""
    plain = [x["seconds"] for x in runs["plain"]]
    out: dict[str, Any] = {"mode": mode, "tuples": tuples, "batch_size": size, "rounds": rounds,
                           "paths": {}}
    for name, xs in runs.items():
        secs = [x["seconds"] for x in xs]
        out["paths"][name] = {
            "best": min(xs, key=lambda x: x["seconds"]),
            "vs_plain_best": round(min(plain) / min(secs), 3),
            "vs_plain_median": round(statistics.median(plain) / statistics.median(secs), 3),
            "secs_all": [round(x, 3) for x in secs]}
    return out


def _print(r: Mapping[str, Any]) -> None:
    tuples = r["tuples"]
    print(f"{r['mode']:>10}, batch {r['batch_size']}, {tuples:,} tuples, {r['rounds']} rounds "
          f"(best [median]):", flush=True)
    for name, p in r["paths"].items():
        best = p["best"]
        median = statistics.median(p["secs_all"])
        if name == "plain":
            ratio = ""
            parts = (f"rows {best['rows_secs']:.2f}s, Arrow {best['arrow_secs']:.2f}s, "
                     f"createDataFrame {best['create_secs']:.2f}s, job+collect "
                     f"{best['job_secs']:.2f}s")
        else:
            ratio = f" {p['vs_plain_best']:.2f}x [{p['vs_plain_median']:.2f}x] the plain loop;"
            parts = (f"fill {best['fill_secs']:.2f}s, Arrow+createDataFrame "
                     f"{best['arrow_and_create_secs']:.2f}s, job+collect {best['job_secs']:.2f}s, "
                     f"handoff {best['handoff_secs']:.2f}s, tail {best['tail_secs']:.2f}s")
        print(f"{name:>32}: {tuples / best['seconds']:>8,.0f} tuples/s, {best['seconds']:.2f}s "
              f"[{median:.2f}s];{ratio} {parts}", flush=True)
