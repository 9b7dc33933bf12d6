"""The multilang bench's shell split bolt on Apache Storm: one JVM running Storm's
``LocalCluster`` (``ShellSplitBench.java`` of ``bench/peers/storm/``) whose split bolt is a
``ShellBolt`` running the command the stormpy shell row runs, so the two rows time the same
subprocess doing the same work (see ``bench.multilang_bench``).

    with StormShellSplit(sentences_file, command, env) as storm:
        storm.run(5000)   # {"sentences", "words", "counted", "seconds", "cpu_seconds"}

The JVM answers one ``run SENTENCES`` command per round with one JSON line, so its rounds
interleave with the Python rows in one bench run. Needs ``java`` and ``mvn`` (``storm_peer.build``).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.peers import storm_peer

MAIN = "stormpy.bench.ShellSplitBench"


class StormShellSplit:
    """One JVM over the sentences of ``sentences_file`` (one per line, single-space separated:
    ``storm_peer.write_sentences``); the split bolt runs ``command`` with ``env`` (the JVM's
    environment, which its ShellBolt's subprocess inherits). Builds the Maven project first
    when needed. Use as a context manager."""

    def __init__(self, sentences_file: Path, command: Sequence[str],
                 env: Mapping[str, str] | None = None) -> None:
        storm_peer.build()
        classpath = f"{storm_peer.JAR}{os.pathsep}{storm_peer.CLASSPATH.read_text().strip()}"
        log_fd, log_name = tempfile.mkstemp(prefix="stormpy-storm-split-", suffix=".log")
        self.log_path = Path(log_name)  # the JVM's stderr (Storm's warnings and errors)
        try:
            self.proc = subprocess.Popen(
                ["java", *storm_peer.JVM_OPTS, "-cp", classpath, MAIN, str(sentences_file),
                 *command], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_fd,
                text=True, cwd=storm_peer.TARGET, env=dict(env) if env is not None else None)
        finally:
            os.close(log_fd)
        try:
            self.ready = self._answer()
        except BaseException:
            self.close()
            raise

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise RuntimeError(f"the Storm JVM exited ({code}); its log:\n"
                               f"{self.log_path.read_text(errors='replace')[-3000:]}")
        doc: dict[str, Any] = json.loads(line)
        if "error" in doc:
            raise RuntimeError(f"the Storm JVM: {doc['error']}")
        return doc

    def run(self, sentences: int) -> dict[str, Any]:
        """One round on the first ``sentences`` sentences: ``seconds`` and ``cpu_seconds`` (the
        JVM's and its subprocesses') from the sink's first word to the spout's last ack,
        ``words`` expected and ``counted`` by then."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run {sentences}\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(120)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> StormShellSplit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
