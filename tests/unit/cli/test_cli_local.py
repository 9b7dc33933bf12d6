"""``stormpy local`` runs a topology in a real child process and prints its stats."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
STORMPY = [sys.executable, "-m", "stormpy.cli"]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STORMPY, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"})


def test_local_runs_word_count_to_completion_and_prints_stats() -> None:
    res = run_cli("local", "examples", "wordcount:topology", "--idle-stop", "3",
                  "-c", "topology.max.spout.pending=500")
    assert res.returncode == 0, res.stderr
    lines = {line.split("│")[1].strip(): line for line in res.stdout.splitlines()
             if line.count("│") > 5}
    assert "sentences" in lines and "split" in lines and "count" in lines
    cells = [c.strip() for c in lines["sentences"].split("│")]
    assert cells[3] == "10000" and cells[6] == "10000" and cells[7] == "0"  # emitted, acked, failed
    assert "count task" in res.stdout


def test_local_reports_a_bad_module_clearly() -> None:
    res = run_cli("local", "examples", "no_such_module:topology")
    assert res.returncode == 2
    assert "cannot import module 'no_such_module'" in res.stderr


def test_local_reports_a_bad_override_clearly() -> None:
    res = run_cli("local", "examples", "wordcount:topology", "-c", "novalue")
    assert res.returncode == 2
    assert "'novalue' is neither an existing file (YAML or JSON) nor KEY=VALUE" in res.stderr


def test_ctrl_c_stops_cleanly_and_prints_stats() -> None:
    proc = subprocess.Popen([*STORMPY, "local", "examples", "wordcount:build", "--ttl", "60"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200"})
    try:
        deadline = time.monotonic() + 30
        line = ""
        while "running topology" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
        assert "running topology" in line, "the topology never started"
        proc.send_signal(signal.SIGINT)  # the handler is installed before that line is printed
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "topology wordcount" in out and "sentences" in out
    assert "stopped: Ctrl-C received;" in out and "spout tuple(s) still pending" in out


def test_context_code_dir_names_the_path_given_to_local(tmp_path: Path) -> None:
    """A spout opening a shipped file through ``context.code_dir`` finds it in local mode too,
    whatever directory the command runs in (on a cluster it names the unpacked bundle)."""
    code = tmp_path / "proj"
    (code / "data").mkdir(parents=True)
    (code / "data" / "lines.txt").write_text("a\nb\nc\n")
    (code / "shipped.py").write_text('''
from stormpy import Bolt, Spout, TopologyBuilder


class FileSpout(Spout):
    outputs = ["line"]

    def open(self, conf, context):
        self.lines = (context.code_dir / "data" / "lines.txt").read_text().split()

    def next_tuple(self):
        if self.lines:
            line = self.lines.pop(0)
            self.emit([line], msg_id=line)


class Sink(Bolt):
    def execute(self, tup):
        print("got", tup["line"], flush=True)
        self.ack(tup)


builder = TopologyBuilder()
builder.set_spout("lines", FileSpout)
builder.set_bolt("sink", Sink).shuffle_grouping("lines")
topology = builder.create_topology()
''')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = subprocess.run([*STORMPY, "local", str(code), "shipped:topology", "--idle-stop", "3"],
                         cwd=elsewhere, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert [line for line in res.stdout.splitlines() if line.startswith("got ")] == [
        "got a", "got b", "got c"]


def test_python_dash_m_stormpy_is_the_stormpy_command() -> None:
    """As the README calls the command ``stormpy``, ``python -m stormpy`` runs it too."""
    res = subprocess.run([sys.executable, "-m", "stormpy", "local", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Usage: python -m stormpy local [OPTIONS] PATH TARGET")
