"""The exactly-once sink benchmark runs end to end on a tiny workload (no timing is asserted)."""

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


def test_kafka_eos_bench_produces_a_result_file(kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    out = tmp_path / "kafka_eos.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT),
                                                          os.environ.get("PYTHONPATH", "")])}
    args = ["--records", "300", "--batch", "100", "--partitions", "2", "--repeat", "1",
            "--bootstrap", kafka_broker.bootstrap_servers, "--output", str(out)]
    res = subprocess.run([sys.executable, "-m", "bench.kafka_eos", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stderr
    results = json.loads(out.read_text())["results"]
    assert len(results) == 3 and {r["records"] for r in results.values()} == {300}
    sinks = [r for r in results.values() if "commit_p99_ms" in r]
    assert len(sinks) == 2 and all(r["batches"] == 3 for r in sinks)
