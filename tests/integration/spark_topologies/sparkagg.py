"""A Spark bolt in cluster worker processes, observable from outside them (cluster tests).

``records`` (one reliable spout task) emits ``count`` records ``(key, value)`` — ``record(i)`` for
message id ``i`` — and replays the ones that fail. With ``gate`` set, records from id ``gate`` on
are held back until the file ``<out_dir>/gate-open`` exists (the test opens the gate). ``aggregate``
(a SparkBatchBolt, usually two tasks in two workers, shuffle grouping, so tuples cross workers)
aggregates each micro-batch with Spark — rows, sum, min and max of ``value`` per ``key`` — and
writes it as Parquet to ``<out_dir>/results/batch_id=<id>/``. The batch whose id is ``fail_batch``
raises once after writing; ``abort_batch`` removes its output and its tuples are failed, so the
spout replays them into a later batch and every record is still counted exactly once.

Files in ``out_dir`` (one line per event, so the test can poll them):

* ``emitted.txt`` — ``<msg id>`` per emit (replays appear twice);
* ``acked.txt`` / ``failed.txt`` — ``<msg id> <unix time>`` per ack / fail;
* ``batches-<task id>.txt`` — ``<batch id> <size> <ok|failed> <started> <finished> <pid>``
  per batch (unix times; ``started`` when its Spark job began);
* ``started.txt`` — ``<batch id> <unix time>`` when a batch's ``process_batch`` begins.

Each batch's Parquet rows also carry ``origin``, computed by :func:`origin` — a UDF defined in
this module, so on a Spark cluster it runs only if the topology's code reached the executors: it
returns where the module was loaded from and the Python worker's working directory.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy import Spout, TopologyBuilder, TopologyContext, TopologySpec
from stormpy.connectors.spark import BatchInfo, SparkBatchBolt

KEYS = 7


def record(i: int) -> list[Any]:
    return [f"k{i % KEYS}", i]


def origin(key: str) -> str:
    """``<this module's file>|<working directory>`` of the Python worker that runs it (a UDF; on
    a standalone cluster the working directory is the executor's, under the Spark worker's)."""
    import os

    return f"{os.path.abspath(__file__)}|{os.getcwd()}"


class InjectedFailure(RuntimeError):
    """The failure of ``fail_batch``, on purpose."""


class RecordSpout(Spout):
    outputs = ["key", "value"]

    def __init__(self, out_dir: str, count: int, rate: float = 0.0, gate: int = -1) -> None:
        self.out_dir = Path(out_dir)
        self.count = count
        self.rate = rate  # new records per second (0: as fast as possible)
        self.gate = gate  # first id held back until <out_dir>/gate-open exists (-1: none)

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.ids = iter(range(self.count))
        self.replay: list[int] = []
        self.emitted = open(self.out_dir / "emitted.txt", "a", buffering=1)  # noqa: SIM115
        self.acked = open(self.out_dir / "acked.txt", "a", buffering=1)  # noqa: SIM115
        self.failed = open(self.out_dir / "failed.txt", "a", buffering=1)  # noqa: SIM115
        self.opened = time.monotonic()
        self.fresh = 0
        self.gate_checked = 0.0

    def next_tuple(self) -> None:
        if self.replay:
            i: int | None = self.replay.pop()
        elif (self.rate and self.fresh >= (time.monotonic() - self.opened) * self.rate) or (
                self.fresh == self.gate and not self._gate_open()):
            return
        else:
            i = next(self.ids, None)
            self.fresh += 1
        if i is None:
            return
        self.emitted.write(f"{i}\n")
        self.emit(record(i), msg_id=i)

    def _gate_open(self) -> bool:
        now = time.monotonic()
        if now - self.gate_checked < 0.1:
            return False
        self.gate_checked = now
        if (self.out_dir / "gate-open").exists():
            self.gate = -1
            return True
        return False

    def ack(self, msg_id: int) -> None:
        self.acked.write(f"{msg_id} {time.time():.6f}\n")

    def fail(self, msg_id: int) -> None:
        self.failed.write(f"{msg_id} {time.time():.6f}\n")
        self.replay.append(msg_id)

    def close(self) -> None:
        for f in (self.emitted, self.acked, self.failed):
            f.close()


class SparkAggregate(SparkBatchBolt):
    def __init__(self, out_dir: str, fail_batch: int = -1, batch_size: int = 500,
                 batch_seconds: float = 1.0, report_errors: bool = False) -> None:
        super().__init__(batch_size=batch_size, batch_seconds=batch_seconds, idle_seconds=0.5,
                         schema="key string, value long")
        self.out_dir = out_dir
        self.fail_batch = fail_batch
        self.report_batch_errors = report_errors

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.results = Path(self.out_dir) / "results"
        self.log = open(Path(self.out_dir) / f"batches-{context.task_id}.txt", "a",  # noqa: SIM115
                        buffering=1)
        self.started: dict[int, float] = {}
        self.starts = open(Path(self.out_dir) / "started.txt", "a", buffering=1)  # noqa: SIM115

    def batch_dir(self, batch_id: int) -> Path:
        return self.results / f"batch_id={batch_id}"

    def process_batch(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        self.started[batch_id] = time.time()
        self.starts.write(f"{batch_id} {self.started[batch_id]:.6f}\n")
        where = F.udf(origin, "string")
        agg = df.groupBy("key").agg(F.count("*").alias("rows"), F.sum("value").alias("total"),
                                    F.min("value").alias("low"), F.max("value").alias("high"),
                                    F.first(where("key")).alias("origin"))
        agg.coalesce(1).write.mode("overwrite").parquet(str(self.batch_dir(batch_id)))
        if batch_id == self.fail_batch:
            raise InjectedFailure(f"injected failure of batch {batch_id} (after writing it)")

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        shutil.rmtree(self.batch_dir(batch_id), ignore_errors=True)

    def on_batch_done(self, info: BatchInfo) -> None:
        import os

        started = self.started.pop(info.batch_id, 0.0)
        self.log.write(f"{info.batch_id} {info.size} {'ok' if info.ok else 'failed'} "
                       f"{started:.6f} {time.time():.6f} {os.getpid()}\n")

    def cleanup(self) -> None:
        super().cleanup()
        self.log.close()
        self.starts.close()


def build(out_dir: str, count: int, fail_batch: int = -1, batch_size: int = 500,
          aggregators: int = 2, rate: float = 0.0, report_errors: bool = False,
          gate: int = -1) -> TopologySpec:
    builder = TopologyBuilder()
    builder.set_spout("records", RecordSpout, kwargs={"out_dir": out_dir, "count": count,
                                                      "rate": rate, "gate": gate})
    builder.set_bolt("aggregate", SparkAggregate, aggregators, kwargs={
        "out_dir": out_dir, "fail_batch": fail_batch, "batch_size": batch_size,
        "report_errors": report_errors}).shuffle_grouping("records")
    return builder.create_topology()


# -- helpers for the tests (not used by the workers) ---------------------------------------------------
def expected(count: int) -> dict[str, tuple[int, int, int, int]]:
    """key → (rows, total, low, high) over every record."""
    out: dict[str, tuple[int, int, int, int]] = {}
    for k in range(KEYS):
        values = range(k, count, KEYS)
        if values:
            out[f"k{k}"] = (len(values), sum(values), min(values), max(values))
    return out


def read_ids(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(line.split()[0]) for line in path.read_text().splitlines()
            if line.split() and line.split()[0].isdigit()]


def started(out_dir: Path) -> dict[int, float]:
    """batch id → unix time its ``process_batch`` began (the last start of each id)."""
    path = out_dir / "started.txt"
    if not path.exists():
        return {}
    return {int(p[0]): float(p[1]) for p in (line.split() for line in
                                             path.read_text().splitlines()) if len(p) == 2}


def origins(results: Path) -> set[str]:
    """Every ``origin`` value written (see :func:`origin`)."""
    import pyarrow.dataset as ds

    table = ds.dataset(results, format="parquet", partitioning="hive").to_table(columns=["origin"])
    return set(table.column("origin").to_pylist())


def read_times(path: Path) -> list[float]:
    if not path.exists():
        return []
    return [float(parts[1]) for parts in (line.split() for line in path.read_text().splitlines())
            if len(parts) == 2]


def batches(out_dir: Path) -> list[tuple[int, int, str, float, float, int]]:
    """(batch id, size, ok|failed, started, finished, pid) of every batch done, all tasks."""
    out = []
    for path in out_dir.glob("batches-*.txt"):
        for line in path.read_text().splitlines():
            p = line.split()
            if len(p) == 6:
                out.append((int(p[0]), int(p[1]), p[2], float(p[3]), float(p[4]), int(p[5])))
    return sorted(out, key=lambda b: b[4])
