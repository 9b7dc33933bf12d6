"""The flagship access-log pipeline end to end on a real local Spark: exact aggregates on a known
input, and exact output after an injected batch failure and the spout's replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import flagship
from accesslogs.bolts import FAIL_BATCH_KEY
from accesslogs.generator import generate_lines
from accesslogs.report import expected_aggregates
from stormpy.testing import LocalCluster

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("spark"), pytest.mark.timeout(600)]

KNOWN_LOG = """\
10.0.0.1 - - [10/Mar/2024:09:00:05 +0000] "GET / HTTP/1.1" 200 1000 "-" "curl/8.5.0"
10.0.0.2 - alice [10/Mar/2024:09:00:30 +0000] "GET /?utm=mail HTTP/1.1" 200 500 "-" "curl/8.5.0"
10.0.0.1 - - [10/Mar/2024:09:00:59 +0000] "GET /cart HTTP/1.1" 500 300 "-" "curl/8.5.0"
not a log line at all
10.0.0.3 - - [10/Mar/2024:09:01:00 +0000] "GET / HTTP/1.1" 304 - "-" "Mozilla/5.0"
10.0.0.3 - - [10/Mar/2024:09:01:10 +0000] "POST /cart HTTP/1.1" 302 - "https://x/" "Mozilla/5.0"
10.0.0.4 - - [10/Mar/2024:10:01:10 +0100] "GET / HTTP/1.1" 200 2000 "-" "curl/8.5.0"
10.0.0.5 - - [10/Mar/2024:09:01:20 +0000] "\\x16\\x03\\x01" 400 226 "-" "-"
10.0.0.5 - - [10/Mar/2024:09:02:00 +0000] "GET /cart HTTP/1.1" 500 100 "-" "curl/8.5.0"
10.0.0.6 - - [10/Mar/2024:09:01:30 +0000] "GET / HTTP/1.1" 200 1500
"""

#: (minute, path, status) -> (requests, bytes) for KNOWN_LOG, worked out by hand.
KNOWN_AGGREGATES = {
    ("09:00", "/", 200): (2, 1500),
    ("09:00", "/cart", 500): (1, 300),
    ("09:01", "/", 304): (1, 0),
    ("09:01", "/cart", 302): (1, 0),
    ("09:01", "/", 200): (1, 2000),
    ("09:02", "/cart", 500): (1, 100),
}


def run_pipeline(tmp_path: Path, conf: dict[str, Any], **build: Any) -> dict[str, Any]:
    """Run the flagship until the spout has every line acked, stop it (the reporter writes
    summary.json at cleanup) and return the summary."""
    spec = flagship.build_topology(tmp_path, **build)
    with LocalCluster() as cluster:
        worker = cluster.submit_topology("flagship", {**flagship.config, **conf}, spec)
        lines = build.get("lines") if "log_path" not in build else \
            len(Path(build["log_path"]).read_text().splitlines())

        def all_acked() -> bool:
            return worker.stats().get("logs", {}).get("acked", 0) >= lines
        cluster.wait_for(all_acked, 300, "every log line to be acked")
        cluster.wait_until_quiet("flagship", 60)
        cluster.kill_topology("flagship")
    return json.loads((tmp_path / "summary.json").read_text())


def parquet_aggregates(spark: Any, run_dir: str) -> dict[tuple[str, str, int], tuple[int, int]]:
    from pyspark.sql import functions as F

    rows = (spark.read.parquet(run_dir)
            .groupBy(F.date_format("minute", "HH:mm").alias("m"), "path", "status")
            .agg(F.sum("requests").alias("r"), F.sum("bytes").alias("b")).collect())
    return {(r["m"], r["path"], r["status"]): (r["r"], r["b"]) for r in rows}



def test_known_input_gives_exact_aggregates(tmp_path: Path, spark: Any) -> None:
    log = tmp_path / "known.log"
    log.write_text(KNOWN_LOG)
    summary = run_pipeline(tmp_path, {FAIL_BATCH_KEY: -1}, log_path=log, batch_size=2)
    assert parquet_aggregates(spark, summary["run_dir"]) == KNOWN_AGGREGATES
    assert (summary["lines"], summary["acked"], summary["failed"]) == (10, 10, 0)
    assert summary["malformed"] == 3
    assert summary["batch_records"] == 7
    traffic = summary["traffic"]
    assert (traffic["requests"], traffic["bytes"]) == (7, 3900)
    assert (traffic["server_errors"], traffic["client_errors"]) == (2, 0)
    assert traffic["status_mix"] == {"200": 3, "302": 1, "304": 1, "500": 2}
    assert traffic["top_paths"][0] == {"path": "/", "requests": 4, "bytes": 3500,
                                       "server_errors": 0, "client_errors": 0}
    assert traffic["top_paths"][1] == {"path": "/cart", "requests": 3, "bytes": 400,
                                       "server_errors": 2, "client_errors": 0}
    assert traffic["minutes"] == 3
    assert traffic["busiest_minute"] == "2024-03-10 09:00 UTC"  # 3 requests, as 09:01: earliest wins


def test_failed_batch_is_replayed_and_every_record_counted_once(tmp_path: Path, spark: Any) -> None:
    lines, seed = 1500, 11
    summary = run_pipeline(tmp_path, {FAIL_BATCH_KEY: 1}, lines=lines, seed=seed, batch_size=200,
                           batch_seconds=0.5)
    expected, malformed = expected_aggregates(generate_lines(lines, seed))
    assert parquet_aggregates(spark, summary["run_dir"]) == expected
    assert summary["lines"] == summary["acked"] == lines
    assert 0 < summary["failed"] <= 200  # the tuples of batch 1, replayed
    assert summary["malformed"] == malformed
    assert summary["batch_records"] == summary["traffic"]["requests"] == lines - malformed
    assert not (Path(summary["run_dir"]) / "batch_id=1").exists()
