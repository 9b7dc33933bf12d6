"""The bolts of the access-log pipeline: parse, aggregate with Spark into Parquet, report."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accesslogs.parsing import FIELDS, parse_line
from accesslogs.report import format_report, summarize_traffic
from accesslogs.spout import PROGRESS_STREAM
from stormpy.connectors.spark import BatchInfo, SparkBatchBolt, get_spark, release_spark, retain_spark
from stormpy.topology import BasicBolt, Bolt, Stream, TopologyContext, Tuple

MALFORMED_STREAM = "malformed"
#: Topology config key: the batch id whose first attempt fails on purpose (-1: none).
FAIL_BATCH_KEY = "flagship.fail.batch"


class ParseLogLine(BasicBolt):
    """Parses combined-format lines into records (``FIELDS``, default stream). A malformed line
    is not retried: it goes, anchored, to the ``malformed`` stream (to be counted) and is acked."""

    outputs = [Stream(FIELDS), Stream(["line"], name=MALFORMED_STREAM)]

    def process(self, tup: Tuple) -> None:
        line = tup.values[0]
        record = parse_line(line)
        if record is None:
            self.emit([line], stream=MALFORMED_STREAM)
        else:
            self.emit(list(record))


class InjectedFailure(RuntimeError):
    """Raised on purpose to show that a failed batch is replayed and written exactly once."""


class TrafficAggregator(SparkBatchBolt):
    """Per micro-batch, requests and bytes per (minute, path, status), computed by Spark and
    written to ``<output_dir>/<run>/batch_id=<id>/`` as Parquet (``run`` = the topology id).

    Writing is idempotent per batch id (overwrite), and a failed batch removes what it wrote
    (``abort_batch``), so after replays every record is counted exactly once. Emits one
    (batch_id, records, groups) row per batch. The batch id in ``flagship.fail.batch`` fails once
    after writing, on purpose.
    """

    outputs = ["batch_id", "records", "groups"]
    report_batch_errors = False

    def __init__(self, output_dir: str, batch_size: int = 3000, batch_seconds: float = 1.0,
                 idle_seconds: float | None = 0.5) -> None:
        super().__init__(batch_size=batch_size, batch_seconds=batch_seconds,
                         idle_seconds=idle_seconds,
                         schema="ts long, ip string, method string, path string, status int, "
                                "bytes long")
        self.output_dir = output_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        self.run_dir = Path(self.output_dir) / context.topology_id
        self.fail_batch = int(conf.get(FAIL_BATCH_KEY, -1))
        self.component = context.component_id

    def batch_dir(self, batch_id: int) -> Path:
        return self.run_dir / f"batch_id={batch_id}"

    def extra_aggregates(self) -> list[Any]:
        """More aggregate columns per (minute, path, status) group (Spark ``Column`` objects,
        named with ``alias``); none here. A subclass adds its own, e.g. from a UDF."""
        return []

    def process_batch(self, df: Any, batch_id: int) -> list[list[Any]]:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        totals = Observation(f"batch-{batch_id}")
        agg = (df.withColumn("minute", F.date_trunc("minute", F.timestamp_seconds("ts")))
               .groupBy("minute", "path", "status")
               .agg(F.count("*").alias("requests"), F.sum("bytes").alias("bytes"),
                    *self.extra_aggregates())
               .observe(totals, F.sum("requests").alias("records"), F.count("*").alias("groups")))
        agg.coalesce(1).write.mode("overwrite").parquet(str(self.batch_dir(batch_id)))
        if batch_id == self.fail_batch:
            raise InjectedFailure(f"injected failure of batch {batch_id} (after writing it)")
        metrics = totals.get
        return [[batch_id, int(metrics["records"]), int(metrics["groups"])]]

    def abort_batch(self, batch_id: int, error: BaseException) -> None:
        shutil.rmtree(self.batch_dir(batch_id), ignore_errors=True)

    def on_batch_done(self, info: BatchInfo) -> None:
        if info.error is not None:
            print(f"{self.component}: batch {info.batch_id} failed ({info.error}); its output was "
                  f"removed and its {info.size} tuples failed, so the spout replays them",
                  flush=True)


class TrafficReporter(Bolt):
    """Collects what happened (global grouping): the spout's ``progress``, the parser's
    ``malformed`` lines and the aggregator's per-batch results. At cleanup it reads the run's
    Parquet output back with Spark, prints a summary and writes it to ``summary_path``; output of
    earlier runs under ``output_dir`` is removed then.

    Malformed lines and batch results are anchored, so once the spout has seen every line acked,
    the reporter has counted all of them."""

    def __init__(self, output_dir: str, summary_path: str, top: int = 8) -> None:
        self.output_dir = output_dir
        self.summary_path = summary_path
        self.top = top

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.conf = conf
        self.run_dir = Path(self.output_dir) / context.topology_id
        self.started = time.monotonic()
        self.finished: float | None = None
        self.progress: dict[str, int] = {}
        self.malformed = 0
        self.samples: list[str] = []
        self.batches: dict[int, tuple[int, int]] = {}
        retain_spark()

    def execute(self, tup: Tuple) -> None:
        if tup.stream == PROGRESS_STREAM:
            self.progress = tup.as_dict()
            self.finished = time.monotonic()
        elif tup.stream == MALFORMED_STREAM:
            self.malformed += 1
            if len(self.samples) < 3:
                self.samples.append(tup.values[0][:70])
        else:
            batch_id, records, groups = tup.values
            self.batches[batch_id] = (records, groups)
        self.ack(tup)

    def cleanup(self) -> None:
        try:
            self._report()
        finally:
            release_spark()
        for old in self.run_dir.parent.iterdir():
            if old.is_dir() and old != self.run_dir:
                shutil.rmtree(old, ignore_errors=True)

    def _report(self) -> None:
        traffic = None
        if any(self.run_dir.glob("batch_id=*")):
            traffic = summarize_traffic(get_spark(self.conf), str(self.run_dir), self.top)
        seconds = (self.finished or time.monotonic()) - self.started
        doc = {"run_dir": str(self.run_dir), "seconds": round(seconds, 2),
               "lines": self.progress.get("lines"), "acked": self.progress.get("acked"),
               "failed": self.progress.get("failed"), "malformed": self.malformed,
               "malformed_samples": self.samples, "batches": len(self.batches),
               "batch_records": sum(r for r, _ in self.batches.values()),
               "traffic": traffic.to_doc() if traffic else None}
        Path(self.summary_path).parent.mkdir(parents=True, exist_ok=True)
        Path(self.summary_path).write_text(json.dumps(doc, indent=2))
        print(format_report(doc), flush=True)
