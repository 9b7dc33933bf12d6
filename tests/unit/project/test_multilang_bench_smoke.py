"""``python -m bench.multilang_bench`` runs end to end on a tiny workload (no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_multilang_bench_writes_its_rows(tmp_path: Path) -> None:
    out = tmp_path / "multilang.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    res = subprocess.run([sys.executable, "-m", "bench.multilang_bench", "--sentences", "200",
                          "--repeat", "1", "--no-storm", "--output", str(out)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert set(doc["rows"]) == {"native stormpy", "pystorm in-process", "pystorm shell, JSON",
                                "pystorm shell, msgpack"}
    assert all(r["sentences_per_sec"] > 0 and r["ratio_to_native"] > 0
               for r in doc["rows"].values())
    assert doc["rows"]["pystorm shell, JSON"]["sentences"] == 20
