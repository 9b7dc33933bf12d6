"""Throughput and batch latency through a SparkBatchBolt (local mode, real local Spark), and the
bolt against a plain PySpark loop, in local mode and on a standalone Spark cluster.

    python -m bench.spark_bolt [--tuples 200000] [--sizes 1000 5000 20000] [--tasks 1 2]
                               [--paced-rate 2000]
    python -m bench.spark_bolt --compare [--tuples 200000] [--sizes 20000] [--no-cluster]
                               [--rounds 2]

A reliable spout emits ``--tuples`` tuples (key, value, ts, agent) with message ids; a
SparkBatchBolt turns each batch into a DataFrame (Arrow) and aggregates it (group by key: count,
sum, max; collected to the driver); every tuple is acked after its batch. The SparkSession is
started before timing, so figures are steady state (the JVM start is reported separately).

Reported per configuration: tuples/s from the first emit to the last spout ack, and batch latency
— from batch close to ack (p50/p95/max), split into queueing (waiting for the task's in-flight
slot) and the Spark job itself. Flat out, Spark is the bottleneck, so closed batches queue for
the task's single in-flight slot; the paced run (``--paced-rate`` tuples/s, batches of 1000)
shows latency without that queueing. Results also go to bench/results/spark_bolt.json.

``--compare`` (bench/spark_compare.py) runs, in one process and one run, the bolt (1 task; fed
by a per-tuple spout, and by a batch spout: ``BatchCountingSpout``; with one batch in Spark at a
time, and with two) and a plain loop doing the
same per batch — the same rows through Arrow (``rows_to_arrow``), the same
``createDataFrame``, aggregation and ``collect``, the same batch size — first on ``local[*]``,
then on a standalone master + 1 worker started for the run (``SparkStandalone``); each path runs
``--rounds`` times, rotating which goes first, and the best and the median run of each are
compared; results go to bench/results/spark_compare.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.connectors.spark import BatchInfo, SparkBatchBolt, spark_session
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.topology import Spout, TopologyBuilder, TopologyContext

RESULTS = Path(__file__).parent / "results"
AGENTS = ["curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "Googlebot/2.1"]
#: the spouts' output fields, the columns of every batch
FIELDS = ["key", "value", "ts", "agent"]


def row(i: int) -> list[Any]:
    """Tuple ``i`` of the bench's spouts (and of the plain loop it is compared with)."""
    return [f"/path/{i % 97}", i, 1_700_000_000 + i // 100, AGENTS[i % 3]]


class CountingSpout(Spout):
    """Emits ``count`` tuples (key, value, ts, agent), each with its index as message id; at most
    ``rate`` per second when ``rate`` is set; the time of the first emit goes to the registry list
    ``first_key`` when given."""

    outputs = FIELDS

    def __init__(self, count: int, rate: float = 0.0, first_key: str | None = None) -> None:
        self.count = count
        self.rate = rate
        self.first_key = first_key  # registry list that gets the perf_counter of the first emit

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.i = 0
        self.replay: list[int] = []
        self.start = time.perf_counter()

    def next_tuple(self) -> None:
        i = self.replay.pop() if self.replay else self.i
        if i >= self.count:
            return
        if i == 0 and self.first_key is not None:
            registry.lookup(self.first_key).append(time.perf_counter())
        if self.rate and i == self.i and i > (time.perf_counter() - self.start) * self.rate:
            return
        if i == self.i:
            self.i += 1
        self.emit(row(i), msg_id=i)

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)


class BatchCountingSpout(Spout):
    """``CountingSpout``'s tuples, ``per_call`` of them per ``next_tuple`` as ONE ``emit_batch``
    with a message id per tuple (a reliable batch spout, as the Kafka spout with
    ``batch_acking``): a batch is one tuple tree, reaching a bolt with ``execute_columns`` as one
    ``ColumnBatch``; a failed batch's ids are emitted again."""

    outputs = FIELDS

    def __init__(self, count: int, per_call: int = 1000, first_key: str | None = None) -> None:
        self.count = count
        self.per_call = per_call
        self.first_key = first_key

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.i = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        if self.replay:
            ids, self.replay = self.replay[:self.per_call], self.replay[self.per_call:]
        elif self.i < self.count:
            if self.i == 0 and self.first_key is not None:
                registry.lookup(self.first_key).append(time.perf_counter())
            end = min(self.count, self.i + self.per_call)
            ids = list(range(self.i, end))
            self.i = end
        else:
            return
        self.emit_batch([row(i) for i in ids], ids)

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)


class AggregateBolt(SparkBatchBolt):
    """Group by key (count, sum, max), collected to the driver; records each BatchInfo."""

    def __init__(self, key: str, **batching: Any) -> None:
        super().__init__(**batching)
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.infos: list[BatchInfo] = registry.lookup(self.key)

    def process_batch(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        df.groupBy("key").agg(F.count("*"), F.sum("value"), F.max("ts")).collect()

    def on_batch_done(self, info: BatchInfo) -> None:
        self.infos.append(info)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(tuples: int, batch_size: int, tasks: int, rate: float = 0.0,
        in_flight: int = 1) -> dict[str, Any]:
    """One configuration; returns its figures."""
    infos: list[BatchInfo] = []
    key = registry.register(infos)
    builder = TopologyBuilder()
    builder.set_spout("source", CountingSpout, kwargs={"count": tuples, "rate": rate})
    builder.set_bolt("spark", AggregateBolt, tasks, kwargs={
        "key": key, "batch_size": batch_size, "batch_seconds": 2.0, "max_in_flight": in_flight,
    }).shuffle_grouping("source")
    conf = {"topology.max.spout.pending": 4 * batch_size * tasks,
            "topology.message.timeout.secs": 120}
    try:
        with LocalCluster() as cluster:
            t0 = time.perf_counter()
            worker = cluster.submit_topology("bench-spark", conf, builder.create_topology())
            cluster.wait_for(lambda: worker.stats().get("source", {}).get("acked", 0) >= tuples,
                             900, "every tuple to be acked")
            elapsed = time.perf_counter() - t0
            stats = worker.stats()
    finally:
        registry.unregister(key)
    ok = [i for i in infos if i.ok]
    lat = [i.latency * 1000 for i in ok]
    spark_ms = [(i.finished_at - i.started_at) * 1000 for i in ok]
    queued = [i.queued * 1000 for i in ok]
    return {
        "tuples": tuples, "batch_size": batch_size, "tasks": tasks, "max_in_flight": in_flight,
        "paced_rate": rate,
        "seconds": round(elapsed, 3),
        "tuples_per_sec": round(tuples / elapsed, 1), "batches": len(ok),
        "failed_batches": len(infos) - len(ok), "spout_failed": stats["source"]["failed"],
        "mean_batch": round(statistics.mean(i.size for i in ok), 1),
        "latency_ms_p50": round(pct(lat, 0.5), 1), "latency_ms_p95": round(pct(lat, 0.95), 1),
        "latency_ms_max": round(max(lat), 1),
        "spark_ms_p50": round(pct(spark_ms, 0.5), 1), "queued_ms_p50": round(pct(queued, 0.5), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_bolt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tuples", type=int, default=200_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--tasks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--paced-rate", type=float, default=2000.0,
                        help="tuples/s of the paced run (0 skips it)")
    parser.add_argument("--compare", action="store_true",
                        help="the bolt against a plain PySpark loop, local and standalone")
    parser.add_argument("--no-cluster", action="store_true",
                        help="with --compare: local mode only")
    parser.add_argument("--rounds", type=int, default=2,
                        help="with --compare: runs of each path (rotating order; best and median kept)")
    args = parser.parse_args()
    if args.compare:
        from bench.spark_compare import compare

        compare(args.tuples, args.sizes, cluster=not args.no_cluster, rounds=args.rounds)
        return
    t0 = time.perf_counter()
    with spark_session({"spark.app.name": "bench-spark-bolt"}) as spark:
        spark.range(10).count()
        startup = time.perf_counter() - t0
        print(f"SparkSession started in {startup:.1f}s (not included below)")
        plan = [(size, tasks, 1, 0.0, args.tuples) for tasks in args.tasks for size in args.sizes]
        plan.append((args.sizes[len(args.sizes) // 2], 1, 2, 0.0, args.tuples))
        if args.paced_rate:
            plan.append((1000, 1, 1, args.paced_rate, int(args.paced_rate * 10)))
        results = []
        for size, tasks, in_flight, rate, tuples in plan:
            r = run(tuples, size, tasks, rate, in_flight)
            results.append(r)
            label = f"paced {rate:,.0f}/s" if rate else "flat out"
            print(f"{label:>13} batch_size {size:>6} tasks {tasks} in-flight {in_flight}: "
                  f"{r['tuples_per_sec']:>8,.0f} tuples/s  "
                  f"{r['batches']:>4} batches (mean {r['mean_batch']:,.0f})  latency close→ack "
                  f"p50 {r['latency_ms_p50']:,.0f} ms  p95 {r['latency_ms_p95']:,.0f} ms  "
                  f"max {r['latency_ms_max']:,.0f} ms  (Spark job p50 {r['spark_ms_p50']:,.0f} ms, "
                  f"queued p50 {r['queued_ms_p50']:,.0f} ms)", flush=True)
    RESULTS.mkdir(exist_ok=True)
    doc = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "spark_startup_secs": round(startup, 2),
           "machine": {"python": platform.python_version(), "cpus": _cpus()}, "runs": results}
    (RESULTS / "spark_bolt.json").write_text(json.dumps(doc, indent=2))


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
