"""`stormpy dev-cluster` as a real process: ZooKeeper + Nimbus (or two, --nimbuses 2) + a supervisor
+ the UI come up with one command, answer `stormpy list` and the UI's REST API, and Ctrl-C (SIGINT)
stops every one of them (no strays)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from stormpy.testing import WaitTimeout, wait_for
from stormpy.testing._cluster import find_processes, free_ports
from stormpy.testing._zookeeper import zookeeper_available

pytestmark = [pytest.mark.timeout(180), pytest.mark.cluster]


@pytest.mark.skipif(not zookeeper_available() and os.environ.get("CI", "").lower() != "true",
                    reason="ZooKeeper not installed")
@pytest.mark.parametrize("nimbuses", [1, 2])
def test_dev_cluster_starts_everything_and_ctrl_c_stops_everything(tmp_path: Path, nimbuses: int) -> None:
    zk_port, nimbus_port, slot, ui_port = free_ports(4)
    base = tmp_path / "dev"
    argv = [sys.executable, "-m", "stormpy.cli", "dev-cluster", "--supervisors", "1", "--slots", "1",
            "--nimbuses", str(nimbuses), "--base-dir", str(base), "--ui-port", str(ui_port),
            "-c", f"storm.zookeeper.port={zk_port}",
            "-c", f"nimbus.thrift.port={nimbus_port}", "-c", f"supervisor.slots.ports=[{slot}]"]
    log = tmp_path / "dev-cluster.out"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=tmp_path, start_new_session=True)
    try:
        def running() -> None:
            assert proc.poll() is None, f"dev-cluster exited early:\n{log.read_text()}"

        try:
            wait_for(lambda: "Ctrl-C stops the cluster" in log.read_text(), 120,
                     "dev-cluster to come up", interval=0.2, check=running)
        except WaitTimeout as exc:
            raise AssertionError(f"{exc}:\n{log.read_text()}") from None
        output = log.read_text()
        assert output.count("(leader) serving on") == 1
        assert output.count("(standby) serving on") == nimbuses - 1
        for port in range(nimbus_port, nimbus_port + nimbuses):  # a standby answers reads too
            listed = subprocess.run([sys.executable, "-m", "stormpy.cli", "list", "--nimbus",
                                     f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60)
            assert listed.returncode == 0, listed.stderr
            assert "1 supervisor(s), 0/1 slots used" in listed.stdout
        assert f"UI serving on http://127.0.0.1:{ui_port}" in output
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/api/v1/cluster/summary", timeout=30) as r:
            assert b'"supervisors":1' in r.read()
        served = re.search(r"log server (http://127\.0\.0\.1:\d+)", output)
        assert served, output  # the supervisor's log server, on a free port
        with urllib.request.urlopen(f"{served[1]}/api/v1/listLogs?topoId=none", timeout=30) as r:
            assert json.loads(r.read())["logs"] == []
        assert len(find_processes(str(base))) >= 3 + nimbuses  # ZooKeeper, Nimbus(es), supervisor, UI
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole process group
        assert proc.wait(60) == 0, log.read_text()
        assert find_processes(str(base)) == [], "dev-cluster left processes behind"
        # the daemons stopped while ZooKeeper still served them (it stops last)
        nimbus_logs = sorted(base.rglob("nimbus*.log"))
        assert nimbus_logs, sorted(base.rglob("*.log"))
        for path in [log, *nimbus_logs]:
            assert "Connection dropped" not in path.read_text(), path.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid, _ in find_processes(str(base)):
            os.kill(pid, signal.SIGKILL)
