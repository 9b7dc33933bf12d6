"""The tracker micro-benchmark runs end to end on a tiny workload (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_tracker_bench_runs() -> None:
    res = subprocess.run([sys.executable, "-m", "bench.kinesis_tracker", "--records", "3000",
                          "--window", "100", "--repeat", "1"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "in-order acks" in res.stdout and "shuffled acks" in res.stdout
