"""The flagship pipeline (``examples/flagship.py``: LogFileSpout → ParseLogLine → TrafficAggregator
on Spark → TrafficReporter) as cluster tests run it on a standalone Spark cluster, observable
from outside the worker process. Bundled together with ``examples/accesslogs`` and
``examples/flagship.py`` by ``test_spark_standalone.py``.

The parts are the flagship's own, with three additions:

* ``TrafficWithOrigin`` (the aggregator) adds an ``origin`` column to every Parquet row, computed
  by :func:`origin` — a UDF defined in this module, so on a Spark cluster it runs only if the
  topology's code reached the executors. It also logs each batch to files in ``probe_dir``:
  ``started.txt`` (``<batch id> <unix time>`` when ``process_batch`` begins) and
  ``batches-<task>.txt`` (``<batch id> <size> <ok|failed> <unix time done>``).
* ``AccountingReporter`` (the reporter) keeps ``<probe_dir>/accounting.json`` up to date with
  what the flagship's accounting check needs (lines, acked, failed from the spout's progress;
  malformed lines; the records of acked batches), written atomically on each change; at cleanup
  it only releases Spark (the test reads the Parquet output itself).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import flagship
from accesslogs.bolts import TrafficAggregator, TrafficReporter
from stormpy.connectors.spark import BatchInfo, release_spark
from stormpy.topology import TopologyContext, TopologySpec, Tuple


def origin(path: str) -> str:
    """``<this module's file>|<working directory>`` of the Python worker that runs it (a UDF)."""
    return f"{os.path.abspath(__file__)}|{os.getcwd()}"


class TrafficWithOrigin(TrafficAggregator):
    def __init__(self, output_dir: str, probe_dir: str, **batching: Any) -> None:
        super().__init__(output_dir, **batching)
        self.probe_dir = probe_dir

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().prepare(conf, context)
        probe = Path(self.probe_dir)
        self.starts = open(probe / "started.txt", "a", buffering=1)  # noqa: SIM115
        self.log = open(probe / f"batches-{context.task_id}.txt", "a", buffering=1)  # noqa: SIM115

    def extra_aggregates(self) -> list[Any]:
        from pyspark.sql import functions as F

        return [F.first(F.udf(origin, "string")("path")).alias("origin")]

    def process_batch(self, df: Any, batch_id: int) -> list[list[Any]]:
        self.starts.write(f"{batch_id} {time.time():.6f}\n")
        return super().process_batch(df, batch_id)

    def on_batch_done(self, info: BatchInfo) -> None:
        super().on_batch_done(info)
        self.log.write(f"{info.batch_id} {info.size} {'ok' if info.ok else 'failed'} "
                       f"{time.time():.6f}\n")

    def cleanup(self) -> None:
        super().cleanup()
        self.starts.close()
        self.log.close()


class AccountingReporter(TrafficReporter):
    def __init__(self, output_dir: str, summary_path: str, probe_dir: str) -> None:
        super().__init__(output_dir, summary_path)
        self.probe_dir = probe_dir

    def execute(self, tup: Tuple) -> None:
        super().execute(tup)
        doc = {"lines": self.progress.get("lines"), "acked": self.progress.get("acked"),
               "failed": self.progress.get("failed"), "malformed": self.malformed,
               "batches": sorted(self.batches),
               "batch_records": sum(r for r, _ in self.batches.values())}
        path = Path(self.probe_dir) / "accounting.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)

    def cleanup(self) -> None:
        release_spark()


def build(output_dir: str, probe_dir: str, log_path: str, batch_size: int,
          aggregators: int = 2) -> TopologySpec:
    """The flagship over ``log_path`` with the two parts above swapped in."""
    spec = flagship.build_topology(output_dir, log_path=log_path, batch_size=batch_size,
                                   aggregators=aggregators)
    doc = spec.to_doc()
    for name, cls in (("traffic", TrafficWithOrigin), ("report", AccountingReporter)):
        component = doc["components"][name]
        component["class"] = f"{cls.__module__}:{cls.__qualname__}"
        component["kwargs"] = {**component["kwargs"], "probe_dir": probe_dir}
    return TopologySpec.from_doc(doc)
