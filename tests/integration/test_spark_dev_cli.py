"""``stormpy dev-spark``: a standalone master and worker from the installed PySpark, on free
ports, stopped by SIGTERM with no JVM left behind."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stormpy.connectors.spark._code import probe_master
from stormpy.local._processes import find_processes
from stormpy.local._spark_cluster import MASTER_CLASS, WORKER_CLASS

pytestmark = [pytest.mark.timeout(300), pytest.mark.spark]


def test_dev_spark_serves_until_sigterm_and_leaves_no_jvm(spark_required: None,
                                                          tmp_path: Path) -> None:
    base = tmp_path / "dev-spark"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from stormpy.cli.main import main; main()", "dev-spark",
         "--port", "0", "--base-dir", str(base)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Ctrl-C stops it" in line:
                break
        output = "".join(lines)
        match = re.search(r"Spark master serving on (spark://127\.0\.0\.1:(\d+))", output)
        assert match, output
        url, port = match.group(1), match.group(2)
        probe_master(url, 5.0)
        assert "1 worker(s)" in output
        workers = find_processes(WORKER_CLASS, str(base))
        masters = find_processes(MASTER_CLASS, "--port", port)
        assert len(workers) == 1 and len(masters) == 1, (workers, masters)
        assert (base / "master.log").is_file() and (base / "worker-0.log").is_file()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, proc.stdout.read()
        assert find_processes(WORKER_CLASS, str(base)) == []
        assert find_processes(MASTER_CLASS, "--port", port) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
