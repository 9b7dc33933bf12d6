"""The flagship pipeline: web access logs → parse → Spark micro-batches → Parquet → summary.

Run it:  stormpy local examples flagship:topology --ttl 300 --idle-stop 2   (or ``make run``)

* ``logs`` (LogFileSpout, reliable): a seeded generator writes 30,000 Apache combined-format lines
  to ``output/flagship/access.log`` on first run; each line is emitted with its byte offset as
  message id and replayed from that offset if it fails.
* ``parse`` (2 tasks, shuffle grouping): combined-format parser; malformed lines (about 1%) go to
  the reporter to be counted and are acked, never retried.
* ``traffic`` (SparkBatchBolt, 2 tasks, fields grouping on ``path``): micro-batches of up to 3,000
  records (or 1 s) become Spark DataFrames through Arrow; requests and bytes per (minute, path,
  status) are written to ``output/flagship/traffic/<run>/batch_id=<id>/`` as Parquet. Batch 1
  fails once on purpose (``-c flagship.fail.batch=-1`` turns that off): its output is removed and
  its records replayed into a later batch, so every request is still counted exactly once.
* ``report`` (global grouping): counts malformed lines and batch results and takes the spout's
  final progress; at shutdown reads the run's Parquet back with Spark and prints the summary (also
  written to ``output/flagship/summary.json``).
"""

from __future__ import annotations

from pathlib import Path

from accesslogs.bolts import (
    FAIL_BATCH_KEY,
    MALFORMED_STREAM,
    ParseLogLine,
    TrafficAggregator,
    TrafficReporter,
)
from accesslogs.spout import PROGRESS_STREAM, LogFileSpout
from stormpy.topology import TopologyBuilder, TopologySpec

OUTPUT = Path(__file__).resolve().parent.parent / "output" / "flagship"
LINES = 30_000
SEED = 7


def build_topology(output_dir: str | Path = OUTPUT, lines: int = LINES, seed: int = SEED,
                   batch_size: int = 3000, batch_seconds: float = 1.0, aggregators: int = 2,
                   log_path: str | Path | None = None) -> TopologySpec:
    """The pipeline writing under ``output_dir`` (Parquet runs, summary.json). It reads
    ``log_path`` when given, else the generated log of ``lines`` lines for ``seed`` (written to
    ``output_dir`` if missing)."""
    out = Path(output_dir)
    if log_path is None:
        spout_kwargs = {"path": str(out / f"access-{lines}-{seed}.log"), "generate_lines": lines,
                        "seed": seed}
    else:
        spout_kwargs = {"path": str(log_path)}
    builder = TopologyBuilder()
    builder.set_spout("logs", LogFileSpout, kwargs=spout_kwargs)
    builder.set_bolt("parse", ParseLogLine, 2).shuffle_grouping("logs")
    builder.set_bolt("traffic", TrafficAggregator, aggregators, kwargs={
        "output_dir": str(out / "traffic"), "batch_size": batch_size,
        "batch_seconds": batch_seconds}).fields_grouping("parse", ["path"])
    (builder.set_bolt("report", TrafficReporter, kwargs={
        "output_dir": str(out / "traffic"), "summary_path": str(out / "summary.json")})
        .global_grouping("traffic")
        .global_grouping("parse", MALFORMED_STREAM)
        .global_grouping("logs", PROGRESS_STREAM))
    return builder.create_topology()


def topology() -> TopologySpec:
    return build_topology()


config = {
    "topology.max.spout.pending": 12_000,
    "topology.message.timeout.secs": 60,
    "spark.app.name": "stormpy-flagship",
    FAIL_BATCH_KEY: 1,
}
