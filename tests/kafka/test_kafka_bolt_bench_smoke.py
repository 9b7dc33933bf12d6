"""The Kafka bolt benchmark runs end to end on a tiny workload (no timing is asserted)."""

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


def test_kafka_bolt_bench_produces_a_result_file(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    out = tmp_path / "kafka_bolt.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT),
                                                          os.environ.get("PYTHONPATH", "")])}
    args = ["--records", "300", "--partitions", "2", "--repeat", "1",
            "--bootstrap", kafka_broker.bootstrap_servers, "--output", str(out)]
    res = subprocess.run([sys.executable, "-m", "bench.kafka_bolt", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    results = doc["results"]
    assert len(results) == 3 and doc["acks"] == "all"  # plain, per tuple, spout batches
    assert {r["records"] for r in results.values()} == {300}  # every side delivered every record
    assert all(r["records_per_sec"] > 0 for r in results.values())
