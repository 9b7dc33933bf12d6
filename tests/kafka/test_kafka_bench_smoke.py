"""The Kafka spout benchmark runs end to end on a tiny workload (no timing is asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stormpy.testing._kafka import KafkaBroker

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kafka


def test_kafka_spout_bench_produces_a_result_file(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    out = tmp_path / "kafka.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT),
                                                          os.environ.get("PYTHONPATH", "")])}
    args = ["--records", "300", "--partitions", "2", "--repeat", "1",
            "--bootstrap", kafka_broker.bootstrap_servers, "--output", str(out)]
    res = subprocess.run([sys.executable, "-m", "bench.kafka_spout", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    results = doc["results"]
    # two plain loops (async commits, at-least-once); spout acked, unacked, and the columnar
    # (batch_acking) acked and unacked runners
    assert len(results) == 6
    assert {r["records"] for r in results.values()} == {300}  # every side read the same records
    assert all(r["records_per_sec"] > 0 for r in results.values())
