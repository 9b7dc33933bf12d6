"""``python -m bench.cluster_bench`` runs end to end on a tiny workload: a real two-worker
cluster against Bytewax with two processes, a complete-latency run and the workers' memory (no
timing is asserted; the runners themselves check that every word was counted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.timeout(300)]


def test_cluster_bench_produces_every_row(tmp_path: Path) -> None:
    out = tmp_path / "cluster.json"
    # 3,000 sentences: enough work that every row's CPU time spans several ticks of the
    # processes' CPU clock (10 ms; a run of 300 sentences could take less than one, leaving no
    # words-per-CPU-second figure)
    args = ["--sentences", "3000", "--rounds", "1", "--workloads", "final", "--forms", "per-tuple",
            "columns",
            "--latency-rate", "200", "--latency-seconds", "2", "--latency-rounds", "1",
            "--tx-batches", "--output", str(out)]
    res = subprocess.run([sys.executable, "-m", "bench.cluster_bench", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=280)
    assert res.returncode == 0, res.stderr[-4000:]
    doc = json.loads(out.read_text())
    rows = doc["throughput"]
    assert set(rows) == {"final: bytewax (2 processes, 2 partitions)",
                         "final: stormpy 2 workers, acking off, per-tuple",
                         "final: stormpy 2 workers, acking on, per-tuple",
                         # the columnar form: whole batches between two worker processes
                         "final: stormpy 2 workers, acking off, columns",
                         "final: stormpy 2 workers, acking on, columns"}
    assert len({r["words"] for r in rows.values()}) == 1  # the same workload on every side
    for name, r in rows.items():
        assert r["words_per_sec"] > 0, name
        assert r["words_per_cpu_sec"] is not None and r["words_per_cpu_sec"] > 0, (name, r)
        if "stormpy" in name:
            assert r["vs_bytewax_paired_median"] > 0
            assert r["worker_peak_rss_mb"] > 0 and r["worker_peak_uss_mb"] > 0
    lat = doc["latency"]["best"]
    assert lat["tuples"] > 0 and lat["failed"] == 0
    assert 0 < lat["p50_ms"] <= lat["p95_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert len(lat["worker_peak_rss_mb"]) == 2  # both workers of the run, no other
