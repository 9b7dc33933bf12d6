"""The short many-host run: ``python -m bench.scale_hosts`` with twenty supervisor processes, each
on its own loopback address, a leader Nimbus and a standby and the UI, running four idle topologies
of 1 to 4 workers (``make scale`` runs 100 hosts and 50 topologies). Nothing about time is
asserted: every topology's workers heartbeat from their hosts, the cut supervisor's executors are
rescheduled, the UI answers, and no process is left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.zookeeper, pytest.mark.cluster, pytest.mark.scale, pytest.mark.timeout(600)]


def test_twenty_supervisor_hosts_run_four_topologies_and_survive_a_cut() -> None:
    args = ["--supervisors", "20", "--slots", "2", "--topologies", "4", "--steady-secs", "5",
            "--running-timeout", "400"]
    res = subprocess.run([sys.executable, "-m", "bench.scale_hosts", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=580)
    assert res.returncode == 0, res.stderr[-4000:]
    doc = json.loads(res.stdout)
    assert doc["workers"] == 1 + 2 + 3 + 4
    assert doc["zk_znode_count"] > 0 and doc["zk_writes_per_sec"] > 0
    assert doc["submit_to_running_secs"] > 0 and doc["reschedule_after_cut_secs"] > 0
    assert set(doc["ui_rest_secs"]) == {"cluster_summary", "topology_page"}
    assert all(v["n"] == 5 for v in doc["ui_rest_secs"].values())
    assert doc["rss_mb"]["supervisors"]["n"] == 20 and doc["rss_mb"]["workers"]["n"] >= 10
    assert doc["leftover_workers"] == 0
