"""Apache Storm itself as the bench's peer: builds ``bench/peers/storm/`` (a Maven project: Storm
2.8's ``storm-client`` and ``storm-server``, the README's word count in Java, and its split bolt
as a ``ShellBolt`` running ``resources/splitter.py`` with Storm's own ``storm.py`` from
``org.apache.storm:multilang-python``) and drives one JVM running Storm's ``LocalCluster``.

The JVM reads the sentences from a file the bench writes (``write_sentences``: the Python
generator's sentences, one per line) and answers one ``run WORKLOAD ACKING SPLIT SENTENCES``
command per round with one JSON line (``StormPeer.run``), so its rounds interleave with the
Python runners' in one bench run. See ``WordCountBench.java`` for what a round times.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Self

PROJECT = Path(__file__).resolve().parent / "storm"
TARGET = PROJECT / "target"
JAR = TARGET / "storm-peer.jar"
CLASSPATH = TARGET / "classpath.txt"
#: touched after a successful build (Maven leaves unchanged outputs untouched)
STAMP = TARGET / ".built"
MAIN = "stormpy.bench.WordCountBench"
#: the JVM's settings: at most 1 GB of heap for the whole LocalCluster (Nimbus, a supervisor, an
#: in-process ZooKeeper and the worker; a Storm worker's default is -Xmx768m), grown as needed as
#: a worker's heap is; G1 (Java 17's default collector)
JVM_OPTS = ("-Xmx1g", "-XX:+UseG1GC")


def storm_version() -> str:
    """The Storm version the Maven project builds against (``storm.version`` in its pom)."""
    m = re.search(r"<storm\.version>([^<]+)</storm\.version>", (PROJECT / "pom.xml").read_text())
    if m is None:
        raise RuntimeError(f"no storm.version in {PROJECT / 'pom.xml'}")
    return m.group(1)


def missing_tools() -> list[str]:
    """The tools the Storm peer needs (``java``, ``mvn``) that are not on PATH."""
    return [tool for tool in ("java", "mvn") if shutil.which(tool) is None]


def sources() -> Iterable[Path]:
    """The files the Maven project builds from (its pom and ``src/``)."""
    yield PROJECT / "pom.xml"
    yield from (p for p in (PROJECT / "src").rglob("*") if p.is_file())


def built() -> bool:
    """The jar and its classpath exist and were built after every source of the project last
    changed."""
    if not (JAR.exists() and CLASSPATH.exists() and STAMP.exists()):
        return False
    made = STAMP.stat().st_mtime
    return all(p.stat().st_mtime <= made for p in sources())


def build() -> None:
    """``mvn package`` the project into ``target/`` (Maven's repository: ``~/.m2``) unless it is
    up to date. Raises RuntimeError with Maven's output when the build fails (e.g. an artifact
    Maven Central does not serve)."""
    if built():
        return
    missing = missing_tools()
    if missing:
        raise RuntimeError(f"the Storm peer needs {' and '.join(missing)} on PATH")
    res = subprocess.run(["mvn", "-q", "-B", "package", "-DskipTests"], cwd=PROJECT,
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"mvn package in {PROJECT} failed:\n{res.stdout[-4000:]}"
                           f"{res.stderr[-2000:]}")
    STAMP.touch()


def write_sentences(lines: Sequence[str], path: Path) -> None:
    """The sentences the JVM reads, one per line. Raises ValueError for a sentence the Java side
    would read or split differently (a line break, or not single-space separated words)."""
    for line in lines:
        if "\n" in line or "\r" in line or line.split(" ") != line.split():
            raise ValueError(f"sentence {line!r}: the Java side splits on single spaces")
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


class JvmRounds:
    """One JVM running a main class of the Maven project (``main`` with ``args``) that answers
    each command line on its stdin with one JSON line (its first line, ``ready``, when it has
    started); its stderr goes to a temporary log. Use as a context manager: ``close`` sends
    ``quit`` and kills it if it does not exit."""

    def __init__(self, main: str, args: Sequence[str], *, log_prefix: str,
                 jvm_opts: Sequence[str] = JVM_OPTS,
                 env: Mapping[str, str] | None = None, classpath: str | None = None) -> None:
        """``classpath`` (default: the jar and its Maven classpath) is the JVM's ``-cp``."""
        if classpath is None:
            classpath = f"{JAR}{os.pathsep}{CLASSPATH.read_text().strip()}"
        log_fd, log_name = tempfile.mkstemp(prefix=log_prefix, suffix=".log")
        self.log_path = Path(log_name)  # the JVM's stderr (Storm's warnings and errors)
        try:
            self.proc = subprocess.Popen(
                ["java", *jvm_opts, "-cp", classpath, main, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_fd, text=True,
                cwd=TARGET, env=dict(env) if env is not None else None)
        finally:
            os.close(log_fd)
        try:
            self.ready = self._answer()
        except BaseException:
            self.close()
            raise

    def command(self, line: str) -> dict[str, Any]:
        """Send one command line; its JSON answer (RuntimeError when the JVM reports an error or
        exits, with its log's tail)."""
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(f"{line}\n")
        stdin.flush()
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        out: IO[str] | None = self.proc.stdout
        assert out is not None
        line = out.readline()
        if not line:
            code = self.proc.wait()
            raise RuntimeError(f"the Storm JVM exited ({code}); its log:\n{self.log_tail()}")
        doc: dict[str, Any] = json.loads(line)
        if "error" in doc:
            raise RuntimeError(f"the Storm JVM: {doc['error']}")
        return doc

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StormPeer(JvmRounds):
    """One JVM running Storm's LocalCluster over the sentences of ``sentences_file``; the
    ShellBolt runs ``python`` (default: this interpreter). Use as a context manager."""

    def __init__(self, sentences_file: Path, python: str = sys.executable,
                 jvm_opts: Sequence[str] = JVM_OPTS, workers: int = 1) -> None:
        """``workers`` 2: the LocalCluster runs each topology on two workers exchanging tuples
        over Storm's Netty transport (still in one JVM; see ``WordCountBench.java``)."""
        if workers not in (1, 2):
            raise ValueError(f"workers {workers!r}: 1 or 2")
        super().__init__(MAIN, [str(sentences_file), python, *(["2"] if workers == 2 else [])],
                         log_prefix="stormpy-storm-peer-", jvm_opts=jvm_opts)

    def run(self, workload: str, acking: bool, split: str, sentences: int) -> dict[str, Any]:
        """One round on the first ``sentences`` sentences: ``seconds`` from the first emit to
        the last word counted (and acked), the JVM's RSS and peak RSS (``jvm_rss_kb``,
        ``jvm_hwm_kb``) and the ShellBolt's Python process's peak RSS (``python_hwm_kb``)."""
        return self.command(run_command(workload, acking, split, sentences))


def run_command(workload: str, acking: bool, split: str, sentences: int) -> str:
    """The ``run`` command line of one round (ValueError for a workload or split the JVM does not
    know)."""
    if workload not in ("final", "running") or split not in ("java", "python"):
        raise ValueError(f"workload {workload!r} (final or running), split {split!r} "
                         "(java or python)")
    return f"run {workload} {'on' if acking else 'off'} {split} {sentences}"
